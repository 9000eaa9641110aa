// Lays out a Doc in a line width: Wadler's algorithm with Prettier's
// `fits` (a group is flat when it and what follows it up to the next line
// break fit), then aligns runs of trailing comments.
#include "compiler/format/doc.h"

#include <algorithm>

namespace delta::format {

// Note [Groups and hard lines]
// A hard line (a statement boundary, a `//` comment) breaks only its
// innermost group, not every group around it as in Prettier: a call whose
// last argument is a lambda with a multi-line body stays `f(a, |x| {`,
// with the body on the lines below, as long as that first line fits. A
// group that does not break is measured only up to its first line break.

struct Doc::Node {
  enum class Kind {
    Text,
    Concat,
    Fill,
    Line,
    Group,
    Nest,
    IfBreak,
    Comment,
    Rhs
  };
  Kind kind = Kind::Text;
  std::string text;        // Text, Comment; Line: the flat text
  std::vector<Doc> parts;  // Concat; Fill: [item, line, item, ...];
                           // Group, Nest: [content] (a hugging
                           // group: [content, hugged]); IfBreak:
                           // [broken, flat]
  bool hard = false;       // Line: always breaks
  bool hug_first = false;  // Group: hugged rather than flat
  int indent = 0;          // Nest
  size_t max_flat = 0;     // Group
  bool breaks = false;     // holds a hard break outside nested groups
  int source_line = 0;     // Comment
  int source_column = -1;  // Comment: >= 0 when aligned in the source
};

namespace {

using Node = Doc::Node;

constexpr size_t kUncapped = std::numeric_limits<size_t>::max();

bool EndsLine(const std::string& comment) {
  return comment.rfind("//", 0) == 0 || comment.find('\n') != std::string::npos;
}

}  // namespace

Doc::Doc(std::string text) {
  if (text.empty()) return;
  node_ = std::make_shared<Node>();
  node_->breaks = text.find('\n') != std::string::npos;
  node_->text = std::move(text);
}

Doc Doc::Line() {
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::Line;
  node->text = " ";
  return Doc(node);
}

Doc Doc::SoftLine() {
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::Line;
  return Doc(node);
}

Doc Doc::HardLine() {
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::Line;
  node->hard = node->breaks = true;
  return Doc(node);
}

Doc Doc::BreakParent() {
  auto node = std::make_shared<Node>();
  node->breaks = true;
  return Doc(node);
}

Doc Doc::Group(Doc content, size_t max_flat) {
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::Group;
  node->max_flat = max_flat;
  node->parts.push_back(std::move(content));
  return Doc(node);
}

Doc Doc::HuggingGroup(Doc content, Doc hugged, bool hug_first) {
  Doc group = Group(std::move(content));
  if (!hugged.empty()) group.node_->parts.push_back(std::move(hugged));
  group.node_->hug_first = hug_first;
  return group;
}

Doc Doc::LastGroupBroken() const {
  if (!node_) return {};
  auto copy = std::make_shared<Node>(*node_);
  switch (node_->kind) {
    case Node::Kind::Group: {
      auto content = std::make_shared<Node>();
      content->kind = Node::Kind::Concat;
      content->breaks = true;
      content->parts = {node_->parts[0]};
      copy->parts = {Doc(content)};
      return Doc(copy);
    }
    case Node::Kind::Concat:
    case Node::Kind::Nest: {
      Doc last = copy->parts.back().LastGroupBroken();
      if (last.empty()) return {};
      copy->parts.back() = std::move(last);
      return Doc(copy);
    }
    default:
      return {};
  }
}

size_t Doc::FlatWidth(const Node* node) {
  if (!node) return 0;
  if (node->breaks) return kUncapped;
  switch (node->kind) {
    case Node::Kind::Text:
    case Node::Kind::Line:
      return node->text.size();
    case Node::Kind::Comment:
      return node->text.size() + 1;
    case Node::Kind::IfBreak:
      return FlatWidth(node->parts[1].node_.get());
    case Node::Kind::Rhs: {
      size_t value = FlatWidth(node->parts[0].node_.get());
      return value == kUncapped ? kUncapped : value + 1;
    }
    default: {
      if (node->kind == Node::Kind::Group && node->parts[0].node_ &&
          node->parts[0].node_->breaks)
        return kUncapped;
      size_t width = 0;
      bool sequence =
          node->kind == Node::Kind::Concat || node->kind == Node::Kind::Fill;
      size_t parts = sequence ? node->parts.size() : 1;
      for (size_t i = 0; i < parts; ++i) {
        size_t part = FlatWidth(node->parts[i].node_.get());
        if (part == kUncapped) return kUncapped;
        width += part;
      }
      return width;
    }
  }
}

bool Doc::WillBreak(const Node* node) {
  if (!node) return false;
  if (node->breaks) return true;
  switch (node->kind) {
    case Node::Kind::Group:
      if (node->max_flat != kUncapped &&
          FlatWidth(node->parts[0].node_.get()) > node->max_flat)
        return true;
      return WillBreak(node->parts[0].node_.get());
    case Node::Kind::Concat:
    case Node::Kind::Fill:
      return std::any_of(
          node->parts.begin(), node->parts.end(),
          [](const Doc& part) { return WillBreak(part.node_.get()); });
    case Node::Kind::Nest:
    case Node::Kind::Rhs:
      return WillBreak(node->parts[0].node_.get());
    default:
      return false;
  }
}

Doc Doc::Rhs(Doc value) {
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::Rhs;
  node->breaks = value.node_ && value.node_->breaks;
  node->parts.push_back(std::move(value));
  return Doc(node);
}

Doc Doc::Fill(std::vector<Doc> items) {
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::Fill;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) node->parts.push_back(Line());
    node->breaks = node->breaks || (items[i].node_ && items[i].node_->breaks);
    node->parts.push_back(std::move(items[i]));
  }
  return Doc(node);
}

