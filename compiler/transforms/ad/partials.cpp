// One rule per elementwise op: its partial derivatives at a point, applied
// to the d_i that ApplyPartials is given (partials.h). ops.def marks which
// ops have partials; the table at the end makes a missing rule a build
// error, and agreement_test.cpp checks each rule against finite differences
// and forward mode against reverse mode.
#include "compiler/transforms/ad/partials.h"

namespace delta::ad {
namespace {

using ir::OpKind;
using ir::Value;

// What a rule reads and writes. Arithmetic helpers take null for zero, as
// the d_i do.
class Rule {
 public:
  Rule(ir::Builder& builder, const std::vector<Value*>& x, Value* y,
       const std::vector<Value*>& d)
      : b_(builder), x_(x), y_(y), d_(d), out_(d.size()) {}

  Value* x(size_t i) const { return x_[i]; }
  Value* y() const { return y_; }
  Value* d(size_t i) const { return d_[i]; }
  void Set(size_t i, Value* value) { out_[i] = value; }
  std::vector<Value*> Results() && { return std::move(out_); }

  Value* Const(const Value* like, double value) {
    return b_.FloatConst(like->type.elem, value);
  }
  Value* Add(Value* a, Value* c) { return Op(OpKind::Add, a, c); }
  Value* Sub(Value* a, Value* c) { return Op(OpKind::Sub, a, c); }
  Value* Mul(Value* a, Value* c) { return Op(OpKind::Mul, a, c); }
  Value* Div(Value* a, Value* c) { return Op(OpKind::Div, a, c); }
  Value* Pow(Value* a, Value* c) { return Op(OpKind::Pow, a, c); }
  Value* Neg(Value* a) { return a ? b_.Unary(OpKind::Neg, a) : nullptr; }
  Value* Math(OpKind kind, Value* a) { return b_.Unary(kind, a); }
  Value* Compare(OpKind kind, Value* a, Value* c) {
    return b_.Binary(kind, a, c);
  }
  // c ? a : b, where null is zero.
  Value* Choose(Value* condition, Value* a, Value* c) {
    if (!a && !c) return nullptr;
    if (!a) a = Const(c, 0);
    if (!c) c = Const(a, 0);
    return b_.Select(condition, a, c);
  }

 private:
  Value* Op(OpKind kind, Value* a, Value* c) {
    return a && c ? b_.Binary(kind, a, c) : nullptr;
  }

