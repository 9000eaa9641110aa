// The distributive law for sums: a sum over a dim that only one factor of a
// product has is taken of that factor alone.
#pragma once

#include "compiler/ir/ir.h"

namespace delta::opt {

// Rewrites reduce.sum [R] (a * b), where some dims of R are dims of a and
// not of b, as the sum over those dims of a times b, summed over the rest
// of R: fewer multiplications, never more. The sum is first moved through
// a chain of single-use negations, renames and nested sums that lies
// between it and the product. Only at -O3: it reassociates float sums.
// Returns whether the module changed. See Note [Distributing sums].
bool DistributeSums(ir::Module& module);

}  // namespace delta::opt
