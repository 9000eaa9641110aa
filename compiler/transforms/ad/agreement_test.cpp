// Forward mode against reverse mode for every op of ops.def with a
// derivative: each elementwise op's partial derivatives from jvp and vjp
// agree at edge points (zeros of both signs, negatives, ties, huge and
// subnormal values, infinities, NaN) and at random points, where they also
// match central finite differences; for every op, <jvp(f, x, v), w> equals <v,
// vjp(f, x)(w)> (the dot-product test). The last test checks that every op of
// the table ran in a primal checked here.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "compiler/codegen/interpreter/interpreter.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/scalar_eval.h"
#include "compiler/transforms/ad/forward.h"
#include "compiler/transforms/ad/reverse.h"
#include "compiler/transforms/testing.h"

using namespace delta;
using interpreter::Tensor;
using ir::Dim;
using ir::DimList;
using ir::ElemKind;
using ir::Function;
using ir::OpKind;
using ir::Type;
using ir::Value;
using transforms::testing::AddParam;
using transforms::testing::CheckValid;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// The ops that ran in a primal whose derivatives a test compared.
std::set<OpKind>& CheckedKinds() {
  static std::set<OpKind> kinds;
  return kinds;
}

Type Of(ElemKind elem, DimList dims) { return Type{elem, nullptr, dims}; }

std::vector<int64_t> ShapeOf(const DimList& dims) {
  std::vector<int64_t> shape;
  for (const Dim* dim : dims) shape.push_back(*dim->constant);
  return shape;
}

Tensor Floats(const Type& type, std::vector<double> values) {
  return Tensor::FloatArray(type.elem, type.dims, ShapeOf(type.dims),
                            std::move(values));
}

std::vector<Tensor> Run(const Function& function, std::vector<Tensor> args) {
  interpreter::Interpreter interpreter(*function.module, llvm::nulls());
  auto results = interpreter.Call(function, std::move(args));
  if (!results) {
    FAIL_CHECK(llvm::toString(results.takeError()));
    return {};
  }
  CheckedKinds().insert(interpreter.executed_kinds().begin(),
                        interpreter.executed_kinds().end());
  return std::move(*results);
}

// f's jvp with tangents for the parameters that `wrt` marks (all if empty).
Function* MakeJvp(Function* f, std::vector<bool> wrt = {}) {
  Function* jvp = f->module->AddFunction(
      f->name + ".jvp" + std::to_string(f->module->functions.size()));
  jvp->derivative = ir::Derivative{ir::Derivative::Mode::Jvp, f, std::move(wrt),
                                   /*with_value=*/false};
  ad::SetUpJvpSignature(*f, *jvp);
  if (llvm::Error error = ad::BuildJvp(*f, *jvp)) {
    FAIL_CHECK(llvm::toString(std::move(error)));
    return nullptr;
  }
  CheckValid(*f->module);
  return jvp;
}

// f's vjp: the primal's arguments and a cotangent per float result give a
// cotangent per float parameter.
Function* MakeVjp(Function* f) {
  Function* vjp = f->module->AddFunction(f->name + ".vjp");
  vjp->derivative =
      ir::Derivative{ir::Derivative::Mode::Vjp, f, {}, /*with_value=*/false};
  ad::SetUpReverseSignature(*vjp);
  if (llvm::Error error = ad::BuildReverse(*f, *vjp)) {
    FAIL_CHECK(llvm::toString(std::move(error)));
    return nullptr;
  }
  CheckValid(*f->module);
  return vjp;
}

// Equal, both NaN, or (where `tolerance` > 0) close.
bool Agree(double a, double b, double tolerance = 0) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  return tolerance > 0 && std::isfinite(a) && std::isfinite(b) &&
         std::fabs(a - b) <= tolerance * (1 + std::fabs(a) + std::fabs(b));
}

// A function of `arity` float arrays over one dim whose result is one op.
struct OpUnderTest {
  ir::Module module;
  Function* f = nullptr;
  Dim* e = nullptr;
  std::vector<Type> params;