Doc Doc::Nest(int indent, Doc content) {
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::Nest;
  node->indent = indent;
  node->breaks = content.node_ && content.node_->breaks;
  node->parts.push_back(std::move(content));
  return Doc(node);
}

Doc Doc::IfBreak(Doc broken, Doc flat) {
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::IfBreak;
  node->parts = {std::move(broken), std::move(flat)};
  return Doc(node);
}

Doc Doc::TrailingComment(std::string text, int source_line, int source_column) {
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::Comment;
  node->breaks = EndsLine(text);
  node->text = std::move(text);
  node->source_line = source_line;
  node->source_column = source_column;
  return Doc(node);
}

Doc& Doc::operator+=(Doc other) {
  if (!other.node_) return *this;
  if (!node_) return *this = std::move(other);
  if (node_->kind != Node::Kind::Concat || node_.use_count() != 1) {
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::Concat;
    node->breaks = node_->breaks;
    node->parts.push_back(std::move(*this));
    node_ = std::move(node);
  }
  node_->breaks = node_->breaks || other.node_->breaks;
  node_->parts.push_back(std::move(other));
  return *this;
}

class Renderer {
 public:
  explicit Renderer(size_t width) : width_(width) {}

  std::string Run(const Doc& doc) {
    stack_.push_back({0, Mode::Break, doc.node_.get()});
    while (!stack_.empty()) {
      Command command = stack_.back();
      stack_.pop_back();
      if (command.node) Print(command);
    }
    AlignComments();
    return std::move(out_);
  }

 private:
  enum class Mode { Flat, Break };
  struct Command {
    int indent;
    Mode mode;
    const Node* node;
    size_t index = 0;  // Fill: the part to print next
  };
  // A trailing comment as printed: where its leading space is.
  struct Printed {
    size_t offset;
    size_t line;
    size_t code_column;
    const Node* node;
  };

  static bool Forced(const Node* group) {
    const Doc& content = group->parts[0];
    return content.node_ && content.node_->breaks;
  }

  void Push(int indent, Mode mode, const Doc& doc) {
    if (doc.node_) stack_.push_back({indent, mode, doc.node_.get()});
  }

  void PushParts(int indent, Mode mode, const std::vector<Doc>& parts) {
    for (auto it = parts.rbegin(); it != parts.rend(); ++it)
      Push(indent, mode, *it);
  }

