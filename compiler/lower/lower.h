// Lowering: the typed AST of a checked program becomes IR. Structs and
// tuples are flattened into their leaves, implicit lifting becomes explicit
// `map` regions, lambdas are inlined, size parameters become i64 parameters.
#pragma once

#include <memory>

#include "compiler/diagnostics/diagnostics.h"
#include "compiler/ir/ir.h"
#include "compiler/sema/program.h"

namespace delta::lower {

// Lowers `main` and the `export fn`s of the main module, and every function
// they reach. Reports what the back end cannot express yet as diagnostics;
// returns null if any was reported.
std::unique_ptr<ir::Module> LowerProgram(const sema::Program& program,
                                         DiagnosticEngine& diags);

}  // namespace delta::lower
