// Forward-mode automatic differentiation (jvp) as an IR -> IR transform:
// fills a derivative function with a tangent beside every float value
// (docs/internals/forward_mode.md).
#pragma once

#include <llvm/Support/Error.h>

#include "compiler/ir/ir.h"
#include "compiler/transforms/ad/ad_error.h"

namespace delta::ad {

// How forward mode treats an op; every op of ops.def has exactly one (the
// coverage test in forward_test.cpp checks it).
enum class JvpRule {
  NoTangent,   // the result has no tangent (integer, bool, index, constant)
  Linear,      // the tangent is the same op applied to the tangent
  Rule,        // a formula of the primal values and the tangents
  Structural,  // regions, calls, custom reductions and terminators: the
               // tangents flow through
};
JvpRule JvpRuleOf(ir::OpKind kind);

// Gives `jvp` (empty) the signature of the forward-mode derivative of
// `primal`: the same size parameters (as new dims of `jvp`), the primal
// parameters, then one tangent parameter per float parameter leaf that
// `jvp.derivative->wrt` includes (all when it is empty or unset; the others
// are constants); results: the primal results, then one tangent per float
// result leaf.
void SetUpJvpSignature(const ir::Function& primal, ir::Function& jvp);

// Fills the body of `jvp`, whose signature is SetUpJvpSignature's, with the
// forward-mode derivative of `primal`. Called functions get derivative
// functions `NAME.jvp` in the module (created once, then reused). Fails
// (leaving `jvp` incomplete) only on IR it does not expect, with an AdError
// of kind Internal.
llvm::Error BuildJvp(const ir::Function& primal, ir::Function& jvp);

}  // namespace delta::ad
