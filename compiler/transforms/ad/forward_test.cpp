// Checks forward-mode AD against central finite differences computed with
// the interpreter in f64, op by op and through regions and calls.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "compiler/transforms/ad/forward.h"

#include <doctest/doctest.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "compiler/codegen/interpreter/interpreter.h"
#include "compiler/ir/builder.h"
#include "compiler/transforms/testing.h"

using namespace delta;
using interpreter::Tensor;
using ir::Block;
using ir::Builder;
using ir::Dim;
using ir::DimList;
using ir::ElemKind;
using ir::Function;
using ir::Module;
using ir::Op;
using ir::OpKind;
using ir::ReduceKind;
using ir::Type;
using ir::Value;
using transforms::testing::AddParam;
using transforms::testing::CheckValid;

namespace {

// The kinds of the ops in the primals that a finite-difference check ran,
// for the coverage test at the end.
std::set<OpKind>& CheckedKinds() {
  static std::set<OpKind> kinds;
  return kinds;
}

Type F64(DimList dims = {}) { return Type{ElemKind::F64, nullptr, dims}; }
Type F32(DimList dims = {}) { return Type{ElemKind::F32, nullptr, dims}; }
Type I64(DimList dims = {}) { return Type{ElemKind::I64, nullptr, dims}; }
Type IndexOf(const Dim* dim, DimList dims = {}) {
  return Type{ElemKind::Index, dim, dims};
}

std::vector<int64_t> ShapeOf(const Type& type) {
  std::vector<int64_t> shape;
  for (const Dim* dim : type.dims) shape.push_back(*dim->constant);
  return shape;
}

int64_t CountOf(const Type& type) {
  int64_t count = 1;
  for (int64_t size : ShapeOf(type)) count *= size;
  return count;
}

Tensor Floats(const Type& type, std::vector<double> values) {
  return Tensor::FloatArray(type.elem, type.dims, ShapeOf(type),
                            std::move(values));
}

Tensor Ints(const Type& type, std::vector<int64_t> values) {
  return Tensor::IntArray(type.elem, type.dims, ShapeOf(type),
                          std::move(values), type.index_dim);
}

// Deterministic inputs: magnitudes in [lo, hi], negated at random if
// `mixed_sign`, so that tests stay away from kinks unless they aim at them.
class Inputs {
 public:
  explicit Inputs(uint64_t seed) : state_(seed * 6364136223846793005ULL + 1) {}
  double Next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state_ >> 11) / static_cast<double>(1ULL << 53);
  }
  Tensor Random(const Type& type, double lo, double hi,
                bool mixed_sign = false) {
    std::vector<double> values;
    for (int64_t i = 0; i < CountOf(type); ++i) {
      double value = lo + (hi - lo) * Next();
      if (mixed_sign && Next() < 0.5) value = -value;
      values.push_back(value);
    }
    return Floats(type, values);
  }

 private:
  uint64_t state_;
};

// A fresh function in a fresh module, with a builder at its body.
struct Fixture {
  Module module;
  Function* f = nullptr;
  Builder* b = nullptr;
  std::unique_ptr<Builder> owned;

  explicit Fixture(const std::string& name = "f") {
    f = module.AddFunction(name);
    owned = std::make_unique<Builder>(f);
    b = owned.get();
  }
  Value* Param(const Type& type, const std::string& name) {
    return AddParam(f, type, name);
  }
  void Return(std::vector<Value*> values) {
    transforms::testing::Return(*b, std::move(values));
  }
};

// Creates and fills `f.jvp`; fails the test on an error.
Function* MakeJvp(Function* f) {
  Function* jvp = f->module->AddFunction(f->name + ".jvp");
  jvp->derivative =
      ir::Derivative{ir::Derivative::Mode::Jvp, f, {}, /*with_value=*/false};
  ad::SetUpJvpSignature(*f, *jvp);
  if (llvm::Error error = ad::BuildJvp(*f, *jvp)) {
    FAIL_CHECK(llvm::toString(std::move(error)));
    return nullptr;
  }
  CheckValid(*f->module);
  return jvp;
}

std::vector<Tensor> Run(const Function& function, std::vector<Tensor> args,
                        std::set<OpKind>* kinds = nullptr) {
  interpreter::Interpreter interpreter(*function.module, llvm::nulls());
  auto results = interpreter.Call(function, std::move(args));
  if (!results) {
    FAIL_CHECK(llvm::toString(results.takeError()));
    return {};
  }
  if (kinds)
    kinds->insert(interpreter.executed_kinds().begin(),
                  interpreter.executed_kinds().end());
  return std::move(*results);
}

