// Forward mode of the ops whose tangents flow through regions and calls:
// fused reductions, maps, loops and whiles (Note [Tangent state]), ifs,
// calls (through the callee's derivative function) and custom reductions
// (Note [Tangent of a custom reduction]). See forward_emitter.h.
#include <llvm/ADT/DenseMap.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "compiler/transforms/ad/forward.h"
#include "compiler/transforms/ad/forward_emitter.h"

namespace delta::ad::forward {
namespace {

// Appends a result to `op`; regions decide late which tangents they yield.
Value* AppendResult(Function& function, Op* op, const Type& type) {
  Value* value = function.NewValue(type);
  value->def = op;
  value->index = static_cast<unsigned>(op->results.size());
  op->results.push_back(value);
  return value;
}

// The derivative function of `callee`, created and filled on first use.
llvm::Expected<Function*> JvpOf(Function& callee) {
  ir::Module& module = *callee.module;
  for (const auto& function : module.functions)
    if (function->derivative &&
        function->derivative->mode == ir::Derivative::Mode::Jvp &&
        function->derivative->primal == &callee)
      return function.get();
  Function* jvp = module.AddFunction(callee.name + ".jvp");
  jvp->derivative =
      ir::Derivative{ir::Derivative::Mode::Jvp, &callee, {}, false};
  SetUpJvpSignature(callee, *jvp);
  if (llvm::Error error = BuildJvp(callee, *jvp)) return std::move(error);
  return jvp;
}

// `value` at the point of the dims in `indices` that it has (an index of
// each, as a map's arguments are).
Value* ValueAt(ir::Builder& builder, Value* value,
               const std::vector<Value*>& indices) {
  std::vector<Value*> used;
  for (Value* index : indices)
    if (value->type.dims.Contains(index->type.index_dim)) used.push_back(index);
  return used.empty() ? value : builder.Gather(value, used);
}

}  // namespace

// A region op's new region with the argument types of `from`, whose
// arguments stand for those of `from` (without tangents).
Block* Emitter::AddRegionLike(Op* op, const Block& from) {
  std::vector<Type> arg_types;
  for (const Value* arg : from.args)
    arg_types.push_back(map_.Lookup(arg->type));
  Block* block = builder_.AddRegion(op, arg_types);
  for (size_t i = 0; i < from.args.size(); ++i) {
    block->args[i]->name = from.args[i]->name;
    map_.values[from.args[i]] = block->args[i];
    tangents_.erase(from.args[i]);
  }
  return block;
}

// A fused map-reduce: a sum keeps its fusion (a reduce whose region yields
// the tangent); the other kinds materialize the elements and their
// tangents with a map and apply the array rule.
llvm::Error Emitter::EmitFusedReduce(const Op& op) {
  Op* copy = transforms::CloneOp(builder_, op, map_);
  const Block& region = *op.region(0);
  Block* block = builder_.block();
  size_t mark = block->ops.size();
  bool sum = op.reduce == ReduceKind::Sum;
  Op* tangent_op = nullptr;
  Value* yielded_tangent = nullptr;
  if (sum) {
    tangent_op = builder_.Create(OpKind::Reduce, {}, {copy->result()->type});
    tangent_op->reduce = ReduceKind::Sum;
    tangent_op->dims = copy->dims;
  } else {
    ir::DimList all = copy->result()->type.dims.Union(ir::DimList(copy->dims));
    const Type& element = map_.Lookup(region.terminator()->operands[0]->type);
    tangent_op = builder_.Create(
        OpKind::Map, {}, {element.WithDims(all), element.WithDims(all)});
    tangent_op->dims.assign(all.begin(), all.end());
  }
  // Both take the indices in canonical order, which mapping the primal's
  // dims to the derivative's may change (as in CloneOp).
  Block* inner = AddRegionLike(tangent_op, region);
  std::sort(inner->args.begin(), inner->args.end(), [](Value* a, Value* b) {
    return a->type.index_dim->order < b->type.index_dim->order;
  });
  for (size_t i = 0; i < inner->args.size(); ++i)
    inner->args[i]->index = static_cast<unsigned>(i);
  {
    ir::InsertionGuard guard(builder_);
    builder_.SetInsertionBlock(inner);
    if (llvm::Error error = EmitBlock(region)) return error;
    const Value* value = region.terminator()->operands[0];
    yielded_tangent = Tangent(value);
    if (yielded_tangent) {
      Value* tangent = Fit(yielded_tangent, Primal(value)->type);
      if (sum)
        builder_.Yield({tangent});
      else
        builder_.Yield({Primal(value), tangent});
    }
  }
  if (!yielded_tangent) {
    block->ops.erase(block->ops.begin() + static_cast<long>(mark),
                     block->ops.end());
    tangents_.erase(op.results[0]);
    return llvm::Error::success();
  }
  SetTangent(op.results[0], sum ? tangent_op->result()
                                : ReduceTangent(op, tangent_op->result(0),
                                                tangent_op->result(1)));
  return llvm::Error::success();
}

llvm::Error Emitter::EmitMap(const Op& op) {
  std::vector<Type> types;
  for (const Value* result : op.results)
    types.push_back(map_.Lookup(result->type));
  Op* map = builder_.Create(OpKind::Map, {}, types);
  for (const ir::Dim* dim : op.dims) map->dims.push_back(map_.Lookup(dim));
  const Block& region = *op.region(0);
  Block* body = AddRegionLike(map, region);
  std::vector<size_t> with_tangent;
  {
    ir::InsertionGuard guard(builder_);
    builder_.SetInsertionBlock(body);
    if (llvm::Error error = EmitBlock(region)) return error;
    const Op* yield = region.terminator();
    std::vector<Value*> values;
    for (const Value* value : yield->operands) values.push_back(Primal(value));
    for (size_t i = 0; i < yield->operands.size(); ++i) {
      const Value* value = yield->operands[i];
      if (Value* tangent = Tangent(value)) {
        values.push_back(Fit(tangent, Primal(value)->type));
        with_tangent.push_back(i);
      }
    }
    builder_.Yield(values);
  }
  for (size_t i = 0; i < op.results.size(); ++i) {
    map->results[i]->name = op.results[i]->name;
    map_.values[op.results[i]] = map->results[i];
    tangents_.erase(op.results[i]);
  }
  for (size_t i : with_tangent)
    SetTangent(op.results[i], AppendResult(jvp_, map, types[i]));
  return llvm::Error::success();
}

// Note [Tangent state]: a float state value needs a tangent when its start
// has one or when the body gives it one, and the body's tangents depend on
// which state carries tangents. The loop is built carrying the tangents of
// the starts; if its body yields a tangent for state that carries none, it
// is built again carrying that one too (at most once per state value).
llvm::Error Emitter::EmitLoop(const Op& op) {
  size_t first_state = op.kind == OpKind::Loop ? 2 : 0;
  size_t state_count = op.operands.size() - first_state;
  std::vector<bool> carried(state_count);
  for (size_t i = 0; i < state_count; ++i)
    carried[i] = Tangent(op.operands[first_state + i]) != nullptr;
  Block* block = builder_.block();
  size_t mark = block->ops.size();
  while (true) {
    std::vector<bool> needed = carried;
    if (llvm::Error error = EmitLoopCarrying(op, carried, needed)) return error;
    if (needed == carried) return llvm::Error::success();
    block->ops.erase(block->ops.begin() + static_cast<long>(mark),
                     block->ops.end());
    carried = needed;
  }
}

// One build of a loop or while whose state i carries a tangent where
// `carried[i]`; sets `needed[i]` where the body yields a tangent for state
// that carries none. Layout: state, tangent state, then (loop over a dim)
// the stacked outputs and their tangents.
llvm::Error Emitter::EmitLoopCarrying(const Op& op,
                                      const std::vector<bool>& carried,
                                      std::vector<bool>& needed) {
  bool is_loop = op.kind == OpKind::Loop;
  size_t first_state = is_loop ? 2 : 0;
  size_t state_count = carried.size();
  const Block& body = *op.regions.back();
  std::vector<Value*> operands;
  for (const Value* operand : op.operands) operands.push_back(Primal(operand));
  std::vector<Type> state_types;
  for (size_t i = 0; i < state_count; ++i)
    state_types.push_back(operands[first_state + i]->type);
  std::vector<Type> tangent_types;
  for (size_t i = 0; i < state_count; ++i) {
    if (!carried[i]) continue;
    operands.push_back(TangentOrZero(op.operands[first_state + i]));
    tangent_types.push_back(state_types[i]);
  }
  std::vector<Type> types = state_types;
  types.insert(types.end(), tangent_types.begin(), tangent_types.end());
  for (size_t i = state_count; i < op.results.size(); ++i)
    types.push_back(map_.Lookup(op.results[i]->type));
  Op* loop = builder_.Create(op.kind, std::move(operands), types);
  for (const ir::Dim* dim : op.dims) loop->dims.push_back(map_.Lookup(dim));
  // The region arguments: (iterator,) state, tangent state.
  std::vector<Type> arg_types = state_types;
  arg_types.insert(arg_types.end(), tangent_types.begin(), tangent_types.end());
  if (is_loop)
    arg_types.insert(arg_types.begin(), map_.Lookup(body.args[0]->type));
  size_t first_state_arg = is_loop ? 1 : 0;
  auto bind_args = [&](const Block& from, Block* to, bool with_tangents) {
    for (size_t i = 0; i < from.args.size(); ++i) {
      to->args[i]->name = from.args[i]->name;
      map_.values[from.args[i]] = to->args[i];
      tangents_.erase(from.args[i]);
    }
    if (!with_tangents) return;
    size_t next_tangent = first_state_arg + state_count;
    for (size_t i = 0; i < state_count; ++i)
      if (carried[i])
        SetTangent(from.args[first_state_arg + i], to->args[next_tangent++]);
  };
  if (!is_loop) {
    // The condition reads the primal state only.
    const Block& condition = *op.region(0);
    Block* block = builder_.AddRegion(loop, arg_types);
    bind_args(condition, block, false);
    ir::InsertionGuard guard(builder_);
    builder_.SetInsertionBlock(block);
    for (const auto& inner : condition.ops)
      transforms::CloneOp(builder_, *inner, map_);
  }
  Block* region = builder_.AddRegion(loop, arg_types);
  bind_args(body, region, true);
  std::vector<size_t> outputs_with_tangent;
  {
    ir::InsertionGuard guard(builder_);
    builder_.SetInsertionBlock(region);
    if (llvm::Error error = EmitBlock(body)) return error;
    const Op* yield = body.terminator();
    std::vector<Value*> values;
    for (size_t i = 0; i < state_count; ++i)
      values.push_back(Primal(yield->operands[i]));
    for (size_t i = 0; i < state_count; ++i) {
      const Value* value = yield->operands[i];
      if (carried[i])
        values.push_back(TangentOrZero(value));
      else if (Tangent(value))
        needed[i] = true;
    }
    for (size_t i = state_count; i < yield->operands.size(); ++i)
      values.push_back(Primal(yield->operands[i]));
    for (size_t i = state_count; i < yield->operands.size(); ++i) {
      const Value* value = yield->operands[i];
      if (Value* tangent = Tangent(value)) {
        values.push_back(Fit(tangent, Primal(value)->type));
        outputs_with_tangent.push_back(i);
      }
    }
    builder_.Yield(values);
  }
  size_t tangent_count = tangent_types.size();
  for (size_t i = 0; i < op.results.size(); ++i) {
    Value* result = loop->results[i < state_count ? i : i + tangent_count];
    result->name = op.results[i]->name;
    map_.values[op.results[i]] = result;
    tangents_.erase(op.results[i]);
  }
  size_t next_tangent = state_count;
  for (size_t i = 0; i < state_count; ++i)
    if (carried[i]) SetTangent(op.results[i], loop->results[next_tangent++]);
  for (size_t i : outputs_with_tangent)
    SetTangent(op.results[i],
               AppendResult(jvp_, loop, types[i + tangent_count]));
  return llvm::Error::success();
}

llvm::Error Emitter::EmitIf(const Op& op) {
  std::vector<Type> types;
  for (const Value* result : op.results)
    types.push_back(map_.Lookup(result->type));
  Op* copy = builder_.Create(OpKind::If, {Primal(op.operands[0])}, types);
  // Both branches are built before either yields: a result gets a tangent
  // if either branch gives it one, and the other branch yields zeros.
  std::vector<std::vector<Value*>> branch_tangents;
  for (const auto& region : op.regions) {
    Block* block = AddRegionLike(copy, *region);
    ir::InsertionGuard guard(builder_);
    builder_.SetInsertionBlock(block);
    if (llvm::Error error = EmitBlock(*region)) return error;
    std::vector<Value*> tangents;
    for (const Value* value : region->terminator()->operands)
      tangents.push_back(Tangent(value));
    branch_tangents.push_back(std::move(tangents));
  }
  std::vector<size_t> with_tangent;
  for (size_t i = 0; i < op.results.size(); ++i)
    if (branch_tangents[0][i] || branch_tangents[1][i])
      with_tangent.push_back(i);
  for (size_t r = 0; r < op.regions.size(); ++r) {
    ir::InsertionGuard guard(builder_);
    builder_.SetInsertionBlock(copy->region(r));
    const Op* yield = op.region(r)->terminator();
    std::vector<Value*> values;
    for (const Value* value : yield->operands) values.push_back(Primal(value));
    for (size_t i : with_tangent) {
      Value* tangent = branch_tangents[r][i];
      values.push_back(tangent ? Fit(tangent, types[i]) : Zero(types[i]));
    }
    builder_.Yield(values);
  }
  for (size_t i = 0; i < op.results.size(); ++i) {
    copy->results[i]->name = op.results[i]->name;
    map_.values[op.results[i]] = copy->results[i];
    tangents_.erase(op.results[i]);
  }
  for (size_t i : with_tangent)
    SetTangent(op.results[i], AppendResult(jvp_, copy, types[i]));
  return llvm::Error::success();
}

llvm::Error Emitter::EmitCall(const Op& op) {
  bool any_tangent = false;
  for (const Value* operand : op.operands)
    any_tangent = any_tangent || Tangent(operand);
  if (!any_tangent) {
    transforms::CloneOp(builder_, op, map_);
    for (const Value* result : op.results) tangents_.erase(result);
    return llvm::Error::success();
  }
  llvm::Expected<Function*> jvp = JvpOf(*op.callee);
  if (!jvp) return jvp.takeError();
  std::vector<Value*> operands;
  for (const Value* operand : op.operands) operands.push_back(Primal(operand));
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (HasFloatElem(op.callee->params[i]))
      operands.push_back(TangentOrZero(op.operands[i]));
  std::vector<Type> types;
  for (const Value* result : op.results)
    types.push_back(map_.Lookup(result->type));
  std::vector<size_t> float_results;
  for (size_t i = 0; i < op.results.size(); ++i)
    if (HasFloatElem(op.results[i])) {
      float_results.push_back(i);
      types.push_back(types[i]);
    }
  Op* call = builder_.Create(OpKind::Call, std::move(operands), types);
  call->callee = *jvp;
  call->checkpoint = op.checkpoint;
  for (const ir::Dim* dim : op.dims) call->dims.push_back(map_.Lookup(dim));
  for (size_t i = 0; i < op.results.size(); ++i) {
    call->results[i]->name = op.results[i]->name;
    map_.values[op.results[i]] = call->results[i];
  }
  for (size_t k = 0; k < float_results.size(); ++k)
    SetTangent(op.results[float_results[k]],
               call->results[op.results.size() + k]);
  return llvm::Error::success();
}

// Note [Tangent of a custom reduction]
// reduce.custom has one result and a combiner of two values, so it cannot
// fold (value, tangent) pairs itself. Forward mode folds them with ops it
// already differentiates: per point of the result's other dims (a map), a
// loop over the reduced dim from init in index order, the primal's order,
// carrying (acc, dacc) through f and f's tangent rules. The primal value
// comes from the same loop, so it is exactly the one the op computes.
// Reverse mode needs prefix and suffix folds instead (Note [Adjoint of a
// custom reduction] in reverse.cpp).
llvm::Error Emitter::EmitReduceCustom(const Op& op) {
  const Value* init_operand = op.operands[0];
  const Value* x_operand = op.operands[1];
  if (!Tangent(init_operand) && !Tangent(x_operand)) {
    transforms::CloneOp(builder_, op, map_);
    tangents_.erase(op.results[0]);
    return llvm::Error::success();
  }
  const Block& combiner = *op.region(0);
  const ir::Dim* dim = map_.Lookup(op.dims[0]);
  const Type result_type = map_.Lookup(op.results[0]->type);
  const Type acc_type = map_.Lookup(combiner.args[0]->type);
  const Type elem_type = map_.Lookup(combiner.args[1]->type);
  const ir::DimList outer = result_type.dims.Minus(acc_type.dims);
  Value* init = Primal(init_operand);
  Value* dinit = TangentOrZero(init_operand);
  Value* x = Primal(x_operand);
  Value* dx = Tangent(x_operand);
  Op* map = nullptr;
  Op* loop = nullptr;
  {
    ir::InsertionGuard guard(builder_);
    std::vector<Value*> indices;
    if (!outer.empty()) {
      map = builder_.Create(OpKind::Map, {}, {result_type, result_type});
      map->dims.assign(outer.begin(), outer.end());
      std::vector<Type> index_types;
      for (const ir::Dim* outer_dim : outer)
        index_types.push_back(Type{ElemKind::Index, outer_dim, {}});
      Block* body = builder_.AddRegion(map, index_types);
      indices.assign(body->args.begin(), body->args.end());
      builder_.SetInsertionBlock(body);
    }
    Value* x_here = ValueAt(builder_, x, indices);
    Value* dx_here = dx ? ValueAt(builder_, dx, indices) : nullptr;
    loop = builder_.Create(
        OpKind::Loop,
        {builder_.IntConst(ElemKind::I64, 0), builder_.Size(dim),
         Fit(ValueAt(builder_, init, indices), acc_type),
         Fit(ValueAt(builder_, dinit, indices), acc_type)},
        {acc_type, acc_type});
    loop->dims = {dim};
    Block* step = builder_.AddRegion(
        loop, {Type{ElemKind::Index, dim, {}}, acc_type, acc_type});
    Block* map_body = builder_.block();
    builder_.SetInsertionBlock(step);
    auto element = [&](Value* all) {
      if (all->type.dims.Contains(dim))
        all = builder_.Gather(all, {step->args[0]});
      return Fit(all, elem_type);
    };
    map_.values[combiner.args[0]] = step->args[1];
    SetTangent(combiner.args[0], step->args[2]);
    map_.values[combiner.args[1]] = element(x_here);
    SetTangent(combiner.args[1], dx_here ? element(dx_here) : nullptr);
    if (llvm::Error error = EmitBlock(combiner)) return error;
    const Value* combined = combiner.terminator()->operands[0];
    builder_.Yield({Fit(Primal(combined), acc_type),
                    Fit(TangentOrZero(combined), acc_type)});
    if (map) {
      builder_.SetInsertionBlock(map_body);
      builder_.Yield({loop->results[0], loop->results[1]});
    }
  }
  Op* folded = map ? map : loop;
  folded->results[0]->name = op.results[0]->name;
  map_.values[op.results[0]] = folded->results[0];
  SetTangent(op.results[0], folded->results[1]);
  return llvm::Error::success();
}

}  // namespace delta::ad::forward
