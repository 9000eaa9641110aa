// The REPL's evaluator: keeps the definitions typed so far as source text and
// compiles each input together with them as one module.
#include "compiler/repl/session.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <memory>

#include "compiler/codegen/interpreter/interpreter.h"
#include "compiler/codegen/llvm/jit.h"
#include "compiler/compile/compile.h"
#include "compiler/diagnostics/diagnostics.h"
#include "compiler/ir/printer.h"
#include "compiler/sema/format_type.h"
#include "compiler/sema/program.h"
#include "compiler/sema/sema.h"
#include "compiler/syntax/parse.h"

namespace delta::repl {

// Note [Each input is a whole program]
// The session does not keep compiled code between inputs. Its definitions
// are kept as source text; each new input is appended to them, with an
// expression wrapped in a synthesized `fn main() { let it = (EXPR); print }`,
// and the whole module is checked, compiled and run (in a child process, so
// that a run-time error or a crash of the program never ends the session).
// Module-level `let`s are therefore recomputed by every evaluation that uses
// them: simple and always consistent, at the price of recomputation, which
// is invisible for the small values people explore in a REPL. Diagnostics
// are rendered against the input alone (named `<repl>`, or the file of
// `:load`), so that line:col are those the user typed.

namespace {

constexpr llvm::StringLiteral kSessionName = "<session>";
constexpr llvm::StringLiteral kValueName = "__repl_value";

// The text of a combined module and where the user's input sits in it.
struct Layout {
  std::string text;
  size_t input_offset = 0;
  size_t input_size = 0;
  unsigned input_line = 1;  // line of the module where the input begins
  std::string input_name;   // what diagnostics call the input
  unsigned first_line = 1;  // the input's first line in what the user typed
};

unsigned CountLines(llvm::StringRef text) { return text.count('\n'); }

// Builds `definitions + prefix + input + suffix`; `prefix` ends in a newline
// so that the input starts a line and keeps its columns.
Layout Compose(const std::vector<Definition>& definitions,
               llvm::StringRef prefix, llvm::StringRef input,
               llvm::StringRef suffix, llvm::StringRef input_name,
               unsigned first_line = 1) {
  Layout layout;
  for (const Definition& definition : definitions) {
    layout.text += definition.text;
    layout.text += "\n";
  }
  layout.text += prefix;
  layout.input_offset = layout.text.size();
  layout.input_line = CountLines(layout.text) + 1;
  layout.text += input;
  layout.input_size = input.size();
  layout.text += "\n";
  layout.text += suffix;
  layout.input_name = input_name.str();
  layout.first_line = first_line;
  return layout;
}

// One compilation of a combined module. Diagnostics are collected silently
// and rendered afterwards against the input (ReportDiagnostics).
struct Compilation {
  explicit Compilation(Layout layout) : layout(std::move(layout)) {}
  Layout layout;
  llvm::SourceMgr sources;
  DiagnosticEngine diags{sources, llvm::nulls()};
  sema::CheckResult checked;
  std::unique_ptr<ir::Module> module;