std::vector<Tensor> Join(std::vector<Tensor> a, const std::vector<Tensor>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void CheckClose(const Tensor& actual, const Tensor& expected, double tolerance,
                const std::string& what) {
  REQUIRE(actual.floats.size() == expected.floats.size());
  for (size_t i = 0; i < actual.floats.size(); ++i) {
    double a = actual.floats[i];
    double e = expected.floats[i];
    INFO(what << " element " << i << ": jvp " << a << ", expected " << e);
    CHECK(std::fabs(a - e) <= tolerance * (1 + std::fabs(e)));
  }
}

// Runs the JVP of `f` at `args` with random tangents and compares its
// tangents with (f(x + h dx) - f(x - h dx)) / 2h. Returns the JVP's results.
std::vector<Tensor> CheckJvp(Function* f, const std::vector<Tensor>& args,
                             uint64_t seed = 7, double tolerance = 1e-6) {
  Function* jvp = MakeJvp(f);
  if (!jvp) return {};
  Inputs inputs(seed);
  std::vector<Tensor> tangents;
  for (size_t i = 0; i < f->params.size(); ++i)
    if (ir::IsFloat(f->params[i]->type.elem))
      tangents.push_back(inputs.Random(f->params[i]->type, 0.2, 1, true));
  std::vector<Tensor> derivative = Run(*jvp, Join(args, tangents));
  std::vector<Tensor> primal = Run(*f, args, &CheckedKinds());
  REQUIRE(derivative.size() == jvp->result_types.size());
  REQUIRE(primal.size() == f->result_types.size());
  for (size_t i = 0; i < primal.size(); ++i) {
    CHECK(derivative[i].floats == primal[i].floats);
    CHECK(derivative[i].ints == primal[i].ints);
  }
  const double h = 1e-6;
  std::vector<Tensor> plus = args;
  std::vector<Tensor> minus = args;
  for (size_t i = 0, k = 0; i < args.size(); ++i) {
    if (!ir::IsFloat(f->params[i]->type.elem)) continue;
    for (size_t e = 0; e < args[i].floats.size(); ++e) {
      plus[i].floats[e] += h * tangents[k].floats[e];
      minus[i].floats[e] -= h * tangents[k].floats[e];
    }
    ++k;
  }
  std::vector<Tensor> above = Run(*f, plus);
  std::vector<Tensor> below = Run(*f, minus);
  for (size_t i = 0, k = primal.size(); i < primal.size(); ++i) {
    if (!ir::IsFloat(f->result_types[i].elem)) continue;
    Tensor difference = above[i];
    for (size_t e = 0; e < difference.floats.size(); ++e)
      difference.floats[e] =
          (above[i].floats[e] - below[i].floats[e]) / (2 * h);
    CheckClose(derivative[k++], difference, tolerance,
               "tangent of result " + std::to_string(i));
  }
  return derivative;
}

// Runs the JVP of `f` with the given tangents (no finite differences): for
// kinks, ties and zeros, where the expected tangent is known exactly.
std::vector<Tensor> RunJvp(Function* f, const std::vector<Tensor>& args,
                           const std::vector<Tensor>& tangents) {
  Function* jvp = MakeJvp(f);
  if (!jvp) return {};
  std::vector<Tensor> primal = Run(*f, args, &CheckedKinds());
  std::vector<Tensor> results = Run(*jvp, Join(args, tangents));
  return std::vector<Tensor>(results.begin() + static_cast<long>(primal.size()),
                             results.end());
}

std::string PrintOf(const Module& module) {
  return transforms::testing::Print(module);
}

}  // namespace

TEST_CASE("unary math against finite differences") {
  struct Case {
    OpKind kind;
    double lo, hi;
    bool mixed_sign;
  };
  for (Case c : std::vector<Case>{{OpKind::Neg, 0.1, 2, true},
                                  {OpKind::Exp, 0.1, 2, true},
                                  {OpKind::Log, 0.2, 3, false},
                                  {OpKind::Sin, 0.1, 3, true},
                                  {OpKind::Cos, 0.1, 3, true},
                                  {OpKind::Tan, 0.1, 1.2, true},
                                  {OpKind::Tanh, 0.1, 2, true},
                                  {OpKind::Sqrt, 0.2, 3, false},
                                  {OpKind::Abs, 0.1, 2, true},
                                  {OpKind::Floor, 0.1, 2, true},
                                  {OpKind::Ceil, 0.1, 2, true},
                                  {OpKind::Sigmoid, 0.1, 3, true},
                                  {OpKind::Relu, 0.1, 2, true}}) {
    INFO("op " << ir::OpMnemonic(c.kind).str());
    Fixture t;
    Dim* d = t.module.AddDim("d", 7);
    Value* x = t.Param(F64({d}), "x");
    // x * op(x) so that piecewise-constant ops still have a tangent.
    t.Return({t.b->Binary(OpKind::Mul, x, t.b->Unary(c.kind, x))});
    Inputs inputs(static_cast<uint64_t>(c.kind) + 1);
    CheckJvp(t.f, {inputs.Random(F64({d}), c.lo, c.hi, c.mixed_sign)});
  }
}

TEST_CASE("binary math on lifted operands against finite differences") {
  struct Case {
    OpKind kind;
    double a_lo, a_hi, b_lo, b_hi;
  };
  for (Case c : std::vector<Case>{{OpKind::Add, -2, 2, -2, 2},
                                  {OpKind::Sub, -2, 2, -2, 2},
                                  {OpKind::Mul, -2, 2, -2, 2},
                                  {OpKind::Div, -2, 2, 0.5, 2},
                                  {OpKind::Rem, 2.1, 5, 0.6, 1.4},
                                  {OpKind::Pow, 0.5, 2, -2, 2},
                                  {OpKind::Max, -2, 2, -2, 2},
                                  {OpKind::Min, -2, 2, -2, 2}}) {
    INFO("op " << ir::OpMnemonic(c.kind).str());
    Fixture t;
    Dim* d = t.module.AddDim("d", 3);
    Dim* e = t.module.AddDim("e", 4);
    Value* a = t.Param(F64({d}), "a");
    Value* b = t.Param(F64({e}), "b");
    Value* y = t.b->Binary(c.kind, a, b);
    CHECK(y->type.dims == DimList({d, e}));
    t.Return({y});
    Inputs inputs(static_cast<uint64_t>(c.kind) + 100);
    CheckJvp(t.f, {inputs.Random(F64({d}), c.a_lo, c.a_hi),
                   inputs.Random(F64({e}), c.b_lo, c.b_hi)});
  }
}

