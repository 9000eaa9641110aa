// Shared IR editing tools of the passes (see rewrite.h).
#include "compiler/transforms/rewrite.h"

#include <algorithm>
#include <cassert>
#include <memory>

#include "compiler/ir/index_range.h"

namespace delta::transforms {

using ir::Block;
using ir::Op;
using ir::OpKind;
using ir::Value;

void WalkOps(Block& block, llvm::function_ref<void(Op&)> visit) {
  for (size_t i = 0; i < block.ops.size(); ++i) {
    Op& op = *block.ops[i];
    visit(op);
    for (auto& region : op.regions) WalkOps(*region, visit);
  }
}

void WalkOps(const Block& block, llvm::function_ref<void(const Op&)> visit) {
  for (const auto& op : block.ops) {
    visit(*op);
    for (const auto& region : op->regions)
      WalkOps(static_cast<const Block&>(*region), visit);
  }
}

UserCounts CountUsers(ir::Function& function) {
  UserCounts counts;
  WalkOps(*function.body, [&](Op& op) {
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const Value* operand = op.operands[i];
      bool seen = std::find(op.operands.begin(), op.operands.begin() + i,
                            operand) != op.operands.begin() + i;
      if (!seen) ++counts[operand];
    }
  });
  return counts;
}

namespace {

// `value` after `replacements`, following chains: a replacement may itself
// have been replaced.
Value* Replaced(const llvm::DenseMap<Value*, Value*>& replacements,
                Value* value) {
  for (auto it = replacements.find(value); it != replacements.end();
       it = replacements.find(value))
    value = it->second;
  return value;
}

}  // namespace

void ReplaceUses(ir::Block& block,
                 const llvm::DenseMap<Value*, Value*>& replacements) {
  if (replacements.empty()) return;
  WalkOps(block, [&](Op& op) {
    for (Value*& operand : op.operands)
      operand = Replaced(replacements, operand);
  });
}

void ReplaceUses(ir::Function& function,
                 const llvm::DenseMap<Value*, Value*>& replacements) {
  if (replacements.empty()) return;
  ReplaceUses(*function.body, replacements);
  for (ir::Dim* dim : function.dims)
    if (dim->size) dim->size = Replaced(replacements, dim->size);
}

void ReplaceAllUses(ir::Function& function, Value* from, Value* to) {
  llvm::DenseMap<Value*, Value*> replacements;
  replacements[from] = to;
  ReplaceUses(function, replacements);
}

size_t IndexOf(const Op& op) {
  const auto& ops = op.parent->ops;
  auto it = std::find_if(ops.begin(), ops.end(),
                         [&](const auto& other) { return other.get() == &op; });
  assert(it != ops.end() && "op is not in its parent block");
  return static_cast<size_t>(it - ops.begin());
}

void EraseOp(Op& op) {
  Block& block = *op.parent;
  block.ops.erase(block.ops.begin() + static_cast<long>(IndexOf(op)));
}

size_t InsertAt(ir::Builder& builder, Block& block, size_t index,
                llvm::function_ref<void()> build) {
  Block scratch;
  scratch.function = block.function;
  scratch.parent = block.parent;
  {
    ir::InsertionGuard guard(builder);
    builder.SetInsertionBlock(&scratch);
    build();
  }
  size_t count = scratch.ops.size();
  for (size_t i = 0; i < count; ++i) {
    scratch.ops[i]->parent = &block;
    block.ops.insert(block.ops.begin() + static_cast<long>(index + i),
                     std::move(scratch.ops[i]));
  }
  return count;
}

bool ReplaceEach(ir::Function& function, const std::vector<Op*>& ops,
                 llvm::function_ref<Value*(ir::Builder&, Op&)> build) {
  ir::Builder builder(&function);
  llvm::DenseMap<Value*, Value*> replacements;
  for (Op* op : ops) {
    builder.SetLoc(op->loc);
    InsertAt(builder, *op->parent, IndexOf(*op),
             [&] { replacements[op->results[0]] = build(builder, *op); });
  }
  ReplaceUses(function, replacements);
  for (Op* op : ops) EraseOp(*op);
  return !ops.empty();
}

Value* CloneMap::Lookup(Value* value) const {
  auto it = values.find(value);
  return it == values.end() ? value : it->second;
}

const ir::Dim* CloneMap::Lookup(const ir::Dim* dim) const {
  auto it = dims.find(dim);
  return it == dims.end() ? dim : it->second;
}

ir::Type CloneMap::Lookup(const ir::Type& type) const {
  if (dims.empty()) return type;
  ir::Type result = type;
  if (type.index_dim) result.index_dim = Lookup(type.index_dim);
  ir::DimList mapped;
  for (const ir::Dim* dim : type.dims) mapped.Insert(Lookup(dim));
  result.dims = mapped;
  return result;
}

