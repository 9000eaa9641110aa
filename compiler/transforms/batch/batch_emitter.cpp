// The batching rules of the ops (batch_emitter.h).
#include "compiler/transforms/batch/batch_emitter.h"

namespace delta::batch {

using ir::OpKind;
using ir::Type;
using ir::Value;

namespace {

bool IsIotaOf(const Value* index) {
  const ir::Op* def = index->def;
  return def && def->kind == OpKind::Iota &&
         def->dims[0] == index->type.index_dim;
}

}  // namespace

ir::DimList BatchEmitter::BatchDims(const Value* old) const {
  ir::DimList dims;
  for (const ir::Dim* lane : batched_.Lanes(old))
    dims.Insert(lane_dims_.lookup(lane));
  return dims;
}

Type BatchEmitter::TypeOf(const Value* old) const {
  return old->type.WithDims(old->type.dims.Union(BatchDims(old)));
}

Value* BatchEmitter::As(Value* value, const Type& type) {
  return builder_.Broadcast(value, type.dims.Minus(value->type.dims));
}

void BatchEmitter::Block(const ir::Block& block) {
  for (const auto& op : block.ops)
    if (op->kind != OpKind::Yield) Op(*op);
}

std::vector<Value*> BatchEmitter::Yielded(const ir::Block& block) const {
  std::vector<Value*> values;
  for (Value* value : block.terminator()->operands)
    values.push_back(Get(value));
  return values;
}

void BatchEmitter::Op(const ir::Op& op) {
  // What every lane computes alike is computed once.
  if (!batched_.IsBatched(op)) {
    transforms::CloneOp(builder_, op, map_);
    return;
  }
  builder_.SetLoc(op.loc);
  switch (op.kind) {
    case OpKind::If:
      return If(op);
    case OpKind::Loop:
      return Loop(op);
    case OpKind::While:
      return While(op);
    default:
      return Generic(op);
  }
}

// Ops combine dims by name, so an op applied to operands with more dims is
// the batched op: only the result types change.
void BatchEmitter::Generic(const ir::Op& op) {
  std::vector<Value*> operands;
  for (Value* operand : op.operands) operands.push_back(Get(operand));
  std::vector<Type> types;
  for (const Value* result : op.results) types.push_back(TypeOf(result));
  // See Note [Guarded lanes].
  if ((op.kind == OpKind::Div || op.kind == OpKind::Rem) &&
      ir::IsInteger(types[0].elem))
    operands[1] = Guard(operands[1], builder_.IntConst(types[0].elem, 1));
  if (op.kind == OpKind::ToIndex)
    operands[0] =
        Guard(operands[0], builder_.IntConst(operands[0]->type.elem, 0));
  if (op.kind == OpKind::ScatterAdd) {
    // Each lane adds its own values into its own part of the target.
    operands[0] =
        As(operands[0], operands[0]->type.WithDims(BatchDims(op.results[0])));
  }
  if (op.kind == OpKind::Gather && operands[0]->type == types[0]) {
    // A lane reading its own element: `xs[i]` in `for i in d`.
    bool all_iota = true;
    for (size_t i = 1; i < operands.size(); ++i)
      all_iota &= IsIotaOf(operands[i]);
    if (all_iota) {
      Bind(op.results[0], operands[0]);
      return;
    }
  }
  ir::Op* copy = builder_.Create(op.kind, std::move(operands), types);
  copy->dims = op.dims;
  copy->float_value = op.float_value;
  copy->int_value = op.int_value;
  copy->reduce = op.reduce;
  copy->callee = op.callee;
  copy->checkpoint = op.checkpoint;
  copy->print_items = op.print_items;
  for (size_t i = 0; i < op.results.size(); ++i) {
    copy->results[i]->name = op.results[i]->name;
    Bind(op.results[i], copy->results[i]);
  }
  // reduce.custom's combiner reads no batched value (BatchedValues): the
  // batched operands only add dims that the reduction iterates over.
  for (const auto& region : op.regions) {
    std::vector<Type> arg_types;
    for (const Value* arg : region->args) arg_types.push_back(arg->type);
    ir::Block* block = builder_.AddRegion(copy, arg_types);
    for (size_t i = 0; i < region->args.size(); ++i)
      Bind(region->args[i], block->args[i]);
    ir::InsertionGuard guard(builder_);
    builder_.SetInsertionBlock(block);
    for (const auto& inner : region->ops)
      transforms::CloneOp(builder_, *inner, map_);
  }
}

// Note [Both branches]
// An `if` whose condition differs between lanes runs both branches on every
// lane and picks each result with `select`. The ops that could fail in a
// lane that did not take their branch are guarded (Note [Guarded lanes]);
// a while loop in the branch runs for that lane too (docs/guide/batching.md).
void BatchEmitter::If(const ir::Op& op) {
  std::vector<Type> types;
  for (const Value* result : op.results) types.push_back(TypeOf(result));
  Value* cond = Get(op.operands[0]);
  if (batched_.IsBatched(op.operands[0])) {
    Value* outer = active_;
    active_ = Narrow(cond);
    Block(*op.regions[0]);
    std::vector<Value*> then_values = Yielded(*op.regions[0]);
    active_ = outer;
    active_ = Narrow(builder_.Unary(OpKind::Not, cond));
    Block(*op.regions[1]);
    std::vector<Value*> else_values = Yielded(*op.regions[1]);
    active_ = outer;
    builder_.SetLoc(op.loc);
    for (size_t k = 0; k < types.size(); ++k)
      Bind(op.results[k], builder_.Select(cond, As(then_values[k], types[k]),
                                          As(else_values[k], types[k])));
    return;
  }
  ir::Op* copy = builder_.Create(OpKind::If, {cond}, types);
  for (size_t k = 0; k < types.size(); ++k) {
    copy->results[k]->name = op.results[k]->name;
    Bind(op.results[k], copy->results[k]);
  }
  for (const auto& region : op.regions) {
    ir::Block* block = builder_.AddRegion(copy, {});
    ir::InsertionGuard guard(builder_);
    builder_.SetInsertionBlock(block);
    Block(*region);
    std::vector<Value*> values = Yielded(*region);
    for (size_t k = 0; k < types.size(); ++k)
      values[k] = As(values[k], types[k]);
    builder_.Yield(values);
  }
}

// Note [Masked loops]
// A loop whose bounds differ between lanes runs from the smallest lower to
// the largest upper bound; a lane keeps its state (`select`) in the
// iterations outside its own range. A while whose condition differs between
// lanes carries a mask of the lanes still running as extra state, runs
// while any lane runs, and keeps the state of the lanes that stopped. Their
// body still runs on that state, guarded as the branch that a lane did not
// take (Note [Guarded lanes]).
void BatchEmitter::Loop(const ir::Op& op) {
  const ir::Block& body = *op.regions[0];
  size_t state = op.operands.size() - 2;
  Value* lane_lo = Get(op.operands[0]);
  Value* lane_hi = Get(op.operands[1]);
  bool masked =
      batched_.IsBatched(op.operands[0]) || batched_.IsBatched(op.operands[1]);
  Value* lo = lane_lo;
  Value* hi = lane_hi;
  if (!lo->type.IsScalar())
    lo = builder_.Reduce(ir::ReduceKind::Min, lo, lo->type.dims);
  if (!hi->type.IsScalar())
    hi = builder_.Reduce(ir::ReduceKind::Max, hi, hi->type.dims);
  std::vector<Value*> operands = {lo, hi};
  std::vector<Type> types;
  for (size_t i = 0; i < state; ++i) {
    types.push_back(TypeOf(body.args[i + 1]));
    operands.push_back(As(Get(op.operands[i + 2]), types.back()));
  }
  for (size_t i = state; i < op.results.size(); ++i)
    types.push_back(TypeOf(op.results[i]));
  ir::Op* copy = builder_.Create(OpKind::Loop, std::move(operands), types);
  copy->dims = op.dims;
  for (size_t i = 0; i < op.results.size(); ++i) {
    copy->results[i]->name = op.results[i]->name;
    Bind(op.results[i], copy->results[i]);
  }
  std::vector<Type> arg_types = {body.args[0]->type};
  arg_types.insert(arg_types.end(), types.begin(), types.begin() + state);
  ir::Block* block = builder_.AddRegion(copy, arg_types);
  for (size_t i = 0; i < block->args.size(); ++i) {
    block->args[i]->name = body.args[i]->name;
    Bind(body.args[i], block->args[i]);
  }
  ir::InsertionGuard guard(builder_);
  builder_.SetInsertionBlock(block);
  Value* active = nullptr;
  Value* outer = active_;
  if (masked) {
    Value* k = block->args[0];
    active =
        builder_.Binary(OpKind::And, builder_.Binary(OpKind::Ge, k, lane_lo),
                        builder_.Binary(OpKind::Lt, k, lane_hi));
    active_ = Narrow(active);
  }
  Block(body);
  active_ = outer;
  std::vector<Value*> next = Yielded(body);
  builder_.SetLoc(op.loc);
  for (size_t i = 0; i < state; ++i) {
    next[i] = As(next[i], types[i]);
    if (active) next[i] = builder_.Select(active, next[i], block->args[i + 1]);
  }
  for (size_t i = state; i < next.size(); ++i)
    next[i] = As(next[i], types[i].WithDims(types[i].dims.Minus({op.dims[0]})));
  builder_.Yield(next);
}

Value* BatchEmitter::Condition(const ir::Block& cond,
                               const std::vector<Value*>& state) {
  for (size_t i = 0; i < cond.args.size(); ++i) Bind(cond.args[i], state[i]);
  Block(cond);
  return Yielded(cond)[0];
}

Value* BatchEmitter::Any(Value* mask) {
  Value* count = builder_.Convert(mask, ir::ElemKind::I32);
  count = builder_.Reduce(ir::ReduceKind::Max, count, count->type.dims);
  return builder_.Binary(OpKind::Gt, count,
                         builder_.IntConst(ir::ElemKind::I32, 0));
}

Value* BatchEmitter::Narrow(Value* mask) {
  return active_ ? builder_.Binary(OpKind::And, active_, mask) : mask;
}

// Note [Guarded lanes]
// Under a batched `if`, and in the iterations a lane of a masked loop sits
// out, ops run on lanes that the program would not have run them on. Where
// that could stop the program with a run-time error that the unbatched
// program does not have, the operand is replaced in those lanes by a safe
// one: an integer divisor by 1, the position of `to_index` by 0. The
// lanes' results are discarded by the `select` that follows. Other errors
// (an index out of range in a gather, a size mismatch) are not guarded,
// nor are ops that are the same in every lane.
Value* BatchEmitter::Guard(Value* value, Value* safe) {
  if (!active_) return value;
  Value* active = active_;
  // A lane of `value` that stands for several lanes of the mask runs if
  // any of them does.
  ir::DimList extra = active->type.dims.Minus(value->type.dims);
  if (!extra.empty()) {
    Value* count = builder_.Convert(active, ir::ElemKind::I32);
    count = builder_.Reduce(ir::ReduceKind::Max, count, extra);
    active = builder_.Binary(OpKind::Gt, count,
                             builder_.IntConst(ir::ElemKind::I32, 0));
  }
  return builder_.Select(active, value, safe);
}

void BatchEmitter::While(const ir::Op& op) {
  const ir::Block& cond = *op.regions[0];
  const ir::Block& body = *op.regions[1];
  std::vector<Type> types;
  std::vector<Value*> init;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    types.push_back(TypeOf(body.args[i]));
    init.push_back(As(Get(op.operands[i]), types.back()));
  }
  bool masked = batched_.IsBatched(cond.terminator()->operands[0]);
  // See Note [Masked loops].
  Type mask_type{ir::ElemKind::Bool, nullptr,
                 BatchDims(cond.terminator()->operands[0])};
  std::vector<Type> state_types = types;
  if (masked) {
    init.push_back(As(Condition(cond, init), mask_type));
    state_types.push_back(mask_type);
  }
  builder_.SetLoc(op.loc);
  ir::Op* copy = builder_.Create(OpKind::While, init, state_types);
  for (size_t i = 0; i < op.results.size(); ++i) {
    copy->results[i]->name = op.results[i]->name;
    Bind(op.results[i], copy->results[i]);
  }
  ir::InsertionGuard guard(builder_);
  ir::Block* cond_block = builder_.AddRegion(copy, state_types);
  builder_.SetInsertionBlock(cond_block);
  if (masked) {
    builder_.Yield({Any(cond_block->args.back())});
  } else {
    std::vector<Value*> state(cond_block->args.begin(), cond_block->args.end());
    builder_.Yield({Condition(cond, state)});
  }
  ir::Block* body_block = builder_.AddRegion(copy, state_types);
  builder_.SetInsertionBlock(body_block);
  for (size_t i = 0; i < body.args.size(); ++i) {
    body_block->args[i]->name = body.args[i]->name;
    Bind(body.args[i], body_block->args[i]);
  }
  Value* outer = active_;
  if (masked) active_ = Narrow(body_block->args.back());
  Block(body);
  active_ = outer;
  std::vector<Value*> next = Yielded(body);
  builder_.SetLoc(op.loc);
  for (size_t i = 0; i < next.size(); ++i) {
    next[i] = As(next[i], types[i]);
    if (masked)
      next[i] = builder_.Select(body_block->args.back(), next[i],
                                body_block->args[i]);
  }
  if (masked) next.push_back(As(Condition(cond, next), mask_type));
  builder_.Yield(next);
}

}  // namespace delta::batch