TEST_CASE("pow with a constant exponent has no log term") {
  Fixture t;
  Dim* d = t.module.AddDim("d", 5);
  Value* x = t.Param(F64({d}), "x");
  t.Return({t.b->Binary(OpKind::Pow, x, t.b->FloatConst(ElemKind::F64, 2))});
  // Negative bases: a log term would make the tangent NaN.
  Inputs inputs(3);
  CheckJvp(t.f, {inputs.Random(F64({d}), -3, -0.5)});
  CHECK(PrintOf(t.module).find("log") == std::string::npos);
}

TEST_CASE("kinks take the branch the primal chose") {
  Fixture t;
  Dim* d = t.module.AddDim("d", 3);
  Value* x = t.Param(F64({d}), "x");
  Value* y = t.Param(F64({d}), "y");
  t.Return({t.b->Unary(OpKind::Relu, x), t.b->Unary(OpKind::Abs, x),
            t.b->Binary(OpKind::Max, x, y), t.b->Binary(OpKind::Min, x, y)});
  // x = (0, -1, 2), y = (0, -1, 1): ties at 0 and 1.
  std::vector<Tensor> tangents =
      RunJvp(t.f, {Floats(F64({d}), {0, -1, 2}), Floats(F64({d}), {0, -1, 1})},
             {Floats(F64({d}), {10, 20, 30}), Floats(F64({d}), {1, 2, 3})});
  REQUIRE(tangents.size() == 4);
  CHECK(tangents[0].floats == std::vector<double>{0, 0, 30});     // relu'(0)=0
  CHECK(tangents[1].floats == std::vector<double>{10, -20, 30});  // abs'(0)=1
  CHECK(tangents[2].floats == std::vector<double>{10, 20, 30});   // max: x
  CHECK(tangents[3].floats == std::vector<double>{10, 20, 3});    // min: x
}

TEST_CASE("select, comparisons and integer parameters") {
  Fixture t;
  Dim* d = t.module.AddDim("d", 6);
  Dim* e = t.module.AddDim("e", 2);
  Value* x = t.Param(F64({d}), "x");
  Value* y = t.Param(F64({e}), "y");
  Value* n = t.Param(I64(), "n");
  Value* big = t.b->Binary(OpKind::Gt, x, t.b->FloatConst(ElemKind::F64, 0));
  // Lifted: the arms have other dims than the condition.
  Value* chosen = t.b->Select(big, y, t.b->FloatConst(ElemKind::F64, 0.5));
  Value* scaled =
      t.b->Binary(OpKind::Mul, chosen, t.b->Convert(n, ElemKind::F64));
  // Through an integer: no tangent.
  Value* truncated =
      t.b->Convert(t.b->Convert(x, ElemKind::I64), ElemKind::F64);
  t.Return({t.b->Binary(OpKind::Mul, scaled, truncated)});
  Inputs inputs(5);
  CheckJvp(t.f, {inputs.Random(F64({d}), 0.1, 3, true),
                 inputs.Random(F64({e}), 0.1, 3, true),
                 Tensor::Int(ElemKind::I64, 3)});
  // No tangent parameter for n.
  Function* jvp = t.module.FindFunction("f.jvp");
  REQUIRE(jvp);
  CHECK(jvp->params.size() == 5);
}

TEST_CASE("conversions between floats convert the tangent") {
  Fixture t;
  Dim* d = t.module.AddDim("d", 6);
  Value* x = t.Param(F64({d}), "x");
  t.Return({t.b->Convert(t.b->Convert(x, ElemKind::F32), ElemKind::F64)});
  Inputs inputs(5);
  Tensor dx = inputs.Random(F64({d}), 0.1, 1, true);
  std::vector<Tensor> tangents =
      RunJvp(t.f, {inputs.Random(F64({d}), 0.1, 2, true)}, {dx});
  REQUIRE(tangents.size() == 1);
  for (size_t i = 0; i < dx.floats.size(); ++i)
    CHECK(tangents[0].floats[i] ==
          static_cast<double>(static_cast<float>(dx.floats[i])));
}

TEST_CASE("a float32 function against float64 differences") {
  auto build = [](Fixture& t, ElemKind elem) {
    Dim* d = t.module.AddDim("d", 4);
    Value* x = t.Param(Type{elem, nullptr, {d}}, "x");
    Value* y = t.b->Binary(OpKind::Mul, t.b->Unary(OpKind::Exp, x),
                           t.b->Unary(OpKind::Sin, x));
    t.Return({t.b->Reduce(ReduceKind::Sum, y, {d})});
  };
  Fixture narrow;
  build(narrow, ElemKind::F32);
  Fixture wide;
  build(wide, ElemKind::F64);
  std::vector<double> x = {0.3, -0.7, 1.1, 0.05};
  std::vector<double> dx = {1, -0.5, 0.25, 2};
  Dim* d = narrow.module.dims[0].get();
  std::vector<Tensor> tangent =
      RunJvp(narrow.f, {Floats(F32({d}), x)}, {Floats(F32({d}), dx)});
  Dim* wd = wide.module.dims[0].get();
  std::vector<double> plus = x;
  std::vector<double> minus = x;
  for (size_t i = 0; i < x.size(); ++i) {
    plus[i] += 1e-6 * dx[i];
    minus[i] -= 1e-6 * dx[i];
  }
  double above = Run(*wide.f, {Floats(F64({wd}), plus)})[0].floats[0];
  double below = Run(*wide.f, {Floats(F64({wd}), minus)})[0].floats[0];
  REQUIRE(tangent.size() == 1);
  CHECK(tangent[0].elem == ElemKind::F32);
  CHECK(tangent[0].floats[0] ==
        doctest::Approx((above - below) / 2e-6).epsilon(1e-5));
}