  bool ok() const { return checked.ok && !diags.HasErrors(); }
};

std::unique_ptr<Compilation> Check(Layout layout,
                                   const SessionOptions& options) {
  auto compilation = std::make_unique<Compilation>(std::move(layout));
  sema::CheckOptions check_options;
  check_options.stdlib_dirs = options.stdlib_dirs;
  compilation->checked = sema::CheckSource(compilation->layout.text,
                                           kSessionName, compilation->sources,
                                           compilation->diags, check_options);
  return compilation;
}

// Lowers, differentiates and optimizes a checked module, as `dlc run` does;
// errors are collected with the others.
bool CompileToIr(Compilation& compilation, const SessionOptions& options,
                 llvm::raw_ostream& err) {
  compile::CompileOptions compile_options;
  compile_options.pipeline.opt_level = options.opt_level;
  compile_options.pass_log = &err;
  compilation.module = compile::Compile(*compilation.checked.program,
                                        compilation.diags, compile_options);
  return compilation.module != nullptr;
}

// Re-emits the collected diagnostics with spans inside the input moved onto
// a buffer that holds the input alone.
void ReportDiagnostics(Compilation& compilation, const SessionOptions& options,
                       llvm::raw_ostream& err) {
  llvm::SourceMgr& sources = compilation.sources;
  const Layout& layout = compilation.layout;
  const char* session_start = nullptr;
  for (unsigned id = 1; id <= sources.getNumBuffers(); ++id) {
    const llvm::MemoryBuffer* buffer = sources.getMemoryBuffer(id);
    if (buffer->getBufferIdentifier() == kSessionName) {
      session_start = buffer->getBufferStart();
      break;
    }
  }
  // Blank lines before the input, so that its lines are numbered as in the
  // script it came from.
  unsigned shift = layout.first_line - 1;
  unsigned input_id = sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          std::string(shift, '\n') +
              llvm::StringRef(layout.text)
                  .substr(layout.input_offset, layout.input_size)
                  .str(),
          layout.input_name),
      llvm::SMLoc());
  const char* input_start =
      sources.getMemoryBuffer(input_id)->getBufferStart() + shift;
  const char* region_begin =
      session_start ? session_start + layout.input_offset : nullptr;
  const char* region_end =
      region_begin ? region_begin + layout.input_size : nullptr;
  auto map = [&](Span span) {
    if (region_begin && span.IsValid() && span.begin >= region_begin &&
        span.end <= region_end) {
      return Span{input_start + (span.begin - region_begin),
                  input_start + (span.end - region_begin)};
    }
    return span;
  };
  DiagnosticEngine render(sources, err, DiagFormat::Text, options.color);
  for (Diagnostic diagnostic : compilation.diags.emitted()) {
    diagnostic.span = map(diagnostic.span);
    for (DiagNote& note : diagnostic.notes) note.span = map(note.span);
    for (FixIt& fix : diagnostic.fixits) fix.span = map(fix.span);
    render.Emit(diagnostic);
  }
  if (compilation.diags.emitted().empty() && !compilation.ok())
    err << "error: the input could not be compiled\n";
}

// Run-time errors name `<session>:LINE:COL`; inside the input they become
// the input's own line and column.
std::string RewriteLocations(llvm::StringRef text, const Layout& layout) {
  std::string result;
  std::string needle = (kSessionName + ":").str();
  unsigned shift = layout.first_line - 1;
  unsigned input_lines =
      CountLines(llvm::StringRef(layout.text)
                     .substr(layout.input_offset, layout.input_size)) +
      1;
  while (true) {
    size_t at = text.find(needle);
    if (at == llvm::StringRef::npos) break;
    result += text.substr(0, at);
    llvm::StringRef rest = text.substr(at + needle.size());
    unsigned line = 0;
    llvm::StringRef digits =
        rest.take_while([](char c) { return c >= '0' && c <= '9'; });
    if (!digits.getAsInteger(10, line) && line >= layout.input_line &&
        line < layout.input_line + input_lines) {
      result += layout.input_name + ":" +
                std::to_string(line - layout.input_line + 1 + shift);
      text = rest.drop_front(digits.size());
    } else {
      result += needle;
      text = rest;
    }
  }
  result += text;
  return result;
}

