// Folds constants with the interpreter's element rules (ir/scalar_eval.h),
// for the ops that ops.def marks kExact: a folded constant is bit for bit
// what the interpreter and the generated code give (docs/internals/passes.md).
#include "compiler/transforms/opt/fold_constants.h"

#include <cmath>
#include <cstdint>
#include <optional>

#include "compiler/ir/scalar_eval.h"
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

// A constant of a float kind; its integer field is the value converted as
// i64 (what a Const op keeps beside the float).
Constant Real(ElemKind elem, double value) {
  return Constant{elem, value, ir::SaturateTo(ElemKind::I64, value)};
}

Constant Integer(ElemKind elem, int64_t value) {
  return Constant{elem, static_cast<double>(value), value};
}

// The value of an elementwise op on constants by ir/scalar_eval.h, whose
// rules the interpreter runs too; `to` is the result's kind.
std::optional<Constant> FoldUnary(OpKind kind, const Constant& x, ElemKind to) {
  if (kind == OpKind::Convert) {
    // A conversion to an index checks its range at run time.
    if (to == ElemKind::Index) return std::nullopt;
    double real = 0;
    int64_t integer = 0;
    ir::ConvertElement(x.elem, to, x.real, x.integer, &real, &integer);
    return ir::IsFloat(to) ? Real(to, real) : Integer(to, integer);
  }
  if (x.elem == ElemKind::F32)
    return Real(to, ir::FloatUnary(kind, static_cast<float>(x.real)));
  if (x.elem == ElemKind::F64) return Real(to, ir::FloatUnary(kind, x.real));
  return Integer(to, ir::IntUnary(kind, to, x.integer));
}

template <typename T>
Constant FoldFloat(OpKind kind, T a, T b, ElemKind to) {
  if (to == ElemKind::Bool) return Integer(to, ir::Compare(kind, a, b));
  return Real(to, ir::FloatBinary(kind, a, b));
}

std::optional<Constant> FoldBinary(OpKind kind, const Constant& a,
                                   const Constant& b, ElemKind to) {
  if (a.elem == ElemKind::F32)
    return FoldFloat(kind, static_cast<float>(a.real),
                     static_cast<float>(b.real), to);
  if (a.elem == ElemKind::F64) return FoldFloat(kind, a.real, b.real, to);
  if (to == ElemKind::Bool)
    return Integer(to, ir::Compare(kind, a.integer, b.integer));
  // A division by zero stays: it fails at run time.
  std::optional<int64_t> value =
      ir::IntBinary(kind, a.elem, a.integer, b.integer);
  if (!value) return std::nullopt;
  return Integer(to, *value);
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
  // Only the ops whose every target computes what scalar_eval.h does.
  if (!ir::HasFlag(op.kind, ir::kExact)) return std::nullopt;
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
    return FoldBinary(op.kind, *a, *b, to);
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
  return transforms::ForEachFunction(module, FoldFunction);
}

}  // namespace delta::opt