  OpUnderTest(OpKind kind, int64_t points) {
    f = module.AddFunction("f");
    e = module.AddDim("e", points);
    ir::Builder b(f);
    const ir::OpInfo& info = ir::InfoOf(kind);
    std::vector<Value*> x;
    size_t count = info.arity == ir::OpArity::Unary    ? 1
                   : info.arity == ir::OpArity::Binary ? 2
                                                       : 3;
    for (size_t i = 0; i < count; ++i) {
      // select's condition is bool: x_0 > 0.
      params.push_back(Of(ElemKind::F64, {e}));
      x.push_back(AddParam(f, params.back(), "x" + std::to_string(i)));
    }
    Value* y = nullptr;
    if (kind == OpKind::Convert)
      y = b.Convert(x[0], ElemKind::F32);
    else if (kind == OpKind::Select)
      y = b.Select(b.Binary(OpKind::Gt, x[0], b.FloatConst(ElemKind::F64, 0)),
                   x[1], x[2]);
    else if (info.arity == ir::OpArity::Unary)
      y = b.Unary(kind, x[0]);
    else
      y = b.Binary(kind, x[0], x[1]);
    transforms::testing::Return(b, {y});
  }
  const Type& ResultType() const { return f->result_types[0]; }
};

// The partial derivatives dy/dx_i at every point, by forward mode (a jvp
// with a tangent of ones for x_i alone) and by reverse mode (a vjp with a
// cotangent of ones); parameters whose partial is not defined (select's
// condition) are skipped.
struct Partials {
  std::vector<std::vector<double>> forward;
  std::vector<std::vector<double>> reverse;
};

Partials PartialsAt(OpUnderTest& t, const std::vector<Tensor>& x) {
  Partials partials;
  size_t n = x.size();
  std::vector<double> ones(x[0].floats.size(), 1.0);
  Function* vjp = MakeVjp(t.f);
  if (!vjp) return partials;
  std::vector<Tensor> args = x;
  args.push_back(Floats(t.ResultType(), ones));
  std::vector<Tensor> cotangents = Run(*vjp, args);
  REQUIRE(cotangents.size() == n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<bool> wrt(n, false);
    wrt[i] = true;
    Function* jvp = MakeJvp(t.f, wrt);
    if (!jvp) return partials;
    std::vector<Tensor> jvp_args = x;
    jvp_args.push_back(Floats(t.params[i], ones));
    std::vector<Tensor> results = Run(*jvp, jvp_args);
    REQUIRE(results.size() == 2);
    partials.forward.push_back(results[1].floats);
    partials.reverse.push_back(cotangents[i].floats);
  }
  return partials;
}

// Points for an op of `arity` operands: every combination of `values`
// (ties included) for binary and ternary ops.
std::vector<std::vector<double>> Grid(const std::vector<double>& values,
                                      size_t arity) {
  std::vector<std::vector<double>> columns(arity);
  size_t total = 1;
  for (size_t i = 0; i < arity && i < 2; ++i) total *= values.size();
  for (size_t p = 0; p < total; ++p) {
    size_t rest = p;
    for (size_t i = 0; i < arity; ++i) {
      columns[i].push_back(values[rest % values.size()]);
      if (i < 1) rest /= values.size();
    }
  }
  return columns;
}

const std::vector<double>& EdgeValues() {
  static const std::vector<double> values = {
      0.0,    -0.0,   1.0,     -1.0,   2.5,  -2.5,  0.5, 1e300,
      -1e300, 1e-310, -1e-310, 5e-324, kInf, -kInf, kNan};
  return values;
}

class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed * 6364136223846793005ULL + 1) {}
  double Next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state_ >> 11) / static_cast<double>(1ULL << 53);
  }
  // |x| in [0.3, 1.8], negative at random if `mixed_sign`.
  double Point(bool mixed_sign) {
    double value = 0.3 + 1.5 * Next();
    return mixed_sign && Next() < 0.5 ? -value : value;
  }

 private:
  uint64_t state_;
};

