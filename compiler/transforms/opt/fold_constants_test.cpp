// Unit tests of constant folding: exact rules only.
#include "compiler/transforms/opt/fold_constants.h"

#include "compiler/transforms/testing.h"

using namespace delta;
using namespace delta::ir;
using namespace delta::transforms::testing;

TEST_CASE("arithmetic on constants folds, transcendental functions stay") {
  Module module;
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* sum = b.Binary(OpKind::Add, b.FloatConst(ElemKind::F32, 0.1),
                        b.FloatConst(ElemKind::F32, 0.2));
  Value* e = b.Unary(OpKind::Exp, b.FloatConst(ElemKind::F32, 1));
  Value* wrapped = b.Binary(OpKind::Add, b.IntConst(ElemKind::I32, 2147483647),
                            b.IntConst(ElemKind::I32, 1));
  Value* by_zero = b.Binary(OpKind::Div, b.IntConst(ElemKind::I64, 7),
                            b.IntConst(ElemKind::I64, 0));
  Value* less = b.Binary(OpKind::Lt, b.FloatConst(ElemKind::F64, 1),
                         b.FloatConst(ElemKind::F64, 2));
  Value* converted =
      b.Convert(b.FloatConst(ElemKind::F64, -3e9), ElemKind::I32);
  Return(b, {sum, e, wrapped, by_zero, less, converted});

  CHECK(opt::FoldConstants(module));
  CheckValid(module);
  std::string text = Print(module);
  // 0.1f + 0.2f in f32 arithmetic is 0.3f rounded up by one ulp.
  CHECK(Contains(text, "%2 = const 0.3 : f32"));
  CHECK(Contains(text, "exp %3 : f32"));
  CHECK(Contains(text, "%7 = const -2147483648 : i32"));
  CHECK(Contains(text, "%10 = div %8, %9 : i64"));
  CHECK(Contains(text, "%13 = const true : bool"));
  CHECK(Contains(text, "%15 = const -2147483648 : i32"));  // saturated
}

TEST_CASE("identities that hold for every value") {
  Module module;
  Dim* d = module.AddDim("d", 8);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  Value* k = AddParam(f, I64({d}), "k");
  Value* times_one = b.Binary(OpKind::Mul, x, b.FloatConst(ElemKind::F32, 1));
  Value* plus_zero = b.Binary(OpKind::Add, x, b.FloatConst(ElemKind::F32, 0));
  Value* plus_minus_zero =
      b.Binary(OpKind::Add, x, b.FloatConst(ElemKind::F32, -0.0));
  Value* int_plus_zero = b.Binary(OpKind::Add, k, b.IntConst(ElemKind::I64, 0));
  Return(b, {times_one, plus_zero, plus_minus_zero, int_plus_zero, b.Size(d)});

  CHECK(opt::FoldConstants(module));
  CheckValid(module);
  std::string text = Print(module);
  // x + 0.0 is not x when x is -0.0, so it stays.
  CHECK(Count(text, "add") == 1);
  CHECK(Count(text, "mul") == 0);
  CHECK(Contains(text, "const 8 : i64"));
  CHECK(Contains(text, "return %0, %"));
}

TEST_CASE("folding reaches into regions and through chains") {
  Module module;
  Dim* d = module.AddDim("d", 4);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Op* map = b.Create(OpKind::Map, {}, {I64({d})});
  map->dims = {d};
  Block* body = b.AddRegion(map, {Type{ElemKind::Index, d, {}}});
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(body);
    Value* three = b.Binary(OpKind::Add, b.IntConst(ElemKind::I64, 1),
                            b.IntConst(ElemKind::I64, 2));
    b.Yield({b.Binary(OpKind::Mul, three, b.Size(d))});
  }
  Return(b, {map->result()});
  CHECK(opt::FoldConstants(module));
  CheckValid(module);
  CHECK(Contains(Print(module), "const 12 : i64\n    yield"));
}
