// The batching rule of each op: re-emits a map's body outside the map, each
// batched value with the dims of its lanes (docs/internals/ad.md).
#pragma once

#include <llvm/ADT/DenseMap.h>

#include <utility>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/transforms/batch/batched_values.h"
#include "compiler/transforms/rewrite.h"

namespace delta::batch {

// What each map dim stands for in the batched values: itself, or a fresh
// dim of the same size (see Demapper::Rewrite in demap.cpp).
using LaneDims = llvm::DenseMap<const ir::Dim*, const ir::Dim*>;

// Re-emits the ops of a map's body at the builder's insertion point, each
// batched value (BatchedValues) with the dims of its lanes added.
class BatchEmitter {
 public:
  BatchEmitter(ir::Builder& builder, const BatchedValues& batched,
               LaneDims lane_dims)
      : builder_(builder),
        batched_(batched),
        lane_dims_(std::move(lane_dims)) {}

  void Bind(ir::Value* old, ir::Value* value) { map_.values[old] = value; }
  ir::Value* Get(ir::Value* old) const { return map_.Lookup(old); }
  // Emits every op of `block` but its terminator.
  void Block(const ir::Block& block);
  // The new values of what `block` yields.
  std::vector<ir::Value*> Yielded(const ir::Block& block) const;

 private:
  // The dims that the lanes of `old` add to it.
  ir::DimList BatchDims(const ir::Value* old) const;
  ir::Type TypeOf(const ir::Value* old) const;
  // `value` broadcast to the dims of `type`.
  ir::Value* As(ir::Value* value, const ir::Type& type);
  void Op(const ir::Op& op);
  void Generic(const ir::Op& op);
  void If(const ir::Op& op);
  void Loop(const ir::Op& op);
  void While(const ir::Op& op);
  // Emits `cond` (a while's condition region) on `state`; returns its value.
  ir::Value* Condition(const ir::Block& cond,
                       const std::vector<ir::Value*>& state);
  // Whether any lane of `mask` is true, as a bool scalar.
  ir::Value* Any(ir::Value* mask);
  // `active_` narrowed to the lanes of `mask` too.
  ir::Value* Narrow(ir::Value* mask);
  // `value` in the running lanes and `safe` in the others, over the dims
  // of `value` (see Note [Guarded lanes]).
  ir::Value* Guard(ir::Value* value, ir::Value* safe);

  ir::Builder& builder_;
  const BatchedValues& batched_;
  LaneDims lane_dims_;
  transforms::CloneMap map_;
  // The lanes that take the ops being emitted, or null when all do.
  ir::Value* active_ = nullptr;
};

}  // namespace delta::batch
