// Demap: each map rewritten as its body over the map's dims (demap.h and
// docs/internals/ad.md, "Batching").
#include "compiler/transforms/batch/demap.h"

#include <llvm/ADT/DenseMap.h>

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/transforms/batch/batched_values.h"
#include "compiler/transforms/opt/inline_calls.h"
#include "compiler/transforms/rewrite.h"

namespace delta::batch {
namespace {

using ir::OpKind;
using ir::Type;
using ir::Value;

// Inlining calls with batched arguments may reach a call cycle; past this
// many inlined calls in one map, the map stays a map.
constexpr int kMaxInlinedCalls = 256;

bool HasBody(const ir::Function& function) {
  const ir::Op* last = function.body->terminator();
  return last && last->kind == OpKind::Return;
}

// A name that no dim of `function` has yet, as the inliner makes them.
std::string FreshDimName(const ir::Function& function,
                         const std::string& name) {
  auto taken = [&](const std::string& candidate) {
    for (const ir::Dim* dim : function.dims)
      if (dim->name == candidate) return true;
    return false;
  };
  for (int i = 1;; ++i)
    if (!taken(name + "." + std::to_string(i)))
      return name + "." + std::to_string(i);
}

// What each map dim stands for in the batched values: itself, or a fresh
// dim of the same size (see Rewrite).
using LaneDims = llvm::DenseMap<const ir::Dim*, const ir::Dim*>;

// Re-emits the ops of a map's body at the builder's insertion point, each
// batched value (BatchedValues) with the dims of its lanes added.
class Emitter {
 public:
  Emitter(ir::Builder& builder, const BatchedValues& batched,
          LaneDims lane_dims)
      : builder_(builder),
        batched_(batched),
        lane_dims_(std::move(lane_dims)) {}

  void Bind(Value* old, Value* value) { map_.values[old] = value; }
  Value* Get(Value* old) const { return map_.Lookup(old); }
  // Emits every op of `block` but its terminator.
  void Block(const ir::Block& block);
  // The new values of what `block` yields.
  std::vector<Value*> Yielded(const ir::Block& block) const;

 private:
  // The dims that the lanes of `old` add to it.
  ir::DimList BatchDims(const Value* old) const;
  Type TypeOf(const Value* old) const;
  // `value` broadcast to the dims of `type`.
  Value* As(Value* value, const Type& type);
  void Op(const ir::Op& op);
  void Generic(const ir::Op& op);
  void If(const ir::Op& op);
  void Loop(const ir::Op& op);
  void While(const ir::Op& op);
  // Emits `cond` (a while's condition region) on `state`; returns its value.
  Value* Condition(const ir::Block& cond, const std::vector<Value*>& state);
  // Whether any lane of `mask` is true, as a bool scalar.
  Value* Any(Value* mask);

