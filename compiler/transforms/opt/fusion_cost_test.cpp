// Unit tests of the fusion cost model (Note [Fusion cost]) and of fusion
// following it.
#include "compiler/transforms/opt/fusion_cost.h"

#include "compiler/transforms/opt/fuse_elementwise.h"
#include "compiler/transforms/testing.h"

using namespace delta;
using namespace delta::ir;
using namespace delta::transforms::testing;

TEST_CASE("element costs come from ops.def's flags") {
  Module module;
  Dim* d = module.AddDim("d", 8);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  Value* sum = b.Binary(OpKind::Add, x, x);
  Value* quotient = b.Binary(OpKind::Div, x, sum);
  Value* bent = b.Unary(OpKind::Tanh, quotient);
  Return(b, {b.Broadcast(bent, {})});
  CHECK(opt::ElementCost(*sum->def) == 1);
  CHECK(opt::ElementCost(*quotient->def) == 4);
  CHECK(opt::ElementCost(*bent->def) == 16);
  CHECK(opt::RecomputeCost(*bent->def, 1) == 0);
  CHECK(opt::RecomputeCost(*bent->def, 3) == 32);
  CHECK(opt::RecomputingIsCheaper(opt::RecomputeCost(*sum->def, 9)));
  CHECK_FALSE(opt::RecomputingIsCheaper(opt::RecomputeCost(*sum->def, 10)));
  CHECK_FALSE(opt::RecomputingIsCheaper(opt::RecomputeCost(*bent->def, 2)));
}

TEST_CASE("reads per element count the loop's dims the op lacks") {
  Module module;
  Dim* n = module.AddDim("n", 5);
  Dim* m = module.AddDim("m", 7);
  Dim* m2 = module.AddDim("m2", 7);
  Dim* k = module.AddDim("k", 1);
  k->constant = std::nullopt;  // a size known only at run time
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({n, m}), "x");
  Value* e = b.Unary(OpKind::Exp, x);
  Return(b, {e});
  llvm::DenseMap<const Dim*, const Dim*> none;
  CHECK(opt::ReadsPerElement(*e->def, DimList({n, m}), none) == 1);
  CHECK(opt::ReadsPerElement(*e->def, DimList({n, m, m2}), none) == 7);
  // Read through rename(m -> m2): m2's index is m's.
  llvm::DenseMap<const Dim*, const Dim*> renamed = {{m2, m}};
  CHECK(opt::ReadsPerElement(*e->def, DimList({n, m2}), renamed) == 1);
  // A dim of unknown size counts as many.
  CHECK(opt::ReadsPerElement(*e->def, DimList({n, m, k}), none) == 64);
}

// sum(op(a) * w, h) with a over [b, s, h] and w over [d, h], fused: b
// and s are two row dims and the product is small, so it stays a loop
// nest over [b, s, d, h] that would compute op(a) once per d.
namespace {

std::string FuseUnderContraction(OpKind op, int64_t d_size) {
  Module module;
  Dim* bd = module.AddDim("b", 2);
  Dim* s = module.AddDim("s", 2);
  Dim* d = module.AddDim("d", d_size);
  Dim* h = module.AddDim("h", 64);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* a = AddParam(f, F32({bd, s, h}), "a");
  Value* w = AddParam(f, F32({d, h}), "w");
  Value* product = b.Binary(OpKind::Mul, b.Unary(op, a), w);
  Return(b, {b.Reduce(ReduceKind::Sum, product, {h})});
  CHECK(opt::FuseElementwise(module));
  CheckValid(module);
  return Print(module);
}

}  // namespace

TEST_CASE("tanh under a contraction's extra dim stays a map") {
  std::string text = FuseUnderContraction(OpKind::Tanh, 32);
  CHECK(Contains(text,
                 "  %2 = tanh %0 : f32[b, s, h]\n"
                 "  %3 = reduce.sum [h] {\n"));
  CHECK(Count(text, "tanh") == 1);
}

TEST_CASE("a neg under the same contraction is still fused") {
  // Read 4 times per element: 3 extra negations cost less than a store.
  std::string text = FuseUnderContraction(OpKind::Neg, 4);
  CHECK(Count(text, "f32[b, s, h]") == 1);  // the parameter only
  CHECK(Contains(text, "    %8 = neg %7 : f32\n"));
}
