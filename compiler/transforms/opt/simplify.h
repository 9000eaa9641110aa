// Local simplifications of array-level IR.
#pragma once

#include "compiler/ir/ir.h"

namespace delta::opt {

// Replaces ops that return an operand unchanged by that operand (broadcast
// to dims it has, convert to its own type, rename of a dim to itself,
// gather at `iota` of each dim, reduce over no dims, select between equal
// values, double neg and not), and an `if` on a constant by the ops of the
// branch it takes. Returns whether the module changed.
bool Simplify(ir::Module& module);

}  // namespace delta::opt
