// Which values of a map's body depend on the map's indices, and whether the
// body can be batched at all: the analysis that demap's rewrite follows.
#pragma once

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>

#include <string>

#include "compiler/ir/ir.h"

namespace delta::batch {

// A value is batched when it may differ between two points of the map: it
// is an index argument, or an op computed it from a batched value, or it is
// loop state that a batched value flows into, or an `if`/`while` chose it
// under a batched condition. Demap gives exactly these values the map's
// dims, or rather those of the map's dims whose indices it depends on (its
// lanes). See Note [Per-lane types] in batched_values.cpp.
class BatchedValues {
 public:
  explicit BatchedValues(const ir::Op& map);

  bool IsBatched(const ir::Value* value) const {
    return values_.contains(value);
  }
  // The map dims that `value` varies over; empty if it is not batched.
  ir::DimList Lanes(const ir::Value* value) const {
    auto it = values_.find(value);
    return it == values_.end() ? ir::DimList() : it->second;
  }
  // Whether `op` reads or computes a batched value (also inside regions).
  bool IsBatched(const ir::Op& op) const { return ops_.contains(&op); }

  // Why the map must stay a map, or empty.
  const std::string& blocker() const { return blocker_; }
  // The first call with batched arguments; demap inlines it and looks again.
  ir::Op* batched_call() const { return batched_call_; }
  // Whether a batched value already has one of the map's dims in one lane,
  // so that the batch needs fresh dims (`for i in d { x - f32(i) }` with
  // `x: f32[d]` is an f32[d] in every lane).
  bool collides() const { return collides_; }

 private:
  void Block(const ir::Block& block);
  void Op(const ir::Op& op);
  void Loop(const ir::Op& op);
  void While(const ir::Op& op);
  void If(const ir::Op& op);
  // Adds `lanes` to the lanes of `value`; returns whether it had not all.
  bool Mark(const ir::Value* value, const ir::DimList& lanes);
  // The lanes of the operands of `op`, and of those of the ops nested in it.
  ir::DimList OperandLanes(const ir::Op& op) const;
  ir::DimList NestedOperandLanes(const ir::Op& op) const;

  ir::DimList map_dims_;
  llvm::DenseMap<const ir::Value*, ir::DimList> values_;
  llvm::DenseSet<const ir::Op*> ops_;
  std::string blocker_;
  ir::Op* batched_call_ = nullptr;
  bool collides_ = false;
};

}  // namespace delta::batch
