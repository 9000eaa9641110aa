// The diagnostic engine: every user-facing error and warning goes through it,
// rendered as text (file:line:col, source line, caret) or as JSON lines.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <string>
#include <vector>

#include "compiler/base/span.h"

namespace delta {

enum class DiagKind {
#define DIAG(Name, Code, Severity, Summary) Name,
#include "compiler/diagnostics/diagnostic_kinds.def"
};

enum class Severity { Error, Warning, Note };

// The stable code ("E0302") and default severity of a kind.
llvm::StringRef DiagCode(DiagKind kind);
llvm::StringRef DiagName(DiagKind kind);
Severity DiagSeverity(DiagKind kind);

struct FixIt {
  Span span;  // the text to replace (empty span: insert)
  std::string replacement;
};

struct DiagNote {
  Span span;  // may be invalid: a note without a location
  std::string message;
};

struct Diagnostic {
  DiagKind kind;
  Span span;
  std::string message;
  std::vector<DiagNote> notes;
  std::vector<FixIt> fixits;
};

enum class DiagFormat { Text, Json };

class DiagnosticEngine;

// Collects notes and fix-its, and emits the diagnostic when destroyed:
//   diags.Report(DiagKind::DimsDiffer, span, "dims differ: ...")
//       .Note(other, "declared here");
class DiagBuilder {
 public:
  DiagBuilder(DiagnosticEngine* engine, Diagnostic diagnostic)
      : engine_(engine), diagnostic_(std::move(diagnostic)) {}
  DiagBuilder(DiagBuilder&& other) noexcept
      : engine_(other.engine_), diagnostic_(std::move(other.diagnostic_)) {
    other.engine_ = nullptr;
  }
  DiagBuilder(const DiagBuilder&) = delete;
  DiagBuilder& operator=(const DiagBuilder&) = delete;
  DiagBuilder& operator=(DiagBuilder&&) = delete;
  ~DiagBuilder();

  DiagBuilder& Note(Span span, std::string message);
  DiagBuilder& Fix(Span span, std::string replacement);

 private:
  DiagnosticEngine* engine_;
  Diagnostic diagnostic_;
};

class DiagnosticEngine {
 public:
  // `sources` owns the buffers that spans point into.
  DiagnosticEngine(llvm::SourceMgr& sources, llvm::raw_ostream& out,
                   DiagFormat format = DiagFormat::Text, bool color = false);

  DiagBuilder Report(DiagKind kind, Span span, std::string message) {
    return DiagBuilder(this,
                       Diagnostic{kind, span, std::move(message), {}, {}});
  }

  void Emit(const Diagnostic& diagnostic);

  unsigned error_count() const { return error_count_; }
  unsigned warning_count() const { return warning_count_; }
  bool HasErrors() const { return error_count_ > 0; }

  // Every diagnostic emitted so far, for tests and the language server.
  const std::vector<Diagnostic>& emitted() const { return emitted_; }

  // After this many errors, further ones are counted but not printed.
  void set_error_limit(unsigned limit) { error_limit_ = limit; }

  llvm::SourceMgr& sources() { return sources_; }

 private:
  void EmitText(const Diagnostic& diagnostic);
  void EmitJson(const Diagnostic& diagnostic);

  llvm::SourceMgr& sources_;
  llvm::raw_ostream& out_;
  DiagFormat format_;
  bool color_;
  unsigned error_count_ = 0;
  unsigned warning_count_ = 0;
  unsigned error_limit_ = 50;
  std::vector<Diagnostic> emitted_;
};

}  // namespace delta
