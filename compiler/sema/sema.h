// Entry point of semantic analysis: loads a module and its imports, resolves
// names and type-checks everything, leaving a fully typed AST.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/diagnostics/diagnostics.h"

namespace delta::sema {

struct CheckOptions {
  // Folders searched for `import NAME;` after the importing file's folder.
  std::vector<std::string> stdlib_dirs;
};

class Program;

// The checked program. Owns the ASTs and every type; destroyed last.
struct CheckResult {
  std::shared_ptr<Program> program;  // null only if the file cannot be read
  bool ok = false;                   // no errors were reported
};

// Reads `path`, parses and checks it and every module it imports.
CheckResult CheckFile(llvm::StringRef path, llvm::SourceMgr& sources,
                      DiagnosticEngine& diags, const CheckOptions& options);

// The same for source text held in memory (tests, fuzzing, the REPL).
CheckResult CheckSource(llvm::StringRef text, llvm::StringRef name,
                        llvm::SourceMgr& sources, DiagnosticEngine& diags,
                        const CheckOptions& options);

struct PrintTypesOptions {
  bool locals = false;  // also each function's local bindings, indented
};

// Writes every top-level definition of the main module with its type, one
// per line, for `dlc check --types`.
void PrintTypes(const Program& program, llvm::raw_ostream& out,
                const PrintTypesOptions& options = {});

}  // namespace delta::sema
