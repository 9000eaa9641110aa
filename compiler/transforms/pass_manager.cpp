// The registry of passes.def and the pipeline of each optimization level.
#include "compiler/transforms/pass_manager.h"

#include <llvm/ADT/Twine.h>
#include <llvm/Support/ErrorHandling.h>

#include "compiler/base/timings.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/transforms/batch/demap.h"
#include "compiler/transforms/opt/distribute_sums.h"
#include "compiler/transforms/opt/eliminate_common_subexpressions.h"
#include "compiler/transforms/opt/eliminate_dead_code.h"
#include "compiler/transforms/opt/fold_constants.h"
#include "compiler/transforms/opt/fuse_elementwise.h"
#include "compiler/transforms/opt/fuse_maps.h"
#include "compiler/transforms/opt/gather_shifted_scatters.h"
#include "compiler/transforms/opt/hoist_loop_invariants.h"
#include "compiler/transforms/opt/inline_calls.h"
#include "compiler/transforms/opt/reduce_powers.h"
#include "compiler/transforms/opt/reuse_map_results.h"
#include "compiler/transforms/opt/scatter_one_hot_sums.h"
#include "compiler/transforms/opt/simplify.h"
#include "compiler/transforms/opt/sum_scatters.h"

namespace delta::transforms {
namespace {

constexpr PassInfo kPasses[] = {
#define DELTA_PASS(Name, cli_name, description) \
  {#Name, cli_name, description, &opt::Name},
#include "compiler/transforms/passes.def"
};

const PassInfo& Pass(llvm::StringRef cli_name) {
  const PassInfo* pass = FindPass(cli_name);
  if (!pass) llvm::report_fatal_error("no pass named " + llvm::Twine(cli_name));
  return *pass;
}

bool ShouldPrintAfter(const PipelineOptions& options,
                      llvm::StringRef cli_name) {
  for (const std::string& name : options.print_after)
    if (name == "all" || name == cli_name) return true;
  return false;
}

}  // namespace

llvm::ArrayRef<PassInfo> AllPasses() { return kPasses; }

const PassInfo* FindPass(llvm::StringRef cli_name) {
  for (const PassInfo& pass : kPasses)
    if (pass.cli_name == cli_name) return &pass;
  return nullptr;
}

// The pipeline, in order: see docs/internals/passes.md for why.
std::vector<const PassInfo*> PipelineFor(int opt_level) {
  if (opt_level <= 0) return {};
  std::vector<const PassInfo*> passes = {
      // Demap right after inlining: batched calls are inlined by then, and
      // the cleanup passes see the contractions it forms.
      &Pass("inline-calls"),
      &Pass("demap"),
      &Pass("simplify"),
      &Pass("fold-constants"),
      // After folding, which turns AD's exponents k - 1 into constants.
      &Pass("reduce-powers"),
      &Pass("gather-shifted-scatters"),
      // Before fusion puts the one-hot into the reductions that read it.
      &Pass("sum-scatters"),
      // Before CSE, which then merges what the forward and backward
      // sweeps of a loop both computed in their bodies.
      &Pass("hoist-loop-invariants"),
      &Pass("eliminate-common-subexpressions"),
      &Pass("eliminate-dead-code"),
  };
  // Before fusion, which would hide the products in reductions' bodies;
  // it reassociates sums, which -O3 allows.
  if (opt_level >= 3) passes.push_back(&Pass("distribute-sums"));
  passes.push_back(&Pass("fuse-elementwise"));
  if (opt_level >= 2) {
    // Fusion moves ops into regions where they meet copies from other
    // chains and leaves their scalar constants unused outside.
    passes.push_back(&Pass("simplify"));
    passes.push_back(&Pass("eliminate-common-subexpressions"));
    // Simplify turns reads of one-hot sums and of slices into point reads
    // of their sources, which can now fuse into the reading map.
    passes.push_back(&Pass("eliminate-dead-code"));
    passes.push_back(&Pass("fuse-elementwise"));
    // What fusion left over the same dims becomes one loop per group; its
    // members' reads of slices become point reads (simplify), and the
    // merged bodies read the same inputs, which CSE merges.
    passes.push_back(&Pass("fuse-maps"));
    passes.push_back(&Pass("simplify"));
    // After the simplify that reads the arg-extremum's one-hot in a sum's
    // body as a select; -O3: NaN terms (Note [Scattering one-hot sums]).
    if (opt_level >= 3) passes.push_back(&Pass("scatter-one-hot-sums"));
    passes.push_back(&Pass("eliminate-common-subexpressions"));
    // Fusion's copies recompute values that their producer stores anyway.
    passes.push_back(&Pass("reuse-map-results"));
  }
  passes.push_back(&Pass("eliminate-dead-code"));
  return passes;
}

bool RunPipeline(ir::Module& module, const PipelineOptions& options,
                 llvm::raw_ostream& out, llvm::raw_ostream& err) {
  Timings timings;
  double verify_seconds = 0;
  bool ok = true;
  for (const PassInfo* pass : PipelineFor(options.opt_level)) {
    timings.Time(pass->cli_name, [&] { pass->run(module); });
    if (ShouldPrintAfter(options, pass->cli_name)) {
      out << "// ----- IR after " << pass->cli_name << " -----\n";
      ir::PrintModule(module, out);
    }
    if (options.verify_each) {
      auto start = Clock::now();
      std::vector<std::string> errors = ir::Verify(module);
      verify_seconds += SecondsSince(start);
      if (!errors.empty()) {
        err << "dlc: internal compiler error: invalid IR after pass '"
            << pass->cli_name << "':\n";
        for (const std::string& error : errors) err << "  " << error << "\n";
        ok = false;
        break;
      }
    }
  }
  if (options.time_passes) {
    // Builds with assertions verify after every pass; that is time too.
    if (options.verify_each)
      timings.Add("(verify after each pass)", verify_seconds);
    timings.Print("pass execution times", err);
  }
  return ok;
}

void WritePassesDoc(llvm::raw_ostream& out) {
  out << "# Passes of `dlc`\n\n"
         "<!-- Generated from compiler/transforms/passes.def by\n"
         "     `DELTA_UPDATE_DOCS=1 transforms_tests`; do not edit by hand. "
         "-->\n\n"
         "Each pass can be named in `--print-after=NAME` (or `all`), and\n"
         "`--time-passes` times them. Their order and the reasons for it\n"
         "are in [internals/passes.md](internals/passes.md).\n\n"
         "| Pass | What it does |\n"
         "|------|--------------|\n";
  for (const PassInfo& pass : AllPasses())
    out << "| `" << pass.cli_name << "` | " << pass.description << " |\n";
}

}  // namespace delta::transforms
