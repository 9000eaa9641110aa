// Forward-mode AD: the primal ops are cloned in order and each is followed by
// its tangent rule, so the derivative keeps the primal's structure. This
// file has the emitter's core and the tangents of single ops (rules,
// reductions); forward_regions.cpp has regions and calls.
#include "compiler/transforms/ad/forward.h"

#include <llvm/ADT/STLExtras.h>

#include <string>
#include <vector>

#include "compiler/transforms/ad/ad_error.h"
#include "compiler/transforms/ad/forward_emitter.h"
#include "compiler/transforms/ad/partials.h"

namespace delta::ad {

using forward::Emitter;
using forward::HasFloatElem;
using ir::Block;
using ir::Function;
using ir::OpKind;
using ir::Type;
using ir::Value;

JvpRule JvpRuleOf(OpKind kind) {
  // A reduction's tangent depends on its kind: Emitter::ReduceTangent.
  if (kind == OpKind::Reduce) return JvpRule::Rule;
  switch (ir::InfoOf(kind).derivative) {
    case ir::OpDerivative::Partials:
      return JvpRule::Rule;
    case ir::OpDerivative::None:
      return JvpRule::NoTangent;
    case ir::OpDerivative::Linear:
      return JvpRule::Linear;
    case ir::OpDerivative::Structural:
      return JvpRule::Structural;
  }
  return JvpRule::Structural;
}

namespace {

// Whether parameter i of the primal of `jvp` has a tangent parameter: a
// float one that the derivative's `wrt` (empty: all) includes. The others
// have no tangent at all, not a zero one, so nothing multiplies by their
// zeros (which would turn an infinite or undefined partial into NaN).
bool TakesTangent(const Function& jvp, const Function& primal, size_t i) {
  if (!HasFloatElem(primal.params[i])) return false;
  const std::vector<bool>* wrt =
      jvp.derivative ? &jvp.derivative->wrt : nullptr;
  return !wrt || wrt->empty() || (i < wrt->size() && (*wrt)[i]);
}

}  // namespace

namespace forward {

llvm::Error InternalError(const std::string& message, ir::Loc loc) {
  return llvm::make_error<AdError>(AdError::Kind::Internal, std::move(loc),
                                   "internal error: forward mode: " + message);
}

void Emitter::SetTangent(const Value* primal, Value* tangent) {
  if (!tangent || !HasFloatElem(primal)) {
    tangents_.erase(primal);
    return;
  }
  // A conversion's tangent converts too.
  ElemKind elem = Primal(primal)->type.elem;
  if (tangent->type.elem != elem) tangent = builder_.Convert(tangent, elem);
  tangent = Fit(tangent, Primal(primal)->type);
  if (tangent->name.empty() && !primal->name.empty())
    tangent->name = "d" + primal->name;
  tangents_[primal] = tangent;
}

Value* Emitter::Zero(const Type& type) {
  return Fit(builder_.FloatConst(type.elem, 0), type);
}

Value* Emitter::TangentOrZero(const Value* primal) {
  const Type& type = Primal(primal)->type;
  Value* tangent = Tangent(primal);
  return tangent ? Fit(tangent, type) : Zero(type);
}

llvm::Error Emitter::Run() {
  if (jvp_.size_params.size() != primal_.size_params.size() ||
      jvp_.dims.size() < jvp_.size_params.size())
    return InternalError("@" + jvp_.name + " does not have the size " +
                         "parameters of @" + primal_.name);
  if (!jvp_.body->ops.empty())
    return InternalError("@" + jvp_.name + " already has a body");
  for (size_t k = 0; k < primal_.dims.size(); ++k) {
    const ir::Dim* dim = primal_.dims[k];
    if (k < primal_.size_params.size()) {
      map_.dims[dim] = jvp_.dims[k];
      map_.values[primal_.size_params[k]] = jvp_.size_params[k];
      continue;
    }
    ir::Dim* copy = jvp_.CopyDim(*dim, dim->name);
    map_.dims[dim] = copy;
    local_dims_[dim] = copy;
  }
  size_t tangent_params = 0;
  for (size_t i = 0; i < primal_.params.size(); ++i)
    tangent_params += TakesTangent(jvp_, primal_, i);
  if (jvp_.params.size() != primal_.params.size() + tangent_params)
    return InternalError("@" + jvp_.name + " does not take the parameters " +
                         "and tangents of @" + primal_.name);
  size_t next_tangent = primal_.params.size();
  for (size_t i = 0; i < primal_.params.size(); ++i) {
    map_.values[primal_.params[i]] = jvp_.params[i];
    if (TakesTangent(jvp_, primal_, i))
      tangents_[primal_.params[i]] = jvp_.params[next_tangent++];
  }
  if (llvm::Error error = EmitBlock(*primal_.body)) return error;
  const Op* ret = primal_.body->terminator();
  if (!ret || ret->kind != OpKind::Return)
    return InternalError("@" + primal_.name + " has no return");
  builder_.SetLoc(ret->loc);
  std::vector<Value*> results;
  for (const Value* value : ret->operands) results.push_back(Primal(value));
  for (const Value* value : ret->operands)
    if (HasFloatElem(value)) results.push_back(TangentOrZero(value));
  builder_.Return(results);
  for (auto [dim, copy] : local_dims_)
    if (!copy->size && dim->size) copy->size = Primal(dim->size);
  return llvm::Error::success();
}

llvm::Error Emitter::EmitBlock(const Block& block) {
  for (const auto& op : block.ops) {
    if (op.get() == block.terminator()) break;
    if (llvm::Error error = EmitOp(*op)) return error;
  }
  return llvm::Error::success();
}

llvm::Error Emitter::EmitOp(const Op& op) {
  builder_.SetLoc(op.loc);
  switch (JvpRuleOf(op.kind)) {
    case JvpRule::NoTangent: {
      Op* copy = transforms::CloneOp(builder_, op, map_);
      if (op.kind == OpKind::DimDef)
        if (auto it = local_dims_.find(op.dims[0]); it != local_dims_.end())
          it->second->size = copy->operands[0];
      for (const Value* result : op.results) tangents_.erase(result);
      return llvm::Error::success();
    }
    case JvpRule::Linear: {
      Op* copy = transforms::CloneOp(builder_, op, map_);
      Value* tangent = nullptr;
      if (Value* dx = Tangent(op.operands[0])) {
        std::vector<Value*> operands = copy->operands;
        operands[0] = dx;
        Op* linear = builder_.Create(op.kind, std::move(operands),
                                     {copy->result()->type});
        linear->dims = copy->dims;
        tangent = linear->result();
      }
      SetTangent(op.results[0], tangent);
      return llvm::Error::success();
    }
    case JvpRule::Rule:
      if (op.kind == OpKind::Reduce && !op.regions.empty())
        return EmitFusedReduce(op);
      transforms::CloneOp(builder_, op, map_);
      SetTangent(op.results[0], RuleTangent(op));
      return llvm::Error::success();
    case JvpRule::Structural:
      switch (op.kind) {
        case OpKind::Map:
          return EmitMap(op);
        case OpKind::Loop:
        case OpKind::While:
          return EmitLoop(op);
        case OpKind::If:
          return EmitIf(op);
        case OpKind::Call:
          return EmitCall(op);
        case OpKind::ReduceCustom:
          return EmitReduceCustom(op);
        default:
          return InternalError("a terminator in the middle of a block", op.loc);
      }
  }
  return InternalError("unknown rule", op.loc);
}

// dy = sum_i dx_i * dy/dx_i, with the partials of ad/partials.cpp.
Value* Emitter::RuleTangent(const Op& op) {
  if (op.kind == OpKind::Reduce)
    return ReduceTangent(op, Primal(op.operands[0]), Tangent(op.operands[0]));
  if (!HasFloatElem(op.results[0])) return nullptr;
  std::vector<Value*> x;
  std::vector<Value*> dx;
  for (const Value* operand : op.operands) {
    x.push_back(Primal(operand));
    dx.push_back(Tangent(operand));
  }
  if (llvm::all_of(dx, [](Value* d) { return d == nullptr; })) return nullptr;
  std::vector<Value*> terms =
      ApplyPartials(builder_, op.kind, x, Primal(op.results[0]), dx);
  Value* sum = nullptr;
  for (Value* term : terms)
    if (term) sum = AddTerm(sum, term, dx);
  return sum;
}

// sum + term, in the forms the rules had when each mode had its own: a
// negated term is subtracted (two quotients by one divisor become one), and
// two one-sided selects on one condition (max, min, select) are one select.
// Only a term that ApplyPartials made (none of the tangents `dx`) is taken
// apart and erased.
Value* Emitter::AddTerm(Value* sum, Value* term,
                        const std::vector<Value*>& dx) {
  if (!sum) return term;
  Op* made = llvm::is_contained(dx, term) ? nullptr : term->def;
  Op* first = llvm::is_contained(dx, sum) ? nullptr : sum->def;
  if (made && made->kind == OpKind::Neg) {
    Value* negated = made->operands[0];
    Op* quotient = negated->def;
    transforms::EraseOp(*made);
    // da / b - (db * y) / b is (da - db * y) / b: one division (a / b).
    if (first && quotient && first->kind == OpKind::Div &&
        quotient->kind == OpKind::Div &&
        first->operands[1] == quotient->operands[1]) {
      Value* merged =
          Binary(OpKind::Div,
                 Binary(OpKind::Sub, first->operands[0], quotient->operands[0]),
                 first->operands[1]);
      transforms::EraseOp(*quotient);
      transforms::EraseOp(*first);
      return merged;
    }
    return Binary(OpKind::Sub, sum, negated);
  }
  auto is_zero = [](const Value* value) {
    return value->def && value->def->kind == OpKind::Const &&
           value->def->float_value == 0;
  };
  if (made && first && made->kind == OpKind::Select &&
      first->kind == OpKind::Select &&
      made->operands[0] == first->operands[0] && is_zero(first->operands[2]) &&
      is_zero(made->operands[1])) {
    Value* merged = builder_.Select(first->operands[0], first->operands[1],
                                    made->operands[2]);
    transforms::EraseOp(*made);
    transforms::EraseOp(*first);
    return merged;
  }
  return Binary(OpKind::Add, sum, term);
}

Value* Emitter::ReduceTangent(const Op& op, Value* x, Value* dx) {
  if (!dx) return nullptr;
  ir::DimList reduced;
  for (const ir::Dim* dim : op.dims) reduced.Insert(map_.Lookup(dim));
  switch (op.reduce) {
    // Original: y = sum [d] (x)      Tangent: dy = sum [d] (dx)
    case ReduceKind::Sum:
      return builder_.Reduce(ReduceKind::Sum, dx, reduced);
    // Original: y = max [d] (x)      Tangent: dy = dx at argmax [d] (x)
    // Original: y = min [d] (x)      Tangent: dy = dx at argmin [d] (x)
    // (the lowest index on ties)
    case ReduceKind::Max:
    case ReduceKind::Min:
      return AtExtremum(op.reduce, x, dx, reduced);
    // Original: y = prod [d] (x)
    // Tangent: dy = sum [d] (dx_i * prod_{j != i} x_j), exact with zeros
    case ReduceKind::Prod:
      return ProdTangent(x, dx, reduced);
    // Original: y = argmax [d] (x), argmin   Tangent: none (an index)
    case ReduceKind::Argmax:
    case ReduceKind::Argmin:
      return nullptr;
  }
  return nullptr;
}

// argmax reduces one dim, so several are taken from the last (fastest
// varying) to the first: the position found is then the lowest row-major
// one among the ties, as for a single dim.
Value* Emitter::AtExtremum(ReduceKind kind, Value* x, Value* dx,
                           const ir::DimList& reduced) {
  ReduceKind arg =
      kind == ReduceKind::Max ? ReduceKind::Argmax : ReduceKind::Argmin;
  for (size_t i = reduced.size(); i-- > 0;) {
    Value* position = builder_.Reduce(arg, x, {reduced[i]});
    dx = builder_.Gather(dx, {position});
    if (i > 0) x = builder_.Gather(x, {position});
  }
  return dx;
}

// prod_{j != i} x_j without dividing by zero: with no zero it is
// prod / x_i; with one zero it is the product of the others at the zero and
// 0 elsewhere; with more zeros it is 0.
Value* Emitter::ProdTangent(Value* x, Value* dx, const ir::DimList& reduced) {
  ElemKind elem = x->type.elem;
  Value* zero = builder_.FloatConst(elem, 0);
  Value* is_zero = Binary(OpKind::Eq, x, zero);
  Value* zero_count = builder_.Reduce(
      ReduceKind::Sum, builder_.Convert(is_zero, ElemKind::I64), reduced);
  Value* nonzero = builder_.Select(is_zero, builder_.FloatConst(elem, 1), x);
  Value* nonzero_product = builder_.Reduce(ReduceKind::Prod, nonzero, reduced);
  Value* no_zero =
      Binary(OpKind::Eq, zero_count, builder_.IntConst(ElemKind::I64, 0));
  Value* at_only_zero = Binary(
      OpKind::And,
      Binary(OpKind::Eq, zero_count, builder_.IntConst(ElemKind::I64, 1)),
      is_zero);
  Value* others =
      builder_.Select(no_zero, Binary(OpKind::Div, nonzero_product, nonzero),
                      builder_.Select(at_only_zero, nonzero_product, zero));
  return builder_.Reduce(ReduceKind::Sum, Binary(OpKind::Mul, dx, others),
                         reduced);
}

}  // namespace forward

void SetUpJvpSignature(const Function& primal, Function& jvp) {
  transforms::CloneMap map;
  for (size_t k = 0; k < primal.size_params.size(); ++k) {
    const ir::Dim* dim = primal.dims[k];
    Value* size =
        jvp.NewValue(primal.size_params[k]->type, primal.size_params[k]->name);
    map.dims[dim] = jvp.NewDim(dim->name, dim->constant, size);
    jvp.size_params.push_back(size);
  }
  auto add_param = [&](const Type& type, std::string name) {
    jvp.AddParam(map.Lookup(type), std::move(name));
  };
  auto name_of = [&](size_t i) {
    return i < primal.param_names.size() ? primal.param_names[i]
                                         : primal.params[i]->name;
  };
  for (size_t i = 0; i < primal.params.size(); ++i)
    add_param(primal.params[i]->type, name_of(i));
  for (size_t i = 0; i < primal.params.size(); ++i)
    if (TakesTangent(jvp, primal, i))
      add_param(primal.params[i]->type, "d" + name_of(i));
  for (const Type& type : primal.result_types)
    jvp.result_types.push_back(map.Lookup(type));
  for (const Type& type : primal.result_types)
    if (ir::IsFloat(type.elem)) jvp.result_types.push_back(map.Lookup(type));
}

llvm::Error BuildJvp(const Function& primal, Function& jvp) {
  return Emitter(primal, jvp).Run();
}

}  // namespace delta::ad