  void Emit(const std::string& text) {
    out_ += text;
    size_t newline = text.rfind('\n');
    if (newline == std::string::npos) {
      column_ += text.size();
    } else {
      lines_ += size_t(std::count(text.begin(), text.end(), '\n'));
      column_ = text.size() - newline - 1;
    }
  }

  void Newline(int indent) {
    while (!out_.empty() && out_.back() == ' ') out_.pop_back();
    out_ += "\n" + std::string(size_t(indent), ' ');
    ++lines_;
    column_ = size_t(indent);
  }

  void Print(const Command& command) {
    const Node* node = command.node;
    switch (node->kind) {
      case Node::Kind::Text:
        Emit(node->text);
        return;
      case Node::Kind::Comment:
        if (node->source_column >= 0)
          comments_.push_back({out_.size(), lines_, column_, node});
        Emit(" " + node->text);
        return;
      case Node::Kind::Concat:
        PushParts(command.indent, command.mode, node->parts);
        return;
      case Node::Kind::Rhs: {
        // rustfmt's right-hand sides: on the line if all of it fits there,
        // else on the next line if all of it fits there, else on the line,
        // breaking inside.
        const Node* value = node->parts[0].node_.get();
        size_t room = width_ - std::min(width_, column_ + 1);
        int next_indent = command.indent + 2;
        size_t next_room = width_ - std::min(width_, size_t(next_indent));
        if (command.mode == Mode::Break &&
            !Fits({command.indent, Mode::Flat, value}, Measure::ToLineBreak,
                  room) &&
            !Doc::WillBreak(value) &&
            Fits({next_indent, Mode::Flat, value}, Measure::ToLineBreak,
                 next_room)) {
          Newline(next_indent);
          Push(next_indent, Mode::Break, node->parts[0]);
          return;
        }
        Emit(" ");
        Push(command.indent, command.mode, node->parts[0]);
        return;
      }
      case Node::Kind::Fill: {
        // Items on one line while the next fits, then a new line (even
        // steps print item `index`, odd ones decide the line after it).
        size_t index = command.index;
        if (index + 1 < node->parts.size())
          stack_.push_back({command.indent, command.mode, node, index + 1});
        if (index % 2 == 0) {
          Push(command.indent, Mode::Flat, node->parts[index]);
        } else {
          const Node* line = node->parts[index].node_.get();
          size_t room = width_ - std::min(width_, column_ + line->text.size());
          bool fits = command.mode == Mode::Flat ||
                      Fits({command.indent, Mode::Flat,
                            node->parts[index + 1].node_.get()},
                           Measure::WholeFlat, room);
          Push(command.indent, fits ? Mode::Flat : Mode::Break,
               node->parts[index]);
        }
        return;
      }
      case Node::Kind::Nest:
        Push(command.indent + node->indent, command.mode, node->parts[0]);
        return;
      case Node::Kind::IfBreak:
        Push(command.indent, command.mode,
             node->parts[command.mode == Mode::Break ? 0 : 1]);
        return;
      case Node::Kind::Line:
        if (command.mode == Mode::Flat && !node->hard)
          Emit(node->text);
        else
          Newline(command.indent);
        return;
      case Node::Kind::Group: {
        // A hugging group whose last item breaks anyway is hugged rather
        // than flat: the same first line, without the list's indentation.
        bool hugs = node->parts.size() > 1 && !Forced(node);
        size_t room = width_ - std::min(width_, column_);
        Mode mode = Mode::Break;
        if (!Forced(node)) {
          Command flat{command.indent, Mode::Flat, node->parts[0].node_.get()};
          bool capped = node->max_flat != kUncapped;
          if (command.mode == Mode::Flat ||
              (!(hugs && node->hug_first) &&
               (!capped || Fits(flat, Measure::WholeFlat, node->max_flat)) &&
               Fits(flat, Measure::ToLineBreak, room)))
            mode = Mode::Flat;
        }
        Command hugged{command.indent, Mode::Flat,
                       hugs ? node->parts[1].node_.get() : nullptr};
        if (hugs &&
            (mode == Mode::Flat ? node->hug_first
                                : Fits(hugged, Measure::ToLineBreak, room))) {
          Push(command.indent, Mode::Flat, node->parts[1]);
          return;
        }
        Push(command.indent, mode, node->parts[0]);
        return;
      }
    }
  }

