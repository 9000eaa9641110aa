// Reverse-mode AD: direct adjoint generation on map-free array-level IR
// (docs/internals/ad.md).
#pragma once

#include <llvm/Support/Error.h>

#include "compiler/ir/ir.h"
#include "compiler/transforms/ad/ad_error.h"

namespace delta::ad {

// Fills `derived` (an empty function whose `derivative` is Gradient or Vjp
// and whose signature is set up, see SetUpReverseSignature) with the
// reverse-mode derivative of `primal`. `primal` must be free of maps and of
// calls other than calls of functions with a custom @vjp rule and
// checkpointed calls. Fails on ops it cannot differentiate (an AdError of
// kind Unsupported, at the op).
llvm::Error BuildReverse(const ir::Function& primal, ir::Function& derived);

// Gives `derived` its parameters and result types from its primal
// (docs/internals/ad.md, "Derivative functions").
void SetUpReverseSignature(ir::Function& derived);

}  // namespace delta::ad
