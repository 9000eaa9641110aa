// Unit tests of inlining: values, size parameters and local dims.
#include "compiler/transforms/opt/inline_calls.h"

#include "compiler/transforms/testing.h"

using namespace delta;
using namespace delta::ir;
using namespace delta::transforms::testing;

namespace {

// @twice[n](v: f32[n]) -> f32: sums a local dim m of size 2n over v.
Function* AddTwice(Module& module) {
  Function* g = module.AddFunction("twice");
  Builder b(g);
  Dim* n = AddSizeParam(g, "n");
  Value* v = AddParam(g, F32({n}), "v");
  Value* count = b.Binary(OpKind::Mul, b.Size(n), b.IntConst(ElemKind::I64, 2));
  Dim* m = g->NewDim("m", std::nullopt, nullptr);
  b.DimDef(m, count);
  Value* positions = b.Convert(b.Iota(m), ElemKind::F32);
  Value* total = b.Reduce(ReduceKind::Sum, positions, {m});
  Return(b, {b.Binary(OpKind::Add, b.Reduce(ReduceKind::Sum, v, {n}), total)});
  return g;
}

Op* Call(Builder& b, Function* callee, std::vector<const Dim*> dims,
         std::vector<Value*> args) {
  Op* call = b.Create(OpKind::Call, std::move(args), callee->result_types);
  call->callee = callee;
  call->dims = std::move(dims);
  return call;
}

}  // namespace

TEST_CASE("a call becomes the callee's body with its dims bound") {
  Module module;
  Dim* d = module.AddDim("d", 5);
  Function* g = AddTwice(module);
  Function* f = module.AddFunction("f");
  f->is_export = true;
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  Op* first = Call(b, g, {d}, {x});
  Op* second = Call(b, g, {d}, {x});
  Return(b, {b.Binary(OpKind::Add, first->result(), second->result())});
  CheckValid(module);

  CHECK(opt::InlineCalls(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Count(text, "call") == 0);
  CHECK(Count(text, "func @") == 1);  // @twice is gone
  CHECK(Contains(text, "size [d]"));
  CHECK(Contains(text, "dim [m] %"));
  CHECK(Contains(text, "dim [m.1] %"));
  CHECK(Contains(text, "iota [m.1] : index<m.1>[m.1]"));
  CHECK(Contains(text, "reduce.sum [d] %0 : f32"));
  // Each copy of m gets its own size value.
  REQUIRE(f->dims.size() == 2);
  CHECK(f->dims[0]->size != nullptr);
  CHECK(f->dims[0]->size != f->dims[1]->size);
}

TEST_CASE("exported functions stay after inlining their calls") {
  Module module;
  Dim* d = module.AddDim("d", 5);
  Function* g = AddTwice(module);
  g->is_export = true;
  Function* f = module.AddFunction("main");
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  Return(b, {Call(b, g, {d}, {x})->result()});

  CHECK(opt::InlineCalls(module));
  CheckValid(module);
  CHECK(module.functions.size() == 2);
  CHECK_FALSE(opt::InlineCalls(module));
}

TEST_CASE("calls nested in regions and in callees are inlined") {
  Module module;
  Dim* d = module.AddDim("d", 5);
  Function* inner = module.AddFunction("inner");
  {
    Builder b(inner);
    Value* v = AddParam(inner, F32(), "v");
    Return(b, {b.Unary(OpKind::Exp, v)});
  }
  Function* outer = module.AddFunction("outer");
  {
    Builder b(outer);
    Value* v = AddParam(outer, F32(), "v");
    Return(b, {b.Unary(OpKind::Neg, Call(b, inner, {}, {v})->result())});
  }
  Function* f = module.AddFunction("main");
  Builder b(f);
  Value* x = AddParam(f, F32({d}), "x");
  Op* map = b.Create(OpKind::Map, {}, {F32({d})});
  map->dims = {d};
  Block* body = b.AddRegion(map, {Type{ElemKind::Index, d, {}}});
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(body);
    b.Yield({Call(b, outer, {}, {b.Gather(x, {body->args[0]})})->result()});
  }
  Return(b, {map->result()});

  CHECK(opt::InlineCalls(module));
  CheckValid(module);
  CHECK(module.functions.size() == 1);
  CHECK(Contains(Print(module),
                 "    %3 = gather %0, %2 : f32\n"
                 "    %4 = exp %3 : f32\n"
                 "    %5 = neg %4 : f32\n"
                 "    yield %5\n"));
}
