// The LLVM side of a Delta library: the C entry points around each
// exported function, and the hiding of everything else.
#pragma once

#include <llvm/IR/Module.h>

#include "compiler/codegen/c_abi/abi_signature.h"

namespace delta::c_abi {

// Adds to `module` (EmitLLVM's output for the IR that `abi` describes) the
// context functions and, per export, the plain entry, the DLPack entry, the
// result-size query and a descriptor table for delta_abi_invoke (see
// docs/internals/c_abi.md). Then routes allocation through the tracked
// allocator and gives every `delta.*` function internal linkage, so that
// only the prefixed C names remain visible. With `device` (--target=cuda),
// each call runs in the context's device session (runtime/cuda.h).
void EmitEntryWrappers(const AbiModule& abi, llvm::Module& module,
                       bool device = false);

}  // namespace delta::c_abi
