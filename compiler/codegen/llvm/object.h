// `dlc build`: object files and assembly through the host TargetMachine, and
// executables linked with clang against the runtime's static library.
#pragma once

#include <llvm/IR/Module.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Support/raw_ostream.h>

#include <string>

#include "compiler/codegen/llvm/codegen.h"

namespace delta::codegen {

// Writes `module` (from EmitLLVM) as an object file or assembly; with
// `timings`, records how long that took.
bool EmitMachineCode(llvm::Module& module, int opt_level,
                     llvm::CodeGenFileType type, llvm::raw_pwrite_stream& out,
                     std::string& error, CodegenTimings* timings = nullptr);

// The runtime archive to link executables with: DELTA_RUNTIME_LIBRARY if
// set, else lib/libdelta_runtime.a beside the bin/ folder of `executable`
// (a build tree or an install prefix), else the build tree dlc came from.
std::string FindRuntimeLibrary(const std::string& executable);

// Links `object` with the runtime into the executable `output`, using
// clang-19 (or clang, or cc). Returns false with `error` set on failure.
bool LinkExecutable(const std::string& object, const std::string& output,
                    const std::string& runtime_library, std::string& error);

}  // namespace delta::codegen