TEST_CASE("linear ops: broadcast, rename, gather, scatter_add, cumsum") {
  Fixture t;
  Dim* d = t.module.AddDim("d", 4);
  Dim* d2 = t.module.AddDim("d2", 4);
  Dim* e = t.module.AddDim("e", 6);
  Value* x = t.Param(F64({d}), "x");
  Value* k = t.Param(I64({e}), "k");
  Value* square = t.b->Binary(OpKind::Mul, x, x);
  Value* index = t.b->ToIndex(d, k);
  Value* gathered = t.b->Gather(square, {index});  // [e]
  Value* scattered = t.b->ScatterAdd(
      t.b->Binary(OpKind::Mul, gathered, gathered), {index}, F64({d}));  // [d]
  Value* renamed = t.b->Rename(t.b->Cumsum(square, d), d, d2);           // [d2]
  Value* outer = t.b->Binary(OpKind::Mul, t.b->Broadcast(x, {e}), gathered);
  t.Return({gathered, scattered, renamed, outer});
  Inputs inputs(11);
  CheckJvp(t.f, {inputs.Random(F64({d}), 0.2, 2, true),
                 Ints(I64({e}), {3, 0, 3, 1, 3, 0})});
}

TEST_CASE("reductions against finite differences") {
  for (ReduceKind kind :
       {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min}) {
    INFO("reduce." << ir::ReduceName(kind).str());
    Fixture t;
    Dim* d = t.module.AddDim("d", 3);
    Dim* e = t.module.AddDim("e", 4);
    Dim* g = t.module.AddDim("g", 2);
    Value* x = t.Param(F64({d, e, g}), "x");
    Value* over_one = t.b->Reduce(kind, x, {e});
    Value* over_two = t.b->Reduce(kind, x, {d, g});
    Value* over_all = t.b->Reduce(kind, x, {d, e, g});
    t.Return({over_one, over_two, over_all});
    Inputs inputs(static_cast<uint64_t>(kind) + 200);
    CheckJvp(t.f, {inputs.Random(F64({d, e, g}), 0.5, 1.5, true)});
  }
}

TEST_CASE("max and min reductions give ties to the lowest index") {
  Fixture t;
  Dim* d = t.module.AddDim("d", 2);
  Dim* e = t.module.AddDim("e", 3);
  Value* x = t.Param(F64({d, e}), "x");
  t.Return({t.b->Reduce(ReduceKind::Max, x, {e}),
            t.b->Reduce(ReduceKind::Max, x, {d, e}),
            t.b->Reduce(ReduceKind::Min, x, {d, e})});
  // Row 0: max 5 at e = 1 and 2; row 1: max 5 at e = 0 and 2. The global
  // max 5 ties at (0,1), (0,2), (1,0), (1,2): (0,1) is the lowest. The
  // min 1 ties at (0,0) and (1,1).
  std::vector<Tensor> tangents =
      RunJvp(t.f, {Floats(F64({d, e}), {1, 5, 5, 5, 1, 5})},
             {Floats(F64({d, e}), {10, 20, 30, 40, 50, 60})});
  REQUIRE(tangents.size() == 3);
  CHECK(tangents[0].floats == std::vector<double>{20, 40});
  CHECK(tangents[1].floats == std::vector<double>{20});
  CHECK(tangents[2].floats == std::vector<double>{10});
}

TEST_CASE("prod with zeros is exact") {
  Fixture t;
  Dim* d = t.module.AddDim("d", 3);
  Dim* e = t.module.AddDim("e", 4);
  Value* x = t.Param(F64({d, e}), "x");
  t.Return({t.b->Reduce(ReduceKind::Prod, x, {e})});
  // No zero, one zero, two zeros.
  std::vector<double> x_values = {2, 3, 4, 5, 2, 0, 4, 5, 0, 3, 0, 5};
  std::vector<Tensor> tangents =
      RunJvp(t.f, {Floats(F64({d, e}), x_values)},
             {Floats(F64({d, e}), {1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1})});
  REQUIRE(tangents.size() == 1);
  CHECK(tangents[0].floats ==
        std::vector<double>{3 * 4 * 5 + 2 * 4 * 5 + 2 * 3 * 5 + 2 * 3 * 4,
                            2 * 2 * 4 * 5, 0});
  // The same against finite differences (prod is multilinear).
  Fixture u;
  Dim* ud = u.module.AddDim("d", 3);
  Dim* ue = u.module.AddDim("e", 4);
  Value* ux = u.Param(F64({ud, ue}), "x");
  u.Return({u.b->Reduce(ReduceKind::Prod, ux, {ue})});
  CheckJvp(u.f, {Floats(F64({ud, ue}), x_values)});
}

TEST_CASE("argmax has no tangent; gathering at it has one") {
  Fixture t;
  Dim* d = t.module.AddDim("d", 5);
  Value* x = t.Param(F64({d}), "x");
  Value* at = t.b->Reduce(ReduceKind::Argmax, x, {d});
  Value* low = t.b->Reduce(ReduceKind::Argmin, x, {d});
  t.Return(
      {t.b->Binary(OpKind::Sub, t.b->Gather(x, {at}), t.b->Gather(x, {low}))});
  Inputs inputs(17);
  CheckJvp(t.f, {inputs.Random(F64({d}), 0.1, 3, true)});
}

