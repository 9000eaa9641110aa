// `dlc test`: reads the directives of each .dl file, compiles it once, and
// checks diagnostics, the output of `main` (interpreted, then compiled in a
// child `dlc run`) and gradients (interpreted, then compiled; see
// docs/testing.md).
#include "compiler/driver/test_runner.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/FileUtilities.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/SourceMgr.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "compiler/codegen/interpreter/interpreter.h"
#include "compiler/compile/compile.h"
#include "compiler/diagnostics/diagnostics.h"
#include "compiler/driver/compiled_gradcheck.h"
#include "compiler/sema/program.h"
#include "compiler/sema/sema.h"

namespace delta::driver {
namespace {

// A compiled run of one test may take a while (1,000-iteration loops), but
// a hung program must not hang the suite.
constexpr unsigned kCompiledRunTimeoutSeconds = 300;

std::string Quote(llvm::StringRef text) { return "\"" + text.str() + "\""; }

llvm::StringRef TrimTrailing(llvm::StringRef text) {
  return text.rtrim(" \t\r");
}

// --- Directives --------------------------------------------------------------

bool IsDiagnosticCode(llvm::StringRef code) {
  if (code.size() != 5 || (code[0] != 'E' && code[0] != 'W')) return false;
  return llvm::all_of(code.drop_front(), llvm::isDigit);
}

// Reads `a,b` as two numbers.
template <typename T>
bool ParsePair(llvm::StringRef text, T& low, T& high) {
  auto [first, second] = text.split(',');
  if constexpr (std::is_floating_point_v<T>) {
    return !first.trim().getAsDouble(low) && !second.trim().getAsDouble(high) &&
           low <= high;
  } else {
    return !first.trim().getAsInteger(10, low) &&
           !second.trim().getAsInteger(10, high) && low <= high;
  }
}

// `NAME key=value...` of a gradcheck directive.
std::optional<std::string> ParseGradcheck(llvm::StringRef text,
                                          GradcheckDirective& directive) {
  llvm::SmallVector<llvm::StringRef, 8> words;
  text.split(words, ' ', -1, /*KeepEmpty=*/false);
  if (words.empty()) return "gradcheck needs a function name";
  directive.function = words[0].str();
  GradcheckOptions& options = directive.options;
  for (llvm::StringRef word : llvm::ArrayRef(words).drop_front()) {
    auto [key, value] = word.split('=');
    bool ok = false;
    if (key == "seed")
      ok = !value.getAsInteger(10, options.seed);
    else if (key == "tol" || key == "rtol")
      ok = !value.getAsDouble(options.rel_tol) && options.rel_tol >= 0;
    else if (key == "atol")
      ok = !value.getAsDouble(options.abs_tol) && options.abs_tol >= 0;
    else if (key == "h")
      ok = !value.getAsDouble(options.step) && options.step > 0;
    else if (key == "range")
      ok = ParsePair(value, options.float_low, options.float_high);
    else if (key == "ints")
      ok = ParsePair(value, options.int_low, options.int_high);
    if (!ok) return "cannot read gradcheck option '" + word.str() + "'";
  }
  return std::nullopt;
}

// Reads the directive that starts `comment` (the text after `//`), if any.
void ParseDirective(llvm::StringRef comment, unsigned line,
                    TestDirectives& directives) {
  comment = comment.ltrim(" \t");
  auto problem = [&](const std::string& why) {
    directives.problems.push_back("line " + std::to_string(line) + ": " + why);
  };
  // Longest keywords first: `expect` is a prefix of the others.
  for (llvm::StringRef keyword :
       {"expect-runtime-error", "expect-warning", "expect-error",
        "gradcheck-hvp", "gradcheck", "expect"}) {
    if (!comment.starts_with(keyword)) continue;
    llvm::StringRef rest = comment.drop_front(keyword.size());
    // `expect-error@+1:` puts the diagnostic on a line nearby.
    int offset = 0;
    bool is_diagnostic =
        keyword == "expect-error" || keyword == "expect-warning";
    if (is_diagnostic && rest.consume_front("@")) {
      size_t colon = rest.find(':');
      llvm::StringRef number = rest.take_front(colon);
      number.consume_front("+");  // getAsInteger reads "-1" but not "+1"
      if (colon == llvm::StringRef::npos || number.getAsInteger(10, offset))
        return problem("cannot read the line offset of " + keyword.str());
      rest = rest.drop_front(colon);
    }
    if (!rest.consume_front(":")) return;  // a word that merely starts so
    rest.consume_front(" ");
    rest = TrimTrailing(rest);
    if (keyword == "expect") {
      directives.expected_output.push_back(rest.str());
    } else if (keyword == "expect-runtime-error") {
      if (rest.trim().empty())
        return problem("expect-runtime-error needs text");
      directives.runtime_errors.push_back(rest.trim().str());
    } else if (is_diagnostic) {
      llvm::SmallVector<llvm::StringRef, 4> codes;
      rest.split(codes, ' ', -1, /*KeepEmpty=*/false);
      if (codes.empty()) return problem(keyword.str() + " needs a code");
      bool warning = keyword == "expect-warning";
      directives.expects_warnings |= warning;
      for (llvm::StringRef code : codes) {
        code = code.trim(",");
        if (!IsDiagnosticCode(code))
          return problem("'" + code.str() + "' is not a diagnostic code");
        directives.expected_diagnostics.push_back(
            {static_cast<unsigned>(static_cast<int>(line) + offset), code.str(),
             warning});
      }
    } else {
      GradcheckDirective gradcheck;
      gradcheck.line = line;
      gradcheck.hvp = keyword == "gradcheck-hvp";
      if (auto why = ParseGradcheck(rest, gradcheck)) return problem(*why);
      directives.gradchecks.push_back(std::move(gradcheck));
    }
    return;
  }
}

// --- Running one file --------------------------------------------------------

std::vector<std::string> SplitLines(llvm::StringRef text) {
  std::vector<std::string> lines;
  if (text.empty()) return lines;
  text.consume_back("\n");
  llvm::SmallVector<llvm::StringRef, 16> parts;
  text.split(parts, '\n');
  for (llvm::StringRef part : parts) lines.push_back(TrimTrailing(part).str());
  return lines;
}

// Compares printed output with the `expect:` lines; empty if they match.
std::string CompareOutput(const std::vector<std::string>& expected,
                          llvm::StringRef output) {
  std::vector<std::string> actual = SplitLines(output);
  for (size_t i = 0; i < std::max(expected.size(), actual.size()); ++i) {
    std::string line = "output line " + std::to_string(i + 1) + ": ";
    if (i >= actual.size())
      return line + "expected " + Quote(expected[i]) + ", got nothing";
    if (i >= expected.size()) return line + "unexpected " + Quote(actual[i]);
    if (TrimTrailing(expected[i]) != actual[i])
      return line + "expected " + Quote(expected[i]) + ", got " +
             Quote(actual[i]);
  }
  return "";
}

// The outcome of running `main` one way.
struct RunOutcome {
  std::string output;
  std::optional<std::string> error;  // a run-time error's message
};

// What went wrong for a file, collected as it runs; the first is reported.
class FileTest {
 public:
  FileTest(std::string path, const TestCommandOptions& options,
           llvm::raw_ostream& out)
      : path_(std::move(path)), options_(options), out_(out) {}