// Whether an op's derivative is defined at negative arguments: log, sqrt
// and pow's base need positive ones. (Finite differences skip points
// outside an op's domain; this keeps log's and sqrt's points inside.)
bool TakesNegatives(OpKind kind) {
  return kind != OpKind::Log && kind != OpKind::Sqrt && kind != OpKind::Pow;
}

std::vector<OpKind> OpsWith(ir::OpDerivative derivative) {
  std::vector<OpKind> kinds;
#define DELTA_OP(Name, ...)                                 \
  if (ir::InfoOf(OpKind::Name).derivative == derivative &&  \
      ir::InfoOf(OpKind::Name).arity != ir::OpArity::Other) \
    kinds.push_back(OpKind::Name);
#include "compiler/ir/ops.def"
  return kinds;
}

void CheckModesAgree(OpKind kind,
                     const std::vector<std::vector<double>>& points,
                     const char* where) {
  size_t count = points[0].size();
  OpUnderTest t(kind, static_cast<int64_t>(count));
  std::vector<Tensor> x;
  for (size_t i = 0; i < t.params.size(); ++i)
    x.push_back(Floats(t.params[i], points[i]));
  Partials partials = PartialsAt(t, x);
  REQUIRE(partials.forward.size() == t.params.size());
  for (size_t i = 0; i < t.params.size(); ++i)
    for (size_t p = 0; p < count; ++p) {
      INFO(ir::OpMnemonic(kind).str()
           << " at " << where << " point (" << points[0][p]
           << (t.params.size() > 1 ? ", " + std::to_string(points[1][p]) : "")
           << "), d/dx" << i << ": forward " << partials.forward[i][p]
           << ", reverse " << partials.reverse[i][p]);
      CHECK(Agree(partials.forward[i][p], partials.reverse[i][p]));
    }
}

TEST_CASE("forward and reverse partials agree at edge points") {
  for (OpKind kind : OpsWith(ir::OpDerivative::Partials)) {
    size_t arity = OpUnderTest(kind, 1).params.size();
    CheckModesAgree(kind, Grid(EdgeValues(), arity), "edge");
  }
}

TEST_CASE("forward and reverse partials agree with finite differences") {
  Random random(11);
  for (OpKind kind : OpsWith(ir::OpDerivative::Partials)) {
    OpUnderTest t(kind, 16);
    std::vector<std::vector<double>> points(t.params.size());
    for (auto& column : points)
      for (int p = 0; p < 16; ++p)
        column.push_back(random.Point(TakesNegatives(kind)));
    CheckModesAgree(kind, points, "random");
    // Central differences of f in each operand, in f64 (f32 for convert's
    // result, so a looser tolerance there).
    std::vector<Tensor> x;
    for (size_t i = 0; i < t.params.size(); ++i)
      x.push_back(Floats(t.params[i], points[i]));
    Partials partials = PartialsAt(t, x);
    REQUIRE(partials.forward.size() == t.params.size());
    bool f32 = kind == OpKind::Convert;
    double h = f32 ? 1e-3 : 1e-6;
    for (size_t i = 0; i < t.params.size(); ++i) {
      std::vector<Tensor> plus = x;
      std::vector<Tensor> minus = x;
      for (double& value : plus[i].floats) value += h;
      for (double& value : minus[i].floats) value -= h;
      std::vector<Tensor> above = Run(*t.f, plus);
      std::vector<Tensor> below = Run(*t.f, minus);
      for (size_t p = 0; p < 16; ++p) {
        // Outside the op's domain there is nothing to compare with.
        if (std::isnan(above[0].floats[p]) || std::isnan(below[0].floats[p]))
          continue;
        double difference = (above[0].floats[p] - below[0].floats[p]) / (2 * h);
        INFO(ir::OpMnemonic(kind).str()
             << " d/dx" << i << " at point " << p << ": forward "
             << partials.forward[i][p] << ", finite difference " << difference);
        CHECK(Agree(partials.forward[i][p], difference, f32 ? 1e-3 : 1e-6));
      }
    }
  }
}

