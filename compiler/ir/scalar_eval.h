// What each elementwise op of ops.def computes at one point: the element
// semantics of docs/internals/ir.md, written once. The interpreter runs
// every elementwise op with these; constant folding folds the ops that
// ops.def marks kExact with them, so a folded constant is what the code
// generators' instructions give.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "compiler/ir/ir.h"

namespace delta::ir {

inline bool IsNumeric(ElemKind kind) {
  return IsFloat(kind) || IsInteger(kind);
}

// Whether an elementwise op is defined on operands of `elem` (ops.def's
// Elements column).
inline bool Supports(OpKind kind, ElemKind elem) {
  switch (InfoOf(kind).elements) {
    case OpElements::Float:
      return IsFloat(elem);
    case OpElements::Numeric:
      return IsNumeric(elem);
    case OpElements::Bool:
      return elem == ElemKind::Bool;
    case OpElements::Any:
      return true;
  }
  return false;
}

inline double RoundTo(ElemKind kind, double x) {
  return kind == ElemKind::F32 ? static_cast<double>(static_cast<float>(x)) : x;
}

// Integer results wrap to their type's width (the language's overflow rule).
inline int64_t WrapTo(ElemKind kind, uint64_t x) {
  switch (kind) {
    case ElemKind::I32:
      return static_cast<int32_t>(static_cast<uint32_t>(x));
    case ElemKind::Bool:
      return x != 0;
    default:
      return static_cast<int64_t>(x);
  }
}

// Float to integer conversion truncates and saturates; NaN gives 0.
inline int64_t SaturateTo(ElemKind kind, double x) {
  if (std::isnan(x)) return 0;
  double lo = kind == ElemKind::I32 ? -2147483648.0 : -9223372036854775808.0;
  double hi = kind == ElemKind::I32 ? 2147483648.0 : 9223372036854775808.0;
  if (x <= lo)
    return kind == ElemKind::I32 ? std::numeric_limits<int32_t>::min()
                                 : std::numeric_limits<int64_t>::min();
  if (x >= hi)
    return kind == ElemKind::I32 ? std::numeric_limits<int32_t>::max()
                                 : std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(std::trunc(x));
}

// Float unary ops. f32 math is done in float (the same library calls
// compiled f32 code makes), f64 math in double.
template <typename T>
T FloatUnary(OpKind kind, T x) {
  switch (kind) {
    case OpKind::Neg:
      return -x;
    case OpKind::Exp:
      return std::exp(x);
    case OpKind::Expm1:
      return std::expm1(x);
    case OpKind::Log:
      return std::log(x);
    case OpKind::Log1p:
      return std::log1p(x);
    case OpKind::Sin:
      return std::sin(x);
    case OpKind::Cos:
      return std::cos(x);
    case OpKind::Tan:
      return std::tan(x);
    case OpKind::Tanh:
      return std::tanh(x);
    case OpKind::Sqrt:
      return std::sqrt(x);
    case OpKind::Abs:
      return std::fabs(x);
    case OpKind::Floor:
      return std::floor(x);
    case OpKind::Ceil:
      return std::ceil(x);
    case OpKind::Sigmoid:
      return T(1) / (T(1) + std::exp(-x));
    // NaN propagates; relu(-0) is +0.
    case OpKind::Relu:
      return std::isnan(x) ? x : x > T(0) ? x : T(0);
    case OpKind::Erf:
      return std::erf(x);
    case OpKind::Erfc:
      return std::erfc(x);
    case OpKind::Lgamma:
      return std::lgamma(x);
    // ±0 and NaN are themselves.
    case OpKind::Sign:
      return x > T(0) ? T(1) : x < T(0) ? T(-1) : x;
    case OpKind::Round:
      return std::round(x);
    default:  // stop_gradient
      return x;
  }
}

// Integer and bool unary ops of result kind `elem`.
inline int64_t IntUnary(OpKind kind, ElemKind elem, int64_t x) {
  auto ux = static_cast<uint64_t>(x);
  switch (kind) {
    case OpKind::Neg:
      return WrapTo(elem, 0 - ux);
    case OpKind::Abs:
      return WrapTo(elem, x < 0 ? 0 - ux : ux);
    case OpKind::Relu:
      return x > 0 ? x : 0;
    case OpKind::Not:
      return x == 0;
    case OpKind::Sign:
      return (x > 0) - (x < 0);
    default:
      return x;  // floor, ceil and round of an integer, stop_gradient
  }
}

// Float binary ops other than comparisons.
template <typename T>
T FloatBinary(OpKind kind, T a, T b) {
  switch (kind) {
    case OpKind::Add:
      return a + b;
    case OpKind::Sub:
      return a - b;
    case OpKind::Mul:
      return a * b;
    case OpKind::Div:
      return a / b;
    case OpKind::Rem:
      return std::fmod(a, b);
    case OpKind::Pow:
      return std::pow(a, b);
    case OpKind::Atan2:
      return std::atan2(a, b);
    // IEEE 754-2019 maximum and minimum, as llvm.maximum/minimum: NaN
    // propagates and -0 < +0 (language.md, "max and min").
    case OpKind::Max:
      if (std::isnan(a) || std::isnan(b)) return a + b;
      if (a == b) return std::signbit(a) ? b : a;
      return a > b ? a : b;
    case OpKind::Min:
      if (std::isnan(a) || std::isnan(b)) return a + b;
      if (a == b) return std::signbit(a) ? a : b;
      return a < b ? a : b;
    default:
      return a;
  }
}

// Comparisons, and `and` and `or` of bools (as integers).
template <typename T>
bool Compare(OpKind kind, T a, T b) {
  switch (kind) {
    case OpKind::Eq:
      return a == b;
    case OpKind::Ne:
      return a != b;
    case OpKind::Lt:
      return a < b;
    case OpKind::Le:
      return a <= b;
    case OpKind::Gt:
      return a > b;
    case OpKind::Ge:
      return a >= b;
    case OpKind::And:
      return a != 0 && b != 0;
    case OpKind::Or:
      return a != 0 || b != 0;
    default:
      return false;
  }
}

// Integer binary ops other than comparisons, of operand kind `elem`:
// arithmetic wraps; nullopt is a division by zero.
inline std::optional<int64_t> IntBinary(OpKind kind, ElemKind elem, int64_t a,
                                        int64_t b) {
  auto ua = static_cast<uint64_t>(a);
  auto ub = static_cast<uint64_t>(b);
  switch (kind) {
    case OpKind::Add:
      return WrapTo(elem, ua + ub);
    case OpKind::Sub:
      return WrapTo(elem, ua - ub);
    case OpKind::Mul:
      return WrapTo(elem, ua * ub);
    case OpKind::Div:
      if (b == 0) return std::nullopt;
      // INT64_MIN / -1 overflows in C++; it wraps to INT64_MIN.
      if (b == -1) return WrapTo(elem, 0 - ua);
      return WrapTo(elem, static_cast<uint64_t>(a / b));
    case OpKind::Rem:
      if (b == 0) return std::nullopt;
      if (b == -1) return 0;
      return a % b;
    case OpKind::Max:
      return a >= b ? a : b;
    case OpKind::Min:
      return a <= b ? a : b;
    default:
      return a;
  }
}

// Converts one element between element kinds (ops.def: convert): a float
// in `f`, any other kind in `i`.
inline void ConvertElement(ElemKind from, ElemKind to, double f, int64_t i,
                           double* f_out, int64_t* i_out) {
  if (IsFloat(from)) {
    if (IsFloat(to))
      *f_out = RoundTo(to, f);
    else if (to == ElemKind::Bool)
      *i_out = f != 0;
    else if (to == ElemKind::I32)
      *i_out = SaturateTo(ElemKind::I32, f);
    else
      *i_out = SaturateTo(ElemKind::I64, f);
    return;
  }
  // int64 -> float directly: going through double could round twice.
  if (to == ElemKind::F32)
    *f_out = static_cast<float>(i);
  else if (to == ElemKind::F64)
    *f_out = static_cast<double>(i);
  else if (to == ElemKind::Bool)
    *i_out = i != 0;
  else
    *i_out = WrapTo(to, static_cast<uint64_t>(i));
}

}  // namespace delta::ir
