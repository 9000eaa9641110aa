// Unit tests of the pass manager, and the freshness of docs/passes.md.
#include "compiler/transforms/pass_manager.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "compiler/transforms/testing.h"

using namespace delta;
using namespace delta::ir;
using namespace delta::transforms;
using namespace delta::transforms::testing;

namespace {

// f(x: f32[d], y: f32[d]) = sum(exp(x) * y + 1.0, d), as lowering writes it.
void BuildSumOfChain(Module& module) {
  Dim* d = module.AddDim("d", 8);
  Function* f = module.AddFunction("f");
  f->is_export = true;
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  Value* y = AddParam(f, F32({d}), "y");
  Value* one = b.FloatConst(ElemKind::F32, 1);
  Value* spread = b.Create(OpKind::Broadcast, {one}, {F32({d})})->result();
  spread->def->dims = {d};
  Value* product = b.Binary(OpKind::Mul, b.Unary(OpKind::Exp, x), y);
  Value* unused = b.Unary(OpKind::Exp, x);
  (void)unused;
  Value* shifted = b.Binary(OpKind::Add, product, spread);
  Return(b, {b.Reduce(ReduceKind::Sum, shifted, {d})});
}

}  // namespace

TEST_CASE("every pass is registered once under its command-line name") {
  CHECK(AllPasses().size() == 15);
  for (const PassInfo& pass : AllPasses()) {
    CHECK(FindPass(pass.cli_name) == &pass);
    CHECK_FALSE(pass.description.empty());
  }
  CHECK(FindPass("no-such-pass") == nullptr);
  CHECK(PipelineFor(0).empty());
  CHECK_FALSE(PipelineFor(1).empty());
}

TEST_CASE("-O2 leaves sum(exp(x) * y + 1.0, d) as one fused reduce") {
  Module module;
  BuildSumOfChain(module);
  PipelineOptions options;
  options.opt_level = 2;
  options.verify_each = true;
  std::string printed, errors;
  llvm::raw_string_ostream out(printed), err(errors);
  REQUIRE(RunPipeline(module, options, out, err));
  CHECK(errors.empty());
  std::string text = Print(module);
  CHECK(Count(text, "reduce.sum [d] {") == 1);
  CHECK(Count(text, "f32[d]") == 2);  // the two parameters only
  CHECK(Count(text, "= exp") == 1);
  CHECK(Count(text, "broadcast") == 0);
}

TEST_CASE("--print-after and --time-passes") {
  Module module;
  BuildSumOfChain(module);
  PipelineOptions options;
  options.print_after = {"fuse-elementwise"};
  options.time_passes = true;
  std::string printed, errors;
  llvm::raw_string_ostream out(printed), err(errors);
  REQUIRE(RunPipeline(module, options, out, err));
  // -O2 fuses twice (after simplify made point reads).
  CHECK(Count(printed, "// ----- IR after") == 2);
  CHECK(Contains(printed, "// ----- IR after fuse-elementwise -----\n"));
  CHECK(Contains(printed, "reduce.sum [d] {"));
  CHECK(Contains(errors, "pass execution times"));
  CHECK(Contains(errors, "eliminate-dead-code\n"));
  CHECK(Contains(errors, "total\n"));
}

TEST_CASE("the verifier names the pass that broke the IR") {
  Module module;
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32(), "x");
  Return(b, {b.Unary(OpKind::Exp, x)});
  f->result_types.push_back(F32());  // declared two results, returns one
  PipelineOptions options;
  options.opt_level = 1;
  options.verify_each = true;
  std::string printed, errors;
  llvm::raw_string_ostream out(printed), err(errors);
  CHECK_FALSE(RunPipeline(module, options, out, err));
  CHECK(Contains(errors, "invalid IR after pass 'inline-calls'"));
}

TEST_CASE("docs/passes.md is generated from passes.def") {
  std::string expected;
  llvm::raw_string_ostream out(expected);
  WritePassesDoc(out);
  const std::string path = DELTA_SOURCE_DIR "/docs/passes.md";
  if (std::getenv("DELTA_UPDATE_DOCS")) {
    std::ofstream(path) << expected;
  }
  std::ifstream file(path);
  std::stringstream actual;
  actual << file.rdbuf();
  CHECK_MESSAGE(actual.str() == expected,
                "docs/passes.md is stale: run DELTA_UPDATE_DOCS=1 "
                "transforms_tests");
}