TEST_CASE("ops without a derivative have zero tangents and cotangents") {
  for (OpKind kind : OpsWith(ir::OpDerivative::None)) {
    if (!ir::Supports(kind, ElemKind::F64) || ir::HasFlag(kind, ir::kCompare))
      continue;  // bool results: no tangent at all
    size_t arity = OpUnderTest(kind, 1).params.size();
    std::vector<std::vector<double>> points = Grid({-1.5, 0.0, 2.5}, arity);
    OpUnderTest t(kind, static_cast<int64_t>(points[0].size()));
    std::vector<Tensor> x;
    for (size_t i = 0; i < t.params.size(); ++i)
      x.push_back(Floats(t.params[i], points[i]));
    Partials partials = PartialsAt(t, x);
    for (size_t i = 0; i < partials.forward.size(); ++i)
      for (size_t p = 0; p < points[0].size(); ++p) {
        INFO(ir::OpMnemonic(kind).str() << " d/dx" << i << " at " << p);
        CHECK(partials.forward[i][p] == 0);
        CHECK(partials.reverse[i][p] == 0);
      }
  }
}

// --- The dot-product test --------------------------------------------------

// <jvp(f, x, v), w> == <v, vjp(f, x)(w)> for random v and w: forward mode
// applies the Jacobian, reverse mode its transpose. `args` are f's
// arguments; the float ones get tangents.
void CheckDotProduct(Function* f, const std::vector<Tensor>& args,
                     uint64_t seed = 5, double tolerance = 1e-12) {
  Random random(seed);
  auto random_like = [&](const Type& type, std::vector<double>* values) {
    size_t count = 1;
    for (int64_t size : ShapeOf(type.dims)) count *= static_cast<size_t>(size);
    for (size_t k = 0; k < count; ++k) values->push_back(random.Point(true));
  };
  std::vector<Tensor> tangents;
  for (size_t i = 0; i < f->params.size(); ++i) {
    if (!ir::IsFloat(f->params[i]->type.elem)) continue;
    std::vector<double> values;
    random_like(f->params[i]->type, &values);
    tangents.push_back(Floats(f->params[i]->type, values));
  }
  std::vector<Tensor> cotangents;
  for (const Type& type : f->result_types) {
    if (!ir::IsFloat(type.elem)) continue;
    std::vector<double> values;
    random_like(type, &values);
    cotangents.push_back(Floats(type, values));
  }
  Function* jvp = MakeJvp(f);
  Function* vjp = MakeVjp(f);
  if (!jvp || !vjp) return;
  std::vector<Tensor> jvp_args = args;
  jvp_args.insert(jvp_args.end(), tangents.begin(), tangents.end());
  std::vector<Tensor> forward = Run(*jvp, jvp_args);
  std::vector<Tensor> vjp_args = args;
  vjp_args.insert(vjp_args.end(), cotangents.begin(), cotangents.end());
  std::vector<Tensor> reverse = Run(*vjp, vjp_args);
  Run(*f, args);
  REQUIRE(forward.size() == f->result_types.size() + cotangents.size());
  REQUIRE(reverse.size() == tangents.size());
  double lhs = 0;
  double scale = 0;
  for (size_t k = 0; k < cotangents.size(); ++k) {
    const Tensor& dy = forward[f->result_types.size() + k];
    REQUIRE(dy.floats.size() == cotangents[k].floats.size());
    for (size_t e = 0; e < dy.floats.size(); ++e) {
      lhs += dy.floats[e] * cotangents[k].floats[e];
      scale += std::fabs(dy.floats[e] * cotangents[k].floats[e]);
    }
  }
  double rhs = 0;
  for (size_t k = 0; k < tangents.size(); ++k) {
    REQUIRE(reverse[k].floats.size() == tangents[k].floats.size());
    for (size_t e = 0; e < tangents[k].floats.size(); ++e)
      rhs += tangents[k].floats[e] * reverse[k].floats[e];
  }
  INFO("<jvp, w> = " << lhs << ", <v, vjp> = " << rhs);
  CHECK(std::fabs(lhs - rhs) <= tolerance * (1 + scale));
  CHECK(lhs != 0);
}

