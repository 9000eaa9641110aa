// The shape of a contraction `sum(a * b, k)` that a matrix-product kernel
// takes: shared by fusion (which keeps such operands materialized) and by
// codegen (which calls the kernel).
#pragma once

#include <optional>
#include <vector>

#include "compiler/ir/ir.h"

namespace delta::ir {

// Rows are a's own dim, columns b's, batch dims are in both and in the
// result, and k is the reduced dim, in both; further reduced dims (a
// projection back from [heads, hd]) are k_rest, one k with it where code
// generation finds them adjacent in memory. A result dim of only one
// operand beyond m and n (the head of a projection to [seq, heads, hd],
// the batch of [batch, seq] rows times a weight) is an outer dim: one
// product per coordinate, like a batch dim that the other operand lacks,
// unless code generation finds it adjacent in memory to m or n (Note
// [Merged free dims] in docs/performance.md).
struct ContractionShape {
  const Dim* m = nullptr;
  const Dim* n = nullptr;
  const Dim* k = nullptr;
  std::vector<const Dim*> k_rest;
  std::vector<const Dim*> batch;
  std::vector<const Dim*> outer;
};

// Below this many multiply-adds per product (when the sizes are known),
// packing for the kernel costs more than the loop nest it replaces.
constexpr int64_t kMinContractionWork = 8192;

// The kernel shape of a reduction over `reduced` of a * b into `result`,
// or nullopt: reduced dims in both operands, at least one row and one
// column dim (a
// matrix-vector product leaves most of a tile empty), no dim that neither
// operand has, and not known to be too small. Of several row (column)
// dims the last in canonical order, the innermost in memory, is m (n).
std::optional<ContractionShape> ClassifyContraction(const DimList& result,
                                                    const DimList& a,
                                                    const DimList& b,
                                                    const DimList& reduced);

}  // namespace delta::ir