TEST_CASE("fused map-reduce regions") {
  for (ReduceKind kind : {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Prod}) {
    INFO("reduce." << ir::ReduceName(kind).str());
    Fixture t;
    Dim* d = t.module.AddDim("d", 3);
    Dim* e = t.module.AddDim("e", 4);
    Value* x = t.Param(F64({d}), "x");
    Value* y = t.Param(F64({e}), "y");
    // reduce.KIND [e] { ^(i: d, j: e): yield sin(x[i] * y[j]) }: f64[d]
    Op* reduce = t.b->Create(OpKind::Reduce, {}, {F64({d})});
    reduce->reduce = kind;
    reduce->dims = {e};
    Block* region = t.b->AddRegion(reduce, {IndexOf(d), IndexOf(e)});
    {
      ir::InsertionGuard guard(*t.b);
      t.b->SetInsertionBlock(region);
      Value* product =
          t.b->Binary(OpKind::Mul, t.b->Gather(x, {region->args[0]}),
                      t.b->Gather(y, {region->args[1]}));
      t.b->Yield({t.b->Unary(OpKind::Sin, product)});
    }
    t.Return({reduce->result()});
    Inputs inputs(static_cast<uint64_t>(kind) + 300);
    CheckJvp(t.f, {inputs.Random(F64({d}), 0.2, 1.2, true),
                   inputs.Random(F64({e}), 0.2, 1.2, true)});
  }
}

TEST_CASE("a map yields the tangents of its results") {
  Fixture t;
  Dim* d = t.module.AddDim("d", 5);
  Value* x = t.Param(F64({d}), "x");
  Value* s = t.Param(F64(), "s");
  Op* map = t.b->Create(OpKind::Map, {}, {F64({d}), F64({d}), I64({d})});
  map->dims = {d};
  Block* body = t.b->AddRegion(map, {IndexOf(d)});
  {
    ir::InsertionGuard guard(*t.b);
    t.b->SetInsertionBlock(body);
    Value* v = t.b->Gather(x, {body->args[0]});
    Value* position = t.b->Convert(body->args[0], ElemKind::I64);
    Value* constant = t.b->Convert(position, ElemKind::F64);
    // A captured outer value with a tangent, a value with none, an int.
    t.b->Yield({t.b->Binary(OpKind::Mul, t.b->Unary(OpKind::Sin, v), s),
                constant, position});
  }
  t.Return({map->result(0), map->result(1), map->result(2)});
  Inputs inputs(23);
  CheckJvp(t.f, {inputs.Random(F64({d}), 0.1, 2, true), Floats(F64(), {1.5})});
  // Only the first result needs a tangent from the map.
  std::string text = PrintOf(t.module);
  CHECK(text.find("yield") != std::string::npos);
}

// s <- s + 0.001 * sin(x * s + b); b <- 0.999 * b + 0.001 * s; n <- n + 1;
// s and b start without tangents: the loop is rebuilt until both carry one.
TEST_CASE("a loop of 1,000 iterations carries tangent state") {
  Fixture t;
  Value* x = t.Param(F64(), "x");
  Value* lo = t.b->IntConst(ElemKind::I64, 0);
  Value* hi = t.b->IntConst(ElemKind::I64, 1000);
  Value* s0 = t.b->FloatConst(ElemKind::F64, 0.5);
  Value* b0 = t.b->FloatConst(ElemKind::F64, 1);
  Value* n0 = t.b->IntConst(ElemKind::I64, 0);
  Op* loop =
      t.b->Create(OpKind::Loop, {lo, hi, s0, b0, n0}, {F64(), F64(), I64()});
  Block* body = t.b->AddRegion(loop, {I64(), F64(), F64(), I64()});
  {
    ir::InsertionGuard guard(*t.b);
    t.b->SetInsertionBlock(body);
    Value* s = body->args[1];
    Value* bb = body->args[2];
    Value* small = t.b->FloatConst(ElemKind::F64, 0.001);
    Value* next_s = t.b->Binary(
        OpKind::Add, s,
        t.b->Binary(
            OpKind::Mul, small,
            t.b->Unary(
                OpKind::Sin,
                t.b->Binary(OpKind::Add, t.b->Binary(OpKind::Mul, x, s), bb))));
    Value* next_b = t.b->Binary(
        OpKind::Add,
        t.b->Binary(OpKind::Mul, t.b->FloatConst(ElemKind::F64, 0.999), bb),
        t.b->Binary(OpKind::Mul, small, s));
    Value* next_n = t.b->Binary(OpKind::Add, body->args[3],
                                t.b->IntConst(ElemKind::I64, 1));
    t.b->Yield({next_s, next_b, next_n});
  }
  t.Return({loop->result(0), loop->result(1), loop->result(2)});
  std::vector<Tensor> results = CheckJvp(t.f, {Floats(F64(), {1.3})});
  REQUIRE(results.size() == 5);
  CHECK(results[2].ints == std::vector<int64_t>{1000});
  CHECK(results[4].floats[0] != 0);  // b got its tangent through s
}

