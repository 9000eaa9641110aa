// See contraction_shape.h.
#include "compiler/ir/contraction_shape.h"

namespace delta::ir {

std::optional<ContractionShape> ClassifyContraction(const DimList& result,
                                                    const DimList& a,
                                                    const DimList& b,
                                                    const DimList& reduced) {
  if (reduced.size() != 1) return std::nullopt;
  ContractionShape shape;
  shape.k = reduced[0];
  if (!a.Contains(shape.k) || !b.Contains(shape.k)) return std::nullopt;
  for (const Dim* dim : result) {
    bool in_a = a.Contains(dim), in_b = b.Contains(dim);
    if (in_a && in_b) {
      shape.batch.push_back(dim);
    } else if (in_a && shape.m == nullptr) {
      shape.m = dim;
    } else if (in_b && shape.n == nullptr) {
      shape.n = dim;
    } else {
      return std::nullopt;  // a second row or column dim, or a broadcast dim
    }
  }
  if (shape.m == nullptr || shape.n == nullptr) return std::nullopt;
  if (shape.m->constant && shape.n->constant && shape.k->constant &&
      *shape.m->constant * *shape.n->constant * *shape.k->constant <
          kMinContractionWork)
    return std::nullopt;
  return shape;
}

}  // namespace delta::ir
