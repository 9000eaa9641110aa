// The stages of each `dlc` command, in order. Later stages (lowering to IR,
// transformations, code generation) are added here as they exist.
#include "compiler/driver/pipeline.h"

#include <llvm/Support/Process.h>
#include <llvm/Support/SourceMgr.h>

#include "compiler/diagnostics/diagnostics.h"
#include "compiler/sema/sema.h"

namespace delta::driver {

namespace {

bool UseColor(ColorMode mode) {
  switch (mode) {
    case ColorMode::Always:
      return true;
    case ColorMode::Never:
      return false;
    case ColorMode::Auto:
      // NO_COLOR (no-color.org) is the users' common way to opt out.
      return llvm::sys::Process::StandardErrHasColors() &&
             !llvm::sys::Process::GetEnv("NO_COLOR");
  }
  return false;
}

}  // namespace

ExitStatus Check(const CheckCommandOptions& options, llvm::raw_ostream& out,
                 llvm::raw_ostream& err) {
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources, err, options.common.diagnostics,
                         UseColor(options.common.color));

  // 1. Read, parse and check the file and its imports (sema reads the files
  //    itself so that the main file and imports take the same path).
  sema::CheckOptions check_options;
  check_options.stdlib_dirs = options.common.stdlib_dirs;
  sema::CheckResult checked =
      sema::CheckFile(options.input, sources, diags, check_options);
  if (checked.program == nullptr && !diags.HasErrors()) {
    // The contract is "exit 1 with a diagnostic", whichever layer noticed.
    diags.Report(DiagKind::CannotReadFile, Span{},
                 "cannot read '" + options.input + "'");
  }
  if (!checked.ok || diags.HasErrors()) return kExitCompileError;

  // 2. With --types, the typed top-level definitions.
  if (options.print_types) {
    sema::PrintTypesOptions print_options;
    print_options.locals = options.print_locals;
    sema::PrintTypes(*checked.program, out, print_options);
  }
  out.flush();
  return kExitSuccess;
}

}  // namespace delta::driver
