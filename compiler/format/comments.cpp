// Finds the comments of a source text, skipping string literals, with the
// same rules as the lexer (`//` to end of line; `/* */` nests).
#include "compiler/format/comments.h"

namespace delta::format {

std::vector<Comment> CollectComments(llvm::StringRef text) {
  std::vector<Comment> comments;
  const char* p = text.begin();
  const char* end = text.end();
  while (p < end) {
    if (*p == '"') {
      ++p;
      while (p < end && *p != '"' && *p != '\n') p += *p == '\\' ? 2 : 1;
      if (p < end) ++p;
    } else if (*p == '/' && p + 1 < end && p[1] == '/') {
      const char* begin = p;
      while (p < end && *p != '\n') ++p;
      const char* stop = p;
      while (stop > begin &&
             (stop[-1] == ' ' || stop[-1] == '\t' || stop[-1] == '\r'))
        --stop;
      comments.push_back({begin, stop});
    } else if (*p == '/' && p + 1 < end && p[1] == '*') {
      const char* begin = p;
      p += 2;
      int depth = 1;
      while (p < end && depth > 0) {
        if (p + 1 < end && *p == '*' && p[1] == '/') {
          --depth;
          p += 2;
        } else if (p + 1 < end && *p == '/' && p[1] == '*') {
          ++depth;
          p += 2;
        } else {
          ++p;
        }
      }
      comments.push_back({begin, p});
    } else {
      ++p;
    }
  }
  return comments;
}

}  // namespace delta::format
