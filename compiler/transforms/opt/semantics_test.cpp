// Every pass and the whole pipeline preserve what programs compute: each
// module runs through the IR interpreter before and after, and the results
// must agree (exactly, except for sums whose order fusion may change).
#include <cmath>
#include <functional>

#include "compiler/codegen/interpreter/interpreter.h"
#include "compiler/transforms/pass_manager.h"
#include "compiler/transforms/testing.h"

using namespace delta;
using namespace delta::interpreter;
using namespace delta::ir;
using namespace delta::transforms;
using namespace delta::transforms::testing;

namespace {

struct Program {
  std::string name;
  // Builds the module and returns the function to call and its arguments.
  std::function<std::pair<Function*, std::vector<Tensor>>(Module&)> build;
};

Tensor Floats(const DimList& dims, std::vector<int64_t> shape, double seed) {
  size_t count = 1;
  for (int64_t size : shape) count *= static_cast<size_t>(size);
  std::vector<double> values;
  for (size_t i = 0; i < count; ++i)
    values.push_back(static_cast<float>(std::sin(seed + 0.7 * i)));
  return Tensor::FloatArray(ElemKind::F32, dims, std::move(shape),
                            std::move(values));
}

std::vector<Tensor> Evaluate(const Module& module, const Function& function,
                             std::vector<Tensor> args) {
  std::string printed;
  llvm::raw_string_ostream out(printed);
  Interpreter interpreter(module, out);
  auto results = interpreter.Call(function, std::move(args));
  if (!results) {
    FAIL(llvm::toString(results.takeError()).c_str());
    return {};
  }
  return *results;
}

void CheckSame(const std::vector<Tensor>& before,
               const std::vector<Tensor>& after, const std::string& what) {
  INFO(what.c_str());
  REQUIRE(before.size() == after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    CHECK(before[i].GetType() == after[i].GetType());
    CHECK(before[i].shape == after[i].shape);
    CHECK(before[i].ints == after[i].ints);
    REQUIRE(before[i].floats.size() == after[i].floats.size());
    for (size_t k = 0; k < before[i].floats.size(); ++k) {
      double a = before[i].floats[k];
      double b = after[i].floats[k];
      bool same = (std::isnan(a) && std::isnan(b)) ||
                  std::fabs(a - b) <= 1e-5 * std::max(1.0, std::fabs(a));
      CHECK_MESSAGE(same, FormatTensor(before[i]).c_str());
    }
  }
}

std::vector<Program> Programs() {
  std::vector<Program> programs;
  programs.push_back(
      {"sum of a chain", [](Module& module) {
         Dim* d = module.AddDim("d", 7);
         Function* f = module.AddFunction("f");
         f->is_export = true;
         Builder b(f);
         Value* x = AddParam(f, F32({d}), "x");
         Value* y = AddParam(f, F32({d}), "y");
         Value* one = b.FloatConst(ElemKind::F32, 1);
         Value* chain =
             b.Binary(OpKind::Add,
                      b.Binary(OpKind::Mul, b.Unary(OpKind::Exp, x), y), one);
         Value* extra = b.Binary(OpKind::Mul, x, one);  // folds to x
         Return(b,
                {b.Reduce(ReduceKind::Sum, chain, {d}),
                 b.Reduce(ReduceKind::Max, b.Unary(OpKind::Neg, extra), {d})});
         return std::pair(
             f, std::vector<Tensor>{Floats({d}, {7}, 1), Floats({d}, {7}, 2)});
       }});
  programs.push_back(
      {"contraction and shared chain", [](Module& module) {
         Dim* i = module.AddDim("i", 3);
         Dim* j = module.AddDim("j", 2);
         Dim* k = module.AddDim("k", 4);
         Function* f = module.AddFunction("f");
         f->is_export = true;
         Builder b(f);
         Value* a = AddParam(f, F32({i, k}), "a");
         Value* w = AddParam(f, F32({k, j}), "w");
         Value* product =
             b.Reduce(ReduceKind::Sum, b.Binary(OpKind::Mul, a, w), {k});
         Value* shared =
             b.Unary(OpKind::Tanh, b.Broadcast(b.Unary(OpKind::Exp, a), {j}));
         Value* largest = b.Reduce(ReduceKind::Argmax, shared, {k});
         Value* total = b.Reduce(ReduceKind::Sum, shared, {i, k});
         Return(b, {product, largest, total});
         return std::pair(f, std::vector<Tensor>{Floats({i, k}, {3, 4}, 3),
                                                 Floats({k, j}, {2, 4}, 4)});
       }});
  programs.push_back(
      {"sum of a contraction's adjoint over a broadcast dim",
       [](Module& module) {
         // -sum over n of rename(sum over d of dy * w): what
         // distribute-sums rewrites as a sum of dy over n first.
         Dim* n = module.AddDim("n", 4);
         Dim* d = module.AddDim("d", 3);
         Dim* e = module.AddDim("e", 3);
         Function* f = module.AddFunction("f");
         f->is_export = true;
         Builder b(f);
         Value* dy = AddParam(f, F32({n, d}), "dy");
         Value* w = AddParam(f, F32({d, e}), "w");
         Value* product = b.Binary(OpKind::Mul, b.Broadcast(dy, {e}), w);
         Value* inner = b.Reduce(ReduceKind::Sum, product, {d});
         Value* adjoint = b.Unary(OpKind::Neg, b.Rename(inner, e, d));
         Return(b, {b.Reduce(ReduceKind::Sum, adjoint, {n})});
         return std::pair(f, std::vector<Tensor>{Floats({n, d}, {4, 3}, 7),
                                                 Floats({d, e}, {3, 3}, 8)});
       }});
  programs.push_back(
      {"loops, ifs and maps", [](Module& module) {
         Dim* d = module.AddDim("d", 5);
         Function* f = module.AddFunction("f");
         f->is_export = true;
         Builder b(f);
         Value* x = AddParam(f, F32({d}), "x");
         Value* lo = b.IntConst(ElemKind::I64, 0);
         Value* hi =
             b.Binary(OpKind::Add, b.Size(d), b.IntConst(ElemKind::I64, -2));
         Op* loop =
             b.Create(OpKind::Loop, {lo, hi, x, x}, {F32({d}), F32({d})});
         Block* body = b.AddRegion(loop, {I64(), F32({d}), F32({d})});
         {
           InsertionGuard guard(b);
           b.SetInsertionBlock(body);
           Value* step = b.Convert(body->args[0], ElemKind::F32);
           Value* next =
               b.Unary(OpKind::Sin, b.Binary(OpKind::Add, body->args[1], step));
           Value* unused = b.Binary(OpKind::Mul, body->args[2], step);
           b.Yield({next, unused});
         }
         Op* map = b.Create(OpKind::Map, {}, {F32({d}), F32({d})});
         map->dims = {d};
         Block* map_body = b.AddRegion(map, {Type{ElemKind::Index, d, {}}});
         {
           InsertionGuard guard(b);
           b.SetInsertionBlock(map_body);
           Value* element = b.Gather(loop->result(0), {map_body->args[0]});
           Value* negated = b.Unary(OpKind::Neg, b.Unary(OpKind::Neg, element));
           b.Yield({b.Unary(OpKind::Cos, negated), negated});
         }
         Op* branch = b.Create(OpKind::If, {b.BoolConst(true)}, {F32({d})});
         for (OpKind kind : {OpKind::Exp, OpKind::Log}) {
           Block* region = b.AddRegion(branch, {});
           InsertionGuard guard(b);
           b.SetInsertionBlock(region);
           b.Yield({b.Unary(kind, map->result(0))});
         }
         Value* gathered = b.Gather(branch->result(), {b.Iota(d)});
         Return(b, {b.Reduce(ReduceKind::Sum, gathered, {d})});
         return std::pair(f, std::vector<Tensor>{Floats({d}, {5}, 5)});
       }});
  programs.push_back(
      {"a shifted scatter and a loop invariant", [](Module& module) {
         // Reverse mode's adjoint of `i == 0 ? 1 : y[i - 1]` (a scatter at
         // i - 1 with point 0 masked), then a loop whose body computes
         // exp(x) on every trip.
         Dim* d = module.AddDim("d", 5);
         Function* f = module.AddFunction("f");
         f->is_export = true;
         Builder b(f);
         Value* x = AddParam(f, F32({d}), "x");
         Value* zero = b.IntConst(ElemKind::I64, 0);
         Value* scattered = ShiftedScatter(b, d, x);
         Op* loop = b.Create(OpKind::Loop,
                             {zero, b.IntConst(ElemKind::I64, 3), scattered},
                             {F32({d})});
         Block* body = b.AddRegion(loop, {I64(), F32({d})});
         {
           InsertionGuard guard(b);
           b.SetInsertionBlock(body);
           Value* invariant = b.Unary(OpKind::Exp, x);
           b.Yield({b.Binary(OpKind::Add, body->args[1], invariant)});
         }
         Return(b, {loop->result(0)});
         return std::pair(f, std::vector<Tensor>{Floats({d}, {5}, 9)});
       }});
  programs.push_back(
      {"calls with size parameters and local dims", [](Module& module) {
         Dim* d = module.AddDim("d", 6);
         Function* g = module.AddFunction("g");
         {
           Builder b(g);
           Dim* n = AddSizeParam(g, "n");
           Value* v = AddParam(g, F32({n}), "v");
           Value* count =
               b.Binary(OpKind::Mul, b.Size(n), b.IntConst(ElemKind::I64, 2));
           Dim* m = g->NewDim("m", std::nullopt, nullptr);
           b.DimDef(m, count);
           Value* positions = b.Convert(b.Iota(m), ElemKind::F32);
           Value* total = b.Reduce(ReduceKind::Sum, positions, {m});
           Return(b, {b.Binary(OpKind::Mul, v, total)});
         }
         Function* f = module.AddFunction("f");
         f->is_export = true;
         Builder b(f);
         Value* x = AddParam(f, F32({d}), "x");
         Op* call = b.Create(OpKind::Call, {x}, {F32({d})});
         call->callee = g;
         call->dims = {d};
         Op* again = b.Create(OpKind::Call, {call->result()}, {F32({d})});
         again->callee = g;
         again->dims = {d};
         Return(b, {b.Reduce(ReduceKind::Sum, again->result(), {d})});
         return std::pair(f, std::vector<Tensor>{Floats({d}, {6}, 6)});
       }});
  programs.push_back(
      {"constants", [](Module& module) {
         Function* f = module.AddFunction("f");
         f->is_export = true;
         Builder b(f);
         Value* x = AddParam(f, F32(), "x");
         Value* k = AddParam(f, I64(), "k");
         Value* a = b.Binary(OpKind::Div, b.FloatConst(ElemKind::F32, 1),
                             b.FloatConst(ElemKind::F32, 3));
         Value* c = b.Binary(OpKind::Add, b.Binary(OpKind::Mul, x, a),
                             b.FloatConst(ElemKind::F32, -0.0));
         Value* big = b.Binary(OpKind::Mul, b.IntConst(ElemKind::I64, 1), k);
         // 3e9 saturates to i32's maximum.
         Value* wrapped = b.Convert(
             b.Convert(b.FloatConst(ElemKind::F64, 3e9), ElemKind::I32),
             ElemKind::I64);
         Value* sum = b.Binary(OpKind::Add, big, wrapped);
         Value* root = b.Unary(OpKind::Sqrt, b.FloatConst(ElemKind::F32, 2));
         Return(b, {c, sum, root});
         return std::pair(
             f, std::vector<Tensor>{Tensor::Float(ElemKind::F32, -0.0),
                                    Tensor::Int(ElemKind::I64, 5)});
       }});
  return programs;
}

}  // namespace

TEST_CASE("each pass preserves what programs compute") {
  for (const Program& program : Programs()) {
    for (const PassInfo& pass : AllPasses()) {
      Module module;
      auto [function, args] = program.build(module);
      CheckValid(module);
      std::string name = function->name;
      std::vector<Tensor> before = Evaluate(module, *function, args);
      pass.run(module);
      CheckValid(module);
      Function* after_function = module.FindFunction(name);
      REQUIRE(after_function != nullptr);
      CheckSame(before, Evaluate(module, *after_function, args),
                program.name + " after " + pass.cli_name.str());
    }
  }
}

TEST_CASE("each pipeline preserves what programs compute") {
  for (const Program& program : Programs()) {
    for (int level = 0; level <= 3; ++level) {
      Module module;
      auto [function, args] = program.build(module);
      std::string name = function->name;
      std::vector<Tensor> before = Evaluate(module, *function, args);
      PipelineOptions options;
      options.opt_level = level;
      options.verify_each = true;
      REQUIRE(RunPipeline(module, options));
      Function* after_function = module.FindFunction(name);
      REQUIRE(after_function != nullptr);
      CheckSame(before, Evaluate(module, *after_function, args),
                program.name + " at -O" + std::to_string(level));
    }
  }
}
