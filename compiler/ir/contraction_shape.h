// The shape of a contraction `sum(a * b, k)` that a matrix-product kernel
// takes: shared by fusion (which keeps such operands materialized) and by
// codegen (which calls the kernel).
#pragma once

#include <optional>
#include <vector>

#include "compiler/ir/ir.h"

namespace delta::ir {

// Rows are a's own dim, columns b's, batch dims are in both and in the
// result, and k is the one reduced dim, in both.
struct ContractionShape {
  const Dim* m = nullptr;
  const Dim* n = nullptr;
  const Dim* k = nullptr;
  std::vector<const Dim*> batch;
};

// Below this many multiply-adds per product (when the sizes are known),
// packing for the kernel costs more than the loop nest it replaces.
constexpr int64_t kMinContractionWork = 8192;

// The kernel shape of a reduction over `reduced` of a * b into `result`,
// or nullopt: one reduced dim, exactly one row and one column dim (a
// matrix-vector product leaves most of a tile empty), no dim that neither
// operand has, and not known to be too small.
std::optional<ContractionShape> ClassifyContraction(const DimList& result,
                                                    const DimList& a,
                                                    const DimList& b,
                                                    const DimList& reduced);

}  // namespace delta::ir