Op* CloneOp(ir::Builder& builder, const Op& op, CloneMap& map) {
  // A copy of another function's local dim declaration declares a dim of
  // the target function (AD and inlining clone one function's ops into
  // another), unless the map names one made for it and not declared yet
  // (inlining's). Keeping the source's dim left it in use after the source
  // was deleted (grad(grad(f)) of a loop inside an if read freed memory),
  // and AD, which may clone a region twice, would declare one dim twice.
  // Within one function, clones keep the dim (passes that move ops).
  ir::Dim* fresh = nullptr;
  if (op.kind == OpKind::DimDef) {
    const std::vector<ir::Dim*>& own = builder.function()->dims;
    const ir::Dim* target = map.Lookup(op.dims[0]);
    bool made_for_it = target != op.dims[0] && target->size == nullptr &&
                       llvm::is_contained(own, target);
    if (!llvm::is_contained(own, op.dims[0]) && !made_for_it) {
      fresh = builder.function()->CopyDim(*op.dims[0], op.dims[0]->name);
      map.dims[op.dims[0]] = fresh;
    }
  }
  std::vector<Value*> operands;
  for (Value* operand : op.operands) operands.push_back(map.Lookup(operand));
  std::vector<ir::Type> types;
  for (const Value* result : op.results)
    types.push_back(map.Lookup(result->type));
  Op* copy = builder.Create(op.kind, std::move(operands), std::move(types));
  copy->loc = op.loc;
  for (const ir::Dim* dim : op.dims) copy->dims.push_back(map.Lookup(dim));
  copy->float_value = op.float_value;
  copy->int_value = op.int_value;
  copy->reduce = op.reduce;
  copy->callee = op.callee;
  copy->checkpoint = op.checkpoint;
  copy->print_items = op.print_items;
  if (fresh) fresh->size = copy->operands[0];
  for (size_t i = 0; i < op.results.size(); ++i) {
    copy->results[i]->name = op.results[i]->name;
    map.values[op.results[i]] = copy->results[i];
  }
  for (const auto& region : op.regions) {
    std::vector<ir::Type> arg_types;
    for (const Value* arg : region->args)
      arg_types.push_back(map.Lookup(arg->type));
    Block* block = builder.AddRegion(copy, arg_types);
    for (size_t i = 0; i < region->args.size(); ++i) {
      block->args[i]->name = region->args[i]->name;
      map.values[region->args[i]] = block->args[i];
    }
    ir::InsertionGuard guard(builder);
    builder.SetInsertionBlock(block);
    for (const auto& inner : region->ops) CloneOp(builder, *inner, map);
  }
  // Mapping dims may change their canonical order; a fused reduce's
  // arguments must follow it.
  if (copy->kind == OpKind::Reduce && !copy->regions.empty()) {
    auto& args = copy->regions[0]->args;
    std::sort(args.begin(), args.end(), [](Value* a, Value* b) {
      return a->type.index_dim->order < b->type.index_dim->order;
    });
    for (size_t i = 0; i < args.size(); ++i)
      args[i]->index = static_cast<unsigned>(i);
  }
  return copy;
}

bool HasEffects(const Op& op) {
  // A to_index that cannot fail (Note [Index ranges]) is index arithmetic.
  if (op.kind == OpKind::ToIndex && op.operands[0]->type.IsScalar() &&
      ir::IsIndexInRange(op.operands[0], op.dims[0]))
    return false;
  const ir::OpInfo& info = ir::InfoOf(op.kind);
  if (info.Has(ir::kEffect) || info.Has(ir::kMayFail)) return true;
  if (info.Has(ir::kFailsOnIntegers)) {
    if (ir::IsFloat(op.results[0]->type.elem)) return false;
    // Only a zero divisor fails: a constant other than 0 (and -1, whose
    // quotient of the smallest integer overflows) cannot, so an unused
    // `i % 7` over a huge dim is dead code, not a loop to run.
    const Op* divisor = op.operands[1]->def;
    return divisor == nullptr || divisor->kind != OpKind::Const ||
           divisor->int_value == 0 || divisor->int_value == -1;
  }
  // A conversion to an index checks its range.
  return op.kind == OpKind::Convert &&
         op.results[0]->type.elem == ir::ElemKind::Index;
}

bool MayOnlyFail(const Op& op) {
  const ir::OpInfo& info = ir::InfoOf(op.kind);
  return (info.Has(ir::kMayFail) || info.Has(ir::kFailsOnIntegers) ||
          op.kind == OpKind::Convert) &&
         HasEffects(op);
}

bool IsScalarMap(const Op& op) {
  if (op.kind != OpKind::Map) return false;
  for (const auto& inner : op.region(0)->ops) {
    if (!inner->regions.empty() ||
        (HasEffects(*inner) && inner->kind != OpKind::Yield &&
         !MayOnlyFail(*inner)))
      return false;
    const std::vector<Value*>& values =
        inner->kind == OpKind::Yield ? inner->operands : inner->results;
    for (const Value* value : values)
      if (!value->type.IsScalar()) return false;
  }
  return true;
}

bool HasEffectsDeep(const Op& op) {
  if (HasEffects(op)) return true;
  for (const auto& region : op.regions)
    for (const auto& inner : region->ops)
      if (inner->kind != OpKind::Yield && HasEffectsDeep(*inner)) return true;
  return false;
}

bool ForEachFunction(ir::Module& module,
                     llvm::function_ref<bool(ir::Function&)> pass) {
  bool changed = false;
  for (auto& function : module.functions) changed |= pass(*function);
  return changed;
}

}  // namespace delta::transforms
