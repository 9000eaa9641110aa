// `dlc`, the Delta compiler's command line: parses arguments into the
// options of options.h, runs the pipeline, and guarantees the exit statuses
// of cli.md (0 ok, 1 compile errors, 2 bad usage; never a signal).
#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Process.h>
#include <llvm/Support/Signals.h>
#include <llvm/Support/raw_ostream.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "compiler/driver/options.h"
#include "compiler/driver/pipeline.h"

namespace delta::driver {
namespace {

constexpr const char* kVersion =
    "dlc " DELTA_VERSION " (Delta compiler; LLVM " LLVM_VERSION_STRING ")";

// Commands of cli.md that later stages will implement. They are listed in
// --help now so that the command line's shape is visible from day one.
struct PlannedCommand {
  const char* name;
  const char* usage;
};
constexpr PlannedCommand kPlannedCommands[] = {
    {"run",
     "Compile `main` (JIT) and run it: dlc run [--interp] FILE [ARGS...]"},
    {"build",
     "Build an executable, a library or one stage: dlc build FILE -o OUT "
     "[--lib] [--emit=ir|llvm|asm|obj|ptx] [--target=cuda] [-O0..-O3]"},
    {"repl", "Interactive session (also reads a script from stdin)"},
    {"test", "Run the test directives in .dl files: dlc test PATH..."},
    {"fmt", "Format files in place: dlc fmt [--check] FILE..."},
    {"lsp", "Language server on stdin/stdout"},
};

// A crash is a compiler bug; the user still gets status 1 and a stack trace
// rather than a signal. Sanitizer and fuzzing builds keep the signal so that
// tests notice, and so does DLC_KEEP_CRASH_SIGNALS=1 (set by lit).
void ExitAfterCrash(void* /*cookie*/) {
  constexpr char kMessage[] =
      "dlc: internal compiler error; please report it with the input file\n";
  // Only async-signal-safe calls here.
  ssize_t ignored = write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  (void)ignored;
  _exit(kExitCompileError);
}

void InstallCrashHandlers(const char* argv0) {
  // Writing to a closed pipe (`dlc check --types f.dl | head`) must not kill
  // dlc with SIGPIPE; the failed write is noticed at exit instead.
  std::signal(SIGPIPE, SIG_IGN);
#ifndef DELTA_KEEP_CRASH_SIGNALS
  if (llvm::sys::Process::GetEnv("DLC_KEEP_CRASH_SIGNALS")) return;
  llvm::sys::PrintStackTraceOnErrorSignal(argv0);
  llvm::sys::AddSignalHandler(ExitAfterCrash, nullptr);
#else
  (void)argv0;
#endif
}

void AddIfDirectory(const std::string& dir, std::vector<std::string>& dirs) {
  if (dir.empty() || !llvm::sys::fs::is_directory(dir)) return;
  llvm::SmallString<256> real;
  std::string key =
      llvm::sys::fs::real_path(dir, real) ? dir : real.str().str();
  for (const std::string& existing : dirs) {
    if (existing == key) return;
  }
  dirs.push_back(key);
}

// Where `import NAME;` looks after the importing file's folder:
// DELTA_STDLIB_PATH (':'-separated) if set; otherwise the source tree's
// stdlib/ (a build used in place, even if the tree moved along with its
// build/ folder), then the installed share/delta/stdlib.
std::vector<std::string> StdlibDirs(const char* argv0) {
  std::vector<std::string> dirs;
  if (std::optional<std::string> env =
          llvm::sys::Process::GetEnv("DELTA_STDLIB_PATH")) {
    llvm::SmallVector<llvm::StringRef, 4> parts;
    llvm::StringRef(*env).split(parts, ':', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef part : parts) dirs.push_back(part.str());
    return dirs;
  }
  static int anchor;
  std::string exe = llvm::sys::fs::getMainExecutable(argv0, &anchor);
  llvm::SmallString<256> bin_dir = llvm::sys::path::parent_path(exe);
  // build/<preset>/bin/dlc -> <source>/stdlib
  llvm::SmallString<256> tree_dir = bin_dir;
  llvm::sys::path::append(tree_dir, "..", "..", "..", "stdlib");
  llvm::SmallString<256> install_dir = bin_dir;
  llvm::sys::path::append(install_dir, "..", "share", "delta", "stdlib");
  AddIfDirectory(DELTA_SOURCE_STDLIB_DIR, dirs);
  AddIfDirectory(tree_dir.str().str(), dirs);
  AddIfDirectory(install_dir.str().str(), dirs);
  return dirs;
}

// Options shared by every command that reads source.
void AddCommonOptions(CLI::App& command, CommonOptions& common) {
  static const std::map<std::string, DiagFormat> kFormats = {
      {"text", DiagFormat::Text}, {"json", DiagFormat::Json}};
  static const std::map<std::string, ColorMode> kColors = {
      {"auto", ColorMode::Auto},
      {"always", ColorMode::Always},
      {"never", ColorMode::Never}};
  command
      .add_option("--diagnostics", common.diagnostics,
                  "Diagnostics as text or as JSON lines (for tools)")
      ->transform(CLI::CheckedTransformer(kFormats))
      ->option_text("text|json");
  command
      .add_option("--color", common.color,
                  "Colour diagnostics: auto (stderr is a terminal), always, "
                  "never")
      ->transform(CLI::CheckedTransformer(kColors))
      ->option_text("auto|always|never");
}

int Main(int argc, char** argv) {
  InstallCrashHandlers(argv[0]);

  CLI::App app{"dlc: the compiler of Delta, a differentiable array language",
               "dlc"};
  app.set_version_flag("--version", kVersion);
  app.require_subcommand(1);
  app.footer("Run 'dlc COMMAND --help' for the options of a command.");

  CheckCommandOptions check;
  CLI::App* check_command =
      app.add_subcommand("check",
                         "Parse and type-check a file: dlc check "
                         "[--types] FILE");
  check_command->add_option("file", check.input, "The .dl file to check")
      ->required();
  check_command->add_flag(
      "--types", check.print_types,
      "Also print every top-level definition with its type on stdout");
  AddCommonOptions(*check_command, check.common);

  std::vector<CLI::App*> planned;
  for (const PlannedCommand& command : kPlannedCommands) {
    CLI::App* sub = app.add_subcommand(command.name, command.usage);
    // Any arguments are accepted until the command exists, so that the
    // answer is "not implemented" rather than a confusing usage error.
    sub->allow_extras();
    sub->prefix_command();
    planned.push_back(sub);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& success) {
    // --help and --version: the help of the command they follow, on stdout.
    return app.exit(success) == 0 ? kExitSuccess : kExitUsage;
  } catch (const CLI::ParseError& error) {
    std::string where = "dlc";
    for (const CLI::App* sub : app.get_subcommands()) {
      where += " " + sub->get_name();
    }
    std::cerr << "dlc: error: " << error.what() << "\n"
              << "Run '" << where << " --help' for usage.\n";
    return kExitUsage;
  }

  for (const CLI::App* sub : planned) {
    if (sub->parsed()) {
      std::cerr << "dlc: '" << sub->get_name() << "' is not implemented yet\n";
      return kExitUsage;
    }
  }

  check.common.stdlib_dirs = StdlibDirs(argv[0]);
  int status = Check(check, llvm::outs(), llvm::errs());
  llvm::outs().flush();
  if (llvm::outs().has_error()) {
    // Say nothing more: the reader of stdout went away (a closed pipe).
    llvm::outs().clear_error();
    return kExitCompileError;
  }
  return status;
}

}  // namespace
}  // namespace delta::driver

int main(int argc, char** argv) {
  try {
    return delta::driver::Main(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "dlc: internal compiler error: " << error.what() << "\n";
  } catch (...) {
    std::cerr << "dlc: internal compiler error: unknown exception\n";
  }
  return delta::driver::kExitCompileError;
}
