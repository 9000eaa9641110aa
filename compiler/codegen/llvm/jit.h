// `dlc run`: compiles an IR module to an object file, links it with ORC
// LLJIT inside the dlc process and runs its `main`, with the runtime's
// symbols taken from dlc itself.
#pragma once

#include <string>
#include <vector>

#include "compiler/codegen/llvm/codegen.h"
#include "compiler/ir/ir.h"

namespace delta::codegen {

// `main` compiled for the host with the C entry point that executables
// have: object files for the JIT to link.
struct MainObject {
  // ELF objects: one, or several for a large module (EmitObjects).
  std::vector<std::string> objects;
  bool vector_math = false;  // it calls libmvec (Note [Vector math])
};

// Compiles `module` (which must have a `main`) into `object`. Returns false
// with `error` set if it has none or LLVM fails.
bool CompileMain(const ir::Module& module, const CodegenOptions& options,
                 MainObject& object, std::string& error);

// Links `object` in memory and runs its `main` with `args` as its argv
// (args[0]: the program's name for messages; the rest fill main's
// parameters), then flushes the program's output. Returns false with
// `error` set if the JIT fails. Otherwise `exit_status` is the entry
// point's: 0, or 1 after a usage message when the arguments do not fit
// main's parameters. A run-time error of the program does not return
// (delta_fail exits with status 1). With `timings`, the times of
// compilation are printed on stderr just before `main` starts.
bool RunObject(const MainObject& object, const std::vector<std::string>& args,
               int& exit_status, std::string& error,
               CodegenTimings* timings = nullptr);

// CompileMain, then RunObject.
bool RunMain(const ir::Module& module, const CodegenOptions& options,
             const std::vector<std::string>& args, int& exit_status,
             std::string& error);

// The same with no arguments, for a `main` without parameters.
bool RunMain(const ir::Module& module, const CodegenOptions& options,
             std::string& error);

}  // namespace delta::codegen