// Runs `main`. The JIT runs in a child process: a run-time error exits the
// program (see codegen/llvm/jit.h), which must not end the session.
bool RunModule(Compilation& compilation, const SessionOptions& options,
               llvm::raw_ostream& out, llvm::raw_ostream& err) {
  auto run_interpreted = [&] {
    llvm::Error error = interpreter::RunMain(*compilation.module, out);
    out.flush();
    if (!error) return true;
    err << RewriteLocations(llvm::toString(std::move(error)),
                            compilation.layout)
        << "\n";
    return false;
  };
  if (options.interpret) return run_interpreted();
  out.flush();
  err.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  int fds[2];
  if (pipe(fds) != 0) return run_interpreted();
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return run_interpreted();
  }
  if (pid == 0) {
    // Ctrl-C ends the evaluation, not the session (repl.cpp).
    signal(SIGINT, SIG_DFL);
    close(fds[0]);
    dup2(fds[1], STDERR_FILENO);
    close(fds[1]);
    codegen::CodegenOptions codegen_options;
    codegen_options.opt_level = options.opt_level;
    std::string error;
    bool ok = codegen::RunMain(*compilation.module, codegen_options, error);
    if (!ok) std::fprintf(stderr, "dlc: error: %s\n", error.c_str());
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(ok ? 0 : 1);
  }
  close(fds[1]);
  std::string captured;
  char buffer[4096];
  while (true) {
    ssize_t n = read(fds[0], buffer, sizeof(buffer));
    if (n > 0) {
      captured.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  err << RewriteLocations(captured, compilation.layout);
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) {
    err << "interrupted; the session's definitions are kept\n";
    return false;
  }
  if (WIFSIGNALED(status)) {
    err << "error: the evaluation stopped with signal " << WTERMSIG(status)
        << "\n";
    return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

const ast::FnDecl* FindMain(const sema::Program& program) {
  if (!program.main_module || !program.main_module->ast) return nullptr;
  for (const ast::Decl* decl : program.main_module->ast->decls) {
    if (auto* fn = llvm::dyn_cast<ast::FnDecl>(decl))
      if (fn->name.name == "main") return fn;
  }
  return nullptr;
}

void CollectPatternNames(const ast::Pattern* pattern,
                         std::vector<std::string>& names) {
  if (!pattern) return;
  if (pattern->kind == ast::Pattern::Kind::Name)
    names.push_back(pattern->name.name.str());
  for (const ast::Pattern* element : pattern->elements)
    CollectPatternNames(element, names);
}

std::vector<std::string> DeclNames(const ast::Decl* decl) {
  std::vector<std::string> names;
  if (auto* dim = llvm::dyn_cast<ast::DimDecl>(decl)) {
    names.push_back(dim->name.name.str());
  } else if (auto* s = llvm::dyn_cast<ast::StructDecl>(decl)) {
    names.push_back(s->name.name.str());
  } else if (auto* fn = llvm::dyn_cast<ast::FnDecl>(decl)) {
    names.push_back(fn->name.name.str());
  } else if (auto* import = llvm::dyn_cast<ast::ImportDecl>(decl)) {
    names.push_back(
        (import->alias ? import->alias->name : import->module.name).str());
  } else if (auto* let = llvm::dyn_cast<ast::LetDecl>(decl)) {
    CollectPatternNames(let->pattern, names);
  }
  return names;
}

bool Overlaps(const std::vector<std::string>& a,
              const std::vector<std::string>& b) {
  for (const std::string& x : a)
    for (const std::string& y : b)
      if (x == y) return true;
  return false;
}

llvm::StringRef TrimInput(llvm::StringRef input) {
  input = input.trim();
  while (input.consume_back(";")) input = input.rtrim();
  return input;
}

}  // namespace

bool IsDefinition(llvm::StringRef input) {
  input = input.ltrim();
  if (input.starts_with("@")) return true;
  llvm::StringRef word = input.take_while([](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
  });
  return word == "fn" || word == "export" || word == "struct" ||
         word == "dim" || word == "let" || word == "import";
}

Session::Session(SessionOptions options, llvm::raw_ostream& out,
                 llvm::raw_ostream& err)
    : options_(std::move(options)), out_(out), err_(err) {}

bool Session::Eval(llvm::StringRef input) {
  if (IsDefinition(input)) {
    // `dim n = 4` and `let x = 1.0` may leave out their final `;`, as at a
    // GHCi prompt; a declaration ending in `}` needs none.
    std::string text = input.rtrim().str();
    llvm::StringRef first = input.ltrim();
    if ((first.starts_with("dim ") || first.starts_with("let ") ||
         first.starts_with("import ")) &&
        !llvm::StringRef(text).ends_with(";"))
      text += ";";
    return AddDefinitions(text, "", input_name_);
  }
  return EvalExpr(input, /*run=*/true, /*print_ir=*/false);
}

bool Session::PrintType(llvm::StringRef expr) {
  return EvalExpr(expr, /*run=*/false, /*print_ir=*/false);
}

bool Session::PrintIr(llvm::StringRef expr) {
  return EvalExpr(expr, /*run=*/false, /*print_ir=*/true);
}

bool Session::EvalExpr(llvm::StringRef input, bool run, bool print_ir) {
  llvm::StringRef expr = TrimInput(input);
  if (expr.empty()) return true;
  std::string prefix = "fn main() { let " + kValueName.str() + " = (\n";
  // 1. Check once to learn the expression's type.
  std::unique_ptr<Compilation> typed = Check(
      Compose(definitions_, prefix, expr, ");\n}\n", input_name_, first_line_),
      options_);
  if (!typed->ok()) {
    ReportDiagnostics(*typed, options_, err_);
    return false;
  }
  const ast::FnDecl* main = FindMain(*typed->checked.program);
  const sema::Type* type = nullptr;
  if (main && main->body && !main->body->stmts.empty()) {
    if (auto* let = llvm::dyn_cast<ast::LetStmt>(main->body->stmts.front()))
      type = let->pattern->type ? let->pattern->type : let->value->type;
  }
  if (!type) {
    err_ << "error: the type of the input is unknown\n";
    return false;
  }
  std::string type_text = sema::FormatType(type);
  bool is_function = type->kind == sema::Type::Kind::Function;
  if (!run && !print_ir) {
    out_ << expr << " : " << type_text << "\n";
    return true;
  }
  if (is_function && !print_ir) {
    out_ << "<function> : " << type_text << "\n";
    return true;
  }
  // 2. Compile the `main` that prints the value and its type.
  std::string suffix = ");\n";
  if (!type->IsUnit() && !is_function)
    suffix += "print(" + kValueName.str() + ", \": " + type_text + "\");\n";
  suffix += "}\n";
  std::unique_ptr<Compilation> compiled = Check(
      Compose(definitions_, prefix, expr, suffix, input_name_, first_line_),
      options_);
  if (!compiled->ok() || !CompileToIr(*compiled, options_, err_)) {
    ReportDiagnostics(*compiled, options_, err_);
    return false;
  }
  if (print_ir) {
    if (const ir::Function* function = compiled->module->FindFunction("main"))
      ir::PrintFunction(*function, out_);
    return true;
  }
  return RunModule(*compiled, options_, out_, err_);
}

bool Session::AddDefinitions(llvm::StringRef input, const std::string& origin,
                             const std::string& file_name) {
  // 1. Parse the input alone: syntax errors name its own lines (as in the
  //    script it came from), and each declaration's text is kept separately.
  unsigned first_line = origin.empty() ? first_line_ : 1;
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources, err_, DiagFormat::Text, options_.color);
  unsigned buffer = sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          std::string(first_line - 1, '\n') + input.str(), file_name),
      llvm::SMLoc());
  ast::Arena arena;
  ast::Module* parsed = ParseModule(sources, buffer, arena, diags);
  if (diags.HasErrors()) return false;
  std::vector<Definition> added;
  bool has_main = false;
  for (const ast::Decl* decl : parsed->decls) {
    Definition definition;
    definition.text =
        llvm::StringRef(decl->span.begin, decl->span.end - decl->span.begin)
            .str();
    definition.names = DeclNames(decl);
    definition.origin = origin;
    if (llvm::isa<ast::FnDecl>(decl) && definition.names.front() == "main") {
      has_main = true;
      continue;
    }
    added.push_back(std::move(definition));
  }
  // 2. A new definition replaces an older one of the same name.
  std::vector<std::string> new_names;
  for (const Definition& definition : added)
    new_names.insert(new_names.end(), definition.names.begin(),
                     definition.names.end());
  std::vector<Definition> kept;
  for (const Definition& definition : definitions_)
    if (!Overlaps(definition.names, new_names)) kept.push_back(definition);
  // 3. Check everything together; print the new `let`s' values (which also
  //    catches their run-time errors), or run a `main` typed interactively.
  std::unique_ptr<Compilation> checked =
      Check(Compose(kept, "", input, "", file_name, first_line), options_);
  if (!checked->ok()) {
    ReportDiagnostics(*checked, options_, err_);
    return false;
  }
  const sema::ModuleInfo* module = checked->checked.program->main_module;
  bool interactive = origin.empty();
  std::string printer;
  if (interactive && !has_main) {
    for (const ast::Decl* decl : module->ast->decls) {
      auto it = module->let_symbols.find(decl);
      if (it == module->let_symbols.end()) continue;
      // Only the input's own lets, not those kept from before.
      for (const sema::Symbol* symbol : it->second) {
        bool is_new = false;
        for (const Definition& definition : added)
          for (const std::string& name : definition.names)
            is_new |= name == symbol->name;
        if (!is_new || !symbol->type) continue;
        std::string type_text = sema::FormatType(symbol->type);
        if (symbol->type->kind == sema::Type::Kind::Function) {
          out_ << symbol->name << " : " << type_text << "\n";
          continue;
        }
        printer += "print(\"" + symbol->name.str() + " =\", " +
                   symbol->name.str() + ", \": " + type_text + "\");\n";
      }
    }
  }
  if (!printer.empty() || (interactive && has_main)) {
    std::string suffix = has_main ? "" : "fn main() {\n" + printer + "}\n";
    std::unique_ptr<Compilation> compiled = Check(
        Compose(kept, "", input, suffix, file_name, first_line), options_);
    if (!compiled->ok() || !CompileToIr(*compiled, options_, err_)) {
      ReportDiagnostics(*compiled, options_, err_);
      return false;
    }
    if (!RunModule(*compiled, options_, out_, err_)) return false;
  }
  // 4. Keep them.
  definitions_ = std::move(kept);
  for (Definition& definition : added)
    definitions_.push_back(std::move(definition));
  return true;
}