  ir::Builder& builder_;
  const BatchedValues& batched_;
  LaneDims lane_dims_;
  transforms::CloneMap map_;
};

ir::DimList Emitter::BatchDims(const Value* old) const {
  ir::DimList dims;
  for (const ir::Dim* lane : batched_.Lanes(old))
    dims.Insert(lane_dims_.lookup(lane));
  return dims;
}

Type Emitter::TypeOf(const Value* old) const {
  return old->type.WithDims(old->type.dims.Union(BatchDims(old)));
}

Value* Emitter::As(Value* value, const Type& type) {
  return builder_.Broadcast(value, type.dims.Minus(value->type.dims));
}

void Emitter::Block(const ir::Block& block) {
  for (const auto& op : block.ops)
    if (op->kind != OpKind::Yield) Op(*op);
}

std::vector<Value*> Emitter::Yielded(const ir::Block& block) const {
  std::vector<Value*> values;
  for (Value* value : block.terminator()->operands)
    values.push_back(Get(value));
  return values;
}

void Emitter::Op(const ir::Op& op) {
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

bool IsIotaOf(const Value* index) {
  const ir::Op* def = index->def;
  return def && def->kind == OpKind::Iota &&
         def->dims[0] == index->type.index_dim;
}

// Ops combine dims by name, so an op applied to operands with more dims is
// the batched op: only the result types change.
void Emitter::Generic(const ir::Op& op) {
  std::vector<Value*> operands;
  for (Value* operand : op.operands) operands.push_back(Get(operand));
  std::vector<Type> types;
  for (const Value* result : op.results) types.push_back(TypeOf(result));
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
// lane and picks each result with `select`. A run-time error in the branch
// that a lane did not take is therefore still reported, and a while loop
// in it runs for that lane too (docs/guide/batching.md).
void Emitter::If(const ir::Op& op) {
  std::vector<Type> types;
  for (const Value* result : op.results) types.push_back(TypeOf(result));
  Value* cond = Get(op.operands[0]);
  if (batched_.IsBatched(op.operands[0])) {
    Block(*op.regions[0]);
    std::vector<Value*> then_values = Yielded(*op.regions[0]);
    Block(*op.regions[1]);
    std::vector<Value*> else_values = Yielded(*op.regions[1]);
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
// body still runs on that state, so a run-time error it causes there is
// reported, as for the branch not taken by an `if`.
void Emitter::Loop(const ir::Op& op) {
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
  Block(body);
  std::vector<Value*> next = Yielded(body);
  builder_.SetLoc(op.loc);
  Value* active = nullptr;
  if (masked) {
    Value* k = block->args[0];
    active =
        builder_.Binary(OpKind::And, builder_.Binary(OpKind::Ge, k, lane_lo),
                        builder_.Binary(OpKind::Lt, k, lane_hi));
  }
  for (size_t i = 0; i < state; ++i) {
    next[i] = As(next[i], types[i]);
    if (active) next[i] = builder_.Select(active, next[i], block->args[i + 1]);
  }
  for (size_t i = state; i < next.size(); ++i)
    next[i] = As(next[i], types[i].WithDims(types[i].dims.Minus({op.dims[0]})));
  builder_.Yield(next);
}

Value* Emitter::Condition(const ir::Block& cond,
                          const std::vector<Value*>& state) {
  for (size_t i = 0; i < cond.args.size(); ++i) Bind(cond.args[i], state[i]);
  Block(cond);
  return Yielded(cond)[0];
}

Value* Emitter::Any(Value* mask) {
  Value* count = builder_.Convert(mask, ir::ElemKind::I32);
  count = builder_.Reduce(ir::ReduceKind::Max, count, count->type.dims);
  return builder_.Binary(OpKind::Gt, count,
                         builder_.IntConst(ir::ElemKind::I32, 0));
}

void Emitter::While(const ir::Op& op) {
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
  Block(body);
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

class Demapper {
 public:
  explicit Demapper(ir::Function& function) : function_(function) {}

  // Demaps the maps of `block` and of the regions in it, innermost first.
  void Block(ir::Block& block);
  bool changed() const { return changed_; }

 private:
  // Replaces `map` by its batched body; returns how many ops took its
  // place, or nothing if it stays a map.
  std::optional<size_t> Map(ir::Op& map);
  size_t Rewrite(ir::Op& map, const BatchedValues& batched);
  bool CanInline(const ir::Op& call) const {
    return call.callee && call.callee != &function_ && HasBody(*call.callee);
  }

  ir::Function& function_;
  bool changed_ = false;
};

void Demapper::Block(ir::Block& block) {
  for (size_t i = 0; i < block.ops.size();) {
    ir::Op& op = *block.ops[i];
    for (auto& region : op.regions) Block(*region);
    if (op.kind == OpKind::Map) {
      if (std::optional<size_t> count = Map(op)) {
        changed_ = true;
        i += *count;  // the new ops hold no map that could still go
        continue;
      }
    }
    ++i;
  }
}

std::optional<size_t> Demapper::Map(ir::Op& map) {
  for (int inlined = 0;; ++inlined) {
    BatchedValues batched(map);
    if (!batched.blocker().empty()) return std::nullopt;
    ir::Op* call = batched.batched_call();
    if (!call) return Rewrite(map, batched);
    if (inlined == kMaxInlinedCalls || !CanInline(*call)) return std::nullopt;
    opt::InlineCall(function_, *call);
    changed_ = true;
    Block(*map.regions[0]);  // the maps the callee brought
  }
}

size_t Demapper::Rewrite(ir::Op& map, const BatchedValues& batched) {
  ir::Builder builder(&function_);
  builder.SetLoc(map.loc);
  const ir::Block& body = *map.regions[0];
  ir::DimList map_dims(map.dims);
  std::vector<Value*> results;
  size_t count =
      transforms::InsertAt(builder, *map.parent, transforms::IndexOf(map), [&] {
        // The lanes are the map's dims unless a lane already has one of
        // them (BatchedValues::collides); then fresh dims of the same sizes
        // stand for them until the results are renamed back.
        std::vector<const ir::Dim*> lanes;
        LaneDims lane_dims;
        for (const ir::Dim* dim : map.dims) {
          if (!batched.collides()) {
            lanes.push_back(dim);
            lane_dims[dim] = dim;
            continue;
          }
          ir::Dim* fresh = function_.NewDim(FreshDimName(function_, dim->name),
                                            dim->constant, nullptr);
          if (!dim->constant) builder.DimDef(fresh, builder.Size(dim));
          lanes.push_back(fresh);
          lane_dims[dim] = fresh;
        }
        Emitter emitter(builder, batched, lane_dims);
        for (size_t k = 0; k < lanes.size(); ++k) {
          Value* index = builder.Iota(map.dims[k]);
          if (lanes[k] != map.dims[k])
            index = builder.Rename(index, map.dims[k], lanes[k]);
          emitter.Bind(body.args[k], index);
        }
        emitter.Block(body);
        builder.SetLoc(map.loc);
        for (Value* value : emitter.Yielded(body)) {
          for (size_t k = 0; k < lanes.size(); ++k)
            if (lanes[k] != map.dims[k] && value->type.dims.Contains(lanes[k]))
              value = builder.Rename(value, lanes[k], map.dims[k]);
          // A result that is the same in every lane is broadcast.
          results.push_back(
              builder.Broadcast(value, map_dims.Minus(value->type.dims)));
        }
        // Local dims declared in the body are now declared outside it.
        for (ir::Dim* dim : function_.dims)
          if (dim->size) dim->size = emitter.Get(dim->size);
      });
  llvm::DenseMap<Value*, Value*> replacements;
  for (size_t j = 0; j < map.results.size(); ++j) {
    if (results[j]->name.empty()) results[j]->name = map.results[j]->name;
    replacements[map.results[j]] = results[j];
  }
  transforms::ReplaceUses(function_, replacements);
  transforms::EraseOp(map);
  return count;
}

}  // namespace

bool DemapFunction(ir::Function& function) {
  Demapper demapper(function);
  demapper.Block(*function.body);
  return demapper.changed();
}

bool Demap(ir::Module& module) {
  bool changed = false;
  for (auto& function : module.functions)
    if (HasBody(*function)) changed |= DemapFunction(*function);
  return changed;
}

}  // namespace delta::batch
