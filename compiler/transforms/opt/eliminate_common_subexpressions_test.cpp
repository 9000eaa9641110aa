// Unit tests of CSE: blocks, nested regions, and what must not merge.
#include "compiler/transforms/opt/eliminate_common_subexpressions.h"

#include "compiler/transforms/testing.h"

using namespace delta;
using namespace delta::ir;
using namespace delta::transforms::testing;

TEST_CASE("equal pure ops merge, also into nested regions") {
  Module module;
  Dim* d = module.AddDim("d", 8);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  Value* first = b.Unary(OpKind::Exp, x);
  Value* second = b.Unary(OpKind::Exp, x);
  Value* one = b.FloatConst(ElemKind::F32, 1);
  Op* map = b.Create(OpKind::Map, {}, {F32({d})});
  map->dims = {d};
  Block* body = b.AddRegion(map, {Type{ElemKind::Index, d, {}}});
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(body);
    Value* inner_one = b.FloatConst(ElemKind::F32, 1);
    Value* element = b.Gather(b.Unary(OpKind::Exp, x), {body->args[0]});
    b.Yield({b.Binary(OpKind::Add, element, inner_one)});
  }
  Value* sum = b.Binary(OpKind::Add, first, second);
  Return(b, {sum, map->result(), one});

  CHECK(opt::EliminateCommonSubexpressions(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Count(text, "exp") == 1);
  CHECK(Count(text, "const 1 : f32") == 1);
  CHECK(Contains(text, "add %1, %1"));
}

TEST_CASE("what must not merge") {
  Module module;
  Dim* d = module.AddDim("d", 8);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  // -0.0 and 0.0 are different constants.
  Value* zero = b.FloatConst(ElemKind::F32, 0.0);
  Value* minus_zero = b.FloatConst(ElemKind::F32, -0.0);
  // Conversions to different types.
  Value* wide = b.Convert(x, ElemKind::F64);
  Value* integer = b.Convert(x, ElemKind::I32);
  // Ops in sibling regions do not see each other.
  std::vector<Value*> results;
  for (int i = 0; i < 2; ++i) {
    Op* map = b.Create(OpKind::Map, {}, {F32({d})});
    map->dims = {d};
    Block* body = b.AddRegion(map, {Type{ElemKind::Index, d, {}}});
    InsertionGuard guard(b);
    b.SetInsertionBlock(body);
    b.Yield({b.Unary(OpKind::Sin, b.Gather(x, {body->args[0]}))});
    results.push_back(map->result());
  }
  Return(b, {zero, minus_zero, wide, integer, results[0], results[1]});
  CHECK_FALSE(opt::EliminateCommonSubexpressions(module));
}