bool Session::Load(const std::string& path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file) {
    err_ << "error: cannot read '" << path << "': " << file.getError().message()
         << "\n";
    return false;
  }
  // Imports beside the loaded file are found, as `dlc run` would.
  llvm::SmallString<256> folder = llvm::sys::path::parent_path(path);
  if (folder.empty()) folder = ".";
  if (std::find(options_.stdlib_dirs.begin(), options_.stdlib_dirs.end(),
                folder.str().str()) == options_.stdlib_dirs.end())
    options_.stdlib_dirs.insert(options_.stdlib_dirs.begin(),
                                folder.str().str());
  if (!AddDefinitions((*file)->getBuffer(), path, path)) return false;
  if (std::find(loaded_files_.begin(), loaded_files_.end(), path) ==
      loaded_files_.end())
    loaded_files_.push_back(path);
  return true;
}

bool Session::Reload() {
  if (loaded_files_.empty()) {
    err_ << "error: no file was loaded; use :load FILE\n";
    return false;
  }
  std::vector<Definition> before = definitions_;
  std::vector<Definition> kept;
  for (Definition& definition : definitions_)
    if (definition.origin.empty()) kept.push_back(std::move(definition));
  definitions_ = std::move(kept);
  bool ok = true;
  for (const std::string& path : std::vector<std::string>(loaded_files_))
    ok &= Load(path);
  if (!ok) definitions_ = std::move(before);
  return ok;
}

void Session::PrintDefinitions() {
  for (const Definition& definition : definitions_)
    out_ << definition.text << "\n";
}

void Session::Reset() {
  definitions_.clear();
  loaded_files_.clear();
}

std::vector<std::string> Session::Names() const {
  std::vector<std::string> names;
  for (const Definition& definition : definitions_)
    names.insert(names.end(), definition.names.begin(), definition.names.end());
  return names;
}

}  // namespace delta::repl
