// The batched-value analysis of a map's body (see batched_values.h).
#include "compiler/transforms/batch/batched_values.h"

namespace delta::batch {

using ir::OpKind;

// Note [Per-lane types]
// Inside a map's body every value has its type in one lane, one point of
// the map. Demap keeps that type for the values that are the same in every
// lane and gives the batched ones the map's dims as well; the analysis only
// says which are which. Loop state is batched when its initial value or the
// value the body yields for it is (a fixed point, since the body reads the
// state), and all of a loop's state is batched under batched bounds, as all
// of a while's under a batched condition: lanes then stop at different
// iterations, so the state differs between lanes even where every lane
// computes the same thing.

BatchedValues::BatchedValues(const ir::Op& map) : map_dims_(map.dims) {
  const ir::Block& body = *map.regions[0];
  for (size_t k = 0; k < body.args.size(); ++k)
    Mark(body.args[k], {map.dims[k]});
  Block(body);
}

bool BatchedValues::Mark(const ir::Value* value, const ir::DimList& lanes) {
  if (lanes.empty()) return false;
  auto [it, inserted] = values_.try_emplace(value, lanes);
  if (inserted) {
    for (const ir::Dim* dim : value->type.dims)
      if (map_dims_.Contains(dim)) collides_ = true;
    return true;
  }
  if (it->second.ContainsAll(lanes)) return false;
  it->second = it->second.Union(lanes);
  return true;
}

ir::DimList BatchedValues::OperandLanes(const ir::Op& op) const {
  ir::DimList lanes;
  for (const ir::Value* operand : op.operands)
    lanes = lanes.Union(Lanes(operand));
  return lanes;
}

ir::DimList BatchedValues::NestedOperandLanes(const ir::Op& op) const {
  ir::DimList lanes;
  for (const auto& region : op.regions)
    for (const auto& inner : region->ops)
      lanes =
          lanes.Union(OperandLanes(*inner)).Union(NestedOperandLanes(*inner));
  return lanes;
}

void BatchedValues::Block(const ir::Block& block) {
  for (const auto& op : block.ops) Op(*op);
}

void BatchedValues::Op(const ir::Op& op) {
  switch (op.kind) {
    case OpKind::Yield:
    case OpKind::Return:
      return;
    case OpKind::Loop:
      Loop(op);
      break;
    case OpKind::While:
      While(op);
      break;
    case OpKind::If:
      If(op);
      break;
    default: {
      for (const auto& region : op.regions) Block(*region);
      ir::DimList lanes = OperandLanes(op).Union(NestedOperandLanes(op));
      for (const ir::Value* result : op.results) Mark(result, lanes);
      break;
    }
  }
  bool batched = !OperandLanes(op).empty() || !NestedOperandLanes(op).empty();
  for (const ir::Value* result : op.results) batched |= IsBatched(result);
  if (batched) ops_.insert(&op);
  auto block = [&](const char* why) {
    if (blocker_.empty()) blocker_ = why;
  };
  switch (op.kind) {
    case OpKind::Print:
      // One print per lane, in order, is what the program says.
      block("it prints");
      break;
    case OpKind::ReadNpy:
    case OpKind::WriteNpy:
      block("it reads or writes a file");
      break;
    case OpKind::Map:
      // Inner maps are demapped first; one that is left stays for a reason
      // that holds for this map as well.
      if (batched) block("a map inside it stays a map");
      break;
    case OpKind::Call:
      if (batched && !batched_call_) batched_call_ = const_cast<ir::Op*>(&op);
      break;
    case OpKind::DimDef:
      if (batched) block("it declares a dim whose size depends on the index");
      break;
    case OpKind::Reduce:
      // A fused reduce's region is indexed by the result's dims; batching
      // it would mean indexing batched values inside it, which is what a
      // map is. Fusion runs after demap, so this is rare.
      if (batched && !op.regions.empty())
        block("a fused reduce in it reads batched values");
      break;
    case OpKind::ReduceCustom:
      if (!NestedOperandLanes(op).empty())
        block("a reduce.custom combiner in it reads batched values");
      break;
    default:
      break;
  }
}

void BatchedValues::Loop(const ir::Op& op) {
  const ir::Block& body = *op.regions[0];
  const ir::Op& yield = *body.terminator();
  size_t state = op.operands.size() - 2;
  // Under batched bounds every lane of them stops at its own iteration.
  ir::DimList bounds = Lanes(op.operands[0]).Union(Lanes(op.operands[1]));
  for (size_t i = 0; i < state; ++i)
    Mark(body.args[i + 1], bounds.Union(Lanes(op.operands[i + 2])));
  for (bool changed = true; changed;) {
    Block(body);
    changed = false;
    for (size_t i = 0; i < state; ++i)
      changed |= Mark(body.args[i + 1], Lanes(yield.operands[i]));
  }
  for (size_t i = 0; i < state; ++i)
    Mark(op.results[i], Lanes(body.args[i + 1]));
  for (size_t i = state; i < op.results.size(); ++i)
    Mark(op.results[i], Lanes(yield.operands[i]));
}

void BatchedValues::While(const ir::Op& op) {
  const ir::Block& cond = *op.regions[0];
  const ir::Block& body = *op.regions[1];
  auto mark_state = [&](size_t i, const ir::DimList& lanes) {
    bool in_cond = Mark(cond.args[i], lanes);
    bool in_body = Mark(body.args[i], lanes);
    return in_cond || in_body;
  };
  for (size_t i = 0; i < op.operands.size(); ++i)
    mark_state(i, Lanes(op.operands[i]));
  for (bool changed = true; changed;) {
    Block(cond);
    Block(body);
    changed = false;
    ir::DimList stop = Lanes(cond.terminator()->operands[0]);
    for (size_t i = 0; i < op.operands.size(); ++i)
      changed |=
          mark_state(i, stop.Union(Lanes(body.terminator()->operands[i])));
  }
  for (size_t i = 0; i < op.results.size(); ++i)
    Mark(op.results[i], Lanes(body.args[i]));
}

void BatchedValues::If(const ir::Op& op) {
  Block(*op.regions[0]);
  Block(*op.regions[1]);
  ir::DimList cond = Lanes(op.operands[0]);
  const ir::Op& then_yield = *op.regions[0]->terminator();
  const ir::Op& else_yield = *op.regions[1]->terminator();
  for (size_t k = 0; k < op.results.size(); ++k)
    Mark(op.results[k], cond.Union(Lanes(then_yield.operands[k]))
                            .Union(Lanes(else_yield.operands[k])));
}

}  // namespace delta::batch
