// Native code generation: translates a verified IR module into an LLVM 19
// module for the host CPU, optimized at the requested level.
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <string>

#include "compiler/base/timings.h"
#include "compiler/ir/ir.h"

namespace delta::codegen {

class HostHooks;

// --time-passes beyond Delta's passes: the steps of a compilation (the
// driver's checking and caching, emitting LLVM IR, LLVM's optimizer,
// machine code, linking or the JIT) and, within the optimizer, LLVM's
// slowest passes by their own time.
struct CodegenTimings {
  Timings steps;
  Timings llvm_passes;
  // Prints the tables that have rows, then empties them.
  void Flush(llvm::raw_ostream& out) {
    if (!steps.empty()) steps.Print("compilation steps", out);
    if (!llvm_passes.empty())
      llvm_passes.Print("LLVM optimization passes (own time, slowest first)",
                        out);
    *this = {};
  }
};

struct CodegenOptions {
  int opt_level = 2;  // 0..3, as -O0..-O3
  // Also define the C `int main(int, char**)` that runs the Delta `main`
  // (for executables and for `dlc run`, whose JIT calls it).
  bool emit_c_main = false;
  // A library (`dlc build --lib`): exported functions may make their
  // results in the caller's buffers (Note [Results in the caller's
  // buffers] in docs/internals/c_abi.md).
  bool library = false;
  // Another backend's share of the host code (the CUDA backend's launches);
  // null for plain CPU code. See emitter.h.
  HostHooks* hooks = nullptr;
  // Where the steps' times go (--time-passes); null: not timed.
  CodegenTimings* timings = nullptr;
};

// The runtime's DELTA_ELEM_* code (runtime/format.h) of an element kind.
int32_t RuntimeElemKind(ir::ElemKind kind);

// The one mapping of element kinds to LLVM types, for the CPU, CUDA and C
// ABI code generators alike. In registers: float, double, i32, i1 for a
// bool, i64 for i64 and index.
llvm::Type* RegisterType(llvm::LLVMContext& context, ir::ElemKind kind);
// In memory, where a bool is one byte (runtime/format.h, the C ABI).
llvm::Type* MemoryType(llvm::LLVMContext& context, ir::ElemKind kind);
// A value of `type`: an element in registers, or a pointer to an array.
llvm::Type* ValueType(llvm::LLVMContext& context, const ir::Type& type);

// The LLVM symbol of the Delta function `name` ("delta.NAME"), so that the
// C `main` of an executable and the runtime never collide with user names.
std::string LlvmFunctionName(llvm::StringRef name);

// Emits `module` (which must pass the IR verifier) as LLVM IR with the host
// triple and data layout, and runs LLVM's standard pipeline at
// options.opt_level. Every op of ops.def is supported.
std::unique_ptr<llvm::Module> EmitLLVM(const ir::Module& module,
                                       llvm::LLVMContext& context,
                                       const CodegenOptions& options);

}  // namespace delta::codegen
