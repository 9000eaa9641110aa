// Folds constants; every rule here must give bit-for-bit what the
// interpreter and the generated code give (see docs/internals/passes.md).
#include "compiler/transforms/opt/fold_constants.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "compiler/transforms/rewrite.h"

namespace delta::opt {
namespace {

using ir::ElemKind;
using ir::Op;
using ir::OpKind;
using ir::Value;

// A constant's value: doubles hold every f32 and f64 exactly, int64 every
// integer and bool.
struct Constant {
  ElemKind elem;
  double real = 0;
  int64_t integer = 0;
};

std::optional<Constant> ConstantOf(const Value* value) {
  const Op* def = value->def;
  if (!def || def->kind != OpKind::Const || !value->type.IsScalar())
    return std::nullopt;
  return Constant{value->type.elem, def->float_value, def->int_value};
}

bool IsIntegerLike(ElemKind elem) {
  return ir::IsInteger(elem) || elem == ElemKind::Bool;
}

// Integer arithmetic wraps at the width of the type.
int64_t Wrap(ElemKind elem, uint64_t bits) {
  switch (elem) {
    case ElemKind::I32:
      return static_cast<int32_t>(static_cast<uint32_t>(bits));
    case ElemKind::Bool:
      return bits & 1;
    default:
      return static_cast<int64_t>(bits);
  }
}

double Round(ElemKind elem, double value) {
  return elem == ElemKind::F32 ? static_cast<double>(static_cast<float>(value))
                               : value;
}

// Float to integer conversion truncates and saturates; NaN gives 0.
int64_t FloatToInteger(ElemKind to, double value) {
  if (std::isnan(value)) return 0;
  int64_t low = to == ElemKind::I32 ? std::numeric_limits<int32_t>::min()
                                    : std::numeric_limits<int64_t>::min();
  int64_t high = to == ElemKind::I32 ? std::numeric_limits<int32_t>::max()
                                     : std::numeric_limits<int64_t>::max();
  // -2^31 and -2^63 are doubles; 2^31 - 1 is too, 2^63 - 1 rounds to 2^63,
  // the first double out of range, so `>=` is right for both.
  if (value <= static_cast<double>(low)) return low;
  if (value >= static_cast<double>(high)) return high;
  return static_cast<int64_t>(std::trunc(value));
}

std::optional<Constant> FoldUnary(OpKind kind, const Constant& x, ElemKind to) {
  Constant result{to};
  bool real = ir::IsFloat(x.elem);
  switch (kind) {
    case OpKind::Neg:
      if (real)
        result.real = -x.real;
      else
        result.integer = Wrap(to, 0 - static_cast<uint64_t>(x.integer));
      break;
    case OpKind::Not:
      result.integer = x.integer ? 0 : 1;
      break;
    case OpKind::Abs:
      if (real)
        result.real = std::fabs(x.real);
      else
        result.integer =
            Wrap(to, x.integer < 0 ? 0 - static_cast<uint64_t>(x.integer)
                                   : static_cast<uint64_t>(x.integer));
      break;
    case OpKind::Floor:
      if (!real) return std::nullopt;
      result.real = std::floor(x.real);
      break;
    case OpKind::Ceil:
      if (!real) return std::nullopt;
      result.real = std::ceil(x.real);
      break;
    case OpKind::Sqrt:
      // Correctly rounded in double, so also after rounding to f32.
      if (!real) return std::nullopt;
      result.real = Round(to, std::sqrt(x.real));
      break;
    case OpKind::Relu:
      // NaN propagates; relu(-0) is +0.
      if (real) {
        result.real = std::isnan(x.real) || x.real > 0 ? x.real : 0.0;
      } else {
        result.integer = x.integer > 0 ? x.integer : 0;
      }
      break;
    case OpKind::Convert:
      if (to == ElemKind::Index) return std::nullopt;
      if (ir::IsFloat(to)) {
        result.real = Round(to, real ? x.real : static_cast<double>(x.integer));
      } else if (to == ElemKind::Bool) {
        result.integer = real ? x.real != 0 : x.integer != 0;
      } else if (real) {
        result.integer = FloatToInteger(to, x.real);
      } else {
        result.integer = Wrap(to, static_cast<uint64_t>(x.integer));
      }
      break;
    default:
      return std::nullopt;
  }
  if (ir::IsFloat(to))
    result.integer = FloatToInteger(ElemKind::I64, result.real);
  else
    result.real = static_cast<double>(result.integer);
  return result;
}

std::optional<Constant> FoldReal(OpKind kind, double a, double b,
                                 ElemKind elem) {
  Constant result{elem};
  auto boolean = [&](bool value) {
    return Constant{ElemKind::Bool, value ? 1.0 : 0.0, value ? 1 : 0};
  };
  switch (kind) {
    // +, -, *, / and sqrt are correctly rounded in double, and rounding
    // that again to f32 gives the correctly rounded f32 result.
    case OpKind::Add:
      result.real = Round(elem, a + b);
      break;
    case OpKind::Sub:
      result.real = Round(elem, a - b);
      break;
    case OpKind::Mul:
      result.real = Round(elem, a * b);
      break;
    case OpKind::Div:
      result.real = Round(elem, a / b);
      break;
    case OpKind::Max:
    case OpKind::Min:
      // IEEE 754-2019 maximum and minimum: NaN propagates, -0 < +0.
      if (std::isnan(a) || std::isnan(b)) {
        result.real = std::numeric_limits<double>::quiet_NaN();
      } else if (a == b) {
        result.real = (kind == OpKind::Max) == std::signbit(a) ? b : a;
      } else {
        result.real = (kind == OpKind::Max) == (a > b) ? a : b;
      }
      break;
    case OpKind::Eq:
      return boolean(a == b);
    case OpKind::Ne:
      return boolean(a != b);
    case OpKind::Lt:
      return boolean(a < b);
    case OpKind::Le:
      return boolean(a <= b);
    case OpKind::Gt:
      return boolean(a > b);
    case OpKind::Ge:
      return boolean(a >= b);
    default:
      return std::nullopt;
  }
  result.integer = FloatToInteger(ElemKind::I64, result.real);
  return result;
}

std::optional<Constant> FoldInteger(OpKind kind, int64_t a, int64_t b,
                                    ElemKind elem) {
  auto ua = static_cast<uint64_t>(a);
  auto ub = static_cast<uint64_t>(b);
  auto boolean = [&](bool value) {
    return Constant{ElemKind::Bool, value ? 1.0 : 0.0, value ? 1 : 0};
  };
  int64_t value = 0;
  switch (kind) {
    case OpKind::Add:
      value = Wrap(elem, ua + ub);
      break;
    case OpKind::Sub:
      value = Wrap(elem, ua - ub);
      break;
    case OpKind::Mul:
      value = Wrap(elem, ua * ub);
      break;
    case OpKind::Div:
    case OpKind::Rem:
      // Division by zero is a run-time error, and MIN / -1 is left to the
      // target; both stay.
      if (b == 0 || b == -1) return std::nullopt;
      value = kind == OpKind::Div ? a / b : a % b;
      break;
    case OpKind::Max:
      value = a > b ? a : b;
      break;
    case OpKind::Min:
      value = a < b ? a : b;
      break;
    case OpKind::And:
      value = a & b;
      break;
    case OpKind::Or:
      value = a | b;
      break;
    case OpKind::Eq:
      return boolean(a == b);
    case OpKind::Ne:
      return boolean(a != b);
    case OpKind::Lt:
      return boolean(a < b);
    case OpKind::Le:
      return boolean(a <= b);
    case OpKind::Gt:
      return boolean(a > b);
    case OpKind::Ge:
      return boolean(a >= b);
    default:
      return std::nullopt;
  }
  return Constant{elem, static_cast<double>(value), value};
}

bool IsConstant(const Value* value, double real) {
  std::optional<Constant> constant = ConstantOf(value);
  if (!constant) return false;
  if (ir::IsFloat(constant->elem))
    return constant->real == real &&
           std::signbit(constant->real) == std::signbit(real);
  return IsIntegerLike(constant->elem) &&
         static_cast<double>(constant->integer) == real;
}

// The operand that `op` always equals, if an identity says so.
Value* Identity(const Op& op) {
  if (op.operands.size() < 2) return nullptr;
  Value* a = op.operands[0];
  Value* b = op.operands[1];
  ElemKind elem = a->type.elem;
  bool real = ir::IsFloat(elem);
  Value* result = nullptr;
  switch (op.kind) {
    case OpKind::Mul:
      if (IsConstant(b, 1))
        result = a;
      else if (IsConstant(a, 1))
        result = b;
      break;
    case OpKind::Div:
      if (IsConstant(b, 1)) result = a;
      break;
    case OpKind::Add:
      // x + 0.0 is -0.0 + 0.0 = +0.0 for x = -0.0; x + -0.0 is exact.
      if (IsConstant(b, real ? -0.0 : 0))
        result = a;
      else if (IsConstant(a, real ? -0.0 : 0))
        result = b;
      break;
    case OpKind::Sub:
      if (IsConstant(b, 0.0)) result = a;
      break;
    case OpKind::And:
      if (IsConstant(b, 1))
        result = a;
      else if (IsConstant(a, 1))
        result = b;
      break;
    case OpKind::Or:
      if (IsConstant(b, 0))
        result = a;
      else if (IsConstant(a, 0))
        result = b;
      break;
    case OpKind::Select:
      if (IsConstant(a, 1))
        result = op.operands[1];
      else if (IsConstant(a, 0))
        result = op.operands[2];
      break;
    default:
      break;
  }
  if (result && result->type != op.results[0]->type) return nullptr;
  return result;
}

// Turns `op` into the constant `value` in place, so that its uses stay.
void MakeConstant(Op& op, const Constant& value) {
  op.kind = OpKind::Const;
  op.operands.clear();
  op.dims.clear();
  op.regions.clear();
  op.float_value = value.real;
  op.int_value = value.integer;
}

std::optional<Constant> Fold(const Op& op) {
  if (op.kind == OpKind::Size) {
    if (!op.dims[0]->constant) return std::nullopt;
    int64_t size = *op.dims[0]->constant;
    return Constant{ElemKind::I64, static_cast<double>(size), size};
  }
  if (op.results.size() != 1 || !op.results[0]->type.IsScalar())
    return std::nullopt;
  ElemKind to = op.results[0]->type.elem;
  if (ir::IsElementwiseUnary(op.kind)) {
    std::optional<Constant> x = ConstantOf(op.operands[0]);
    if (!x || x->elem == ElemKind::Index) return std::nullopt;
    return FoldUnary(op.kind, *x, to);
  }
  if (ir::IsElementwiseBinary(op.kind)) {
    std::optional<Constant> a = ConstantOf(op.operands[0]);
    std::optional<Constant> b = ConstantOf(op.operands[1]);
    if (!a || !b || a->elem == ElemKind::Index) return std::nullopt;
    if (ir::IsFloat(a->elem)) return FoldReal(op.kind, a->real, b->real, to);
    return FoldInteger(op.kind, a->integer, b->integer, a->elem);
  }
  return std::nullopt;
}

bool FoldFunction(ir::Function& function) {
  llvm::DenseMap<Value*, Value*> replacements;
  std::vector<Op*> replaced;
  bool changed = false;
  transforms::WalkOps(*function.body, [&](Op& op) {
    for (Value*& operand : op.operands) {
      auto it = replacements.find(operand);
      if (it != replacements.end()) operand = it->second;
    }
    if (std::optional<Constant> value = Fold(op)) {
      MakeConstant(op, *value);
      changed = true;
    } else if (Value* same = Identity(op)) {
      replacements[op.results[0]] = same;
      replaced.push_back(&op);
    }
  });
  changed |= !replaced.empty();
  transforms::ReplaceUses(function, replacements);
  // Ops nested in a replaced op's regions are never replaced themselves
  // (only region-free ops are), so erasing is safe in any order.
  for (Op* op : replaced) transforms::EraseOp(*op);
  return changed;
}

}  // namespace

bool FoldConstants(ir::Module& module) {
  bool changed = false;
  for (auto& function : module.functions) changed |= FoldFunction(*function);
  return changed;
}

}  // namespace delta::opt
