// Unit tests of the diagnostic engine: the kinds table, text rendering
// (caret, ranges, notes, fix-its, colour), JSON lines, and the error limit.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "compiler/diagnostics/diagnostics.h"

#include <doctest/doctest.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <set>
#include <string>

namespace delta {
namespace {

// A source buffer, an engine writing into a string, and a way to find spans
// by the text they cover.
class Fixture {
 public:
  explicit Fixture(llvm::StringRef source, DiagFormat format = DiagFormat::Text,
                   bool color = false)
      : out_(output_), diags_(sources_, out_, format, color) {
    sources_.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(source, "test.dl"), llvm::SMLoc());
    text_ = sources_.getMemoryBuffer(1)->getBuffer();
  }

  // The span of the `occurrence`-th appearance of `needle`.
  Span Find(llvm::StringRef needle, int occurrence = 0) const {
    size_t pos = text_.find(needle);
    for (int i = 0; i < occurrence; ++i) pos = text_.find(needle, pos + 1);
    REQUIRE(pos != llvm::StringRef::npos);
    return {text_.data() + pos, text_.data() + pos + needle.size()};
  }

  Span End() const { return {text_.end(), text_.end()}; }
  DiagnosticEngine& diags() { return diags_; }
  const std::string& output() const { return output_; }

