// Unit tests of map fusion: sibling maps and elementwise ops over the same
// dims become one map; reads of merged results become scalars.
#include "compiler/transforms/opt/fuse_maps.h"

#include "compiler/transforms/opt/eliminate_dead_code.h"
#include "compiler/transforms/testing.h"

using namespace delta;
using namespace delta::ir;
using namespace delta::transforms::testing;

namespace {

// map [d] { yield kind(x[i]) }
Value* UnaryMap(Builder& b, OpKind kind, Value* x, Dim* d) {
  Op* map = b.Create(OpKind::Map, {}, {x->type});
  map->dims = {d};
  Block* body = b.AddRegion(map, {Type{ElemKind::Index, d, {}}});
  InsertionGuard guard(b);
  b.SetInsertionBlock(body);
  b.Yield({b.Unary(kind, b.Gather(x, {body->args[0]}))});
  return map->result();
}

}  // namespace

TEST_CASE("a shared value and its users become one map") {
  Module module;
  Dim* n = module.AddDim("n", 1000);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F64({n}), "x");
  // s = sin(x) is read by two maps and an elementwise op; only the sums
  // leave the function.
  Value* s = UnaryMap(b, OpKind::Sin, x, n);
  Value* c = UnaryMap(b, OpKind::Exp, s, n);
  Value* t = b.Binary(OpKind::Mul, s, x);
  Return(b, {b.Reduce(ReduceKind::Sum, c, {n}),
             b.Reduce(ReduceKind::Sum, t, {n})});

  CHECK(opt::FuseMaps(module));
  opt::EliminateDeadCode(module);
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Count(text, "map [n]") == 1);
  // sin's result is used only inside: it is not a result any more.
  CHECK(Contains(text, "} : (f64[n], f64[n])\n"));
  CHECK(Count(text, "sin") == 1);
}

TEST_CASE("maps over other dims, or reading a result elsewhere, stay apart") {
  Module module;
  Dim* n = module.AddDim("n", 8);
  Dim* m = module.AddDim("m", 8);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F64({n}), "x");
  Value* y = AddParam(f, F64({m}), "y");
  Value* s = UnaryMap(b, OpKind::Sin, x, n);
  Value* other = UnaryMap(b, OpKind::Cos, y, m);
  // A read of s at another point (its reverse) cannot be a scalar.
  Op* shifted = b.Create(OpKind::Map, {}, {F64({n})});
  shifted->dims = {n};
  {
    Block* body = b.AddRegion(shifted, {Type{ElemKind::Index, n, {}}});
    InsertionGuard guard(b);
    b.SetInsertionBlock(body);
    Value* seven = b.IntConst(ElemKind::I64, 7);
    Value* i = b.Convert(body->args[0], ElemKind::I64);
    Value* j = b.ToIndex(n, b.Binary(OpKind::Sub, seven, i));
    b.Yield({b.Gather(s, {j})});
  }
  Return(b, {s, other, shifted->result()});

  CHECK_FALSE(opt::FuseMaps(module));
  CheckValid(module);
  CHECK(Count(Print(module), "= map [") == 3);
}

TEST_CASE("a cheap result read at another point is computed there") {
  Module module;
  Dim* n = module.AddDim("n", 8);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F64({n}), "x");
  // s = x * x, read reversed by the next map (Note [Shifted reads]): one
  // multiplication per element is cheaper than storing s and loading it.
  Value* s = b.Binary(OpKind::Mul, x, x);
  Op* shifted = b.Create(OpKind::Map, {}, {F64({n})});
  shifted->dims = {n};
  {
    Block* body = b.AddRegion(shifted, {Type{ElemKind::Index, n, {}}});
    InsertionGuard guard(b);
    b.SetInsertionBlock(body);
    Value* i = b.Convert(body->args[0], ElemKind::I64);
    Value* j =
        b.ToIndex(n, b.Binary(OpKind::Sub, b.IntConst(ElemKind::I64, 7), i));
    b.Yield({b.Binary(OpKind::Add, b.Gather(s, {j}),
                      b.Gather(x, {body->args[0]}))});
  }
  Return(b, {shifted->result()});

  CHECK(opt::FuseMaps(module));
  opt::EliminateDeadCode(module);
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Count(text, "= map [") == 1);
  CHECK(Count(text, "mul") == 1);  // at 7 - i, and s is not stored
  CHECK(Contains(text, "} : f64[n]\n"));
}

TEST_CASE("a print between two maps keeps them apart") {
  Module module;
  Dim* n = module.AddDim("n", 8);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F64({n}), "x");
  Value* s = UnaryMap(b, OpKind::Sin, x, n);
  Op* print = b.Create(OpKind::Print, {s}, {});
  print->print_items = {PrintItem{true, ""}};
  Value* c = UnaryMap(b, OpKind::Cos, x, n);
  Return(b, {c});

  CHECK_FALSE(opt::FuseMaps(module));
  CheckValid(module);
}

namespace {

// sin(x) over [n], read by exp(s[i]) + j over [n, extra]; returns the
// printed module after fuse-maps and DCE.
std::string FuseSinIntoWider(int64_t extra_size, bool& changed) {
  Module module;
  Dim* n = module.AddDim("n", 100);
  Dim* extra = module.AddDim("c", extra_size);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F64({n}), "x");
  Value* s = UnaryMap(b, OpKind::Sin, x, n);
  Op* map = b.Create(OpKind::Map, {}, {F64({n, extra})});
  map->dims = {n, extra};
  {
    Block* body = b.AddRegion(map, IndexTypes(map->dims));
    InsertionGuard guard(b);
    b.SetInsertionBlock(body);
    Value* e = b.Unary(OpKind::Exp, b.Gather(s, {body->args[0]}));
    Value* j = b.Convert(body->args[1], ElemKind::F64);
    b.Yield({b.Binary(OpKind::Add, e, j)});
  }
  Return(b, {map->result()});
  changed = opt::FuseMaps(module);
  opt::EliminateDeadCode(module);
  CheckValid(module);
  return Print(module);
}

}  // namespace

TEST_CASE("a map over one more small dim takes in the body it reads") {
  bool changed = false;
  // c has 2 elements (code generation unrolls it): sin's body is copied in
  // and the map over [n] dies.
  std::string text = FuseSinIntoWider(2, changed);
  CHECK(changed);
  CHECK(Count(text, "map [n]") == 0);
  CHECK(Count(text, "map [n, c]") == 1);
  CHECK(Count(text, "sin") == 1);
  // Over 8 elements the body would run 8 times: the maps stay apart.
  text = FuseSinIntoWider(8, changed);
  CHECK_FALSE(changed);
  CHECK(Count(text, "map [n]") == 1);
}