TEST_CASE("a scan over a dim stacks tangents too") {
  Fixture t;
  Dim* d = t.module.AddDim("d", 6);
  Value* x = t.Param(F64({d}), "x");
  Value* lo = t.b->IntConst(ElemKind::I64, 0);
  Value* hi = t.b->Size(d);
  Value* s0 = t.b->FloatConst(ElemKind::F64, 1);
  Op* loop = t.b->Create(OpKind::Loop, {lo, hi, s0}, {F64(), F64({d})});
  loop->dims = {d};
  Block* body = t.b->AddRegion(loop, {IndexOf(d), F64()});
  {
    ir::InsertionGuard guard(*t.b);
    t.b->SetInsertionBlock(body);
    Value* next = t.b->Binary(OpKind::Mul, body->args[1],
                              t.b->Gather(x, {body->args[0]}));
    t.b->Yield({next, t.b->Unary(OpKind::Sin, next)});
  }
  t.Return({loop->result(0), loop->result(1)});
  Inputs inputs(29);
  CheckJvp(t.f, {inputs.Random(F64({d}), 0.5, 1.5, true)});
}

// while x < limit { x <- x * 1.3 + c; n <- n + 1 }: the trip count depends on
// the inputs.
TEST_CASE("a while loop with a data-dependent trip count") {
  Fixture t;
  Value* x0 = t.Param(F64(), "x0");
  Value* c = t.Param(F64(), "c");
  Value* limit = t.Param(F64(), "limit");
  Value* n0 = t.b->IntConst(ElemKind::I64, 0);
  Op* loop = t.b->Create(OpKind::While, {x0, n0}, {F64(), I64()});
  Block* condition = t.b->AddRegion(loop, {F64(), I64()});
  Block* body = t.b->AddRegion(loop, {F64(), I64()});
  {
    ir::InsertionGuard guard(*t.b);
    t.b->SetInsertionBlock(condition);
    t.b->Yield({t.b->Binary(OpKind::Lt, condition->args[0], limit)});
    t.b->SetInsertionBlock(body);
    Value* next = t.b->Binary(OpKind::Add,
                              t.b->Binary(OpKind::Mul, body->args[0],
                                          t.b->FloatConst(ElemKind::F64, 1.3)),
                              c);
    t.b->Yield({next, t.b->Binary(OpKind::Add, body->args[1],
                                  t.b->IntConst(ElemKind::I64, 1))});
  }
  t.Return({loop->result(0), loop->result(1)});
  for (double start : {0.5, 2.0, 7.0}) {
    INFO("start " << start);
    std::vector<Tensor> results = CheckJvp(
        t.f,
        {Floats(F64(), {start}), Floats(F64(), {0.7}), Floats(F64(), {40.3})});
    REQUIRE(results.size() == 3);
    CHECK(results[1].ints[0] > 1);
    // Rebuilding the derivative for the next start needs a fresh name.
    t.module.functions.pop_back();
  }
}

TEST_CASE("if: each branch yields tangents, zeros where it has none") {
  Fixture t;
  Value* a = t.Param(F64(), "a");
  Value* b = t.Param(F64(), "b");
  Value* positive =
      t.b->Binary(OpKind::Gt, a, t.b->FloatConst(ElemKind::F64, 0));
  Op* branch = t.b->Create(OpKind::If, {positive}, {F64(), F64()});
  Block* then_block = t.b->AddRegion(branch, {});
  Block* else_block = t.b->AddRegion(branch, {});
  {
    ir::InsertionGuard guard(*t.b);
    t.b->SetInsertionBlock(then_block);
    t.b->Yield(
        {t.b->Binary(OpKind::Mul, a, b), t.b->FloatConst(ElemKind::F64, 1)});
    t.b->SetInsertionBlock(else_block);
    t.b->Yield(
        {t.b->FloatConst(ElemKind::F64, 0.5), t.b->Unary(OpKind::Exp, b)});
  }
  t.Return({branch->result(0), branch->result(1)});
  for (double a_value : {1.5, -1.5}) {
    INFO("a = " << a_value);
    CheckJvp(t.f, {Floats(F64(), {a_value}), Floats(F64(), {0.8})});
    t.module.functions.pop_back();
  }
}

// map [d] { s = loop 0..40 (0) { if s < 1 { s + 0.1 * x[i] } else
// { 0.99 * s + 0.01 * sin(x[i]) } } }: the loop state gets its tangent
// from a branch, inside a map.
TEST_CASE("nested regions: an if in a loop in a map") {
  Fixture t;
  Dim* d = t.module.AddDim("d", 4);
  Value* x = t.Param(F64({d}), "x");
  Op* map = t.b->Create(OpKind::Map, {}, {F64({d})});
  map->dims = {d};
  Block* body = t.b->AddRegion(map, {IndexOf(d)});
  {
    ir::InsertionGuard guard(*t.b);
    t.b->SetInsertionBlock(body);
    Value* xi = t.b->Gather(x, {body->args[0]});
    Op* loop = t.b->Create(
        OpKind::Loop,
        {t.b->IntConst(ElemKind::I64, 0), t.b->IntConst(ElemKind::I64, 40),
         t.b->FloatConst(ElemKind::F64, 0)},
        {F64()});
    Block* loop_body = t.b->AddRegion(loop, {I64(), F64()});
    t.b->SetInsertionBlock(loop_body);
    Value* s = loop_body->args[1];
    Value* small =
        t.b->Binary(OpKind::Lt, s, t.b->FloatConst(ElemKind::F64, 1));
    Op* branch = t.b->Create(OpKind::If, {small}, {F64()});
    Block* then_block = t.b->AddRegion(branch, {});
    Block* else_block = t.b->AddRegion(branch, {});
    t.b->SetInsertionBlock(then_block);
    t.b->Yield({t.b->Binary(
        OpKind::Add, s,
        t.b->Binary(OpKind::Mul, t.b->FloatConst(ElemKind::F64, 0.1), xi))});
    t.b->SetInsertionBlock(else_block);
    t.b->Yield({t.b->Binary(
        OpKind::Add,
        t.b->Binary(OpKind::Mul, t.b->FloatConst(ElemKind::F64, 0.99), s),
        t.b->Binary(OpKind::Mul, t.b->FloatConst(ElemKind::F64, 0.01),
                    t.b->Unary(OpKind::Sin, xi)))});
    t.b->SetInsertionBlock(loop_body);
    t.b->Yield({branch->result()});
    t.b->SetInsertionBlock(body);
    t.b->Yield({loop->result()});
  }
  t.Return({map->result()});
  CheckJvp(t.f, {Floats(F64({d}), {0.33, 0.71, 1.37, 2.9})});
}

