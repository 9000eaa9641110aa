// The diagnostic engine: counts diagnostics and renders them, as text through
// llvm::SourceMgr (which already draws carets, ranges and fix-its) or as JSON
// lines through llvm::json.
#include "compiler/diagnostics/diagnostics.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/JSON.h>

#include <optional>
#include <utility>

namespace delta {

namespace {

struct KindInfo {
  llvm::StringRef code;
  llvm::StringRef name;
  Severity severity;
};

constexpr KindInfo kKinds[] = {
#define DIAG(Name, Code, DefaultSeverity, Summary) \
  {Code, #Name, Severity::DefaultSeverity},
#include "compiler/diagnostics/diagnostic_kinds.def"
};

const KindInfo& Info(DiagKind kind) {
  return kKinds[static_cast<size_t>(kind)];
}

llvm::SourceMgr::DiagKind ToLlvm(Severity severity) {
  switch (severity) {
    case Severity::Error:
      return llvm::SourceMgr::DK_Error;
    case Severity::Warning:
      return llvm::SourceMgr::DK_Warning;
    case Severity::Note:
      return llvm::SourceMgr::DK_Note;
  }
  return llvm::SourceMgr::DK_Error;
}

llvm::StringRef SeverityName(Severity severity) {
  switch (severity) {
    case Severity::Error:
      return "error";
    case Severity::Warning:
      return "warning";
    case Severity::Note:
      return "note";
  }
  return "error";
}

// Text is rendered into a string first so that one diagnostic reaches the
// output in one piece. LLVM colours only streams that are terminals, but the
// driver decides (`--color=always` must colour a pipe), so the stream says
// it has colours exactly when asked to use them.
class RenderStream : public llvm::raw_svector_ostream {
 public:
  RenderStream(llvm::SmallVectorImpl<char>& buffer, bool color)
      : llvm::raw_svector_ostream(buffer) {
    enable_colors(color);
  }
  bool has_colors() const override { return colors_enabled(); }
};

// llvm::json asserts that strings are UTF-8; user text and file names need
// not be.
llvm::json::Value JsonString(llvm::StringRef text) {
  if (llvm::json::isUTF8(text)) return text.str();
  return llvm::json::fixUTF8(text);
}

// Where a span lies in the source: its buffer and the 1-based line and
// column of both ends (the end is exclusive, as in LSP).
struct Location {
  unsigned buffer_id = 0;
  unsigned line = 0;
  unsigned column = 0;
  unsigned end_line = 0;
  unsigned end_column = 0;
};

std::optional<Location> Locate(const llvm::SourceMgr& sources, Span span) {
  if (!span.IsValid()) return std::nullopt;
  unsigned buffer_id = sources.FindBufferContainingLoc(span.Start());
  if (buffer_id == 0) return std::nullopt;
  Location location;
  location.buffer_id = buffer_id;
  std::tie(location.line, location.column) =
      sources.getLineAndColumn(span.Start(), buffer_id);
  // A span that ends outside its buffer (a compiler bug) is shown as a point.
  const llvm::MemoryBuffer* buffer = sources.getMemoryBuffer(buffer_id);
  const char* end = span.end;
  if (end < span.begin || end > buffer->getBufferEnd()) end = span.begin;
  std::tie(location.end_line, location.end_column) =
      sources.getLineAndColumn(llvm::SMLoc::getFromPointer(end), buffer_id);
  return location;
}

// The ranges LLVM underlines: only well-formed spans that end inside their
// buffer, since SMDiagnostic trusts its ranges.
llvm::SmallVector<llvm::SMRange, 1> Ranges(const llvm::SourceMgr& sources,
                                           Span span) {
  llvm::SmallVector<llvm::SMRange, 1> ranges;
  if (!span.IsValid() || span.end <= span.begin) return ranges;
  unsigned buffer_id = sources.FindBufferContainingLoc(span.Start());
  if (buffer_id == 0) return ranges;
  if (span.end > sources.getMemoryBuffer(buffer_id)->getBufferEnd()) {
    return ranges;
  }
  ranges.push_back(span.Range());
  return ranges;
}

bool IsOnLineOf(const llvm::SourceMgr& sources, Span span, Span anchor) {
  std::optional<Location> a = Locate(sources, span);
  std::optional<Location> b = Locate(sources, anchor);
  return a && b && a->buffer_id == b->buffer_id && a->line == b->line &&
         a->end_line == b->line;
}

void AddLocation(const llvm::SourceMgr& sources, Span span,
                 llvm::json::Object& object) {
  std::optional<Location> location = Locate(sources, span);
  if (!location) {
    object["file"] = nullptr;
    object["line"] = nullptr;
    object["column"] = nullptr;
    object["end_line"] = nullptr;
    object["end_column"] = nullptr;
    return;
  }
  object["file"] = JsonString(
      sources.getMemoryBuffer(location->buffer_id)->getBufferIdentifier());
  object["line"] = location->line;
  object["column"] = location->column;
  object["end_line"] = location->end_line;
  object["end_column"] = location->end_column;
}

}  // namespace

llvm::StringRef DiagCode(DiagKind kind) { return Info(kind).code; }
llvm::StringRef DiagName(DiagKind kind) { return Info(kind).name; }
Severity DiagSeverity(DiagKind kind) { return Info(kind).severity; }

DiagBuilder::~DiagBuilder() {
  if (engine_ != nullptr) engine_->Emit(diagnostic_);
}

DiagBuilder& DiagBuilder::Note(Span span, std::string message) {
  diagnostic_.notes.push_back(DiagNote{span, std::move(message)});
  return *this;
}

DiagBuilder& DiagBuilder::Fix(Span span, std::string replacement) {
  diagnostic_.fixits.push_back(FixIt{span, std::move(replacement)});
  return *this;
}

DiagnosticEngine::DiagnosticEngine(llvm::SourceMgr& sources,
                                   llvm::raw_ostream& out, DiagFormat format,
                                   bool color)
    : sources_(sources), out_(out), format_(format), color_(color) {}

void DiagnosticEngine::Emit(const Diagnostic& diagnostic) {
  Severity severity = DiagSeverity(diagnostic.kind);
  if (severity == Severity::Error) {
    ++error_count_;
    if (error_limit_ != 0 && error_count_ > error_limit_) {
      // Said once, in text only: a JSON consumer reads the counts itself.
      if (error_count_ == error_limit_ + 1 && format_ == DiagFormat::Text) {
        out_ << "dlc: note: too many errors; further errors are not shown "
                "(limit "
             << error_limit_ << ")\n";
        out_.flush();
      }
      return;
    }
  } else if (severity == Severity::Warning) {
    ++warning_count_;
  }
  emitted_.push_back(diagnostic);
  if (format_ == DiagFormat::Json) {
    EmitJson(diagnostic);
  } else {
    EmitText(diagnostic);
  }
  out_.flush();
}

void DiagnosticEngine::EmitText(const Diagnostic& diagnostic) {
  llvm::SmallString<256> text;
  RenderStream stream(text, color_);

  // Fix-its on the caret's line are drawn by LLVM under the caret; others
  // would be dropped silently, so they become notes at their own place.
  llvm::SmallVector<llvm::SMFixIt, 2> inline_fixits;
  std::vector<DiagNote> fixit_notes;
  for (const FixIt& fixit : diagnostic.fixits) {
    if (IsOnLineOf(sources_, fixit.span, diagnostic.span)) {
      inline_fixits.emplace_back(fixit.span.Range(), fixit.replacement);
    } else {
      std::string message = fixit.span.begin == fixit.span.end
                                ? "insert '" + fixit.replacement + "'"
                                : "replace with '" + fixit.replacement + "'";
      fixit_notes.push_back(DiagNote{fixit.span, std::move(message)});
    }
  }

  std::string message =
      diagnostic.message + " [" + DiagCode(diagnostic.kind).str() + "]";
  Severity severity = DiagSeverity(diagnostic.kind);
  if (Locate(sources_, diagnostic.span)) {
    sources_.PrintMessage(stream, diagnostic.span.Start(), ToLlvm(severity),
                          message, Ranges(sources_, diagnostic.span),
                          inline_fixits, color_);
  } else {
    llvm::SMDiagnostic(/*filename=*/"", ToLlvm(severity), message)
        .print("dlc", stream, color_);
  }

  auto print_note = [&](const DiagNote& note) {
    if (Locate(sources_, note.span)) {
      sources_.PrintMessage(stream, note.span.Start(), llvm::SourceMgr::DK_Note,
                            note.message, Ranges(sources_, note.span), {},
                            color_);
    } else {
      llvm::SMDiagnostic("", llvm::SourceMgr::DK_Note, note.message)
          .print(nullptr, stream, color_);
    }
  };
  for (const DiagNote& note : diagnostic.notes) print_note(note);
  for (const DiagNote& note : fixit_notes) print_note(note);

  out_ << text;
}

void DiagnosticEngine::EmitJson(const Diagnostic& diagnostic) {
  llvm::json::Object object;
  AddLocation(sources_, diagnostic.span, object);
  object["severity"] = SeverityName(DiagSeverity(diagnostic.kind)).str();
  object["code"] = DiagCode(diagnostic.kind).str();
  object["name"] = DiagName(diagnostic.kind).str();
  object["message"] = JsonString(diagnostic.message);

  llvm::json::Array notes;
  for (const DiagNote& note : diagnostic.notes) {
    llvm::json::Object entry;
    AddLocation(sources_, note.span, entry);
    entry["message"] = JsonString(note.message);
    notes.push_back(std::move(entry));
  }
  object["notes"] = std::move(notes);

  llvm::json::Array fixits;
  for (const FixIt& fixit : diagnostic.fixits) {
    llvm::json::Object entry;
    AddLocation(sources_, fixit.span, entry);
    entry["replacement"] = JsonString(fixit.replacement);
    fixits.push_back(std::move(entry));
  }
  object["fixits"] = std::move(fixits);

  out_ << llvm::json::Value(std::move(object)) << "\n";
}

}  // namespace delta
