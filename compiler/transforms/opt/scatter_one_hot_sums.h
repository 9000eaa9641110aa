// Sums of one-hot-masked terms written as scatters of the selected terms.
#pragma once

#include "compiler/ir/ir.h"

namespace delta::opt {

// Rewrites a fused `reduce.sum [R] { ^(.., j, ..): .. yield v }` whose
// term v is masked by a one-hot over a result dim K, v = select(j == i[..],
// w, 0) or select(j == i[..], a, 0) * w with i an index array into K read
// at the region's other indices, as `scatter_add(map { w at j = i[..] },
// i)`: the terms where j differs from i[..] are zero, so only one point
// of K in each row is computed instead of all of them. Reverse mode makes
// such sums for the arg-extremum of `min(x, K)` (k-means: the gradient
// and its Hessian diagonal sum each point's term into its nearest
// centroid). Only at -O3: a term w that is inf or NaN where the mask is
// zero no longer makes the sum NaN. Returns whether the module changed.
// See Note [Scattering one-hot sums].
bool ScatterOneHotSums(ir::Module& module);

}  // namespace delta::opt