TEST_CASE("calls use the callee's derivative function, created once") {
  Module module;
  Dim* d = module.AddDim("d", 4);
  // g[n](v: f64[n], w: f64, k: i64) -> f64 = sum(v * v * w, n) * f64(k)
  Function* g = module.AddFunction("g");
  Builder gb(g);
  Dim* n = transforms::testing::AddSizeParam(g, "n");
  Value* v = AddParam(g, F64({n}), "v");
  Value* w = AddParam(g, F64(), "w");
  Value* k = AddParam(g, I64(), "k");
  Value* total =
      gb.Reduce(ReduceKind::Sum,
                gb.Binary(OpKind::Mul, gb.Binary(OpKind::Mul, v, v), w), {n});
  transforms::testing::Return(
      gb, {gb.Binary(OpKind::Mul, total, gb.Convert(k, ElemKind::F64))});
  // Forward mode goes through the body even where a reverse rule exists.
  g->custom_vjp = g;
  Function* f = module.AddFunction("f");
  Builder fb(f);
  Value* x = AddParam(f, F64({d}), "x");
  Value* two = fb.IntConst(ElemKind::I64, 2);
  auto call = [&](Value* vv, Value* ww) {
    Op* op = fb.Create(OpKind::Call, {vv, ww, two}, {F64()});
    op->callee = g;
    op->dims = {d};
    return op->result();
  };
  Value* scale = fb.Reduce(ReduceKind::Sum, x, {d});
  // The first call's w has a tangent, the second's does not (zeros).
  Value* first = call(x, scale);
  Value* second =
      call(fb.Unary(OpKind::Sin, x), fb.FloatConst(ElemKind::F64, 3));
  // A call without any tangent stays a call of g.
  Value* third = call(fb.Broadcast(fb.FloatConst(ElemKind::F64, 1), {d}),
                      fb.FloatConst(ElemKind::F64, 2));
  transforms::testing::Return(
      fb,
      {fb.Binary(OpKind::Add, fb.Binary(OpKind::Mul, first, second), third)});
  Inputs inputs(31);
  CheckJvp(f, {inputs.Random(F64({d}), 0.2, 1.5, true)});
  int jvps = 0;
  for (const auto& function : module.functions)
    jvps += function->name == "g.jvp";
  CHECK(jvps == 1);
  Function* g_jvp = module.FindFunction("g.jvp");
  REQUIRE(g_jvp);
  CHECK(g_jvp->derivative->primal == g);
  CHECK(g_jvp->size_params.size() == 1);
  CHECK(g_jvp->params.size() == 5);  // v, w, k, dv, dw
  CHECK(g_jvp->result_types.size() == 2);
}

TEST_CASE("local dims are copied into the derivative") {
  Fixture t;
  Dim* d = t.module.AddDim("d", 3);
  Value* x = t.Param(F64({d}), "x");
  Dim* m = t.f->NewDim("m", std::nullopt, nullptr);
  t.b->DimDef(m, t.b->Binary(OpKind::Add, t.b->Size(d),
                             t.b->IntConst(ElemKind::I64, 2)));
  Value* weights = t.b->Convert(t.b->Iota(m), ElemKind::F64);
  Value* spread = t.b->Binary(OpKind::Mul, t.b->Broadcast(x, {m}), weights);
  t.Return(
      {t.b->Reduce(ReduceKind::Sum, t.b->Unary(OpKind::Sin, spread), {d, m})});
  Inputs inputs(37);
  CheckJvp(t.f, {inputs.Random(F64({d}), 0.1, 1, true)});
  Function* jvp = t.module.FindFunction("f.jvp");
  REQUIRE(jvp);
  REQUIRE(jvp->dims.size() == 1);
  CHECK(jvp->dims[0] != m);
  CHECK(jvp->dims[0]->size != nullptr);
}

TEST_CASE("size parameters of the differentiated function") {
  Module module;
  Function* f = module.AddFunction("f");
  Builder b(f);
  Dim* n = transforms::testing::AddSizeParam(f, "n");
  Value* x = AddParam(f, F64({n}), "x");
  transforms::testing::Return(
      b, {b.Reduce(ReduceKind::Max, b.Unary(OpKind::Tanh, x), {n})});
  Function* jvp = MakeJvp(f);
  REQUIRE(jvp);
  REQUIRE(jvp->size_params.size() == 1);
  CHECK(jvp->dims[0] != n);
  CHECK(jvp->params[0]->type.dims[0] == jvp->dims[0]);
  const Dim* jn = jvp->dims[0];
  std::vector<Tensor> results =
      Run(*jvp, {Tensor::Int(ElemKind::I64, 3),
                 Tensor::FloatArray(ElemKind::F64, {jn}, {3}, {0.1, 0.9, 0.4}),
                 Tensor::FloatArray(ElemKind::F64, {jn}, {3}, {1, 2, 3})});
  REQUIRE(results.size() == 2);
  CHECK(results[1].floats[0] ==
        doctest::Approx(2 * (1 - std::tanh(0.9) * std::tanh(0.9))));
}

