// Sums of one-hot scatters written as scatters into the sum's result.
#pragma once

#include "compiler/ir/ir.h"

namespace delta::opt {

// Replaces `reduce.sum [r..] e`, where `e` is `scatter_add(v, i..)` seen
// through negations, broadcasts and products by factors `w` that lack the
// scattered dims, and `r` are dims the indices iterate over, by
// `scatter_add(v * w.., i..)` into the sum's result: each row's value
// lands at its index and the rows add up there. Reverse mode makes such
// sums from the arg-extremum of `min(x, k)` read by a contraction (the
// adjoint of `sum(c * p, d)` is a product of the dense one-hot [n, k] with
// p): k-means' cluster sums and counts cost n·d adds instead of an n·k·d
// product over a materialized one-hot. Returns whether the module changed.
bool SumScatters(ir::Module& module);

}  // namespace delta::opt