  // Runs the file's tests; returns whether it passed, or nullopt if it has
  // no directives.
  std::optional<bool> Run();

 private:
  void Fail(std::string why) { failures_.push_back(std::move(why)); }
  bool CompileAndCheckDiagnostics();
  void CheckDiagnostics();
  void RunMain();
  std::optional<RunOutcome> RunCompiled();
  void CheckOutcome(const RunOutcome& outcome, const std::string& how);
  void RunGradchecks();
  // Runs (or replays) gradient check `i`; reports a failure or, with -v,
  // the worst error, naming the check after `how`.
  bool ReportGradcheck(size_t i, GradcheckCalls& calls, const std::string& how);

  std::string path_;
  const TestCommandOptions& options_;
  llvm::raw_ostream& out_;
  TestDirectives directives_;
  llvm::SourceMgr sources_;
  std::string diagnostic_text_;
  std::vector<Diagnostic> diagnostics_;
  std::unique_ptr<ir::Module> module_;
  std::vector<std::optional<GradcheckPlan>> plans_;  // per gradcheck
  std::vector<std::string> failures_;
  std::vector<std::string> notes_;  // --verbose lines
};

std::optional<bool> FileTest::Run() {
  auto buffer = llvm::MemoryBuffer::getFile(path_, /*IsText=*/true);
  if (!buffer) {
    out_ << "FAIL " << path_ << ": cannot read: " << buffer.getError().message()
         << "\n";
    return false;
  }
  directives_ = ParseTestDirectives((*buffer)->getBuffer());
  if (directives_.empty()) return std::nullopt;
  for (const std::string& problem : directives_.problems) Fail(problem);
  if (failures_.empty() && CompileAndCheckDiagnostics()) {
    if (!directives_.expected_output.empty() ||
        !directives_.runtime_errors.empty())
      RunMain();
    RunGradchecks();
  }
  if (failures_.empty()) {
    out_ << "PASS " << path_;
    if (options_.interpret_only && (!directives_.expected_output.empty() ||
                                    !directives_.runtime_errors.empty() ||
                                    !directives_.gradchecks.empty()))
      out_ << " (interpreted only)";
    out_ << "\n";
  } else {
    out_ << "FAIL " << path_ << ": " << failures_.front();
    if (failures_.size() > 1)
      out_ << " (and " << failures_.size() - 1 << " more)";
    out_ << "\n";
    if (options_.verbose)
      for (size_t i = 1; i < failures_.size(); ++i)
        out_ << "  " << failures_[i] << "\n";
  }
  for (const std::string& note : notes_) out_ << "  " << note << "\n";
  return failures_.empty();
}

// Checks the file and runs the front half without optimizing (the
// interpreter and gradient checks see the IR as differentiated); returns
// whether the program compiled (a file that expects errors passes or fails
// right here).
bool FileTest::CompileAndCheckDiagnostics() {
  llvm::raw_string_ostream diagnostic_stream(diagnostic_text_);
  DiagnosticEngine diags(sources_, diagnostic_stream, DiagFormat::Text,
                         /*color=*/false);
  sema::CheckOptions check_options;
  check_options.stdlib_dirs = options_.common.stdlib_dirs;
  sema::CheckResult checked =
      sema::CheckFile(path_, sources_, diags, check_options);
  bool ok = checked.program && checked.ok && !diags.HasErrors();
  if (ok) {
    // Lowering starts from main and the export fns; a checked function
    // must be lowered even if nothing there calls it.
    std::set<std::string> checked_names;
    for (const GradcheckDirective& gradcheck : directives_.gradchecks)
      checked_names.insert(gradcheck.function);
    for (ast::Decl* decl : checked.program->main_module->ast->decls)
      if (auto* fn = llvm::dyn_cast<ast::FnDecl>(decl);
          fn && checked_names.count(fn->name.name.str()))
        fn->is_export = true;
    compile::CompileOptions compile_options;
    compile_options.optimize = false;
    // The derivative functions of the gradient checks, for AD to fill.
    compile_options.after_lower = [&](ir::Module& module) {
      for (const GradcheckDirective& gradcheck : directives_.gradchecks) {
        auto plan = PlanGradcheck(module, gradcheck.function, gradcheck.hvp);
        if (!plan) {
          Fail("gradcheck at line " + std::to_string(gradcheck.line) + ": " +
               llvm::toString(plan.takeError()));
          plans_.push_back(std::nullopt);
        } else {
          plans_.push_back(*plan);
        }
      }
    };
    module_ = compile::Compile(*checked.program, diags, compile_options);
    ok = module_ != nullptr;
  }
  diagnostics_ = diags.emitted();
  CheckDiagnostics();
  bool expects_errors = llvm::any_of(
      directives_.expected_diagnostics,
      [](const ExpectedDiagnostic& expected) { return !expected.warning; });
  return ok && !expects_errors;
}

// Every expected diagnostic must be reported at its line, and every error
// reported must be expected (warnings too, once the file expects any).
void FileTest::CheckDiagnostics() {
  using Key = std::tuple<unsigned, std::string, bool>;
  std::multiset<Key> expected;
  for (const ExpectedDiagnostic& diagnostic : directives_.expected_diagnostics)
    expected.insert({diagnostic.line, diagnostic.code, diagnostic.warning});
  unsigned main_file = sources_.getMainFileID();
  for (const Diagnostic& diagnostic : diagnostics_) {
    Severity severity = DiagSeverity(diagnostic.kind);
    if (severity == Severity::Note) continue;
    bool warning = severity == Severity::Warning;
    unsigned line = 0;
    if (diagnostic.span.IsValid() &&
        sources_.FindBufferContainingLoc(diagnostic.span.Start()) == main_file)
      line = sources_.FindLineNumber(diagnostic.span.Start(), main_file);
    std::string code = DiagCode(diagnostic.kind).str();
    auto it = expected.find({line, code, warning});
    if (it != expected.end()) {
      expected.erase(it);
      continue;
    }
    if (warning && !directives_.expects_warnings) continue;
    std::string where = line ? "at line " + std::to_string(line)
                             : std::string("without a line");
    Fail(std::string(warning ? "unexpected warning " : "unexpected error ") +
         code + " " + where + ": " + diagnostic.message);
  }
  for (const auto& [line, code, warning] : expected)
    Fail(std::string("expected ") + (warning ? "warning " : "error ") + code +
         " at line " + std::to_string(line) + " was not reported");
}

void FileTest::CheckOutcome(const RunOutcome& outcome, const std::string& how) {
  std::string difference =
      CompareOutput(directives_.expected_output, outcome.output);
  if (!difference.empty()) Fail(how + difference);
  if (directives_.runtime_errors.empty()) {
    if (outcome.error) Fail(how + "run-time error: " + *outcome.error);
    return;
  }
  if (!outcome.error) {
    Fail(how + "expected a run-time error containing " +
         Quote(directives_.runtime_errors.front()) + ", but main finished");
    return;
  }
  for (const std::string& text : directives_.runtime_errors)
    if (outcome.error->find(text) == std::string::npos)
      Fail(how + "the run-time error " + Quote(TrimTrailing(*outcome.error)) +
           " does not contain " + Quote(text));
}

void FileTest::RunMain() {
  const ir::Function* main = module_->FindFunction("main");
  if (!main) {
    Fail("the file has expect directives but no fn main()");
    return;
  }
  RunOutcome interpreted;
  {
    llvm::raw_string_ostream output(interpreted.output);
    interpreter::Interpreter interpreter(*module_, output);
    auto results = interpreter.Call(*main, {});
    if (!results) interpreted.error = llvm::toString(results.takeError());
  }
  CheckOutcome(interpreted, "interpreted: ");
  if (options_.interpret_only) return;
  if (std::optional<RunOutcome> compiled = RunCompiled())
    CheckOutcome(*compiled, "compiled: ");
}

// Compiled code prints through C stdio and a run-time error exits the
// process, so the compiled run is a child `dlc run`.
std::optional<RunOutcome> FileTest::RunCompiled() {
  static int anchor;
  std::string dlc = llvm::sys::fs::getMainExecutable(nullptr, &anchor);
  llvm::SmallString<128> stdout_path, stderr_path;
  if (llvm::sys::fs::createTemporaryFile("dlc-test", "out", stdout_path) ||
      llvm::sys::fs::createTemporaryFile("dlc-test", "err", stderr_path)) {
    Fail("compiled: cannot create a temporary file");
    return std::nullopt;
  }
  llvm::FileRemover remove_stdout(stdout_path), remove_stderr(stderr_path);
  std::vector<llvm::StringRef> args = {dlc, "run", "--color=never", path_};
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(""),
                                                llvm::StringRef(stdout_path),
                                                llvm::StringRef(stderr_path)};
  std::string message;
  bool failed_to_run = false;
  int status = llvm::sys::ExecuteAndWait(
      dlc, args, std::nullopt, redirects, kCompiledRunTimeoutSeconds,
      /*MemoryLimit=*/0, &message, &failed_to_run);
  auto read = [](llvm::StringRef file) {
    auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/true);
    return buffer ? (*buffer)->getBuffer().str() : std::string();
  };
  RunOutcome outcome;
  outcome.output = read(stdout_path);
  std::string errors = read(stderr_path);
  if (failed_to_run || status < 0) {
    Fail("compiled: dlc run " +
         std::string(status == -2 ? "crashed or timed out" : "did not run") +
         (message.empty() ? "" : ": " + message) +
         (errors.empty() ? "" : ": " + TrimTrailing(errors).str()));
    return std::nullopt;
  }
  if (status != 0)
    outcome.error = errors.empty() ? "exit status " + std::to_string(status)
                                   : TrimTrailing(errors).str();
  return outcome;
}

