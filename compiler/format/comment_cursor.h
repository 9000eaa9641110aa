// Where the printer is among the comments of its source: which comments it
// has placed, and where the last item it printed ended (a comment right
// after it on the same line is trailing; blank lines are counted from it).
#pragma once

#include <llvm/ADT/StringRef.h>

#include <vector>

#include "compiler/base/span.h"
#include "compiler/format/comments.h"
#include "compiler/format/doc.h"

namespace delta::format {

class CommentCursor {
 public:
  explicit CommentCursor(llvm::StringRef source);

  void set_last_end(const char* pos) { last_end_ = pos; }
  // How many comments are placed (to see whether a step placed one).
  size_t placed() const { return next_; }

  // Whether the source has a blank line between the last item and `pos`.
  bool BlankLineBefore(const char* pos) const;
  // Whether a comment not placed yet starts inside `span`.
  bool HasCommentIn(Span span) const;
  // The first comment not placed yet, if it starts before `pos`.
  const Comment* NextBefore(const char* pos) const;
  // Places the first comment not placed yet.
  const Comment& Take();
  // The comment that follows the last item on its line and starts before
  // `bound` (the next item, or a closing bracket), placed; or nothing.
  Doc TakeTrailing(const char* bound);

 private:
  llvm::StringRef source_;
  std::vector<Comment> comments_;
  std::vector<int> lines_;         // per comment, 0-based
  std::vector<int> kept_columns_;  // per comment; -1: one space before it
  size_t next_ = 0;                // the first comment not placed yet
  const char* last_end_ = nullptr;
};

}  // namespace delta::format
