// The front half of the pipeline as one step: a checked program becomes
// optimized IR. Every caller (`dlc build`/`run`, the REPL, `dlc test`, the
// language server) goes through it, so the stages run in one order and
// report their errors one way.
#pragma once

#include <llvm/Support/raw_ostream.h>

#include <functional>
#include <memory>

#include "compiler/diagnostics/diagnostics.h"
#include "compiler/ir/ir.h"
#include "compiler/sema/program.h"
#include "compiler/transforms/pass_manager.h"

namespace delta::compile {

// What differs between the callers of Compile.
struct CompileOptions {
  // Whether to run the optimization pipeline; without it Compile stops after
  // verifying (`dlc test` interprets the IR as differentiated; the language
  // server wants only the diagnostics).
  bool optimize = true;
  // The optimization level and the debugging aids (--print-after,
  // --time-passes, verifying after each pass).
  transforms::PipelineOptions pipeline;
  // Where IR printed after a pass, pass timings and the pass manager's
  // verifier failures go; null: stderr.
  llvm::raw_ostream* pass_log = nullptr;
  // Called between lowering and differentiation with the module, which it
  // may extend with derivative functions for AD to fill (`dlc test` adds
  // those that its gradient checks need).
  std::function<void(ir::Module&)> after_lower;
};

// Lowers `program` (checked without errors) to IR, fills its derivative
// functions, rejects derivative call cycles, verifies the IR and optimizes
// it. Every error is reported on `diags` at the span of the source it
// concerns (a differentiation error at its op); returns null after
// reporting. See docs/internals/driver.md.
std::unique_ptr<ir::Module> Compile(const sema::Program& program,
                                    DiagnosticEngine& diags,
                                    const CompileOptions& options);

}  // namespace delta::compile
