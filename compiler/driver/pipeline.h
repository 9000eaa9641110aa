// The compiler's pipeline as the driver runs it: each command is a list of
// stages in order, so the whole compiler reads on one screen.
#pragma once

#include <llvm/Support/raw_ostream.h>

#include "compiler/driver/options.h"

namespace delta::driver {

// `dlc check`: reads and checks a file and its imports, reporting
// diagnostics on `err` and, with --types, the typed definitions on `out`.
ExitStatus Check(const CheckCommandOptions& options, llvm::raw_ostream& out,
                 llvm::raw_ostream& err);

// `dlc build`: compiles a file to the stage `options.emit` asks for.
ExitStatus Build(const BuildCommandOptions& options, llvm::raw_ostream& out,
                 llvm::raw_ostream& err);

// `dlc run`: compiles `main` and runs it (JIT, or the IR interpreter with
// --interp); its prints go to `out`, run-time errors to `err`.
ExitStatus Run(const RunCommandOptions& options, llvm::raw_ostream& out,
               llvm::raw_ostream& err);

}  // namespace delta::driver
