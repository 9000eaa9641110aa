// Reading what an earlier map stored instead of computing it again.
#pragma once

#include "compiler/ir/ir.h"

namespace delta::opt {

// In a map's body, replaces an expression that an earlier map of the same
// block yields, over dims the body has, by a read of that map's result at
// the body's point, when the expression calls a math function (exp, log,
// sin, ...) and the result is stored anyway (it has other uses). Returns
// whether the module changed. See Note [Reusing map results].
bool ReuseMapResults(ir::Module& module);

}  // namespace delta::opt
