// `dlc test PATH...`: runs the test directives written in comments of .dl
// files (expected output, expected diagnostics, expected run-time errors,
// gradient checks) and reports one line per file (docs/testing.md).
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include <string>
#include <vector>

#include "compiler/driver/gradcheck.h"
#include "compiler/driver/options.h"

namespace delta::driver {

// `dlc test [--interp-only] [-v] PATH...`.
struct TestCommandOptions {
  CommonOptions common;
  std::vector<std::string> paths;  // files, or folders searched for *.dl
  // Run `main` with the interpreter only, not also compiled.
  bool interpret_only = false;
  bool verbose = false;  // a line per gradient check, with its worst error
};

// One diagnostic that a file expects (`// expect-error: E0302` on the
// line that causes it).
struct ExpectedDiagnostic {
  unsigned line = 0;
  std::string code;
  bool warning = false;
};

struct GradcheckDirective {
  unsigned line = 0;
  std::string function;
  bool hvp = false;  // `gradcheck-hvp`
  GradcheckOptions options;
};

// The directives of one file, as written.
struct TestDirectives {
  std::vector<std::string> expected_output;  // `// expect: TEXT`
  std::vector<ExpectedDiagnostic> expected_diagnostics;
  bool expects_warnings = false;
  std::vector<std::string> runtime_errors;  // `// expect-runtime-error: TEXT`
  std::vector<GradcheckDirective> gradchecks;
  // Directives that could not be read, as `line N: why`.
  std::vector<std::string> problems;

  bool empty() const {
    return expected_output.empty() && expected_diagnostics.empty() &&
           runtime_errors.empty() && gradchecks.empty() && problems.empty();
  }
};

// Reads the directives of a file's text.
TestDirectives ParseTestDirectives(llvm::StringRef text);

// Runs the tests; the report goes to `out`, usage errors to `err`. Exit
// status: 0 every file passed, 1 some failed, 2 bad usage.
ExitStatus Test(const TestCommandOptions& options, llvm::raw_ostream& out,
                llvm::raw_ostream& err);

}  // namespace delta::driver
