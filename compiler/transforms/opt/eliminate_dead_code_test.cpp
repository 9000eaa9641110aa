// Unit tests of DCE: effects, nested regions, map results, loop state.
#include "compiler/transforms/opt/eliminate_dead_code.h"

#include "compiler/transforms/testing.h"

using namespace delta;
using namespace delta::ir;
using namespace delta::transforms::testing;

TEST_CASE("unused pure ops go, ops with effects stay") {
  Module module;
  Dim* d = module.AddDim("d", 8);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  Value* k = AddParam(f, I64(), "k");
  b.Unary(OpKind::Exp, b.Unary(OpKind::Neg, x));  // dead chain
  b.Binary(OpKind::Div, k, k);                    // may divide by zero
  b.Binary(OpKind::Div, x, x);                    // float: no error
  b.ToIndex(d, k);                                // may be out of range
  Op* print = b.Create(OpKind::Print, {k}, {});
  print->print_items = {{false, "k = "}, {true, ""}};
  Return(b, {x});

  CHECK(opt::EliminateDeadCode(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Count(text, "exp") == 0);
  CHECK(Count(text, "neg") == 0);
  CHECK(Contains(text, "div %1, %1 : i64"));
  CHECK(Count(text, "div") == 1);
  CHECK(Contains(text, "to_index [d] %1"));
  CHECK(Contains(text, "print \"k = \", %1"));
  CHECK_FALSE(opt::EliminateDeadCode(module));
}

TEST_CASE("unused map results and loop state are dropped") {
  Module module;
  Dim* d = module.AddDim("d", 8);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  Op* map = b.Create(OpKind::Map, {}, {F32({d}), F32({d})});
  map->dims = {d};
  Block* body = b.AddRegion(map, {Type{ElemKind::Index, d, {}}});
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(body);
    Value* element = b.Gather(x, {body->args[0]});
    b.Yield({b.Unary(OpKind::Sin, element), b.Unary(OpKind::Cos, element)});
  }
  Value* lo = b.IntConst(ElemKind::I64, 0);
  Value* hi = b.IntConst(ElemKind::I64, 10);
  Value* start = b.FloatConst(ElemKind::F32, 0);
  Op* loop = b.Create(OpKind::Loop, {lo, hi, start, start}, {F32(), F32()});
  Block* loop_body = b.AddRegion(loop, {I64(), F32(), F32()});
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(loop_body);
    Value* counter = b.Convert(loop_body->args[0], ElemKind::F32);
    b.Yield({b.Binary(OpKind::Add, loop_body->args[1], counter),
             b.Binary(OpKind::Mul, loop_body->args[2], counter)});
  }
  Return(b, {map->result(1), loop->result(0)});

  CHECK(opt::EliminateDeadCode(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Count(text, "sin") == 0);
  CHECK(Contains(text, "cos"));
  CHECK(Count(text, "mul") == 0);
  CHECK(Contains(text, "loop %5, %6, %7 {"));
}

TEST_CASE("an unused call goes only if its callee has no effects") {
  Module module;
  Function* pure = module.AddFunction("pure");
  {
    Builder b(pure);
    Value* v = AddParam(pure, F32(), "v");
    Return(b, {b.Unary(OpKind::Exp, v)});
  }
  Function* noisy = module.AddFunction("noisy");
  {
    Builder b(noisy);
    Value* v = AddParam(noisy, F32(), "v");
    Op* print = b.Create(OpKind::Print, {v}, {});
    print->print_items = {{true, ""}};
    Return(b, {v});
  }
  Function* f = module.AddFunction("main");
  Builder b(f);
  Value* x = AddParam(f, F32(), "x");
  for (Function* callee : {pure, noisy}) {
    Op* call = b.Create(OpKind::Call, {x}, callee->result_types);
    call->callee = callee;
  }
  Return(b, {x});
  CHECK(opt::EliminateDeadCode(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Count(text, "call @pure") == 0);
  CHECK(Count(text, "call @noisy") == 1);
}
