// Unit tests of the distributive law for sums.
#include "compiler/transforms/opt/distribute_sums.h"

#include "compiler/transforms/testing.h"

using namespace delta;
using namespace delta::ir;
using namespace delta::transforms::testing;

TEST_CASE("a sum over a dim of one factor is taken of that factor") {
  Module module;
  Dim* n = module.AddDim("n", 5);
  Dim* d = module.AddDim("d", 3);
  Dim* e = module.AddDim("e", 4);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* a = AddParam(f, F32({n, d}), "a");
  Value* w = AddParam(f, F32({d, e}), "w");
  Value* product = b.Binary(OpKind::Mul, b.Broadcast(a, {e}), w);
  Return(b, {b.Reduce(ReduceKind::Sum, product, {n, d})});

  CHECK(opt::DistributeSums(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Contains(text, "reduce.sum [n] %0 : f32[d]"));
  CHECK(Contains(text, ", %1 : f32[d, e]"));
  CHECK(Contains(text, "reduce.sum [d] %"));
  CHECK(Count(text, "broadcast") == 0);
}

TEST_CASE("the sum moves through neg, rename and a nested sum") {
  // -sum over n of rename(sum over d of (dy * w), e -> d): the adjoint of
  // a broadcast operand of a contraction.
  Module module;
  Dim* n = module.AddDim("n", 5);
  Dim* d = module.AddDim("d", 3);
  Dim* e = module.AddDim("e", 3);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* dy = AddParam(f, F64({n, d}), "dy");
  Value* w = AddParam(f, F64({d, e}), "w");
  Value* inner = b.Reduce(ReduceKind::Sum, b.Binary(OpKind::Mul, dy, w), {d});
  Value* renamed = b.Unary(OpKind::Neg, b.Rename(inner, e, d));
  Return(b, {b.Reduce(ReduceKind::Sum, renamed, {n})});

  CHECK(opt::DistributeSums(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Contains(text, "reduce.sum [n] %0 : f64[d]"));
  CHECK(Contains(text, "rename [e -> d]"));
  CHECK(Count(text, "f64[n, d, e]") == 0);
  CHECK(Count(text, "neg") == 1);
}

TEST_CASE("sums over dims of both factors, or through shared values, stay") {
  Module module;
  Dim* n = module.AddDim("n", 5);
  Dim* d = module.AddDim("d", 3);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({n, d}), "x");
  Value* y = AddParam(f, F32({n, d}), "y");
  Value* w = AddParam(f, F32({d}), "w");
  // Both factors have n and d: a plain contraction.
  Value* dot = b.Reduce(ReduceKind::Sum, b.Binary(OpKind::Mul, x, y), {n, d});
  // The product is also returned: summing x first would not save it.
  Value* shared = b.Binary(OpKind::Mul, x, w);
  Value* total = b.Reduce(ReduceKind::Sum, shared, {n});
  Return(b, {dot, total, shared});

  CHECK_FALSE(opt::DistributeSums(module));
  CheckValid(module);
}

TEST_CASE("a rename of dims of unknown sizes is kept for its check") {
  Module module;
  Function* f = module.AddFunction("f");
  Dim* n = AddSizeParam(f, "n");
  Dim* d = AddSizeParam(f, "d");
  Dim* e = AddSizeParam(f, "e");
  Builder b(f);
  Value* a = AddParam(f, F32({n, e}), "a");
  Value* w = AddParam(f, F32({d}), "w");
  // Summing over d, the rename's target, would drop the check that e and
  // d have the same size.
  Value* renamed = b.Rename(a, e, d);
  Value* product = b.Binary(OpKind::Mul, renamed, w);
  Return(b, {b.Reduce(ReduceKind::Sum, b.Unary(OpKind::Neg, product), {n})});
  CHECK(opt::DistributeSums(module));
  CheckValid(module);
  CHECK(Contains(Print(module), "rename [e -> d]"));
}

TEST_CASE("the source of a broadcast factor is summed, never taken apart") {
  Module module;
  Dim* n = module.AddDim("n", 5);
  Dim* d = module.AddDim("d", 3);
  Dim* e = module.AddDim("e", 4);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* a = AddParam(f, F32({n, d}), "a");
  Value* w = AddParam(f, F32({d, e}), "w");
  // The negation's one user is the broadcast, which is also returned.
  Value* wide = b.Broadcast(b.Unary(OpKind::Neg, a), {e});
  Value* product = b.Binary(OpKind::Mul, wide, w);
  Return(b, {b.Reduce(ReduceKind::Sum, product, {n}), wide});

  CHECK(opt::DistributeSums(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Count(text, "neg") == 1);
  CHECK(Contains(text, "reduce.sum [n] %2 : f32[d]"));
}
