// Scatters at a shifted index written as gathers (gather_shifted_scatters.h).
#include "compiler/transforms/opt/gather_shifted_scatters.h"

#include <optional>
#include <vector>

#include "compiler/transforms/rewrite.h"

namespace delta::opt {
namespace {

using ir::ElemKind;
using ir::Op;
using ir::OpKind;
using ir::Value;

const Op* DefOf(const Value* value, OpKind kind) {
  return value->def && value->def->kind == kind ? value->def : nullptr;
}

std::optional<int64_t> IntConstant(const Value* value) {
  const Op* def = DefOf(value, OpKind::Const);
  if (!def || !value->type.IsScalar() || !ir::IsInteger(value->type.elem))
    return std::nullopt;
  return def->int_value;
}

bool IsFloatZero(const Value* value) {
  if (const Op* broadcast = DefOf(value, OpKind::Broadcast))
    value = broadcast->operands[0];
  const Op* def = DefOf(value, OpKind::Const);
  return def && value->type.IsScalar() && ir::IsFloat(value->type.elem) &&
         def->float_value == 0;
}

// c if `k` is the position along `dim` plus the constant c, as i64.
std::optional<int64_t> ShiftOf(const Value* k, const ir::Dim* dim) {
  auto is_position = [&](const Value* v) {
    const Op* convert = DefOf(v, OpKind::Convert);
    if (!convert || v->type.elem != ElemKind::I64) return false;
    const Op* iota = DefOf(convert->operands[0], OpKind::Iota);
    return iota && iota->dims[0] == dim;
  };
  if (is_position(k)) return 0;
  const Op* def = k->def;
  if (!def || (def->kind != OpKind::Add && def->kind != OpKind::Sub))
    return std::nullopt;
  const Value* a = def->operands[0];
  const Value* b = def->operands[1];
  if (def->kind == OpKind::Add && IntConstant(a) && is_position(b))
    std::swap(a, b);
  std::optional<int64_t> c = IntConstant(b);
  if (!c || !is_position(a) || *c == INT64_MIN) return std::nullopt;
  return def->kind == OpKind::Add ? *c : -*c;
}

// What a shifted scatter reads: v[i] is `keep[i] ? w[i] : 0` (keep null:
// always w[i]) and lands at i + shift wherever it may be nonzero.
struct ShiftedScatter {
  Value* w = nullptr;
  Value* keep = nullptr;
  int64_t shift = 0;
};

std::optional<ShiftedScatter> MatchShiftedScatter(const Op& op) {
  if (op.kind != OpKind::ScatterAdd || op.operands.size() != 2)
    return std::nullopt;
  Value* values = op.operands[0];
  const Op* to_index = DefOf(op.operands[1], OpKind::ToIndex);
  const ir::Type& type = values->type;
  if (!to_index || !ir::IsFloat(type.elem) || type.dims.size() != 1)
    return std::nullopt;
  // Into the dim it reads from, so that the gather's clamped index is in
  // range whenever there is a point to read.
  const ir::Dim* dim = type.dims[0];
  if (to_index->dims[0] != dim || op.results[0]->type.dims != type.dims)
    return std::nullopt;
  Value* k = to_index->operands[0];
  ShiftedScatter match{values};
  if (std::optional<int64_t> shift = ShiftOf(k, dim)) {
    match.shift = *shift;
    return match;
  }
  // k = select(keep, i + c, other), with v zero where keep is false.
  const Op* pick = DefOf(k, OpKind::Select);
  const Op* masked = DefOf(values, OpKind::Select);
  if (!pick || !masked) return std::nullopt;
  std::optional<int64_t> shift = ShiftOf(pick->operands[1], dim);
  if (!shift) return std::nullopt;
  Value* keep = pick->operands[0];
  const Op* negated = DefOf(keep, OpKind::Not);
  if (masked->operands[0] == keep && IsFloatZero(masked->operands[2]))
    match.w = masked->operands[1];
  else if (negated && masked->operands[0] == negated->operands[0] &&
           IsFloatZero(masked->operands[1]))
    match.w = masked->operands[2];
  else
    return std::nullopt;
  match.keep = keep;
  match.shift = *shift;
  return match;
}

// r[j] = keep[j - c] ? w[j - c] : 0 where 0 <= j - c < size(dim), else 0.
Value* EmitGather(ir::Builder& b, const ShiftedScatter& match,
                  const ir::Dim* dim, ElemKind elem) {
  Value* zero = b.IntConst(ElemKind::I64, 0);
  Value* source = b.Binary(OpKind::Sub, b.Convert(b.Iota(dim), ElemKind::I64),
                           b.IntConst(ElemKind::I64, match.shift));
  Value* in_range = b.Binary(OpKind::And, b.Binary(OpKind::Ge, source, zero),
                             b.Binary(OpKind::Lt, source, b.Size(dim)));
  Value* at = b.ToIndex(dim, b.Select(in_range, source, zero));
  Value* keep = in_range;
  if (match.keep)
    keep = b.Binary(OpKind::And, keep, b.Gather(match.keep, {at}));
  return b.Select(keep, b.Gather(match.w, {at}), b.FloatConst(elem, 0));
}

bool GatherFunction(ir::Function& function) {
  std::vector<Op*> scatters;
  transforms::WalkOps(*function.body, [&](Op& op) {
    if (MatchShiftedScatter(op)) scatters.push_back(&op);
  });
  return transforms::ReplaceEach(
      function, scatters, [](ir::Builder& builder, Op& op) {
        const ir::Type& type = op.results[0]->type;
        return EmitGather(builder, *MatchShiftedScatter(op), type.dims[0],
                          type.elem);
      });
}

}  // namespace

bool GatherShiftedScatters(ir::Module& module) {
  return transforms::ForEachFunction(module, GatherFunction);
}

}  // namespace delta::opt