// y = reduce.custom [d] (init, x) { ^(a, b): yield combine(a, b) } over
// scalars.
Value* ReduceCustom(Builder& b, Value* init, Value* x, const Dim* d,
                    Value* (*combine)(Builder&, Value*, Value*)) {
  Type element = x->type.WithDims({});
  Op* reduce = b.Create(OpKind::ReduceCustom, {init, x},
                        {x->type.WithDims(x->type.dims.Minus({d}))});
  reduce->dims = {d};
  Block* region = b.AddRegion(reduce, {element, element});
  ir::InsertionGuard guard(b);
  b.SetInsertionBlock(region);
  b.Yield({combine(b, region->args[0], region->args[1])});
  return reduce->result();
}

Value* Times(Builder& b, Value* a, Value* c) {
  return b.Binary(OpKind::Mul, a, c);
}

// max(a, c) + log(1 + exp(-|a - c|)), that is log(exp(a) + exp(c)).
Value* SmoothMax(Builder& b, Value* a, Value* c) {
  Value* gap = b.Unary(OpKind::Abs, b.Binary(OpKind::Sub, a, c));
  Value* tail = b.Unary(
      OpKind::Log, b.Binary(OpKind::Add, b.FloatConst(ElemKind::F64, 1),
                            b.Unary(OpKind::Exp, b.Unary(OpKind::Neg, gap))));
  return b.Binary(OpKind::Add, b.Binary(OpKind::Max, a, c), tail);
}

TEST_CASE("reduce.custom folds (value, tangent) pairs over one dim") {
  Fixture t;
  Dim* d = t.module.AddDim("d", 4);
  Dim* e = t.module.AddDim("e", 3);
  Value* x = t.Param(F64({d, e}), "x");
  Value* init = t.Param(F64(), "init");
  // A product over d per column (e is a batch dim) from a differentiated
  // init, and a smooth maximum over e per row from a constant one.
  Value* products = ReduceCustom(*t.b, init, x, d, Times);
  Value* maxima =
      ReduceCustom(*t.b, t.b->FloatConst(ElemKind::F64, -1e6), x, e, SmoothMax);
  t.Return({products, maxima});
  Inputs inputs(31);
  std::vector<Tensor> results =
      CheckJvp(t.f, {inputs.Random(F64({d, e}), 0.5, 1.5, true),
                     inputs.Random(F64(), 0.5, 1.5)});
  REQUIRE(results.size() == 4);
  CHECK(results[2].dims == DimList({e}));
  CHECK(results[3].dims == DimList({d}));
}

TEST_CASE("reduce.custom over an array region argument and an empty dim") {
  Fixture t;
  Dim* d = t.module.AddDim("d", 3);
  Dim* e = t.module.AddDim("e", 2);
  Dim* none = t.module.AddDim("none", 0);
  Value* x = t.Param(F64({d, e}), "x");
  // Whole rows combined elementwise: the region's arguments are f64[e].
  Op* rows = t.b->Create(OpKind::ReduceCustom,
                         {t.b->FloatConst(ElemKind::F64, 1), x}, {F64({e})});
  rows->dims = {d};
  Block* region = t.b->AddRegion(rows, {F64({e}), F64({e})});
  {
    ir::InsertionGuard guard(*t.b);
    t.b->SetInsertionBlock(region);
    t.b->Yield({Times(*t.b, region->args[0], region->args[1])});
  }
  // Over an empty dim the result is init, whose tangent comes through.
  Value* y = t.Param(F64({none, e}), "y");
  Value* s = t.Param(F64(), "s");
  t.Return({rows->result(), ReduceCustom(*t.b, s, y, none, SmoothMax)});
  Inputs inputs(5);
  CheckJvp(t.f, {inputs.Random(F64({d, e}), 0.5, 1.5, true),
                 Floats(F64({none, e}), {}), inputs.Random(F64(), 0.5, 1)});
}

// Every op of ops.def has a forward-mode rule, and every op whose rule
// computes a tangent ran in a primal that a test above checked; the
// elementwise ops' partials are checked against finite differences op by op
// in agreement_test.cpp, which walks ops.def.
TEST_CASE("coverage: every op has a JVP rule, checked by a test") {
  const std::vector<OpKind> kinds = {
#define DELTA_OP(Name, ...) OpKind::Name,
#include "compiler/ir/ops.def"
  };
  for (OpKind kind : kinds) {
    INFO("op " << ir::OpMnemonic(kind).str());
    ad::JvpRule rule = ad::JvpRuleOf(kind);
    bool computes = rule == ad::JvpRule::Rule || rule == ad::JvpRule::Linear ||
                    (rule == ad::JvpRule::Structural && kind != OpKind::Yield &&
                     kind != OpKind::Return);
    bool partials = ir::InfoOf(kind).derivative == ir::OpDerivative::Partials;
    if (computes && !partials) CHECK(CheckedKinds().count(kind) == 1);
  }
}
