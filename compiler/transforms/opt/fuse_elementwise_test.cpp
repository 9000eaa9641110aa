// Unit tests of fusion: chains into maps, chains and maps into reductions.
#include "compiler/transforms/opt/fuse_elementwise.h"

#include "compiler/transforms/opt/eliminate_dead_code.h"
#include "compiler/transforms/testing.h"

using namespace delta;
using namespace delta::ir;
using namespace delta::transforms::testing;

TEST_CASE("sum(exp(x) * y + 1.0, d) becomes one fused reduce") {
  Module module;
  Dim* d = module.AddDim("d", 8);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  Value* y = AddParam(f, F32({d}), "y");
  Value* product = b.Binary(OpKind::Mul, b.Unary(OpKind::Exp, x), y);
  Value* shifted =
      b.Binary(OpKind::Add, product, b.FloatConst(ElemKind::F32, 1));
  Return(b, {b.Reduce(ReduceKind::Sum, shifted, {d})});
  CheckValid(module);

  CHECK(opt::FuseElementwise(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Contains(text,
                 "  %2 = const 1 : f32\n"
                 "  %3 = reduce.sum [d] {\n"
                 "  ^(%4: index<d>):\n"
                 "    %5 = gather %0, %4 : f32\n"
                 "    %6 = exp %5 : f32\n"
                 "    %7 = gather %1, %4 : f32\n"
                 "    %8 = mul %6, %7 : f32\n"
                 "    %9 = add %8, %2 : f32\n"
                 "    yield %9\n"
                 "  } : f32\n"));
  CHECK(Count(text, "f32[d]") == 2);  // the parameters, no temporary
  CHECK(Count(text, "map") == 0);
}

TEST_CASE("a named contraction never materializes the product") {
  Module module;
  Dim* i = module.AddDim("i", 2);
  Dim* j = module.AddDim("j", 3);
  Dim* k = module.AddDim("k", 4);
  Function* f = module.AddFunction("matmul");
  Builder b(f);
  Value* a = AddParam(f, F32({i, k}), "a");
  Value* w = AddParam(f, F32({k, j}), "w");
  Return(b, {b.Reduce(ReduceKind::Sum, b.Binary(OpKind::Mul, a, w), {k})});

  CHECK(opt::FuseElementwise(module));
  CheckValid(module);
  CHECK(Contains(Print(module),
                 "  %2 = reduce.sum [k] {\n"
                 "  ^(%3: index<i>, %4: index<j>, %5: index<k>):\n"
                 "    %6 = gather %0, %3, %5 : f32\n"
                 "    %7 = gather %1, %4, %5 : f32\n"
                 "    %8 = mul %6, %7 : f32\n"
                 "    yield %8\n"
                 "  } : f32[i, j]\n"));
}

// op(x) broadcast over e plus y, fused: the printed module.
namespace {

std::string FuseSpreadPlusY(OpKind op) {
  Module module;
  Dim* d = module.AddDim("d", 8);
  Dim* e = module.AddDim("e", 2);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  Value* y = AddParam(f, F32({d, e}), "y");
  Value* spread = b.Broadcast(b.Unary(op, x), {e});
  Return(b, {b.Binary(OpKind::Add, spread, y)});
  CHECK(opt::FuseElementwise(module));
  CheckValid(module);
  return Print(module);
}

}  // namespace

TEST_CASE("a chain that is returned becomes one map") {
  CHECK(Contains(FuseSpreadPlusY(OpKind::Neg),
                 "  %2 = map [d, e] {\n"
                 "  ^(%3: index<d>, %4: index<e>):\n"
                 "    %5 = gather %0, %3 : f32\n"
                 "    %6 = neg %5 : f32\n"
                 "    %7 = gather %1, %3, %4 : f32\n"
                 "    %8 = add %6, %7 : f32\n"
                 "    yield %8\n"
                 "  } : f32[d, e]\n"
                 "  return %2\n"));
}

TEST_CASE("exp under a broadcast is stored, not computed per element") {
  // Note [Fusion cost]: exp costs more than storing and reloading it, so
  // the map over [d, e] reads it instead of computing it twice per d.
  std::string text = FuseSpreadPlusY(OpKind::Exp);
  CHECK(Contains(text,
                 "  %2 = exp %0 : f32[d]\n"
                 "  %3 = map [d, e] {\n"));
  CHECK(Count(text, "exp") == 1);
}

TEST_CASE("a value with two users is not recomputed") {
  Module module;
  Dim* d = module.AddDim("d", 8);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  Value* shared = b.Unary(OpKind::Exp, b.Unary(OpKind::Neg, x));
  Value* total = b.Reduce(ReduceKind::Sum, shared, {d});
  Value* largest = b.Reduce(ReduceKind::Max, shared, {d});
  Return(b, {total, largest});

  CHECK(opt::FuseElementwise(module));
  CheckValid(module);
  std::string text = Print(module);
  // exp(neg x) becomes a map read by both reductions.
  CHECK(Contains(text, "map [d]"));
  CHECK(Contains(text, "reduce.sum [d] %"));
  CHECK(Contains(text, "reduce.max [d] %"));
}

TEST_CASE("a lone elementwise op stays an array op") {
  Module module;
  Dim* d = module.AddDim("d", 8);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  Return(b, {b.Unary(OpKind::Exp, x)});
  CHECK_FALSE(opt::FuseElementwise(module));
}

TEST_CASE("a reduce absorbs the map that feeds it") {
  Module module;
  Dim* d = module.AddDim("d", 8);
  Dim* e = module.AddDim("e", 3);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({d, e}), "x");
  // A map over [e, d] (not canonical order), as lowering may write one.
  Op* map = b.Create(OpKind::Map, {}, {F32({d, e})});
  map->dims = {e, d};
  Block* body = b.AddRegion(
      map, {Type{ElemKind::Index, e, {}}, Type{ElemKind::Index, d, {}}});
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(body);
    Value* element = b.Gather(x, {body->args[1], body->args[0]});
    b.Yield({b.Unary(OpKind::Sin, element)});
  }
  Return(b, {b.Reduce(ReduceKind::Sum, map->result(), {d})});

  CHECK(opt::FuseElementwise(module));
  CheckValid(module);
  CHECK(Contains(Print(module),
                 "  %1 = reduce.sum [d] {\n"
                 "  ^(%2: index<d>, %3: index<e>):\n"
                 "    %4 = gather %0, %2, %3 : f32\n"
                 "    %5 = sin %4 : f32\n"
                 "    yield %5\n"
                 "  } : f32[e]\n"));
}

