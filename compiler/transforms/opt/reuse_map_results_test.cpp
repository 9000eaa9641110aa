// Unit tests of reuse-map-results: a map's copy of an expression that an
// earlier map stores is replaced by a read of the stored result.
#include "compiler/transforms/opt/reuse_map_results.h"

#include "compiler/transforms/opt/eliminate_dead_code.h"
#include "compiler/transforms/testing.h"

using namespace delta;
using namespace delta::ir;
using namespace delta::transforms::testing;

namespace {

// map [dims] { yield exp(x[i..] * 2) + extra(i..) }, the index arguments
// in the order of `dims`.
Value* ExpMap(Builder& b, Value* x, std::vector<const Dim*> dims,
              bool add_index) {
  std::vector<Type> index_types;
  for (const Dim* dim : dims)
    index_types.push_back(Type{ElemKind::Index, dim, {}});
  Op* map = b.Create(OpKind::Map, {}, {F64(DimList(dims))});
  map->dims = dims;
  Block* body = b.AddRegion(map, index_types);
  InsertionGuard guard(b);
  b.SetInsertionBlock(body);
  std::vector<Value*> at;
  for (const Dim* dim : x->type.dims)
    for (size_t k = 0; k < dims.size(); ++k)
      if (dims[k] == dim) at.push_back(body->args[k]);
  Value* e = b.Unary(OpKind::Exp, b.Binary(OpKind::Mul, b.Gather(x, at),
                                           b.FloatConst(ElemKind::F64, 2.0)));
  if (add_index)
    e = b.Binary(OpKind::Add, e,
                 b.Convert(body->args[dims.size() - 1], ElemKind::F64));
  b.Yield({e});
  return map->result();
}

}  // namespace

TEST_CASE("a copy of a stored exp is read instead of computed again") {
  Module module;
  Dim* n = module.AddDim("n", 100);
  Dim* c = module.AddDim("c", 3);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F64({n}), "x");
  // e = exp(2 x) is stored (a sum reads it); the map over [n, c] computes
  // exp(2 x) again and adds c's index.
  Value* e = ExpMap(b, x, {n}, false);
  Value* wide = ExpMap(b, x, {n, c}, true);
  Return(b, {b.Reduce(ReduceKind::Sum, e, {n}), wide});

  CHECK(opt::ReuseMapResults(module));
  opt::EliminateDeadCode(module);
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Count(text, "exp") == 1);
  CHECK(Contains(text, "gather %1, %"));
}

TEST_CASE("an exp is not reused from a map over dims the reader lacks") {
  Module module;
  Dim* n = module.AddDim("n", 100);
  Dim* c = module.AddDim("c", 3);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, F64({n}), "x");
  // The stored map is over [n, c]; the later one over [n] cannot read it.
  Value* wide = ExpMap(b, x, {n, c}, false);
  Value* e = ExpMap(b, x, {n}, false);
  Return(b, {b.Reduce(ReduceKind::Sum, wide, {n, c}), e});

  CHECK(!opt::ReuseMapResults(module));
  CHECK(Count(Print(module), "exp") == 2);
}

TEST_CASE("exps of operands without keys are never taken for each other") {
  Module module;
  Dim* n = module.AddDim("n", 100);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = AddParam(f, I64({n}), "x");
  Value* y = AddParam(f, I64({n}), "y");
  // exp(f64(x / y)) and exp(f64(x % y)): integer division may fail, so
  // it has no key, and neither do the exps.
  auto exp_of = [&](OpKind kind) {
    Op* map = b.Create(OpKind::Map, {}, {F64({n})});
    map->dims = {n};
    Block* body = b.AddRegion(map, {Type{ElemKind::Index, n, {}}});
    InsertionGuard guard(b);
    b.SetInsertionBlock(body);
    Value* q = b.Binary(kind, b.Gather(x, {body->args[0]}),
                        b.Gather(y, {body->args[0]}));
    b.Yield({b.Unary(OpKind::Exp, b.Convert(q, ElemKind::F64))});
    return map->result();
  };
  Value* quotient = exp_of(OpKind::Div);
  Value* remainder = exp_of(OpKind::Rem);
  Return(b, {b.Reduce(ReduceKind::Sum, quotient, {n}), remainder});

  CHECK(!opt::ReuseMapResults(module));
  CHECK(Count(Print(module), "exp") == 2);
}