 private:
  llvm::SourceMgr sources_;
  std::string output_;
  llvm::raw_string_ostream out_;
  DiagnosticEngine diags_;
  llvm::StringRef text_;
};

TEST_CASE("kinds have stable codes, names and severities") {
  CHECK(DiagCode(DiagKind::DimsDiffer) == "E0302");
  CHECK(DiagName(DiagKind::DimsDiffer) == "DimsDiffer");
  CHECK(DiagSeverity(DiagKind::DimsDiffer) == Severity::Error);
  CHECK(DiagCode(DiagKind::CannotReadFile) == "E0001");
  CHECK(DiagSeverity(DiagKind::UnusedValue) == Severity::Warning);
}

TEST_CASE("every code is unique and well formed") {
  std::set<std::string> codes;
#define DIAG(Name, Code, DefaultSeverity, Summary)              \
  {                                                             \
    llvm::StringRef code = DiagCode(DiagKind::Name);            \
    CHECK(code == Code);                                        \
    CHECK(code.size() == 5);                                    \
    CHECK((code.front() == 'E' || code.front() == 'W'));        \
    CHECK(code.drop_front().find_first_not_of("0123456789") ==  \
          llvm::StringRef::npos);                               \
    CHECK((code.front() == 'W') ==                              \
          (DiagSeverity(DiagKind::Name) == Severity::Warning)); \
    CHECK(codes.insert(code.str()).second);                     \
  }
#include "compiler/diagnostics/diagnostic_kinds.def"
}

TEST_CASE("an error shows file, line, column, code, source line and range") {
  Fixture f("fn f() -> f32 {\n  let x = foo + 1.0;\n  x\n}\n");
  f.diags().Report(DiagKind::UnknownName, f.Find("foo"), "unknown name 'foo'");
  CHECK(f.output() ==
        "test.dl:2:11: error: unknown name 'foo' [E0201]\n"
        "  let x = foo + 1.0;\n"
        "          ^~~\n");
  CHECK(f.diags().error_count() == 1);
  CHECK(f.diags().HasErrors());
  REQUIRE(f.diags().emitted().size() == 1);
  CHECK(f.diags().emitted()[0].kind == DiagKind::UnknownName);
}

TEST_CASE("an empty span gets a caret alone") {
  Fixture f("let x = 1\n");
  f.diags().Report(DiagKind::SyntaxError, f.End(), "expected ';'");
  CHECK(f.output() ==
        "test.dl:2:1: error: expected ';' [E0110]\n"
        "\n"
        "^\n");
}

TEST_CASE("notes follow their diagnostic, with or without a place") {
  Fixture f("dim a = 2;\ndim a = 3;\n");
  f.diags()
      .Report(DiagKind::Redefinition, f.Find("a", 1), "'a' is declared twice")
      .Note(f.Find("a"), "first declared here")
      .Note(Span{}, "dims and values share one namespace");
  CHECK(f.output() ==
        "test.dl:2:5: error: 'a' is declared twice [E0202]\n"
        "dim a = 3;\n"
        "    ^\n"
        "test.dl:1:5: note: first declared here\n"
        "dim a = 2;\n"
        "    ^\n"
        "note: dims and values share one namespace\n");
}

TEST_CASE("a fix-it on the caret's line is drawn under it") {
  Fixture f("let y: f32[inp] = x;\n");
  Span x = f.Find("x;");
  x.end = x.begin + 1;
  f.diags()
      .Report(DiagKind::DimsDiffer, x, "dims differ: f32[inp] vs f32[out]")
      .Fix(x, "rename(x, out, inp)");
  CHECK(f.output() ==
        "test.dl:1:19: error: dims differ: f32[inp] vs f32[out] [E0302]\n"
        "let y: f32[inp] = x;\n"
        "                  ^\n"
        "                  rename(x, out, inp)\n");
}

TEST_CASE("a fix-it on another line becomes a note there") {
  Fixture f("fn g[d](x: f32[d]) -> f32 { 0.0 }\nlet z = g(w);\n");
  f.diags()
      .Report(DiagKind::AmbiguousLifting, f.Find("g(w)"), "ambiguous")
      .Fix(Span{f.Find("[d]").begin, f.Find("[d]").begin}, "<here>");
  CHECK(llvm::StringRef(f.output())
            .contains("test.dl:1:5: note: insert '<here>'"));
}

TEST_CASE("a diagnostic without a place names the program") {
  Fixture f("");
  f.diags().Report(DiagKind::CannotReadFile, Span{},
                   "cannot read 'missing.dl': no such file");
  CHECK(f.output() ==
        "dlc: error: cannot read 'missing.dl': no such file [E0001]\n");
}

TEST_CASE("warnings are counted apart from errors") {
  Fixture f("x[feat: 9];\n");
  f.diags().Report(DiagKind::ConstantIndexOutOfRange, f.Find("9"),
                   "index 9 is outside feat");
  CHECK(f.diags().warning_count() == 1);
  CHECK(f.diags().error_count() == 0);
  CHECK_FALSE(f.diags().HasErrors());
  CHECK(llvm::StringRef(f.output())
            .starts_with(
                "test.dl:1:9: warning: index 9 is outside feat [W9001]\n"));
}

TEST_CASE("colour uses escape codes only when asked") {
  Fixture plain("a\n");
  plain.diags().Report(DiagKind::UnknownName, plain.Find("a"), "unknown");
  CHECK(plain.output().find('\x1b') == std::string::npos);

  Fixture colored("a\n", DiagFormat::Text, /*color=*/true);
  colored.diags().Report(DiagKind::UnknownName, colored.Find("a"), "unknown");
  CHECK(colored.output().find("\x1b[") != std::string::npos);
  CHECK(llvm::StringRef(colored.output()).contains("[E0201]"));
}

TEST_CASE("the error limit stops output but not counting") {
  Fixture f("a b c d e\n");
  f.diags().set_error_limit(2);
  for (llvm::StringRef name : {"a", "b", "c", "d", "e"}) {
    f.diags().Report(DiagKind::UnknownName, f.Find(name), "unknown");
  }
  CHECK(f.diags().error_count() == 5);
  CHECK(f.diags().emitted().size() == 2);
  llvm::StringRef out = f.output();
  CHECK(out.count("[E0201]") == 2);
  CHECK(out.count("too many errors") == 1);
}

TEST_CASE("JSON lines carry every field") {
  Fixture f("let y = x;\nlet x = 1;\n", DiagFormat::Json);
  f.diags()
      .Report(DiagKind::UnknownName, f.Find("x;"), "unknown name 'x'")
      .Note(f.Find("x", 1), "declared later here")
      .Fix(f.Find("x;"), "z");
  f.diags().Report(DiagKind::CannotReadFile, Span{}, "cannot read");

  llvm::SmallVector<llvm::StringRef, 3> lines;
  llvm::StringRef(f.output()).trim().split(lines, '\n');
  REQUIRE(lines.size() == 2);

  llvm::Expected<llvm::json::Value> first = llvm::json::parse(lines[0]);
  REQUIRE(static_cast<bool>(first));
  const llvm::json::Object* object = first->getAsObject();
  REQUIRE(object != nullptr);
  CHECK(object->getString("file") == "test.dl");
  CHECK(object->getInteger("line") == 1);
  CHECK(object->getInteger("column") == 9);
  CHECK(object->getInteger("end_line") == 1);
  CHECK(object->getInteger("end_column") == 11);
  CHECK(object->getString("severity") == "error");
  CHECK(object->getString("code") == "E0201");
  CHECK(object->getString("name") == "UnknownName");
  CHECK(object->getString("message") == "unknown name 'x'");
  const llvm::json::Array* notes = object->getArray("notes");
  REQUIRE(notes != nullptr);
  REQUIRE(notes->size() == 1);
  CHECK((*notes)[0].getAsObject()->getInteger("line") == 2);
  CHECK((*notes)[0].getAsObject()->getString("message") ==
        "declared later here");
  const llvm::json::Array* fixits = object->getArray("fixits");
  REQUIRE(fixits != nullptr);
  REQUIRE(fixits->size() == 1);
  CHECK((*fixits)[0].getAsObject()->getString("replacement") == "z");
  CHECK((*fixits)[0].getAsObject()->getInteger("column") == 9);

  llvm::Expected<llvm::json::Value> second = llvm::json::parse(lines[1]);
  REQUIRE(static_cast<bool>(second));
  const llvm::json::Object* nowhere = second->getAsObject();
  REQUIRE(nowhere != nullptr);
  CHECK(nowhere->get("file")->getAsNull().has_value());
  CHECK(nowhere->get("line")->getAsNull().has_value());
  CHECK(nowhere->getString("code") == "E0001");
}

TEST_CASE("JSON survives text that is not UTF-8") {
  Fixture f("a\xff\n", DiagFormat::Json);
  Span bad = f.Find("\xff");
  f.diags().Report(DiagKind::InvalidUtf8, bad,
                   std::string("invalid byte '") + *bad.begin + "'");
  CHECK(
      static_cast<bool>(llvm::json::parse(llvm::StringRef(f.output()).trim())));
}

TEST_CASE("text rendering survives odd spans") {
  Fixture f("abc\n");
  Span reversed{f.Find("c").begin, f.Find("a").begin};
  f.diags().Report(DiagKind::SyntaxError, reversed, "reversed");
  f.diags().Report(DiagKind::SyntaxError, f.End(), "at end");
  Span multiline{f.Find("b").begin, f.End().end};
  f.diags().Report(DiagKind::SyntaxError, multiline, "across lines");
  CHECK(f.diags().error_count() == 3);
  CHECK(
      llvm::StringRef(f.output()).contains("test.dl:1:2: error: across lines"));
}

TEST_CASE("lines with non-ASCII text still get a caret and underline") {
  Fixture f("print(\"h\xc3\xa9llo\", \xe4\xb8\xad + nope);\n");
  f.diags()
      .Report(DiagKind::UnknownName, f.Find("nope"), "unknown name 'nope'")
      .Fix(f.Find("nope"), "none");
  // Columns count bytes; on a terminal "é" and the wide "中" take one and
  // two columns, so the caret is at display column 20.
  CHECK(f.output() ==
        "test.dl:1:23: error: unknown name 'nope' [E0201]\n"
        "print(\"h\xc3\xa9llo\", \xe4\xb8\xad + nope);\n"
        "                    ^~~~\n"
        "test.dl:1:23: note: replace with 'none'\n"
        "print(\"h\xc3\xa9llo\", \xe4\xb8\xad + nope);\n"
        "                    ^~~~\n");
}

TEST_CASE("tabs before a caret expand as LLVM prints them") {
  Fixture f("\tlet \xc3\xa9\tx = y;\n");
  f.diags().Report(DiagKind::UnknownName, f.Find("y"), "unknown");
  // The line prints as 8 spaces, "let é" (6 bytes, 5 columns), then a tab
  // to byte column 16 (2 spaces), "x = ": y is at display column 19.
  CHECK(llvm::StringRef(f.output())
            .ends_with("\n" + std::string(19, ' ') + "^\n"));
}

}  // namespace
}  // namespace delta