TEST_CASE("chains inside regions are fused where they are") {
  Module module;
  Dim* d = module.AddDim("d", 8);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  Value* lo = b.IntConst(ElemKind::I64, 0);
  Value* hi = b.IntConst(ElemKind::I64, 3);
  Op* loop = b.Create(OpKind::Loop, {lo, hi, x}, {F32({d})});
  Block* body = b.AddRegion(loop, {I64(), F32({d})});
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(body);
    Value* next =
        b.Unary(OpKind::Tanh, b.Binary(OpKind::Mul, body->args[1], x));
    b.Yield({next});
  }
  Return(b, {loop->result()});

  CHECK(opt::FuseElementwise(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Contains(text, "    %6 = map [d] {\n"));
  // x, the loop's state, its result and the map; the function's result.
  CHECK(Count(text, "f32[d]") == 5);
}

TEST_CASE("a matrix product keeps its operands as arrays for the kernel") {
  Module module;
  Dim* i = module.AddDim("i", 64);
  Dim* j = module.AddDim("j", 64);
  Dim* k = module.AddDim("k", 64);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({i, k}), "x");
  Value* w = AddParam(f, F32({k, j}), "w");
  Value* product = b.Binary(OpKind::Mul, b.Unary(OpKind::Tanh, x), w);
  Return(b, {b.Reduce(ReduceKind::Sum, product, {k})});

  CHECK(opt::FuseElementwise(module));
  CheckValid(module);
  std::string text = Print(module);
  // tanh stays an array op, computed once per element rather than once
  // per element and column; the region is the kernel's gather * gather.
  CHECK(Contains(text, "  %2 = tanh %0 : f32[i, k]\n"));
  CHECK(Contains(text,
                 "    %7 = gather %2, %4, %6 : f32\n"
                 "    %8 = gather %1, %5, %6 : f32\n"
                 "    %9 = mul %7, %8 : f32\n"));
}

TEST_CASE("a rename fuses as a read at the new dim's index") {
  Module module;
  Dim* n = module.AddDim("n", 3);
  Dim* d = module.AddDim("d", 4);
  Dim* e = module.AddDim("e", 4);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F64({n, d}), "x");
  Value* m = AddParam(f, F64({d}), "m");
  Value* centred = b.Rename(b.Binary(OpKind::Sub, x, m), d, e);
  Return(b, {b.Binary(OpKind::Mul, centred, b.FloatConst(ElemKind::F64, 2))});

  CHECK(opt::FuseElementwise(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Count(text, "rename") == 0);
  CHECK(Count(text, "map [n, e]") == 1);
  CHECK(Contains(text, "to_index [d]"));
}

TEST_CASE("a rename between dims of unknown sizes stays an array op") {
  Module module;
  Dim* d = module.AddDim("d", 4);
  Dim* e = module.AddDim("e", 5);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F64({d}), "x");
  Value* renamed = b.Rename(b.Unary(OpKind::Exp, x), d, e);
  Return(b, {b.Unary(OpKind::Neg, renamed)});

  opt::FuseElementwise(module);
  CheckValid(module);
  // The sizes differ: the rename keeps its run-time check.
  CHECK(Count(Print(module), "rename [d -> e]") == 1);
}

TEST_CASE("an outer difference with several users is fused into each") {
  Module module;
  Dim* n = module.AddDim("n", 100);
  Dim* k = module.AddDim("k", 10);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F64({n}), "x");
  Value* c = AddParam(f, F64({k}), "c");
  Value* diff = b.Binary(OpKind::Sub, c, x);  // f64[n, k]
  Value* squares = b.Binary(OpKind::Mul, diff, diff);
  Return(b, {b.Reduce(ReduceKind::Sum, squares, {n}),
             b.Reduce(ReduceKind::Max, diff, {k})});

  CHECK(opt::FuseElementwise(module));
  CheckValid(module);
  std::string text = Print(module);
  // No [n, k] array: each reduction computes the difference itself.
  CHECK(Count(text, "f64[n, k]") == 0);
  CHECK(Count(text, "sub") == 2);
}
