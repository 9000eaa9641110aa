// See contraction_shape.h.
#include "compiler/ir/contraction_shape.h"

#include <cstdint>

namespace delta::ir {

namespace {

// a * b, or INT64_MAX where that overflows: sizes of any magnitude only
// need comparing with kMinContractionWork.
int64_t SaturatingProduct(int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return INT64_MAX;
  return product;
}

}  // namespace

std::optional<ContractionShape> ClassifyContraction(const DimList& result,
                                                    const DimList& a,
                                                    const DimList& b,
                                                    const DimList& reduced) {
  if (reduced.size() == 0) return std::nullopt;
  ContractionShape shape;
  int64_t k_size = 1;
  bool k_known = true;
  for (const Dim* dim : reduced) {
    if (!a.Contains(dim) || !b.Contains(dim)) return std::nullopt;
    if (shape.k != nullptr) shape.k_rest.push_back(shape.k);
    shape.k = dim;
    k_known = k_known && dim->constant;
    if (k_known) k_size = SaturatingProduct(k_size, *dim->constant);
  }
  for (const Dim* dim : result) {
    bool in_a = a.Contains(dim), in_b = b.Contains(dim);
    const Dim** free = in_a ? &shape.m : &shape.n;
    if (in_a && in_b) {
      shape.batch.push_back(dim);
    } else if (!in_a && !in_b) {
      return std::nullopt;  // a broadcast dim
    } else {
      if (*free != nullptr) shape.outer.push_back(*free);
      *free = dim;
    }
  }
  if (shape.m == nullptr || shape.n == nullptr) return std::nullopt;
  if (shape.m->constant && shape.n->constant && k_known &&
      SaturatingProduct(
          SaturatingProduct(*shape.m->constant, *shape.n->constant), k_size) <
          kMinContractionWork)
    return std::nullopt;
  return shape;
}

}  // namespace delta::ir