  // WholeFlat: `next` has no line break and fits in `room` columns.
  // ToLineBreak: `next` and the commands after it up to the next line
  // break fit in `room` columns.
  enum class Measure { WholeFlat, ToLineBreak };
  bool Fits(const Command& next, Measure measure, size_t room) const {
    bool flat = measure == Measure::WholeFlat;
    long left = room > size_t(1) << 30 ? 1L << 30 : long(room);
    std::vector<Command> todo = {next};
    size_t rest_index = flat ? 0 : stack_.size();
    while (left >= 0) {
      if (todo.empty()) {
        if (rest_index == 0) return true;
        todo.push_back(stack_[--rest_index]);
        continue;
      }
      Command command = todo.back();
      todo.pop_back();
      const Node* node = command.node;
      if (!node) continue;
      switch (node->kind) {
        case Node::Kind::Text:
        case Node::Kind::Comment: {
          bool comment = node->kind == Node::Kind::Comment;
          if (comment && EndsLine(node->text)) {
            if (flat) return false;
            break;  // a comment may pass the width, as in rustfmt
          }
          size_t newline = node->text.find('\n');
          left -= long(std::min(newline, node->text.size())) + comment;
          if (newline != std::string::npos) return !flat && left >= 0;
          break;
        }
        case Node::Kind::Concat:
        case Node::Kind::Fill:
          for (auto it = node->parts.rbegin(); it != node->parts.rend(); ++it)
            todo.push_back({command.indent, command.mode, it->node_.get()});
          break;
        case Node::Kind::Rhs:
          --left;  // its space, as if it stays on the line
          [[fallthrough]];
        case Node::Kind::Nest:
          todo.push_back(
              {command.indent, command.mode, node->parts[0].node_.get()});
          break;
        case Node::Kind::IfBreak:
          todo.push_back(
              {command.indent, command.mode,
               node->parts[command.mode == Mode::Break ? 0 : 1].node_.get()});
          break;
        case Node::Kind::Group: {
          if (flat && Forced(node)) return false;
          // A capped group too wide for its cap breaks wherever it is.
          Mode mode = Forced(node) ? Mode::Break : command.mode;
          if (!flat && mode == Mode::Flat && node->max_flat != kUncapped &&
              !Fits({command.indent, Mode::Flat, node->parts[0].node_.get()},
                    Measure::WholeFlat, node->max_flat))
            mode = Mode::Break;
          todo.push_back({command.indent, mode, node->parts[0].node_.get()});
          break;
        }
        case Node::Kind::Line:
          if (command.mode == Mode::Break || node->hard) return !flat;
          left -= long(node->text.size());
          break;
      }
    }
    return false;
  }

  // Pads each run of trailing comments that were aligned in the source and
  // still end consecutive lines (or a single one written at a column of
  // its choosing) to one column: theirs, or one past the longest line of
  // code if that is further right.
  void AlignComments() {
    std::vector<std::pair<size_t, size_t>> pads;  // offset, spaces
    for (size_t begin = 0; begin < comments_.size();) {
      size_t end = begin + 1;
      while (end < comments_.size() &&
             InRun(comments_[end - 1], comments_[end]))
        ++end;
      size_t column = size_t(comments_[begin].node->source_column);
      for (size_t i = begin; i < end; ++i)
        column = std::max(column, comments_[i].code_column + 1);
      for (size_t i = begin; i < end; ++i)
        pads.push_back(
            {comments_[i].offset, column - comments_[i].code_column - 1});
      begin = end;
    }
    for (auto it = pads.rbegin(); it != pads.rend(); ++it)
      out_.insert(it->first, it->second, ' ');
  }

  static bool InRun(const Printed& a, const Printed& b) {
    return b.line == a.line + 1 &&
           b.node->source_line == a.node->source_line + 1 &&
           b.node->source_column == a.node->source_column;
  }

  size_t width_;
  std::vector<Command> stack_;
  std::string out_;
  size_t column_ = 0;
  size_t lines_ = 0;
  std::vector<Printed> comments_;
};

std::string Render(const Doc& doc, size_t width) {
  return Renderer(width).Run(doc);
}

}  // namespace delta::format
