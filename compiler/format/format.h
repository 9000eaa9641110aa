// `dlc fmt`: prints a Delta module in the one canonical style, keeping its
// comments.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include <optional>
#include <string>
#include <vector>

#include "compiler/diagnostics/diagnostics.h"

namespace delta::format {

// The line width `dlc fmt` keeps to unless `--width` says otherwise.
constexpr size_t kDefaultWidth = 100;

// The canonical form of `text` (a whole module named `name`) for lines of
// `width` columns, or nothing if it has syntax errors, which are reported
// to `err`.
std::optional<std::string> FormatSource(
    llvm::StringRef text, llvm::StringRef name, llvm::raw_ostream& err,
    DiagFormat diagnostics = DiagFormat::Text, bool color = false,
    size_t width = kDefaultWidth);

struct FormatOptions {
  std::vector<std::string> files;
  bool check = false;  // report unformatted files instead of rewriting them
  // Change nothing; fail unless formatting keeps the AST and is idempotent
  // (the test of the formatter itself).
  bool verify = false;
  size_t width = kDefaultWidth;  // columns a line may use where it can
  DiagFormat diagnostics = DiagFormat::Text;
  bool color = false;
};

// Formats the files in place (or checks them). Returns 0, or 1 if a file
// could not be read or parsed, or with `check`, is not formatted.
int FormatFiles(const FormatOptions& options, llvm::raw_ostream& out,
                llvm::raw_ostream& err);

}  // namespace delta::format
