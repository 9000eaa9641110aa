// Dead code elimination.
#pragma once

#include "compiler/ir/ir.h"

namespace delta::opt {

// Removes ops whose results are unused and that have no effects (see
// transforms::HasEffects; a call has the effects of its callee), in every
// region, and drops unused results of maps and ifs and unused state of
// loops. Returns whether the module changed.
bool EliminateDeadCode(ir::Module& module);

}  // namespace delta::opt