// A module with dims e (5) and g (3) and a function f being built.
struct Primal {
  ir::Module module;
  Dim* e = module.AddDim("e", 5);
  Dim* g = module.AddDim("g", 3);
  Function* f = module.AddFunction("f");
  ir::Builder b{f};
  Random random{3};

  Value* Param(const Type& type) {
    return AddParam(f, type, "p" + std::to_string(f->params.size()));
  }
  Tensor RandomFloats(const Type& type) {
    std::vector<double> values;
    size_t count = 1;
    for (int64_t size : ShapeOf(type.dims)) count *= static_cast<size_t>(size);
    for (size_t k = 0; k < count; ++k) values.push_back(random.Point(true));
    return Floats(type, values);
  }
  void Return(std::vector<Value*> values) {
    transforms::testing::Return(b, std::move(values));
  }
};

TEST_CASE("dot product: every elementwise op, lifted over dims") {
  for (OpKind kind : OpsWith(ir::OpDerivative::Partials)) {
    INFO(ir::OpMnemonic(kind).str());
    OpUnderTest t(kind, 6);
    std::vector<Tensor> x;
    Random random(17);
    for (const Type& type : t.params) {
      std::vector<double> values;
      for (int p = 0; p < 6; ++p)
        values.push_back(random.Point(TakesNegatives(kind)));
      x.push_back(Floats(type, values));
    }
    // convert's tangents are rounded to f32.
    CheckDotProduct(t.f, x, 5, kind == OpKind::Convert ? 1e-6 : 1e-12);
  }
}

TEST_CASE("dot product: broadcast, rename, cumsum and reductions") {
  Primal t;
  Type xe = Of(ElemKind::F64, {t.e});
  Type xeg = Of(ElemKind::F64, {t.e, t.g});
  Value* x = t.Param(xe);
  Value* m = t.Param(xeg);
  Dim* f = t.module.AddDim("f", 5);
  Value* wide = t.b.Binary(OpKind::Mul, t.b.Broadcast(x, {t.e, t.g}), m);
  Value* renamed = t.b.Rename(t.b.Cumsum(x, t.e), t.e, f);
  std::vector<Value*> results = {wide, renamed};
  for (ir::ReduceKind kind : {ir::ReduceKind::Sum, ir::ReduceKind::Prod,
                              ir::ReduceKind::Max, ir::ReduceKind::Min})
    results.push_back(t.b.Reduce(kind, m, {t.e}));
  t.Return(results);
  CheckDotProduct(t.f, {t.RandomFloats(xe), t.RandomFloats(xeg)});
}

TEST_CASE("dot product: gather and scatter_add by index arrays") {
  Primal t;
  Type xe = Of(ElemKind::F64, {t.e});
  Type xg = Of(ElemKind::F64, {t.g});
  Type index = Type{ElemKind::Index, t.e, {t.g}};
  Value* x = t.Param(xe);
  Value* v = t.Param(xg);
  Value* at = t.Param(index);
  Value* read = t.b.Gather(x, {at});
  Value* added = t.b.ScatterAdd(v, {at}, xe);
  t.Return({read, added});
  // Positions 4, 1, 4: a repeated index adds up.
  Tensor positions =
      Tensor::IntArray(ElemKind::Index, {t.g}, {3}, {4, 1, 4}, t.e);
  CheckDotProduct(t.f, {t.RandomFloats(xe), t.RandomFloats(xg), positions});
}

