// Strength reduction of powers with small integer exponents.
#pragma once

#include "compiler/ir/ir.h"

namespace delta::opt {

// The largest |k| for which `x ^ k` becomes multiplications: square and
// multiply takes at most 2 log2(k) products, each rounding once, so the
// result is within about |k| units in the last place of pow's.
inline constexpr int kMaxReducedExponent = 8;

// Replaces `pow(x, k)` of floats with k a constant integer, 3 <= |k| <=
// kMaxReducedExponent or k = -2, by products of x (square and multiply;
// 1 / x^|k| for k < 0); -1, 0, 1 and 2 are left to LLVM (see the .cpp).
// Derivatives benefit too: AD writes d(x^k) as k * x^(k-1), whose exponent
// fold-constants has folded by then. Returns whether the module changed.
bool ReducePowers(ir::Module& module);

}  // namespace delta::opt
