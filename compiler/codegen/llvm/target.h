// The host target: a TargetMachine for the CPU dlc runs on, and LLVM's
// standard optimization pipeline, shared by EmitLLVM, the JIT and objects.
#pragma once

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>

#include "compiler/base/timings.h"

namespace delta::codegen {

// Registers LLVM's target for the host (once; the JIT needs it too).
void InitializeHostTarget();

// A TargetMachine for the host CPU and its features (AVX-512 where the
// machine has it), position-independent code. Null with `error` set if
// LLVM has no target for the host.
std::unique_ptr<llvm::TargetMachine> CreateHostTargetMachine(
    int opt_level, std::string& error);

// Runs the default module pipeline (PassBuilder) at -O`opt_level`; with
// `vector_math`, loops may call glibc's vector math library (libmvec)
// where the host has it. See Note [Vector math] in target.cpp. With
// `pass_timings`, records the slowest passes' own times there.
void OptimizeModule(llvm::Module& module, llvm::TargetMachine& machine,
                    int opt_level, bool vector_math = false,
                    Timings* pass_timings = nullptr);

// Whether `module` calls libmvec's vector functions (`_ZGV...`).
bool UsesVectorMath(const llvm::Module& module);

}  // namespace delta::codegen
