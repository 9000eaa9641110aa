// Common subexpression elimination.
#pragma once

#include "compiler/ir/ir.h"

namespace delta::opt {

// Replaces an op without regions that computes what an earlier op in the
// same block or an enclosing one computes (same kind, operands, attributes
// and result types) by that op's results. Ops that print, call or declare
// dims are never merged; ops that can fail are, since the first one runs
// before. Returns whether the module changed.
bool EliminateCommonSubexpressions(ir::Module& module);

}  // namespace delta::opt
