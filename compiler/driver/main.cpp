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
#include <string>
#include <vector>

#include "compiler/driver/compile_cache.h"
#include "compiler/driver/options.h"
#include "compiler/driver/pipeline.h"
#include "compiler/driver/test_runner.h"
#include "compiler/format/format.h"
#include "compiler/lsp/server.h"
#include "compiler/repl/repl.h"
#include "compiler/transforms/pass_manager.h"

namespace delta::driver {
namespace {

constexpr const char* kVersion =
    "dlc " DELTA_VERSION " (Delta compiler; LLVM " LLVM_VERSION_STRING ")";

// A crash is a compiler bug; the user still gets status 1 and a stack trace
// rather than a signal. Sanitizer and fuzzing builds keep the signal so that
// tests notice, and so does DLC_KEEP_CRASH_SIGNALS=1 (set by lit).
#ifdef DELTA_KEEP_CRASH_SIGNALS
constexpr bool kKeepCrashSignals = true;
#else
constexpr bool kKeepCrashSignals = false;
#endif

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
  if (kKeepCrashSignals ||
      llvm::sys::Process::GetEnv("DLC_KEEP_CRASH_SIGNALS")) {
    return;
  }
  llvm::sys::PrintStackTraceOnErrorSignal(argv0);
  llvm::sys::AddSignalHandler(ExitAfterCrash, nullptr);
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

// The spellings of the options shared by every command that reads source;
// they are turned into CommonOptions once parsing succeeded.
struct CommonSpellings {
  std::string diagnostics = "text";
  std::string color = "auto";
};

void AddCommonOptions(CLI::App& command, CommonSpellings& spellings) {
  command
      .add_option("--diagnostics", spellings.diagnostics,
                  "Diagnostics as text or as JSON lines (for tools)")
      ->check(CLI::IsMember({"text", "json"}))
      ->option_text("text|json");
  command
      .add_option("--color", spellings.color,
                  "Colour diagnostics: auto (stderr is a terminal), always, "
                  "never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->option_text("auto|always|never");
}

// The optimizer's debugging aids, for the commands that compile.
void AddOptimizerOptions(CLI::App& command, OptimizerOptions& options) {
  std::vector<std::string> names = {"all"};
  for (const transforms::PassInfo& pass : transforms::AllPasses())
    names.push_back(pass.cli_name.str());
  command
      .add_option("--print-after", options.print_after,
                  "Print the IR on stderr after each run of the pass (or all)")
      ->check(CLI::IsMember(names))
      ->allow_extra_args(false)
      ->option_text("NAME|all");
  command.add_flag("--time-passes", options.time_passes,
                   "Print how long each pass took on stderr");
  command.add_flag("--verify-each", options.verify_each,
                   "Verify the IR after every pass (always on in builds "
                   "with assertions)");
}

void AddCacheOption(CLI::App& command, bool& no_cache) {
  command.add_flag("--no-cache", no_cache,
                   "Compile even if the compilation cache holds the result, "
                   "and store nothing");
}

// The cache's folder and bound from the environment (compile_cache.h).
CacheOptions ToCacheOptions(bool no_cache) {
  CacheOptions cache;
  if (!no_cache) cache.dir = DefaultCacheDir();
  cache.max_bytes = CacheMaxBytes();
  return cache;
}

// Whether diagnostics on stderr are coloured (as pipeline.cpp decides).
bool StderrColor(ColorMode mode) {
  if (mode != ColorMode::Auto) return mode == ColorMode::Always;
  return llvm::sys::Process::StandardErrHasColors() &&
         !llvm::sys::Process::GetEnv("NO_COLOR");
}

CommonOptions ToCommonOptions(const CommonSpellings& spellings,
                              const char* argv0) {
  CommonOptions common;
  common.diagnostics =
      spellings.diagnostics == "json" ? DiagFormat::Json : DiagFormat::Text;
  common.color = spellings.color == "always"  ? ColorMode::Always
                 : spellings.color == "never" ? ColorMode::Never
                                              : ColorMode::Auto;
  common.stdlib_dirs = StdlibDirs(argv0);
  return common;
}

int Main(int argc, char** argv) {
  InstallCrashHandlers(argv[0]);

  // `dlc` alone on a terminal is the REPL (cli.md); elsewhere it is usage.
  char repl_word[] = "repl";
  char* repl_argv[] = {argv[0], repl_word, nullptr};
  if (argc == 1 && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) {
    argc = 2;
    argv = repl_argv;
  }

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
  check_command
      ->add_flag("--locals", check.print_locals,
                 "With --types, also print each function's local bindings")
      ->needs("--types");
  CommonSpellings check_spellings;
  AddCommonOptions(*check_command, check_spellings);

  RunCommandOptions run;
  CLI::App* run_command = app.add_subcommand(
      "run",
      "Compile `main` (JIT) and run it: dlc run [--interp] FILE [ARGS...]");
  run_command->add_option("file", run.input, "The .dl file to run")->required();
  run_command->add_option(
      "args", run.args,
      "Values of main's parameters (docs/language/io.md); -- before them "
      "if one starts with -");
  run_command->add_flag("--interp", run.interpret,
                        "Run with the IR interpreter instead of native code");
  run_command->add_option("--target", run.target, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  run_command
      ->add_option("--gpu-min-work", run.gpu_min_work,
                   "--target=cuda: ops of constant size with less work run on "
                   "the host (0: all on the GPU)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  run_command->add_option("--gpu-arch", run.gpu_arch,
                          "GPU architecture for --target=cuda");
  run_command->add_option("-O", run.opt_level, "Optimization level 0-3")
      ->check(CLI::Range(0, 3));
  AddOptimizerOptions(*run_command, run.optimizer);
  bool run_no_cache = false;
  AddCacheOption(*run_command, run_no_cache);
  CommonSpellings run_spellings;
  AddCommonOptions(*run_command, run_spellings);

  BuildCommandOptions build;
  std::string emit = "exe";
  bool build_lib = false;
  CLI::App* build_command = app.add_subcommand(
      "build",
      "Build an executable, a library or one stage: dlc build FILE -o OUT "
      "[--lib] [--emit=ir|llvm|asm|obj|ptx] [--target=cuda] [-O0..-O3]");
  build_command->add_option("file", build.input, "The .dl file to build")
      ->required();
  build_command->add_option("-o", build.output, "Output path ('-': stdout)")
      ->required();
  CLI::Option* lib_flag = build_command->add_flag(
      "--lib", build_lib, "A shared and static library with a C header");
  // A library is a folder of three files, a stage one file: not both.
  build_command->add_option("--emit", emit, "The stage to write")
      ->check(CLI::IsMember({"exe", "ir", "llvm", "asm", "obj", "ptx"}))
      ->option_text("ir|llvm|asm|obj|ptx")
      ->excludes(lib_flag);
  build_command->add_option("--target", build.target, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  build_command
      ->add_option("--gpu-min-work", build.gpu_min_work,
                   "--target=cuda: ops of constant size with less work run on "
                   "the host (0: all on the GPU)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  build_command->add_option("--gpu-arch", build.gpu_arch,
                            "GPU architecture for --target=cuda");
  build_command->add_option("-O", build.opt_level, "Optimization level 0-3")
      ->check(CLI::Range(0, 3));
  AddOptimizerOptions(*build_command, build.optimizer);
  bool build_no_cache = false;
  AddCacheOption(*build_command, build_no_cache);
  CommonSpellings build_spellings;
  AddCommonOptions(*build_command, build_spellings);

  TestCommandOptions test;
  CLI::App* test_command = app.add_subcommand(
      "test",
      "Run the test directives in .dl files (expected output, expected "
      "errors, gradient checks): dlc test [--interp-only] [-v] PATH...");
  test_command
      ->add_option("paths", test.paths, "Files, or folders searched for *.dl")
      ->required();
  test_command->add_flag("--interp-only", test.interpret_only,
                         "Run main with the interpreter only, not compiled");
  test_command->add_flag("-v,--verbose", test.verbose,
                         "A line per gradient check, with its worst error");
  CommonSpellings test_spellings;
  AddCommonOptions(*test_command, test_spellings);

  repl::SessionOptions repl_options;
  CLI::App* repl_command = app.add_subcommand(
      "repl",
      "Interactive session; also reads a script from stdin (also: dlc with "
      "no arguments on a terminal): dlc repl [--interp] [-O0..-O3]");
  repl_command->add_flag("--interp", repl_options.interpret,
                         "Evaluate with the IR interpreter instead of the JIT");
  repl_command
      ->add_option("-O", repl_options.opt_level,
                   "Optimization level 0-3 (default 1)")
      ->check(CLI::Range(0, 3));
  CommonSpellings repl_spellings;
  AddCommonOptions(*repl_command, repl_spellings);

  format::FormatOptions fmt_options;
  CLI::App* fmt_command = app.add_subcommand(
      "fmt", "Format files in place: dlc fmt [--check] [--width N] FILE...");
  fmt_command->add_option("files", fmt_options.files, "The .dl files")
      ->required();
  fmt_command->add_flag("--check", fmt_options.check,
                        "Change nothing; exit 1 if a file is not formatted");
  fmt_command->add_flag("--verify", fmt_options.verify,
                        "Change nothing; exit 1 unless formatting keeps the "
                        "AST and is idempotent (tests the formatter)");
  fmt_command
      ->add_option("--width", fmt_options.width,
                   "Line width to keep to (default 100)")
      ->check(CLI::Range(size_t(20), size_t(1000)));
  CommonSpellings fmt_spellings;
  AddCommonOptions(*fmt_command, fmt_spellings);

  CLI::App* lsp_command = app.add_subcommand(
      "lsp", "Language server (LSP, JSON-RPC) on stdin/stdout");

  // CLI11 would call an unknown command or option "a missing subcommand".
  auto is_command = [&app](llvm::StringRef name) {
    return !app.get_subcommands([name](const CLI::App* sub) {
                 return sub->get_name() == name;
               })
                .empty();
  };
  if (argc > 1) {
    llvm::StringRef first = argv[1];
    bool is_option = first.starts_with("-");
    if (is_option ? first != "-h" && first != "--help" && first != "--version"
                  : !is_command(first)) {
      std::cerr << "dlc: error: unknown " << (is_option ? "option" : "command")
                << " '" << argv[1] << "'\n"
                << "Run 'dlc --help' for usage.\n";
      return kExitUsage;
    }
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

  int status = kExitSuccess;
  if (repl_command->parsed()) {
    CommonOptions common = ToCommonOptions(repl_spellings, argv[0]);
    // `import NAME;` typed in the session looks in the current folder first.
    repl_options.stdlib_dirs = common.stdlib_dirs;
    repl_options.stdlib_dirs.insert(repl_options.stdlib_dirs.begin(), ".");
    repl_options.color = StderrColor(common.color);
    status = repl::RunRepl(repl_options, llvm::outs(), llvm::errs());
  } else if (fmt_command->parsed()) {
    CommonOptions common = ToCommonOptions(fmt_spellings, argv[0]);
    fmt_options.diagnostics = common.diagnostics;
    fmt_options.color = StderrColor(common.color);
    status = format::FormatFiles(fmt_options, llvm::outs(), llvm::errs());
  } else if (lsp_command->parsed()) {
    lsp::ServerOptions lsp_options;
    lsp_options.stdlib_dirs = StdlibDirs(argv[0]);
    status = lsp::RunServer(std::cin, std::cout, lsp_options);
  } else if (run_command->parsed()) {
    run.common = ToCommonOptions(run_spellings, argv[0]);
    run.cache = ToCacheOptions(run_no_cache);
    status = Run(run, llvm::outs(), llvm::errs());
  } else if (test_command->parsed()) {
    test.common = ToCommonOptions(test_spellings, argv[0]);
    status = Test(test, llvm::outs(), llvm::errs());
  } else if (build_command->parsed()) {
    build.common = ToCommonOptions(build_spellings, argv[0]);
    build.cache = ToCacheOptions(build_no_cache);
    build.emit = build_lib        ? Emit::Library
                 : emit == "ir"   ? Emit::Ir
                 : emit == "llvm" ? Emit::Llvm
                 : emit == "asm"  ? Emit::Asm
                 : emit == "obj"  ? Emit::Obj
                 : emit == "ptx"  ? Emit::Ptx
                                  : Emit::Executable;
    status = Build(build, llvm::outs(), llvm::errs());
  } else {
    check.common = ToCommonOptions(check_spellings, argv[0]);
    status = Check(check, llvm::outs(), llvm::errs());
  }
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
