// Fusion of sibling maps: point-wise array ops over the same dims become
// one map with several results.
#pragma once

#include "compiler/ir/ir.h"

namespace delta::opt {

// Merges each map (or elementwise array op) into an earlier one over the
// same dims in the same block, when everything it reads is available there
// and it reads the earlier one's results only at its own point: the two
// become one loop, and a result read only by the merged map becomes a
// scalar inside it (dead-code elimination then drops it). Returns whether
// the module changed. See Note [Map fusion] in the .cpp.
bool FuseMaps(ir::Module& module);

}  // namespace delta::opt
