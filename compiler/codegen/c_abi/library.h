// `dlc build --lib`: the shared library, the static library and the header
// of a Delta module, each exposing only the module's prefixed C names.
#pragma once

#include <string>
#include <vector>

#include "compiler/codegen/llvm/codegen.h"
#include "compiler/ir/ir.h"
#include "compiler/sema/program.h"

namespace delta::c_abi {

struct LibraryOptions {
  std::string output_dir;       // created if missing
  std::string name;             // the file's stem: libNAME.so, NAME.h
  std::string runtime_library;  // libdelta_runtime.a (FindRuntimeLibrary)
  int opt_level = 2;
  // --target=cuda: the CUDA backend's host hooks (cuda::Hooks), whose
  // kernels the library launches in each context's device session; null
  // for a CPU library.
  codegen::HostHooks* hooks = nullptr;
  // --time-passes: where code generation's and linking's times go.
  codegen::CodegenTimings* timings = nullptr;
};

// Writes libNAME.so, libNAME.a and NAME.h for the `export fn`s of the main
// module of `program` (whose optimized IR is `module`). Returns false with
// `error` set when a signature has no C form or a tool fails.
bool WriteLibrary(const sema::Program& program, const ir::Module& module,
                  const LibraryOptions& options, std::string& error);

// The names of the files WriteLibrary writes for the stem `name`.
std::vector<std::string> LibraryFiles(const std::string& name);

}  // namespace delta::c_abi