// Each check runs with the interpreter, then again on what compiled code
// computes for the derivative evaluations it made (Note [Compiled gradient
// checks]).
void FileTest::RunGradchecks() {
  size_t count = std::min(directives_.gradchecks.size(), plans_.size());
  std::vector<GradcheckCalls> recorded(count);
  std::vector<bool> passed(count, false);
  for (size_t i = 0; i < count; ++i) {
    if (plans_[i]) passed[i] = ReportGradcheck(i, recorded[i], "");
    if (!passed[i]) recorded[i].calls.clear();  // not checked again
  }
  if (options_.interpret_only || !llvm::is_contained(passed, true)) return;
  if (llvm::Error error =
          RecomputeDerivativesCompiled(*module_, recorded, /*opt_level=*/2)) {
    Fail("compiled: gradient checks: " + llvm::toString(std::move(error)));
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    if (!passed[i]) continue;
    recorded[i].replay = true;
    ReportGradcheck(i, recorded[i], "compiled: ");
  }
}

bool FileTest::ReportGradcheck(size_t i, GradcheckCalls& calls,
                               const std::string& how) {
  const GradcheckDirective& directive = directives_.gradchecks[i];
  GradcheckReport report =
      RunGradcheck(*module_, *plans_[i], directive.options, calls);
  std::string name = how + (directive.hvp ? "gradcheck-hvp " : "gradcheck ") +
                     directive.function;
  char worst[32];
  std::snprintf(worst, sizeof(worst), "%.3g", report.worst_error);
  if (!report.ok)
    Fail(name + " (line " + std::to_string(directive.line) +
         "): " + report.failure);
  else if (options_.verbose)
    notes_.push_back(name + ": " + std::to_string(report.compared) +
                     " values, worst error " + worst);
  return report.ok;
}

