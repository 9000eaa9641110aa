// `dlc build`: object files and assembly through the host TargetMachine, and
// executables linked with clang against the runtime's static library.
#pragma once

#include <llvm/IR/Module.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Support/raw_ostream.h>

#include <string>
#include <vector>

#include "compiler/codegen/llvm/codegen.h"

namespace delta::codegen {

// Writes `module` (from EmitLLVM) as one object file or assembly; with
// `timings`, records how long that took.
bool EmitMachineCode(llvm::Module& module, int opt_level,
                     llvm::CodeGenFileType type, llvm::raw_pwrite_stream& out,
                     std::string& error, CodegenTimings* timings = nullptr);

// `module` (from EmitLLVM) as object files: one, or for a large module
// several compiled in parallel that together define what it does (Note
// [Parallel code generation] in object.cpp). Changes the module's local
// symbols to hidden ones when it splits it.
bool EmitObjects(llvm::Module& module, int opt_level,
                 std::vector<std::string>& objects, std::string& error,
                 CodegenTimings* timings = nullptr);

// Object files written to temporary files for a linker, removed with this.
class TemporaryObjects {
 public:
  TemporaryObjects() = default;
  TemporaryObjects(const TemporaryObjects&) = delete;
  TemporaryObjects& operator=(const TemporaryObjects&) = delete;
  ~TemporaryObjects();
  // Writes each object to a file of its own; false with `error` set if one
  // cannot be written.
  bool Write(const std::vector<std::string>& objects, std::string& error);
  const std::vector<std::string>& paths() const { return paths_; }

 private:
  std::vector<std::string> paths_;
};

// The runtime archive to link executables with: DELTA_RUNTIME_LIBRARY if
// set, else lib/libdelta_runtime.a beside the bin/ folder of `executable`
// (a build tree or an install prefix), else the build tree dlc came from.
std::string FindRuntimeLibrary(const std::string& executable);

// Links `objects` (paths) with the runtime into the executable `output`,
// using clang-19 (or clang, or cc). Returns false with `error` set on
// failure.
bool LinkExecutable(const std::vector<std::string>& objects,
                    const std::string& output,
                    const std::string& runtime_library, std::string& error);

}  // namespace delta::codegen
