// Loop-invariant code motion (hoist_loop_invariants.h).
#include "compiler/transforms/opt/hoist_loop_invariants.h"

#include <llvm/ADT/DenseSet.h>

#include <memory>
#include <vector>

#include "compiler/transforms/opt/fusion_cost.h"
#include "compiler/transforms/rewrite.h"

namespace delta::opt {
namespace {

using ir::Block;
using ir::Op;
using ir::OpKind;
using ir::Value;

// Whether `op` or an op in its regions names a dim of `dims` (in its dims,
// its results' types or its regions' arguments' types).
bool NamesDim(const Op& op, const llvm::DenseSet<const ir::Dim*>& dims) {
  auto in_type = [&](const Value* value) {
    for (const ir::Dim* dim : value->type.dims)
      if (dims.contains(dim)) return true;
    return false;
  };
  for (const ir::Dim* dim : op.dims)
    if (dims.contains(dim)) return true;
  for (const Value* result : op.results)
    if (in_type(result)) return true;
  for (const auto& region : op.regions) {
    for (const Value* arg : region->args)
      if (in_type(arg)) return true;
    for (const auto& inner : region->ops)
      if (NamesDim(*inner, dims)) return true;
  }
  return false;
}

// The values that `op` and its regions use from outside `op`.
void CollectUses(const Op& op, llvm::DenseSet<const Value*>& made,
                 std::vector<const Value*>& uses) {
  for (const Value* operand : op.operands)
    if (!made.contains(operand)) uses.push_back(operand);
  for (const auto& region : op.regions) {
    made.insert(region->args.begin(), region->args.end());
    for (const auto& inner : region->ops) CollectUses(*inner, made, uses);
  }
  made.insert(op.results.begin(), op.results.end());
}

// Whether `op` computes an array from indices and scalars alone, cheaply:
// an iota, a broadcast of a scalar, elementwise ops on such arrays, or a
// map that reads no array. That is the index arithmetic of a shifted read
// (`if i == 0 { .. } else { y[n: i - 1] }`). Inside the loop, fusion takes
// it into the loops that read it; hoisted, it would be an array that they
// load at every iteration (Note [Fusion cost]: recomputing beats storing).
// `from_indices` holds the results of such ops seen so far.
bool IsIndexArithmetic(const Op& op,
                       const llvm::DenseSet<const Value*>& from_indices) {
  if (op.results.size() == 0 || op.results[0]->type.IsScalar()) return false;
  auto arrays_from_indices = [&] {
    for (const Value* operand : op.operands)
      if (!operand->type.IsScalar() && !from_indices.contains(operand))
        return false;
    return true;
  };
  switch (op.kind) {
    case OpKind::Iota:
      return true;
    case OpKind::Broadcast:
    case OpKind::Select:
    case OpKind::Convert:
      return arrays_from_indices() && !transforms::HasEffects(op);
    case OpKind::Map:
      if (!transforms::IsScalarMap(op) || !op.operands.empty()) return false;
      for (const auto& inner : op.region(0)->ops)
        if (inner->kind == OpKind::Gather) return false;
      return RecomputingIsCheaper(ElementCost(op));
    default:
      return (ir::IsElementwiseUnary(op.kind) ||
              ir::IsElementwiseBinary(op.kind)) &&
             arrays_from_indices() && !transforms::HasEffects(op) &&
             RecomputingIsCheaper(ElementCost(op));
  }
}

// Moves the invariant ops of `loop`'s regions in front of it; returns how
// many. A while's condition region is left alone (it is short).
size_t HoistFrom(Op& loop) {
  Block& body = *loop.regions.back();
  // Values made in the body (its arguments and every op's results, nested
  // ones included) and dims defined in it.
  llvm::DenseSet<const Value*> inside(body.args.begin(), body.args.end());
  llvm::DenseSet<const ir::Dim*> local_dims;
  transforms::WalkOps(body, [&](const Op& op) {
    inside.insert(op.results.begin(), op.results.end());
    for (const auto& region : op.regions)
      inside.insert(region->args.begin(), region->args.end());
    if (op.kind == OpKind::DimDef) local_dims.insert(op.dims[0]);
  });
  std::vector<std::unique_ptr<Op>> hoisted;
  std::vector<std::unique_ptr<Op>> kept;
  llvm::DenseSet<const Value*> from_indices;
  for (auto& op : body.ops) {
    if (IsIndexArithmetic(*op, from_indices)) {
      from_indices.insert(op->results.begin(), op->results.end());
      kept.push_back(std::move(op));
      continue;
    }
    bool invariant = op->kind != OpKind::Yield &&
                     !transforms::HasEffectsDeep(*op) &&
                     !NamesDim(*op, local_dims);
    if (invariant) {
      llvm::DenseSet<const Value*> made;
      std::vector<const Value*> uses;
      CollectUses(*op, made, uses);
      for (const Value* use : uses) invariant &= !inside.contains(use);
    }
    if (!invariant) {
      kept.push_back(std::move(op));
      continue;
    }
    for (const Value* result : op->results) inside.erase(result);
    hoisted.push_back(std::move(op));
  }
  body.ops = std::move(kept);
  Block& outer = *loop.parent;
  size_t at = transforms::IndexOf(loop);
  for (size_t i = 0; i < hoisted.size(); ++i) {
    hoisted[i]->parent = &outer;
    outer.ops.insert(outer.ops.begin() + static_cast<long>(at + i),
                     std::move(hoisted[i]));
  }
  return hoisted.size();
}

bool HoistFunction(ir::Function& function) {
  // Innermost first: what leaves an inner loop may then leave the outer.
  std::vector<Op*> loops;
  transforms::WalkOps(*function.body, [&](Op& op) {
    if (op.kind == OpKind::Loop || op.kind == OpKind::While)
      loops.push_back(&op);
  });
  size_t moved = 0;
  for (auto it = loops.rbegin(); it != loops.rend(); ++it)
    moved += HoistFrom(**it);
  return moved > 0;
}

}  // namespace

bool HoistLoopInvariants(ir::Module& module) {
  return transforms::ForEachFunction(module, HoistFunction);
}

}  // namespace delta::opt
