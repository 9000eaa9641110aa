// The fusion cost model: whether copying a producer's work into a loop
// that reads it costs less than storing its result and loading it there.
#pragma once

#include <llvm/ADT/DenseMap.h>

#include <cstdint>

#include "compiler/ir/ir.h"

namespace delta::opt {

// The work of one element of `op`'s result, in adds: a table on ops.def's
// flags (math-library calls, divisions and square roots, reads that move
// nothing). A map counts its body; an op with any other region (a
// reduction, a loop) is costly. See Note [Fusion cost] in the .cpp.
int64_t ElementCost(const ir::Op& op);

// How many times a loop over `loop` evaluates each element of `op` when it
// is copied into its body: the product of the sizes of the loop's dims
// that `op`'s result lacks (a dim of unknown size counts as many).
// `renamed` maps each dim a rename in the copied chain reads at another
// dim's index to that dim (the copy sees its values there).
int64_t ReadsPerElement(
    const ir::Op& op, const ir::DimList& loop,
    const llvm::DenseMap<const ir::Dim*, const ir::Dim*>& renamed);

// The one rule of every pass that copies work into a loop: recompute
// `extra_cost` more adds per element than computing once, when that is no
// more than storing and reloading the element costs.
bool RecomputingIsCheaper(int64_t extra_cost);

// The extra work of copying `op` into a loop that reads each of its
// elements `reads` times: ElementCost(op) * (reads - 1).
int64_t RecomputeCost(const ir::Op& op, int64_t reads);

}  // namespace delta::opt
