// Comments of a source text with their positions: the lexer drops them, so
// the formatter finds them again to put them back.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <vector>

namespace delta::format {

struct Comment {
  const char* begin = nullptr;
  const char* end = nullptr;
  llvm::StringRef text() const { return {begin, size_t(end - begin)}; }
};

// Every `//` and `/* */` comment (block comments nest, as in the lexer) of
// `text` outside string literals, in order.
// `//` comments end before their newline (and trailing spaces are dropped).
std::vector<Comment> CollectComments(llvm::StringRef text);

}  // namespace delta::format
