// Demap: the batching transform behind `vmap`, implicit lifting and
// comprehensions, which removes `map` regions (docs/internals/ad.md).
#pragma once

#include "compiler/ir/ir.h"

namespace delta::batch {

// Rewrites every `map` of `function`, innermost first, as its body emitted
// outside it, with each value that depends on the map's indices given the
// map's dims and the indices becoming `iota`s; calls with batched arguments
// are inlined first. A map whose body prints, declares a dim whose size
// depends on the indices, or calls a function without a body with batched
// arguments stays a map. Returns whether the function changed. Reverse-mode
// AD calls this to get map-free IR.
bool DemapFunction(ir::Function& function);

// DemapFunction on every function that has a body.
bool Demap(ir::Module& module);

}  // namespace delta::batch

namespace delta::opt {
// passes.def names pass functions in delta::opt.
using batch::Demap;
}  // namespace delta::opt
