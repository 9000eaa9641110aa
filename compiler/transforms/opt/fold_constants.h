// Constant folding and exact algebraic identities.
#pragma once

#include "compiler/ir/ir.h"

namespace delta::opt {

// Evaluates scalar ops whose operands are constants when the result is
// exactly what the target computes (no transcendental functions: libm may
// round them differently), replaces `size` of a constant dim by its value,
// and applies identities that hold for every value (x * 1, x / 1, integer
// x + 0, x + -0.0, x - 0.0, select on a constant). Returns whether the module
// changed.
bool FoldConstants(ir::Module& module);

}  // namespace delta::opt
