// Source spans: half-open ranges of characters in a buffer owned by an
// llvm::SourceMgr, so that diagnostics can find the file, line and column.
#pragma once

#include <llvm/Support/SMLoc.h>

namespace delta {

// A half-open range [begin, end) of source text. The members are named
// begin/end so that Bison's default YYLLOC_DEFAULT works on it unchanged.
struct Span {
  const char* begin = nullptr;
  const char* end = nullptr;

  bool IsValid() const { return begin != nullptr; }
  llvm::SMLoc Start() const { return llvm::SMLoc::getFromPointer(begin); }
  llvm::SMRange Range() const {
    return {llvm::SMLoc::getFromPointer(begin),
            llvm::SMLoc::getFromPointer(end)};
  }
  // The smallest span that covers both.
  static Span Join(Span a, Span b) {
    if (!a.IsValid()) return b;
    if (!b.IsValid()) return a;
    return {a.begin < b.begin ? a.begin : b.begin,
            a.end > b.end ? a.end : b.end};
  }
};

}  // namespace delta
