// `dlc repl`: the interactive loop (line editing, history, commands) around
// a Session.
#pragma once

#include <llvm/Support/raw_ostream.h>

#include "compiler/repl/session.h"

namespace delta::repl {

// Reads inputs until end of input or `:quit`. On a terminal, lines are read
// with libedit (history in ~/.delta_history) and prompts are shown;
// otherwise stdin is read as a script and no prompt is written. Returns the
// exit status: 0, or 1 if reading a script and some input failed.
int RunRepl(const SessionOptions& options, llvm::raw_ostream& out,
            llvm::raw_ostream& err);

// The bracket depth at the end of `text` (strings and comments skipped); an
// input continues on the next line while it is positive.
int OpenBrackets(llvm::StringRef text);

}  // namespace delta::repl
