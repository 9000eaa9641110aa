// `dlc run`: compiles an IR module with ORC LLJIT inside the dlc process and
// runs its `main`, with the runtime's symbols taken from dlc itself.
#pragma once

#include <string>

#include "compiler/codegen/llvm/codegen.h"
#include "compiler/ir/ir.h"

namespace delta::codegen {

// Compiles `module` and runs its `main` (no parameters, no results), then
// flushes the program's output. Returns false with `error` set if the
// module has no `main` or the JIT fails; a run-time error of the program
// does not return (delta_fail exits with status 1).
bool RunMain(const ir::Module& module, const CodegenOptions& options,
             std::string& error);

}  // namespace delta::codegen
