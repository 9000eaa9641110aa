// The printer's place among the comments of its source (comment_cursor.h),
// and which trailing comments keep their column.
#include "compiler/format/comment_cursor.h"

#include <algorithm>
#include <cstdlib>

namespace delta::format {

// A trailing comment keeps its column where it is aligned with one on the
// line above or below, or has more than one space before it: a column
// chosen on purpose. Only a `//` comment, which ends its line: padding
// before a block comment would move what follows it.
CommentCursor::CommentCursor(llvm::StringRef source)
    : source_(source),
      comments_(CollectComments(source)),
      last_end_(source.begin()) {
  size_t line = 0;
  const char* scanned = source_.begin();
  std::vector<int> trailing_column;  // -1: on its own line
  std::vector<bool> padded;
  for (const Comment& comment : comments_) {
    line += size_t(std::count(scanned, comment.begin, '\n'));
    scanned = comment.begin;
    size_t offset = size_t(comment.begin - source_.begin());
    size_t line_begin = source_.substr(0, offset).rfind('\n') + 1;
    llvm::StringRef before = source_.slice(line_begin, offset);
    lines_.push_back(int(line));
    trailing_column.push_back(before.trim().empty() ? -1 : int(before.size()));
    padded.push_back(before.ends_with("  "));
  }
  for (size_t i = 0; i < comments_.size(); ++i) {
    auto aligned_with = [&](size_t j) {
      return trailing_column[j] >= 0 &&
             trailing_column[j] == trailing_column[i] &&
             std::abs(lines_[j] - lines_[i]) == 1;
    };
    bool aligned = (i > 0 && aligned_with(i - 1)) ||
                   (i + 1 < comments_.size() && aligned_with(i + 1));
    bool kept = trailing_column[i] >= 0 && (aligned || padded[i]) &&
                comments_[i].text().starts_with("//");
    kept_columns_.push_back(kept ? trailing_column[i] : -1);
  }
}

bool CommentCursor::BlankLineBefore(const char* pos) const {
  if (!last_end_ || pos < last_end_) return false;
  return llvm::StringRef(last_end_, size_t(pos - last_end_)).count('\n') >= 2;
}

bool CommentCursor::HasCommentIn(Span span) const {
  for (size_t i = next_; i < comments_.size(); ++i) {
    if (comments_[i].begin >= span.end) return false;
    if (comments_[i].begin >= span.begin) return true;
  }
  return false;
}

const Comment* CommentCursor::NextBefore(const char* pos) const {
  if (next_ < comments_.size() && comments_[next_].begin < pos)
    return &comments_[next_];
  return nullptr;
}

const Comment& CommentCursor::Take() {
  const Comment& comment = comments_[next_++];
  last_end_ = std::max(last_end_, comment.end);
  return comment;
}

Doc CommentCursor::TakeTrailing(const char* bound) {
  if (next_ >= comments_.size()) return {};
  const Comment& comment = comments_[next_];
  if (comment.begin < last_end_ || comment.begin >= bound) return {};
  if (llvm::StringRef(last_end_, size_t(comment.begin - last_end_))
          .contains('\n'))
    return {};
  last_end_ = comment.end;
  size_t index = next_++;
  return Doc::TrailingComment(comment.text().str(), lines_[index],
                              kept_columns_[index]);
}

}  // namespace delta::format
