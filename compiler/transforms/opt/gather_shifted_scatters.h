// Scatters at a shifted index written as gathers.
#pragma once

#include "compiler/ir/ir.h"

namespace delta::opt {

// Replaces `scatter_add(v, to_index(k))` over a dim n into n, where k is
// i + c (i the position, c a constant integer) at the points where v may
// be nonzero, by the gather that reads v at j - c (zero where j - c is out
// of range or v is masked to zero there). Reverse mode makes such scatters
// from shifted reads like `if i == 0 { 1.0 } else { y[n: i - 1] }`; a
// scatter is a serial loop into a zeroed buffer that stops fusion, the
// gather a read that vectorizes and fuses. Returns whether the module
// changed.
bool GatherShiftedScatters(ir::Module& module);

}  // namespace delta::opt
