// The diagnostic engine: counts diagnostics and renders them, as text through
// llvm::SourceMgr (which already draws carets, ranges and fix-its) or as JSON
// lines through llvm::json.
#include "compiler/diagnostics/diagnostics.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/ConvertUTF.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/Unicode.h>
#include <llvm/Support/WithColor.h>

#include <algorithm>
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

// The text of the line that holds `span`'s start, without its line break
// (the same line that llvm::SourceMgr shows).
llvm::StringRef LineOf(const llvm::SourceMgr& sources, Span span) {
  unsigned buffer_id = sources.FindBufferContainingLoc(span.Start());
  llvm::StringRef buffer = sources.getMemoryBuffer(buffer_id)->getBuffer();
  const char* begin = span.begin;
  while (begin != buffer.begin() && begin[-1] != '\n' && begin[-1] != '\r') {
    --begin;
  }
  const char* end = span.begin;
  while (end != buffer.end() && *end != '\n' && *end != '\r') ++end;
  return {begin, static_cast<size_t>(end - begin)};
}

bool IsAscii(llvm::StringRef text) {
  return llvm::all_of(text, [](char c) { return (c & 0x80) == 0; });
}

// LLVM draws carets and fix-its only under lines of ASCII text (its columns
// are bytes); see DrawCaretBeyondAscii for the others.
bool LlvmDrawsCaret(const llvm::SourceMgr& sources, Span span) {
  return Locate(sources, span) && IsAscii(LineOf(sources, span));
}

bool IsOnLineOf(const llvm::SourceMgr& sources, Span span, Span anchor) {
  std::optional<Location> a = Locate(sources, span);
  std::optional<Location> b = Locate(sources, anchor);
  return a && b && a->buffer_id == b->buffer_id && a->line == b->line &&
         a->end_line == b->line;
}

// Where LLVM's printing of `line` puts the character at byte `offset`: tabs
// expand to the next multiple of 8 *bytes* (LLVM's rule), other characters
// take their display width (two for wide ones).
unsigned DisplayColumn(llvm::StringRef line, size_t offset) {
  unsigned byte_column = 0;
  unsigned display_column = 0;
  for (size_t i = 0; i < offset && i < line.size();) {
    unsigned char c = line[i];
    if (c == '\t') {
      do {
        ++byte_column;
        ++display_column;
      } while (byte_column % 8 != 0);
      ++i;
      continue;
    }
    size_t length = c < 0x80 ? 1 : llvm::getNumBytesForUTF8(c);
    length = std::clamp<size_t>(length, 1, line.size() - i);
    int width = llvm::sys::unicode::columnWidthUTF8(line.substr(i, length));
    display_column += width < 0 ? 1 : width;
    byte_column += length;
    i += length;
  }
  return display_column;
}

// The caret and `~` underline that LLVM leaves out under a line with
// non-ASCII text.
void DrawCaretBeyondAscii(llvm::raw_ostream& stream,
                          const llvm::SourceMgr& sources, Span span,
                          bool color) {
  llvm::StringRef line = LineOf(sources, span);
  size_t start = span.begin - line.begin();
  size_t end = start;
  if (span.end > span.begin) {
    end = std::min<size_t>(span.end - line.begin(), line.size());
  }
  unsigned caret_column = DisplayColumn(line, start);
  unsigned end_column = DisplayColumn(line, end);
  std::string caret(caret_column, ' ');
  caret += '^';
  if (end_column > caret_column + 1) {
    caret.append(end_column - caret_column - 1, '~');
  }
  llvm::WithColor(stream, llvm::raw_ostream::GREEN, /*Bold=*/true,
                  /*BG=*/false,
                  color ? llvm::ColorMode::Enable : llvm::ColorMode::Disable)
      << caret << "\n";
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

  // A message at a place, with LLVM's caret (or ours where LLVM has none),
  // or naming `program` when there is no place.
  auto print = [&](Span span, llvm::SourceMgr::DiagKind kind,
                   const std::string& message,
                   llvm::ArrayRef<llvm::SMFixIt> fixits, const char* program) {
    if (!Locate(sources_, span)) {
      llvm::SMDiagnostic("", kind, message).print(program, stream, color_);
      return;
    }
    sources_.PrintMessage(stream, span.Start(), kind, message,
                          Ranges(sources_, span), fixits, color_);
    if (!LlvmDrawsCaret(sources_, span)) {
      DrawCaretBeyondAscii(stream, sources_, span, color_);
    }
  };

  // Fix-its that LLVM can draw under the caret's line go there; others
  // would be dropped silently, so they become notes at their own place.
  llvm::SmallVector<llvm::SMFixIt, 2> inline_fixits;
  std::vector<DiagNote> fixit_notes;
  for (const FixIt& fixit : diagnostic.fixits) {
    if (LlvmDrawsCaret(sources_, diagnostic.span) &&
        IsOnLineOf(sources_, fixit.span, diagnostic.span)) {
      inline_fixits.emplace_back(fixit.span.Range(), fixit.replacement);
    } else {
      std::string message = fixit.span.begin == fixit.span.end
                                ? "insert '" + fixit.replacement + "'"
                                : "replace with '" + fixit.replacement + "'";
      fixit_notes.push_back(DiagNote{fixit.span, std::move(message)});
    }
  }

  print(diagnostic.span, ToLlvm(DiagSeverity(diagnostic.kind)),
        diagnostic.message + " [" + DiagCode(diagnostic.kind).str() + "]",
        inline_fixits, "dlc");
  for (const DiagNote& note : diagnostic.notes) {
    print(note.span, llvm::SourceMgr::DK_Note, note.message, {}, nullptr);
  }
  for (const DiagNote& note : fixit_notes) {
    print(note.span, llvm::SourceMgr::DK_Note, note.message, {}, nullptr);
  }

  // LLVM draws "note:" in bold black, which vanishes on a dark terminal:
  // bold cyan reads on any background, as in rustc.
  std::string rendered(text.str());
  if (color_) {
    static constexpr llvm::StringLiteral kBoldBlack = "\x1b[0;1;30m";
    static constexpr llvm::StringLiteral kBoldCyan = "\x1b[0;1;36m";
    for (size_t at = rendered.find(kBoldBlack.data()); at != std::string::npos;
         at = rendered.find(kBoldBlack.data(), at))
      rendered.replace(at, kBoldBlack.size(), kBoldCyan.data());
  }
  out_ << rendered;
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
