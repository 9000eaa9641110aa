// Unit tests of scatter-one-hot-sums.
#include "compiler/transforms/opt/scatter_one_hot_sums.h"

#include "compiler/transforms/testing.h"

namespace delta {
namespace {

using ir::Builder;
using ir::Dim;
using ir::ElemKind;
using ir::Function;
using ir::Module;
using ir::OpKind;
using ir::Value;
using transforms::testing::AddParam;
using transforms::testing::CheckValid;
using transforms::testing::Contains;
using transforms::testing::Count;
using transforms::testing::F64;
using transforms::testing::Print;
using transforms::testing::Return;

// reduce.sum [summed] over (n, k, d) of select(j == nearest[n], c[j, e] -
// p[n, e], 0): the gradient of a k-means cost after fusion and simplify.
void BuildMaskedSum(Module& module, bool sum_over_k) {
  Dim* n = module.AddDim("n", 6);
  Dim* k = module.AddDim("k", 3);
  Dim* d = module.AddDim("d", 2);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* c = AddParam(f, F64({k, d}), "c");
  Value* p = AddParam(f, F64({n, d}), "p");
  Value* nearest = AddParam(f, ir::Type{ElemKind::Index, k, {n}}, "nearest");
  ir::DimList result = sum_over_k ? ir::DimList{d} : ir::DimList{k, d};
  ir::Op* sum = b.Create(OpKind::Reduce, {}, {F64(result)});
  sum->dims =
      sum_over_k ? std::vector<const Dim*>{n, k} : std::vector<const Dim*>{n};
  {
    ir::InsertionGuard guard(b);
    ir::Block* body = b.AddRegion(sum, ir::IndexTypes(ir::DimList{n, k, d}));
    b.SetInsertionBlock(body);
    Value* i = body->args[0];
    Value* j = body->args[1];
    Value* e = body->args[2];
    Value* term =
        b.Binary(OpKind::Sub, b.Gather(c, {j, e}), b.Gather(p, {i, e}));
    Value* mask = b.Binary(OpKind::Eq, j, b.Gather(nearest, {i}));
    b.Yield({b.Select(mask, term, b.FloatConst(ElemKind::F64, 0))});
  }
  Return(b, {sum->results[0]});
}

TEST_CASE("a sum masked by a one-hot over a result dim becomes a scatter") {
  Module module;
  BuildMaskedSum(module, false);
  CHECK(opt::ScatterOneHotSums(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Count(text, "reduce") == 0);
  CHECK(Contains(text, "map [n, d] {"));
  CHECK(Contains(text, "scatter_add %"));
  CHECK(Contains(text, "f64[k, d]"));
}

TEST_CASE("a one-hot over a summed dim is left alone") {
  Module module;
  BuildMaskedSum(module, true);
  CHECK_FALSE(opt::ScatterOneHotSums(module));
  CheckValid(module);
  CHECK(Count(Print(module), "scatter_add") == 0);
}

}  // namespace
}  // namespace delta
