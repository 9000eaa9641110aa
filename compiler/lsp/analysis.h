// What the language server knows about one document: its checked program,
// and the answers to hover, definition and completion at a position.
#pragma once

#include <llvm/Support/SourceMgr.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/base/span.h"
#include "compiler/diagnostics/diagnostics.h"
#include "compiler/sema/sema.h"

namespace delta::lsp {

// LSP positions are zero-based lines and characters (bytes here: Delta
// source is ASCII outside comments and strings).
struct Position {
  int line = 0;
  int character = 0;
};

struct Range {
  Position start;
  Position end;
};

struct Location {
  std::string path;  // a file path; the document's own path for itself
  Range range;
};

struct DiagnosticInfo {
  Range range;
  int severity = 1;  // LSP: 1 error, 2 warning, 3 information
  std::string code;
  std::string message;
};

// The call being typed, for textDocument/signatureHelp.
struct SignatureInfo {
  std::string label;                // fn square(x: f32) -> f32
  std::vector<std::string> params;  // x: f32
  int active = 0;                   // the argument the cursor is in
  std::string docs;
};

// A declaration of the document, for textDocument/documentSymbol.
struct SymbolInfo {
  std::string name;
  int kind = 0;        // LSP SymbolKind
  std::string detail;  // its signature or type
  Range range;         // the whole declaration
  Range selection;     // its name
};

struct CompletionInfo {
  std::string label;
  int kind = 6;  // LSP CompletionItemKind
  std::string detail;
};

// One analysis of a document's text; rebuilt on every change.
class Analysis {
 public:
  Analysis(std::string path, std::string text,
           const std::vector<std::string>& stdlib_dirs);

  const std::vector<DiagnosticInfo>& diagnostics() const {
    return diagnostics_;
  }
  // Markdown: the type (with dims) of the innermost expression or name at
  // `position`.
  std::optional<std::string> Hover(Position position) const;
  std::optional<Location> Definition(Position position) const;
  // Every name in the document that refers to the declaration of the name
  // at `position`, the declaration included (references and rename).
  std::vector<Location> References(Position position) const;
  std::vector<CompletionInfo> Completion(Position position) const;
  // The function whose call `text` (the document as typed now, which may
  // not parse) has open at `position`, looked up in this analysis's
  // program (the last one that checked).
  std::optional<SignatureInfo> Signature(const std::string& text,
                                         Position position) const;
  // Whether the text parsed and got as far as a program with its names.
  bool has_program() const;
  const std::string& text() const { return text_; }
  // The module's declarations, in order.
  std::vector<SymbolInfo> Symbols() const;
  // The document in `dlc fmt`'s style, or nothing if it has syntax errors.
  std::optional<std::string> Formatted() const;
  // The range of the whole document, for an edit that replaces it.
  Range WholeDocument() const;

 private:
  const char* PointerAt(Position position) const;
  // The `///` comment above the declaration whose name is at `declaration`.
  std::string DocComment(Span declaration) const;
  std::optional<Location> LocationOf(Span span) const;

  std::string path_;
  std::string text_;
  llvm::SourceMgr sources_;
  DiagnosticEngine diags_{sources_, llvm::nulls()};
  sema::CheckResult checked_;
  const char* buffer_start_ = nullptr;  // the document's buffer in sources_
  size_t buffer_size_ = 0;
  std::vector<DiagnosticInfo> diagnostics_;
};

}  // namespace delta::lsp
