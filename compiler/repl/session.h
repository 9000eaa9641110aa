// A REPL session: the definitions typed so far, and the evaluation of each
// new input as a whole module (definitions plus a synthesized `main`).
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include <string>
#include <vector>

namespace delta::repl {

struct SessionOptions {
  // Folders searched for `import NAME;` (the current folder comes first).
  std::vector<std::string> stdlib_dirs;
  bool interpret = false;  // run with the IR interpreter instead of the JIT
  bool color = false;
  int opt_level = 1;
};

// One top-level definition of the session, kept as source text.
struct Definition {
  std::string text;
  std::vector<std::string> names;  // what it declares (a `let` may bind more)
  std::string origin;              // the file it was loaded from, or ""
};

// See Note [Each input is a whole program] in session.cpp.
class Session {
 public:
  Session(SessionOptions options, llvm::raw_ostream& out,
          llvm::raw_ostream& err);

  // Evaluates one complete input: definitions are checked and kept (a `let`
  // also prints its value); an expression is run and printed with its type.
  // Errors are reported and leave the session as it was.
  bool Eval(llvm::StringRef input);
  // `:type EXPR`: the expression's type, without running it.
  bool PrintType(llvm::StringRef expr);
  // `:ir EXPR`: the optimized IR of the `main` that would print EXPR.
  bool PrintIr(llvm::StringRef expr);
  // `:load FILE`: adds the file's declarations (its `main` is not kept).
  bool Load(const std::string& path);
  // `:reload`: drops what the loaded files declared and loads them again.
  bool Reload();
  // `:defs`: the session's definitions, in order.
  void PrintDefinitions();
  // `:reset`: forgets every definition and loaded file.
  void Reset();

  // Names in scope, for completion.
  std::vector<std::string> Names() const;
  // What diagnostics call the next input, and its first line: `<repl>`:1
  // at a terminal, `<stdin>` and the script's line when input is piped.
  void SetInputLocation(std::string name, unsigned first_line) {
    input_name_ = std::move(name);
    first_line_ = first_line;
  }

 private:
  bool AddDefinitions(llvm::StringRef input, const std::string& origin,
                      const std::string& file_name);
  bool EvalExpr(llvm::StringRef expr, bool run, bool print_ir);

  SessionOptions options_;
  llvm::raw_ostream& out_;
  llvm::raw_ostream& err_;
  std::vector<Definition> definitions_;
  std::vector<std::string> loaded_files_;
  std::string input_name_ = "<repl>";
  unsigned first_line_ = 1;
};

// True if the input starts with a declaration keyword (`fn`, `let`, …),
// rather than being an expression to evaluate.
bool IsDefinition(llvm::StringRef input);

}  // namespace delta::repl
