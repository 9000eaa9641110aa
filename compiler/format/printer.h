// The pretty-printer behind `dlc fmt` (printer.cpp): a parsed module back
// as source in the canonical style, its comments put back in place.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <string>

#include "compiler/syntax/ast.h"

namespace delta::format {

// `module` (parsed from `source`) in the canonical style (Note [Canonical
// style] in printer.cpp) for lines of `width` columns, with the comments of
// `source`.
std::string PrintModule(llvm::StringRef source, const ast::Module& module,
                        size_t width);

}  // namespace delta::format
