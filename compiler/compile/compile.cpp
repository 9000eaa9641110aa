// The front half of the pipeline: lower, differentiate, verify, optimize.
#include "compiler/compile/compile.h"

#include <llvm/Support/SourceMgr.h>

#include "compiler/ir/call_graph.h"
#include "compiler/ir/verifier.h"
#include "compiler/lower/lower.h"
#include "compiler/transforms/ad/differentiate.h"
#include "compiler/transforms/distribute/distribute.h"

namespace delta::compile {

namespace {

// The span of the source character at `loc`, or none.
Span SpanAt(llvm::SourceMgr& sources, const ir::Loc& loc) {
  if (!loc.IsValid()) return {};
  for (unsigned id = 1; id <= sources.getNumBuffers(); ++id) {
    if (sources.getMemoryBuffer(id)->getBufferIdentifier() != loc.file)
      continue;
    const char* at =
        sources.FindLocForLineAndColumn(id, loc.line, loc.column).getPointer();
    return at ? Span{at, at + 1} : Span{};
  }
  return {};
}

// Reports the error of ad::Differentiate at its op. A location that names no
// buffer (it cannot happen for ops that lowering placed) stays in the text.
void ReportDifferentiationError(llvm::Error error, DiagnosticEngine& diags) {
  llvm::handleAllErrors(
      std::move(error),
      [&](const ad::AdError& ad_error) {
        Span span = SpanAt(diags.sources(), ad_error.loc());
        std::string message;
        llvm::raw_string_ostream stream(message);
        if (span.IsValid())
          stream << ad_error.text();
        else
          ad_error.log(stream);
        diags.Report(ad_error.kind() == ad::AdError::Kind::Unsupported
                         ? DiagKind::CannotDifferentiateYet
                         : DiagKind::InternalError,
                     span, message);
      },
      [&](const llvm::ErrorInfoBase& other) {
        diags.Report(DiagKind::InternalError, Span{},
                     "automatic differentiation failed: " + other.message());
      });
}

// Sema rejects recursion, but a @vjp rule that differentiates the function
// it serves (grad(f) inside f's rule) calls itself once AD has built the
// derivatives. Reports such a cycle at a call in the user's code.
bool ReportDerivativeCycle(const ir::Module& module, DiagnosticEngine& diags) {
  std::vector<const ir::Op*> cycle = ir::FindCallCycle(module);
  if (cycle.empty()) return false;
  // The caller of cycle[i] is the callee of cycle[i - 1]. Start at a call
  // that a function of the user's (not a derivative) makes.
  auto caller = [&](size_t i) {
    return cycle[(i + cycle.size() - 1) % cycle.size()]->callee;
  };
  size_t first = 0;
  for (size_t i = 0; i < cycle.size(); ++i)
    if (!caller(i)->derivative && cycle[i]->loc.IsValid()) {
      first = i;
      break;
    }
  std::string path;
  for (size_t k = 0; k < cycle.size(); ++k)
    path += caller((first + k) % cycle.size())->name + " -> ";
  std::string name = caller(first)->name;
  diags.Report(DiagKind::Recursion, SpanAt(diags.sources(), cycle[first]->loc),
               "`" + name + "` calls itself through a derivative (" + path +
                   name +
                   "); a @vjp rule cannot differentiate the function it is "
                   "the rule for");
  return true;
}

}  // namespace

std::unique_ptr<ir::Module> Compile(const sema::Program& program,
                                    DiagnosticEngine& diags,
                                    const CompileOptions& options) {
  unsigned errors_before = diags.error_count();
  // 1. Lower the typed AST to IR.
  std::unique_ptr<ir::Module> module = lower::LowerProgram(program, diags);
  if (!module || diags.error_count() > errors_before) return nullptr;
  if (options.after_lower) options.after_lower(*module);
  // 2. Fill the derivative functions that grad, jvp and vjp asked for.
  if (llvm::Error error = ad::Differentiate(*module)) {
    ReportDifferentiationError(std::move(error), diags);
    return nullptr;
  }
  if (ReportDerivativeCycle(*module, diags)) return nullptr;
  // 3. The IR must be well formed before anything runs or optimizes it.
  if (std::vector<std::string> problems = ir::Verify(*module);
      !problems.empty()) {
    DiagBuilder report =
        diags.Report(DiagKind::InternalError, Span{},
                     "internal compiler error: lowering and differentiation "
                     "produced invalid IR");
    for (std::string& problem : problems)
      report.Note(Span{}, std::move(problem));
    return nullptr;
  }
  // 4. A sharded program becomes what each process runs on its block
  //    (docs/internals/distribute.md), at every optimization level.
  std::vector<distribute::Problem> problems = distribute::Distribute(*module);
  for (const distribute::Problem& problem : problems)
    diags.Report(DiagKind::CannotShardYet, SpanAt(diags.sources(), problem.loc),
                 problem.message);
  if (!problems.empty()) return nullptr;
  if (!options.optimize) return module;
  // 5. Optimize: inline, simplify, CSE, DCE, fusion (docs/internals/
  //    passes.md).
  llvm::raw_ostream& log = options.pass_log ? *options.pass_log : llvm::errs();
  if (!transforms::RunPipeline(*module, options.pipeline, log, log))
    return nullptr;
  return module;
}

}  // namespace delta::compile
