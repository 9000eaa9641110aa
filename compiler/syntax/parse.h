// Entry point of the front end's syntax stage: source buffer -> AST.
#pragma once

#include <llvm/Support/SourceMgr.h>

#include "compiler/diagnostics/diagnostics.h"
#include "compiler/syntax/ast.h"

namespace delta {

// Parses the buffer `buffer_id` of `sources` into a module allocated in
// `arena`. Syntax errors are reported to `diags`; the parser recovers and
// returns the declarations it could read, so one run reports several errors.
// Never returns null.
ast::Module* ParseModule(llvm::SourceMgr& sources, unsigned buffer_id,
                         ast::Arena& arena, DiagnosticEngine& diags);

}  // namespace delta
