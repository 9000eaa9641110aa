// `dlc run`: compiles an IR module with ORC LLJIT inside the dlc process and
// runs its `main`, with the runtime's symbols taken from dlc itself.
#pragma once

#include <string>
#include <vector>

#include "compiler/codegen/llvm/codegen.h"
#include "compiler/ir/ir.h"

namespace delta::codegen {

// Compiles `module` and runs its `main` through the C entry point that
// executables have, with `args` as its argv (args[0]: the program's name
// for messages; the rest fill main's parameters), then flushes the
// program's output. Returns false with `error` set if the module has no
// `main` or the JIT fails. Otherwise `exit_status` is the entry point's:
// 0, or 1 after a usage message when the arguments do not fit main's
// parameters. A run-time error of the program does not return (delta_fail
// exits with status 1).
bool RunMain(const ir::Module& module, const CodegenOptions& options,
             const std::vector<std::string>& args, int& exit_status,
             std::string& error);

// The same with no arguments, for a `main` without parameters.
bool RunMain(const ir::Module& module, const CodegenOptions& options,
             std::string& error);

}  // namespace delta::codegen
