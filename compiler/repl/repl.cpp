// The interactive loop of `dlc repl`: reads complete inputs (continuing
// while brackets are open), dispatches `:commands`, and evaluates the rest.
#include "compiler/repl/repl.h"

#include <unistd.h>

#include <csignal>
#include <optional>
#include <string>

#include "compiler/repl/line_reader.h"

namespace delta::repl {
namespace {

constexpr const char* kHelp =
    R"(Type a definition (dim, struct, fn, let, import) to add it to the
session, or an expression to evaluate it and print its value and type.
Input continues on the next line while brackets are open.

  :type EXPR    the type of EXPR, without running it (also :t)
  :ir EXPR      the optimized IR of the main that prints EXPR
  :load FILE    add the declarations of FILE (its main is not kept)
  :reload       load the loaded files again
  :defs         the session's definitions
  :reset        forget every definition
  :help         this text
  :quit         end the session (also Ctrl-D)

Ctrl-C drops the line being typed, or stops the evaluation running; the
session's definitions stay.
)";

constexpr const char* kKeywords[] = {
    "fn",    "export", "struct", "dim",    "let", "loop", "for",  "in",
    "while", "if",     "else",   "import", "as",  "true", "false"};

constexpr const char* kBuiltins[] = {
#define DELTA_BUILTIN(Name, spelling) spelling,
#include "compiler/sema/builtins.def"
};

// Drops comments, so that a line holding only a comment is no input.
std::string WithoutComments(llvm::StringRef text) {
  std::string result;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      size_t end = i + 1;
      while (end < text.size() && text[end] != '"')
        end += text[end] == '\\' ? 2 : 1;
      result += text.substr(i, end + 1 - i);
      i = end;
    } else if (text.substr(i).starts_with("//")) {
      i = text.find('\n', i);
      if (i == llvm::StringRef::npos) break;
      result += '\n';
    } else if (text.substr(i).starts_with("/*")) {
      size_t end = text.find("*/", i + 2);
      if (end == llvm::StringRef::npos) {
        result += "/*";  // still open: keeps the input going
        break;
      }
      i = end + 1;
      result += ' ';
    } else {
      result += c;
    }
  }
  return result;
}

}  // namespace

int OpenBrackets(llvm::StringRef text) {
  std::string code = WithoutComments(text);
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < code.size(); ++i) {
    char c = code[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '(' || c == '[' || c == '{')
      ++depth;
    else if (c == ')' || c == ']' || c == '}')
      --depth;
    else if (c == '/' && i + 1 < code.size() && code[i + 1] == '*')
      ++depth;
  }
  return depth;
}

namespace {

// Ctrl-C at a terminal cancels the line being typed or the evaluation
// running (in a child process, which the signal ends) and returns to the
// prompt; the session and its definitions stay.
volatile std::sig_atomic_t interrupted = 0;

void OnInterrupt(int) { interrupted = 1; }

void CatchInterrupts() {
  struct sigaction action = {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: the read of the line returns
  sigaction(SIGINT, &action, nullptr);
}

}  // namespace

int RunRepl(const SessionOptions& options, llvm::raw_ostream& out,
            llvm::raw_ostream& err) {
  bool interactive = isatty(STDIN_FILENO) != 0;
  if (interactive) CatchInterrupts();
  Session session(options, out, err);
  LineReader reader(interactive);
  if (interactive) {
    out << "Delta REPL. Type :help for help, :quit to leave.\n";
    out.flush();
  }
  bool failed = false;
  unsigned lines_read = 0;  // a piped script's errors name its own lines
  while (true) {
    std::vector<std::string> completions = session.Names();
    for (const char* keyword : kKeywords) completions.push_back(keyword);
    for (const char* builtin : kBuiltins) completions.push_back(builtin);
    reader.SetCompletions(std::move(completions));

    interrupted = 0;
    std::optional<std::string> line = reader.Read("delta> ");
    if (interrupted) {  // the half-typed line is dropped
      out << "\n";
      out.flush();
      continue;
    }
    if (!line) break;
    unsigned first_line = ++lines_read;
    std::string input = *line;
    // A `:command` is one line; anything else continues while open.
    if (!llvm::StringRef(input).ltrim().starts_with(":")) {
      while (OpenBrackets(input) > 0) {
        std::optional<std::string> more = reader.Read("   ... ");
        if (!more || interrupted) break;
        ++lines_read;
        input += "\n" + *more;
      }
      if (interrupted) {  // the whole entry is dropped
        out << "\n";
        out.flush();
        continue;
      }
    }
    reader.AddToHistory(input);  // a multi-line entry is one entry
    llvm::StringRef text = llvm::StringRef(input).trim();
    session.SetInputLocation(interactive ? "<repl>" : "<stdin>",
                             interactive ? 1 : first_line);
    bool ok = true;
    if (text.consume_front(":")) {
      auto [command, argument] = text.split(' ');
      argument = argument.trim();
      if (command == "q" || command == "quit") break;
      if (command == "h" || command == "help" || command == "?") {
        out << kHelp;
      } else if (command == "t" || command == "type") {
        if (argument.empty()) {
          err << "error: :type needs an expression, e.g. :type sum(x)\n";
          ok = false;
        } else {
          ok = session.PrintType(argument);
        }
      } else if (command == "ir") {
        ok = session.PrintIr(argument);
      } else if (command == "l" || command == "load") {
        ok = session.Load(argument.str());
      } else if (command == "r" || command == "reload") {
        ok = session.Reload();
      } else if (command == "defs") {
        session.PrintDefinitions();
      } else if (command == "reset") {
        session.Reset();
      } else {
        err << "error: unknown command ':" << command
            << "'; type :help for the list\n";
        ok = false;
      }
    } else if (!llvm::StringRef(WithoutComments(text)).trim().empty()) {
      ok = session.Eval(text);
    }
    failed |= !ok;
    out.flush();
    err.flush();
  }
  if (interactive) out << "\n";
  out.flush();
  return !interactive && failed ? 1 : 0;
}

}  // namespace delta::repl
