// Unit tests of the simplifications.
#include "compiler/transforms/opt/simplify.h"

#include "compiler/transforms/testing.h"

using namespace delta;
using namespace delta::ir;
using namespace delta::transforms::testing;

TEST_CASE("ops that return their operand are replaced by it") {
  Module module;
  Dim* d = module.AddDim("d", 8);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  // The builder already skips a no-op broadcast; lowering may not.
  Op* broadcast = b.Create(OpKind::Broadcast, {x}, {x->type});
  broadcast->dims = {d};
  Value* same = b.Convert(broadcast->result(), ElemKind::F32);
  Value* gathered = b.Gather(same, {b.Iota(d)});
  Value* twice_negated = b.Unary(OpKind::Neg, b.Unary(OpKind::Neg, gathered));
  Value* wider = b.Convert(twice_negated, ElemKind::F64);
  Return(b, {wider});

  CHECK(opt::Simplify(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Count(text, "broadcast") == 0);
  CHECK(Count(text, "gather") == 0);
  CHECK(Contains(text, "convert %0 : f64[d]"));
}

TEST_CASE("an if on a constant becomes the branch it takes") {
  Module module;
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32(), "x");
  Op* branch = b.Create(OpKind::If, {b.BoolConst(false)}, {F32()});
  for (OpKind kind : {OpKind::Sin, OpKind::Cos}) {
    Block* region = b.AddRegion(branch, {});
    InsertionGuard guard(b);
    b.SetInsertionBlock(region);
    b.Yield({b.Unary(kind, x)});
  }
  Return(b, {b.Unary(OpKind::Exp, branch->result())});

  CHECK(opt::Simplify(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Count(text, "if") == 0);
  CHECK(Count(text, "sin") == 0);
  CHECK(Contains(text, "  %2 = cos %0 : f32\n  %3 = exp %2 : f32\n"));
}

TEST_CASE("a point read of a broadcast reads its source") {
  Module module;
  Dim* n = module.AddDim("n", 4);
  Dim* d = module.AddDim("d", 3);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  Value* s = AddParam(f, F32(), "s");
  Value* wide = b.Broadcast(x, {n});
  Value* filled = b.Broadcast(s, {n, d});
  Value* i = b.ToIndex(n, b.IntConst(ElemKind::I64, 2));
  Value* j = b.ToIndex(d, b.IntConst(ElemKind::I64, 1));
  Value* sum =
      b.Binary(OpKind::Add, b.Gather(wide, {i, j}), b.Gather(filled, {i, j}));
  Return(b, {sum});

  CHECK(opt::Simplify(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Contains(text, "gather %0, "));
  CHECK(Count(text, "gather") == 1);
  CHECK(Contains(text, "add %"));
  CHECK(Contains(text, ", %1 : f32"));
}

TEST_CASE(
    "a partial read of a broadcast is rewritten only when it covers "
    "the new dims") {
  Module module;
  Dim* n = module.AddDim("n", 4);
  Dim* d = module.AddDim("d", 3);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  Value* wide = b.Broadcast(x, {n});
  // A row of the broadcast is x itself; a column is not a read of x.
  Value* row = b.Gather(wide, {b.ToIndex(n, b.IntConst(ElemKind::I64, 2))});
  Value* column = b.Gather(wide, {b.ToIndex(d, b.IntConst(ElemKind::I64, 1))});
  Return(b, {row, column});

  CHECK(opt::Simplify(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Count(text, "broadcast") == 1);
  CHECK(Count(text, "gather") == 1);
  CHECK(Contains(text, "return %0, "));
}

TEST_CASE("a point read of a slice taken at an index array reads the source") {
  Module module;
  Dim* c = module.AddDim("c", 3);
  Dim* n = module.AddDim("n", 4);
  Function* f = module.AddFunction("f");
  Builder b(f);
  // x[c: labels] with x over [c, n] and labels over n: the slice is x at
  // (labels[j], j) for each j of n.
  Value* x = AddParam(f, F32({c, n}), "x");
  Value* labels = AddParam(f, I64({n}), "labels");
  Value* slice = b.Gather(x, {b.ToIndex(c, labels)});
  Value* j = b.ToIndex(n, b.IntConst(ElemKind::I64, 2));
  Return(b, {b.Gather(slice, {j})});

  CHECK(opt::Simplify(module));
  CheckValid(module);
  std::string text = Print(module);
  // labels' element at j, then x at (that, j); the slice is left dead.
  CHECK(Contains(text, "  %6 = gather %2, %5 : index<c>\n"));
  CHECK(Contains(text, "  %7 = gather %0, %6, %5 : f32\n  return %7\n"));
}
