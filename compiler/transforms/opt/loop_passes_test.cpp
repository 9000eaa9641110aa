// Unit tests of gather-shifted-scatters and hoist-loop-invariants: which
// scatters become gathers, and which ops leave a loop body.
#include <functional>

#include "compiler/transforms/opt/gather_shifted_scatters.h"
#include "compiler/transforms/opt/hoist_loop_invariants.h"
#include "compiler/transforms/testing.h"

using namespace delta;
using namespace delta::ir;
using namespace delta::transforms::testing;

namespace {

// f(x) = ShiftedScatter(x): reverse mode's adjoint of x shifted by one.
Function* BuildScatter(Module& module, bool masked, int64_t other) {
  Dim* d = module.AddDim("d", 5);
  Function* f = module.AddFunction("f");
  f->is_export = true;
  Builder b(f);
  Value* x = AddParam(f, F64({d}), "x");
  Return(b, {ShiftedScatter(b, d, x, masked, other)});
  return f;
}

// f(x) = a loop of three trips whose state starts at x, over d of 4
// elements; `fill` builds the body (the state is body->args[1]) and its
// yield. Returns the loop.
Op* BuildLoop(Module& module, Function*& f, Dim*& d,
              const std::function<void(Builder&, Block*, Value* x)>& fill) {
  d = module.AddDim("d", 4);
  f = module.AddFunction("f");
  f->is_export = true;
  Builder b(f);
  Value* x = AddParam(f, F64({d}), "x");
  Op* loop =
      b.Create(OpKind::Loop,
               {b.IntConst(ElemKind::I64, 0), b.IntConst(ElemKind::I64, 3), x},
               {F64({d})});
  Block* body = b.AddRegion(loop, {I64(), F64({d})});
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(body);
    fill(b, body, x);
  }
  Return(b, {loop->result(0)});
  return loop;
}

}  // namespace

TEST_CASE("a masked scatter at i - 1 becomes a gather at j + 1") {
  Module module;
  BuildScatter(module, /*masked=*/true, 0);
  CHECK(opt::GatherShiftedScatters(module));
  CheckValid(module);
  std::string text = Print(module);
  CHECK(Count(text, "scatter_add") == 0);
  CHECK(Count(text, "gather") == 2);  // the values and the mask
}

TEST_CASE("an unmasked point that lands elsewhere keeps the scatter") {
  Module module;
  BuildScatter(module, /*masked=*/false, 0);  // x[0] lands at 0 too
  CHECK_FALSE(opt::GatherShiftedScatters(module));
  CHECK(Count(Print(module), "scatter_add") == 1);
}

TEST_CASE("only the invariant ops of a loop body leave it") {
  Module module;
  Function* f = nullptr;
  Dim* d = nullptr;
  Op* loop = BuildLoop(module, f, d, [&](Builder& b, Block* body, Value* x) {
    Value* invariant = b.Unary(OpKind::Exp, x);       // leaves
    Value* scaled = b.Binary(OpKind::Mul, invariant,  // leaves too
                             b.FloatConst(ElemKind::F64, 0.5));
    Value* checked = b.ToIndex(d, b.IntConst(ElemKind::I64, 2));  // a check
    Value* varying = b.Binary(OpKind::Add, body->args[1], scaled);
    Value* read = b.Gather(varying, {checked});
    b.Yield({b.Binary(OpKind::Mul, varying, read)});
  });
  Block* body = loop->region(0);
  CHECK(opt::HoistLoopInvariants(module));
  CheckValid(module);
  // exp, the mul and the constants are in front of the loop; the to_index
  // and what uses the state stay.
  REQUIRE(body->ops.size() == 5);
  CHECK(body->ops[0]->kind == OpKind::ToIndex);
  CHECK(body->ops[1]->kind == OpKind::Add);
  size_t exps = 0;
  for (const auto& op : f->body->ops) exps += op->kind == OpKind::Exp;
  CHECK(exps == 1);
  CHECK(loop->parent == f->body.get());
}

TEST_CASE("index arithmetic stays in the loop that reads it") {
  Module module;
  Function* f = nullptr;
  Dim* d = nullptr;
  Op* loop = BuildLoop(module, f, d, [&](Builder& b, Block* body, Value*) {
    // The position i - 1 of a shifted read, over d: invariant, but cheaper
    // to compute where it is read than to load (Note [Fusion cost]).
    Value* i = b.Convert(b.Iota(d), ElemKind::I64);
    Value* before = b.Binary(OpKind::Sub, i, b.IntConst(ElemKind::I64, 1));
    Value* guarded =
        b.Select(b.Binary(OpKind::Gt, i, b.IntConst(ElemKind::I64, 0)), before,
                 b.IntConst(ElemKind::I64, 0));
    Value* shifted = b.Gather(body->args[1], {b.ToIndex(d, guarded)});
    b.Yield({b.Binary(OpKind::Add, body->args[1], shifted)});
  });
  opt::HoistLoopInvariants(module);
  CheckValid(module);
  size_t subs = 0;
  for (const auto& op : loop->region(0)->ops) subs += op->kind == OpKind::Sub;
  CHECK(subs == 1);
  for (const auto& op : f->body->ops) CHECK(op->kind != OpKind::Sub);
}
