// Unit tests of the IR core: building, printing and verifying.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <string>

#include "compiler/ir/builder.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"

using namespace delta::ir;

namespace {

std::string Print(const Module& module) {
  std::string text;
  llvm::raw_string_ostream out(text);
  PrintModule(module, out);
  return text;
}

}  // namespace

TEST_CASE("a lifted elementwise chain and a reduction") {
  Module module;
  Dim* d = module.AddDim("d", 8);
  Dim* e = module.AddDim("e", 3);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* x = f->NewValue(Type{ElemKind::F32, nullptr, {d}}, "x");
  Value* y = f->NewValue(Type{ElemKind::F32, nullptr, {e}}, "y");
  for (Value* p : {x, y}) {
    p->block = f->body.get();
    f->params.push_back(p);
    f->body->args.push_back(p);
  }
  Value* sum = b.Binary(OpKind::Add, b.Unary(OpKind::Exp, x), y);
  CHECK(sum->type.dims == DimList({d, e}));
  Value* total = b.Reduce(ReduceKind::Sum, sum, {d});
  f->result_types = {total->type};
  b.Return({total});
  CHECK(Verify(module).empty());
  std::string text = Print(module);
  CHECK(text.find("reduce.sum [d] %3 : f32[e]") != std::string::npos);
}

TEST_CASE("a map region and the verifier's scoping rule") {
  Module module;
  Dim* d = module.AddDim("d", 4);
  Function* f = module.AddFunction("g");
  Builder b(f);
  Op* map = b.Create(OpKind::Map, {}, {Type{ElemKind::F32, nullptr, {d}}});
  map->dims = {d};
  Block* body = b.AddRegion(map, {Type{ElemKind::Index, d, {}}});
  Value* inner = nullptr;
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(body);
    inner = b.Convert(body->args[0], ElemKind::F32);
    b.Yield({inner});
  }
  f->result_types = {map->result()->type};
  b.Return({map->result()});
  CHECK(Verify(module).empty());

  // Using a value from inside the region after it is an error.
  Function* bad = module.AddFunction("bad");
  Builder bb(bad);
  Op* map2 = bb.Create(OpKind::Map, {}, {Type{ElemKind::F32, nullptr, {d}}});
  map2->dims = {d};
  Block* body2 = bb.AddRegion(map2, {Type{ElemKind::Index, d, {}}});
  Value* leaked = nullptr;
  {
    InsertionGuard guard(bb);
    bb.SetInsertionBlock(body2);
    leaked = bb.Convert(body2->args[0], ElemKind::F32);
    bb.Yield({leaked});
  }
  bad->result_types = {leaked->type};
  bb.Return({leaked});
  auto errors = Verify(module);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("not defined before it") != std::string::npos);
}

TEST_CASE("every op has a mnemonic") {
  for (int i = 0; i <= static_cast<int>(OpKind::Return); ++i)
    CHECK_FALSE(OpMnemonic(static_cast<OpKind>(i)).empty());
}
