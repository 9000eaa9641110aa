// What the command line of `dlc` asks for, parsed once in main.cpp and
// handed to the pipeline, so that no stage reads argv or the environment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/diagnostics/diagnostics.h"

namespace delta::driver {

// `dlc` exits with one of these and nothing else (cli.md).
enum ExitStatus : int {
  kExitSuccess = 0,
  kExitCompileError = 1,  // diagnostics were reported (or a run-time error)
  kExitUsage = 2,         // bad use of dlc itself
};

enum class ColorMode { Auto, Always, Never };

// Options that every command that reads source accepts.
struct CommonOptions {
  DiagFormat diagnostics = DiagFormat::Text;
  ColorMode color = ColorMode::Auto;
  // Folders searched for `import NAME;` after the importing file's folder.
  std::vector<std::string> stdlib_dirs;
};

// `dlc check [--types] FILE`.
struct CheckCommandOptions {
  CommonOptions common;
  std::string input;
  bool print_types = false;
  bool print_locals = false;  // with --types: each function's local bindings
};

// The optimizer's debugging aids (docs/internals/passes.md).
struct OptimizerOptions {
  std::vector<std::string> print_after;  // pass names, or "all"
  bool time_passes = false;
  bool verify_each = false;  // also on by itself in builds with assertions
};

// The compilation cache of `dlc run` and `dlc build` (Note [Compilation
// cache] in compile_cache.cpp).
struct CacheOptions {
  std::string dir;  // empty: no cache (--no-cache)
  uint64_t max_bytes = 0;
};

// What `dlc build` writes.
enum class Emit { Executable, Library, Ir, Llvm, Asm, Obj, Ptx };

// `dlc build [--lib] [--emit=…] FILE -o OUT`.
struct BuildCommandOptions {
  CommonOptions common;
  std::string input;
  std::string output;  // "-" is stdout
  Emit emit = Emit::Executable;
  std::string target = "cpu";
  std::string gpu_arch = "sm_90";
  int64_t gpu_min_work = 16384;  // docs/gpu.md, Note [Small ops on the host]
  int opt_level = 2;
  OptimizerOptions optimizer;
  CacheOptions cache;
};

// `dlc run [--interp] FILE [ARGS…]`.
struct RunCommandOptions {
  CommonOptions common;
  std::string input;
  bool interpret = false;
  std::vector<std::string> args;
  std::string target = "cpu";  // or "cuda": kernels on the GPU
  std::string gpu_arch = "sm_90";
  int64_t gpu_min_work = 16384;  // docs/gpu.md, Note [Small ops on the host]
  int opt_level = 2;
  OptimizerOptions optimizer;
  CacheOptions cache;
};

}  // namespace delta::driver
