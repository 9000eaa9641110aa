// See fusion_cost.h.
//
// Note [Fusion cost]
// Fusion copies a producer's scalar work into the loop of the op that
// reads it. When that loop runs over dims the producer lacks (a
// contraction's or a reduction's loop nest, a map under a broadcast), each
// element of the producer is computed once per point of those dims instead
// of once. That is free for a rename or a broadcast, cheap for an add, and
// ruinous for a tanh read by a contraction that loops over 512 output
// columns. Storing the producer instead costs one store and one load per
// element (and a loop around them). So a producer is copied into a loop
// only when the work it adds,
//
//   ElementCost(producer) * (ReadsPerElement(producer, loop) - 1),
//
// summed over every op copied into that loop, is at most what storing and
// reloading one element costs (kStoreAndReload). A producer read once per
// element (the common case: a chain over the loop's own dims) adds
// nothing and is always fused. The costs are rough cycle counts of the
// scalar op relative to an add, from ops.def's flags, not measurements.
#include "compiler/transforms/opt/fusion_cost.h"

namespace delta::opt {
namespace {

using ir::OpKind;

// Cost of one element, in adds.
constexpr int64_t kMoveCost = 0;        // reads, renames, broadcasts, indices
constexpr int64_t kArithmeticCost = 1;  // add, mul, compare, select, ...
constexpr int64_t kDivisionCost = 4;    // div, rem, sqrt (not pipelined)
constexpr int64_t kMathCallCost = 16;   // kMathCall: exp, tanh, log, ...
constexpr int64_t kRegionCost = 64;     // a reduction or loop in a body

// Storing one element and loading it again, with the loop that does it.
constexpr int64_t kStoreAndReload = 8;

// A dim whose size is known only at run time: assume it is large.
constexpr int64_t kUnknownDimSize = 64;

}  // namespace

int64_t ElementCost(const ir::Op& op) {
  if (op.kind == OpKind::Map) {
    int64_t cost = 0;
    for (const auto& inner : op.regions[0]->ops) cost += ElementCost(*inner);
    return cost;
  }
  if (!op.regions.empty()) return kRegionCost;
  if (ir::HasFlag(op.kind, ir::kMathCall)) return kMathCallCost;
  switch (op.kind) {
    case OpKind::Div:
    case OpKind::Rem:
    case OpKind::Sqrt:
      return kDivisionCost;
    case OpKind::Const:
    case OpKind::Size:
    case OpKind::Iota:
    case OpKind::ToIndex:
    case OpKind::Convert:
    case OpKind::Broadcast:
    case OpKind::Rename:
    case OpKind::Gather:
    case OpKind::Yield:
      return kMoveCost;
    default:
      return kArithmeticCost;
  }
}

int64_t ReadsPerElement(
    const ir::Op& op, const ir::DimList& loop,
    const llvm::DenseMap<const ir::Dim*, const ir::Dim*>& renamed) {
  const ir::DimList& dims = op.results[0]->type.dims;
  int64_t reads = 1;
  for (const ir::Dim* dim : loop) {
    // Follow the renames back to the dim the op has, if any.
    const ir::Dim* at = dim;
    for (size_t step = 0; step <= renamed.size() && !dims.Contains(at);
         ++step) {
      auto source = renamed.find(at);
      if (source == renamed.end()) break;
      at = source->second;
    }
    if (dims.Contains(at)) continue;
    int64_t size = dim->constant ? *dim->constant : kUnknownDimSize;
    reads = size > 0 && reads > INT64_MAX / size ? INT64_MAX : reads * size;
  }
  return reads;
}

int64_t RecomputeCost(const ir::Op& op, int64_t reads) {
  if (reads <= 1) return 0;
  int64_t cost = ElementCost(op);
  return cost > 0 && reads - 1 > INT64_MAX / cost ? INT64_MAX
                                                  : cost * (reads - 1);
}

bool RecomputingIsCheaper(int64_t extra_cost) {
  return extra_cost <= kStoreAndReload;
}

}  // namespace delta::opt
