// Fusion of elementwise chains into maps and into the reductions that
// consume them.
#pragma once

#include "compiler/ir/ir.h"

namespace delta::opt {

// Rewrites each maximal chain of elementwise ops, selects, broadcasts,
// iotas and scalar-yielding maps whose intermediate results have one user
// into one `map` with a scalar body (arrays read by `gather` at the map's
// indices), and a `reduce` of such a chain into a reduce with a region, so
// that no intermediate array exists: `reduce.sum [k] (mul a b)` and
// `sum(exp(x) * y + 1.0, d)` become one loop nest each. Returns whether the
// module changed. See Note [What fusion fuses] in the .cpp.
bool FuseElementwise(ir::Module& module);

}  // namespace delta::opt
