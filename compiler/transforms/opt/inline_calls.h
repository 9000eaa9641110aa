// Inlining: calls replaced by a copy of the callee's body.
#pragma once

#include "compiler/ir/ir.h"

namespace delta::opt {

// Replaces every call of a function that is not recursive by a copy of the
// callee's body, with its size parameters bound to the caller's dims and its
// local dims made fresh dims of the caller, then removes the functions that
// were inlined everywhere and are neither exported nor `main`. Returns
// whether the module changed.
bool InlineCalls(ir::Module& module);

// Replaces one call in `caller` by a copy of the callee's body (used by the
// AD pass and by batching, which inline selectively).
void InlineCall(ir::Function& caller, ir::Op& call);

}  // namespace delta::opt