  ir::Builder& b_;
  const std::vector<Value*>& x_;
  Value* y_;
  const std::vector<Value*>& d_;
  std::vector<Value*> out_;
};

// Each rule: the op, then d_i * dy/dx_i for each operand.

// y = -a             -d
void PartialsNeg(Rule& r) { r.Set(0, r.Neg(r.d(0))); }

// y = exp(a)         d * y
void PartialsExp(Rule& r) { r.Set(0, r.Mul(r.d(0), r.y())); }

// y = expm1(a)       d * (y + 1)
void PartialsExpm1(Rule& r) {
  if (r.d(0)) r.Set(0, r.Mul(r.d(0), r.Add(r.y(), r.Const(r.y(), 1))));
}

// y = log(a)         d / a
void PartialsLog(Rule& r) { r.Set(0, r.Div(r.d(0), r.x(0))); }

// y = log1p(a)       d / (1 + a)
void PartialsLog1p(Rule& r) {
  if (r.d(0)) r.Set(0, r.Div(r.d(0), r.Add(r.Const(r.x(0), 1), r.x(0))));
}

// y = sin(a)         d * cos(a)
void PartialsSin(Rule& r) {
  if (r.d(0)) r.Set(0, r.Mul(r.d(0), r.Math(OpKind::Cos, r.x(0))));
}

// y = cos(a)         -(d * sin(a))
void PartialsCos(Rule& r) {
  if (r.d(0)) r.Set(0, r.Neg(r.Mul(r.d(0), r.Math(OpKind::Sin, r.x(0)))));
}

// y = tan(a)         d * (1 + y^2)
void PartialsTan(Rule& r) {
  if (!r.d(0)) return;
  r.Set(0, r.Mul(r.d(0), r.Add(r.Const(r.y(), 1), r.Mul(r.y(), r.y()))));
}

// y = tanh(a)        d * (1 - y^2)
void PartialsTanh(Rule& r) {
  if (!r.d(0)) return;
  r.Set(0, r.Mul(r.d(0), r.Sub(r.Const(r.y(), 1), r.Mul(r.y(), r.y()))));
}

// y = sqrt(a)        d / (2 y)
void PartialsSqrt(Rule& r) {
  if (r.d(0)) r.Set(0, r.Div(r.d(0), r.Mul(r.Const(r.y(), 2), r.y())));
}

// y = abs(a)         a < 0 ? -d : d (abs = max(a, -a): the tie at 0 goes
//                    to the first argument)
void PartialsAbs(Rule& r) {
  if (!r.d(0)) return;
  Value* negative = r.Compare(OpKind::Lt, r.x(0), r.Const(r.x(0), 0));
  r.Set(0, r.Choose(negative, r.Neg(r.d(0)), r.d(0)));
}

// y = sigmoid(a)     d * y * (1 - y)
void PartialsSigmoid(Rule& r) {
  if (!r.d(0)) return;
  r.Set(0, r.Mul(r.d(0), r.Mul(r.y(), r.Sub(r.Const(r.y(), 1), r.y()))));
}

// y = relu(a)        a > 0 ? d : 0 (relu'(0) = 0)
void PartialsRelu(Rule& r) {
  if (!r.d(0)) return;
  Value* positive = r.Compare(OpKind::Gt, r.x(0), r.Const(r.x(0), 0));
  r.Set(0, r.Choose(positive, r.d(0), nullptr));
}

// y = erf(a)         d * 2 / sqrt(pi) * exp(-a^2)
// y = erfc(a)        -(d * 2 / sqrt(pi) * exp(-a^2))
Value* ErfSlope(Rule& r) {
  Value* a = r.x(0);
  Value* gauss = r.Math(OpKind::Exp, r.Neg(r.Mul(a, a)));
  return r.Mul(r.d(0), r.Mul(r.Const(a, 1.1283791670955126), gauss));
}
void PartialsErf(Rule& r) {
  if (r.d(0)) r.Set(0, ErfSlope(r));
}
void PartialsErfc(Rule& r) {
  if (r.d(0)) r.Set(0, r.Neg(ErfSlope(r)));
}

// y = lgamma(a)      d * digamma(a)
// Digamma from the ops the IR has, so that every backend and every order of
// derivative follows: below 1/2 the reflection psi(a) = psi(1 - a) -
// pi / tan(pi a); then psi(z) = psi(z + 6) - sum_{k<6} 1 / (z + k), and at
// w = z + 6 >= 6.5 the asymptotic series up to w^-12, whose first omitted
// term, 1 / (12 w^14), is below 4e-13.
Value* Digamma(Rule& r, Value* a) {
  auto c = [&](double value) { return r.Const(a, value); };
  Value* reflect = r.Compare(OpKind::Lt, a, c(0.5));
  Value* z = r.Choose(reflect, r.Sub(c(1), a), a);
  Value* steps = r.Div(c(1), z);
  for (int k = 1; k < 6; ++k) steps = r.Add(steps, r.Div(c(1), r.Add(z, c(k))));
  Value* w = r.Add(z, c(6));
  Value* inv = r.Div(c(1), w);
  Value* inv2 = r.Mul(inv, inv);
  Value* tail = c(691.0 / 32760.0);
  for (double coefficient : {1.0 / 132, 1.0 / 240, 1.0 / 252, 1.0 / 120})
    tail = r.Sub(c(coefficient), r.Mul(inv2, tail));
  tail = r.Mul(inv2, r.Sub(c(1.0 / 12), r.Mul(inv2, tail)));
  Value* series =
      r.Sub(r.Sub(r.Math(OpKind::Log, w), r.Mul(c(0.5), inv)), tail);
  Value* psi_z = r.Sub(series, steps);
  Value* pi = c(3.14159265358979323846);
  Value* cot = r.Div(pi, r.Math(OpKind::Tan, r.Mul(pi, a)));
  return r.Choose(reflect, r.Sub(psi_z, cot), psi_z);
}
void PartialsLgamma(Rule& r) {
  if (r.d(0)) r.Set(0, r.Mul(r.d(0), Digamma(r, r.x(0))));
}

// y = T(a)           d (the caller converts it between float kinds)
void PartialsConvert(Rule& r) { r.Set(0, r.d(0)); }

// y = a + b          d_a, d_b
void PartialsAdd(Rule& r) {
  r.Set(0, r.d(0));
  r.Set(1, r.d(1));
}

// y = a - b          d_a, -d_b
void PartialsSub(Rule& r) {
  r.Set(0, r.d(0));
  r.Set(1, r.Neg(r.d(1)));
}

// y = a * b          d_a * b, d_b * a
void PartialsMul(Rule& r) {
  r.Set(0, r.Mul(r.d(0), r.x(1)));
  r.Set(1, r.Mul(r.d(1), r.x(0)));
}

// y = a / b          d_a / b, -(d_b * y / b)
// By a scalar b, d_a / b over an array is d_a * (1 / b): one division
// instead of one per element (a vector division takes as long as ten
// multiplications; RK4's `/ 6.0` in GradBench's ode had seven per point
// of its backward loop).
void PartialsDiv(Rule& r) {
  if (r.d(0) && r.x(1)->type.IsScalar() && !r.d(0)->type.IsScalar())
    r.Set(0, r.Mul(r.d(0), r.Div(r.Const(r.x(1), 1), r.x(1))));
  else
    r.Set(0, r.Div(r.d(0), r.x(1)));
  r.Set(1, r.Neg(r.Div(r.Mul(r.d(1), r.y()), r.x(1))));
}

// y = rem(a, b)      d_a, -(d_b * trunc(a / b)) (floats: a - b trunc(a/b))
void PartialsRem(Rule& r) {
  r.Set(0, r.d(0));
  if (!r.d(1)) return;
  Value* q = r.Div(r.x(0), r.x(1));
  Value* trunc = r.Choose(r.Compare(OpKind::Lt, q, r.Const(q, 0)),
                          r.Math(OpKind::Ceil, q), r.Math(OpKind::Floor, q));
  r.Set(1, r.Neg(r.Mul(r.d(1), trunc)));
}

// y = a ^ b          d_a * b * a^(b - 1), d_b * log(a) * y; the latter is 0
//                    where a = 0 (where y is 0 or 1 for every b near b)
void PartialsPow(Rule& r) {
  Value* a = r.x(0);
  Value* b = r.x(1);
  if (r.d(0))
    r.Set(0, r.Mul(r.d(0), r.Mul(b, r.Pow(a, r.Sub(b, r.Const(b, 1))))));
  if (r.d(1))
    r.Set(1, r.Choose(r.Compare(OpKind::Eq, a, r.Const(a, 0)), nullptr,
                      r.Mul(r.d(1), r.Mul(r.Math(OpKind::Log, a), r.y()))));
}

// y = atan2(a, b)    d_a * b / (a^2 + b^2), -(d_b * a / (a^2 + b^2))
void PartialsAtan2(Rule& r) {
  Value* a = r.x(0);
  Value* b = r.x(1);
  Value* norm = r.Add(r.Mul(a, a), r.Mul(b, b));
  if (r.d(0)) r.Set(0, r.Div(r.Mul(r.d(0), b), norm));
  if (r.d(1)) r.Set(1, r.Neg(r.Div(r.Mul(r.d(1), a), norm)));
}

// y = max(a, b)      a >= b ? d_a : 0, a >= b ? 0 : d_b (ties: a)
// y = min(a, b)      the same with a <= b
void PartialsOfExtremum(Rule& r, OpKind first_if) {
  Value* first = r.Compare(first_if, r.x(0), r.x(1));
  r.Set(0, r.Choose(first, r.d(0), nullptr));
  r.Set(1, r.Choose(first, nullptr, r.d(1)));
}
void PartialsMax(Rule& r) { PartialsOfExtremum(r, OpKind::Ge); }
void PartialsMin(Rule& r) { PartialsOfExtremum(r, OpKind::Le); }

// y = select(c, a, b)   none, c ? d_a : 0, c ? 0 : d_b
void PartialsSelect(Rule& r) {
  r.Set(1, r.Choose(r.x(0), r.d(1), nullptr));
  r.Set(2, r.Choose(r.x(0), nullptr, r.d(2)));
}

// The rules by op: an op whose Derivative is Partials names its rule here,
// so a missing one is a compile error.
using RuleFunction = void (*)(Rule&);
#define DELTA_RULE_Partials(Name) &Partials##Name
#define DELTA_RULE_None(Name) nullptr
#define DELTA_RULE_Linear(Name) nullptr
#define DELTA_RULE_Structural(Name) nullptr
constexpr RuleFunction kRules[] = {
#define DELTA_OP(Name, mnemonic, Arity, Elements, Derivative, Flags) \
  DELTA_RULE_##Derivative(Name),
#include "compiler/ir/ops.def"
};

}  // namespace

std::vector<Value*> ApplyPartials(ir::Builder& builder, OpKind kind,
                                  const std::vector<Value*>& x, Value* y,
                                  const std::vector<Value*>& d) {
  RuleFunction rule = kRules[static_cast<size_t>(kind)];
  Rule applied(builder, x, y, d);
  if (rule) rule(applied);
  return std::move(applied).Results();
}

}  // namespace delta::ad