// The .dl files under `path` (itself, if it is a file), sorted; folders
// named Inputs are skipped.
bool CollectFiles(const std::string& path, std::vector<std::string>& files) {
  if (!llvm::sys::fs::is_directory(path)) {
    if (!llvm::sys::fs::exists(path)) return false;
    files.push_back(path);
    return true;
  }
  std::vector<std::string> found;
  std::error_code error;
  for (llvm::sys::fs::recursive_directory_iterator it(path, error), end;
       it != end && !error; it.increment(error)) {
    bool is_directory = llvm::sys::fs::is_directory(it->path());
    // As in lit, `Inputs` folders hold files that tests use, not tests.
    if (is_directory && llvm::sys::path::filename(it->path()) == "Inputs")
      it.no_push();
    else if (!is_directory && llvm::sys::path::extension(it->path()) == ".dl")
      found.push_back(it->path());
  }
  std::sort(found.begin(), found.end());
  files.insert(files.end(), found.begin(), found.end());
  return !error;
}

}  // namespace

TestDirectives ParseTestDirectives(llvm::StringRef text) {
  TestDirectives directives;
  llvm::SmallVector<llvm::StringRef, 64> lines;
  text.split(lines, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    llvm::StringRef line = lines[i];
    // A directive may follow code on its line: `x[feat: 9]  // expect-...`.
    for (size_t at = line.find("//"); at != llvm::StringRef::npos;
         at = line.find("//", at + 2)) {
      size_t before = directives.expected_output.size() +
                      directives.expected_diagnostics.size() +
                      directives.runtime_errors.size() +
                      directives.gradchecks.size() + directives.problems.size();
      ParseDirective(line.drop_front(at + 2), static_cast<unsigned>(i + 1),
                     directives);
      size_t after = directives.expected_output.size() +
                     directives.expected_diagnostics.size() +
                     directives.runtime_errors.size() +
                     directives.gradchecks.size() + directives.problems.size();
      if (after != before) break;
    }
  }
  return directives;
}

ExitStatus Test(const TestCommandOptions& options, llvm::raw_ostream& out,
                llvm::raw_ostream& err) {
  if (options.paths.empty()) {
    err << "dlc test: error: no files or folders to test\n";
    return kExitUsage;
  }
  std::vector<std::string> files;
  for (const std::string& path : options.paths) {
    if (!CollectFiles(path, files)) {
      err << "dlc test: error: cannot read '" << path << "'\n";
      return kExitUsage;
    }
  }
  int passed = 0, failed = 0;
  for (const std::string& file : files) {
    std::optional<bool> result = FileTest(file, options, out).Run();
    if (result) ++(*result ? passed : failed);
    out.flush();
  }
  out << passed << " passed, " << failed << " failed\n";
  out.flush();
  return failed ? kExitCompileError : kExitSuccess;
}

}  // namespace delta::driver
