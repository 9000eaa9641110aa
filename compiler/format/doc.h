// A layout document for `dlc fmt` (Wadler, "A prettier printer", as in
// Prettier): text, and line breaks that are taken only when the group
// around them does not fit in the line width. See Note [Groups and hard
// lines] in doc.cpp.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace delta::format {

class Doc {
 public:
  Doc() = default;  // nothing
  Doc(std::string text);
  Doc(const char* text) : Doc(std::string(text)) {}

  // A space, or a newline when the enclosing group breaks.
  static Doc Line();
  // Nothing, or a newline when the enclosing group breaks.
  static Doc SoftLine();
  // Always a newline; the enclosing group breaks.
  static Doc HardLine();
  // Nothing; the enclosing group breaks.
  static Doc BreakParent();
  // `content` on one line if it fits, else with every line break of its
  // own taken. With `max_flat`, on one line only if all of it (nested
  // groups too) fits in `max_flat` columns.
  static Doc Group(Doc content,
                   size_t max_flat = std::numeric_limits<size_t>::max());
  // A group that, when `content` does not fit on one line, is printed as
  // `hugged` if that fits up to its first line break: `content` with its
  // last group broken (Doc::LastGroupBroken), as Prettier keeps
  // `f(a, |x| {` open on one line. `hug_first`: that last group breaks
  // anyway, so `hugged` is tried before `content` on one line.
  static Doc HuggingGroup(Doc content, Doc hugged, bool hug_first);
  // This document with the group that ends it broken, or nothing if it
  // does not end with a group.
  Doc LastGroupBroken() const;
  // Whether this document is sure to span lines wherever it is printed:
  // it holds a hard line, or a group capped narrower than its content.
  bool WillBreak() const { return WillBreak(node_.get()); }
  // ` value` after `=`: on the line if all of it fits there, else on the
  // next line, indented, if all of it fits there, else on the line with
  // its own groups broken (rustfmt's right-hand sides).
  static Doc Rhs(Doc value);
  // `items` separated by lines, each a space while the next item fits on
  // the line, else a newline (Prettier's fill; rustfmt's mixed layout of
  // short array elements).
  static Doc Fill(std::vector<Doc> items);
  // `content` with the lines it breaks indented `indent` more.
  static Doc Nest(int indent, Doc content);
  // `broken` where the enclosing group breaks, else `flat`.
  static Doc IfBreak(Doc broken, Doc flat = {});
  // A comment after code on its line, printed one space after it, or at
  // `source_column` (its column in the source, -1 if it had one space
  // before it) if the code leaves room. A run of such comments on one
  // column of consecutive source lines stays aligned while it ends
  // consecutive lines. A `//` comment (or one that spans lines) ends the
  // line: the enclosing group breaks.
  static Doc TrailingComment(std::string text, int source_line,
                             int source_column);

  Doc& operator+=(Doc other);
  friend Doc operator+(Doc a, Doc b) { return a += std::move(b); }

  bool empty() const { return node_ == nullptr; }
  // The width of this document on one line, or SIZE_MAX if it cannot be.
  size_t Width() const { return FlatWidth(node_.get()); }

  struct Node;

 private:
  explicit Doc(std::shared_ptr<Node> node) : node_(std::move(node)) {}
  // The width of `node` on one line, or SIZE_MAX if it cannot be on one.
  static size_t FlatWidth(const Node* node);
  static bool WillBreak(const Node* node);
  friend class Renderer;
  std::shared_ptr<Node> node_;
};

// `doc` laid out in lines of at most `width` columns where it can be.
std::string Render(const Doc& doc, size_t width);

}  // namespace delta::format
