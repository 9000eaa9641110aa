// Loop-invariant code motion for `loop` and `while` bodies.
#pragma once

#include "compiler/ir/ir.h"

namespace delta::opt {

// Moves the ops of a loop's or while's body that compute the same values
// on every iteration (they use neither the body's arguments nor values made
// in it, and have no effect, run-time checks included) in front of the
// loop, innermost loops first. Returns whether the module changed.
bool HoistLoopInvariants(ir::Module& module);

}  // namespace delta::opt