TEST_CASE("dot product: loop, while and if carry derivatives through regions") {
  Primal t;
  Type xe = Of(ElemKind::F64, {t.e});
  Value* x = t.Param(xe);
  // s = loop 0..4 (x) { s * sin(s) + x }
  Value* lo = t.b.IntConst(ElemKind::I64, 0);
  Value* hi = t.b.IntConst(ElemKind::I64, 4);
  ir::Op* loop = t.b.Create(OpKind::Loop, {lo, hi, x}, {xe});
  ir::Block* body = t.b.AddRegion(loop, {Of(ElemKind::I64, {}), xe});
  {
    ir::InsertionGuard guard(t.b);
    t.b.SetInsertionBlock(body);
    Value* s = body->args[1];
    t.b.Yield(
        {t.b.Binary(OpKind::Add,
                    t.b.Binary(OpKind::Mul, s, t.b.Unary(OpKind::Sin, s)), x)});
  }
  // c = while (x, 0) { n < 3 } { (c * 0.9 + exp(x) * 0.1, n + 1) }
  Type i64 = Of(ElemKind::I64, {});
  ir::Op* repeat =
      t.b.Create(OpKind::While, {x, t.b.IntConst(ElemKind::I64, 0)}, {xe, i64});
  ir::Block* condition = t.b.AddRegion(repeat, {xe, i64});
  ir::Block* step = t.b.AddRegion(repeat, {xe, i64});
  {
    ir::InsertionGuard guard(t.b);
    t.b.SetInsertionBlock(condition);
    t.b.Yield({t.b.Binary(OpKind::Lt, condition->args[1],
                          t.b.IntConst(ElemKind::I64, 3))});
    t.b.SetInsertionBlock(step);
    Value* c = step->args[0];
    t.b.Yield({t.b.Binary(OpKind::Add,
                          t.b.Binary(OpKind::Mul, c,
                                     t.b.FloatConst(ElemKind::F64, 0.9)),
                          t.b.Binary(OpKind::Mul, t.b.Unary(OpKind::Exp, x),
                                     t.b.FloatConst(ElemKind::F64, 0.1))),
               t.b.Binary(OpKind::Add, step->args[1],
                          t.b.IntConst(ElemKind::I64, 1))});
  }
  // z = if sum(x) > 0 { x * x } else { tanh(x) }
  Value* positive =
      t.b.Binary(OpKind::Gt, t.b.Reduce(ir::ReduceKind::Sum, x, {t.e}),
                 t.b.FloatConst(ElemKind::F64, 0));
  ir::Op* branch = t.b.Create(OpKind::If, {positive}, {xe});
  ir::Block* then_block = t.b.AddRegion(branch, {});
  ir::Block* else_block = t.b.AddRegion(branch, {});
  {
    ir::InsertionGuard guard(t.b);
    t.b.SetInsertionBlock(then_block);
    t.b.Yield({t.b.Binary(OpKind::Mul, x, x)});
    t.b.SetInsertionBlock(else_block);
    t.b.Yield({t.b.Unary(OpKind::Tanh, x)});
  }
  t.Return({loop->result(0), repeat->result(0), branch->result(0)});
  for (uint64_t seed : {1, 2, 3}) {
    t.random = Random(seed);
    CheckDotProduct(t.f, {t.RandomFloats(xe)}, seed);
    t.module.functions.resize(1);
  }
}

// Every op of ops.def with a derivative ran in a primal checked above;
// the others have none to check (bool, integer or index results,
// constants, effects) or are terminators.
TEST_CASE("coverage: every op with a derivative is checked here") {
  const std::set<OpKind> not_checked_here = {
      // Differentiated through calls and maps, whose bodies are the ops
      // above: forward_test.cpp checks them against finite differences.
      OpKind::Call, OpKind::Map, OpKind::ReduceCustom};
  const std::vector<OpKind> kinds = {
#define DELTA_OP(Name, ...) OpKind::Name,
#include "compiler/ir/ops.def"
  };
  for (OpKind kind : kinds) {
    ir::OpDerivative derivative = ir::InfoOf(kind).derivative;
    bool has_derivative = derivative == ir::OpDerivative::Partials ||
                          derivative == ir::OpDerivative::Linear ||
                          (derivative == ir::OpDerivative::Structural &&
                           kind != OpKind::Yield && kind != OpKind::Return);
    if (!has_derivative || not_checked_here.count(kind)) continue;
    INFO("op " << ir::OpMnemonic(kind).str());
    CHECK(CheckedKinds().count(kind) == 1);
  }
}

}  // namespace
