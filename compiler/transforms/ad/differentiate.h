// The AD pass: fills every derivative function of a module.
#pragma once

#include <llvm/Support/Error.h>

#include "compiler/ir/ir.h"
#include "compiler/transforms/ad/ad_error.h"

namespace delta::ad {

// Fills the body of every function whose `derivative` is set and whose body
// is empty, innermost first (a derivative of a derivative waits for its
// primal). Each primal is first cloned, its calls inlined (except calls of
// functions with a @vjp rule and checkpointed calls) and, for reverse mode,
// its maps removed by batching. Runs before any optimization. Fails with an
// AdError (at the op it could not differentiate, where there is one).
llvm::Error Differentiate(ir::Module& module);

}  // namespace delta::ad
