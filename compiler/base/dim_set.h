// The set of named dims that a type has, kept sorted by canonical order:
// one template for sema's dims (sema::DimSet over sema::DimInfo) and the
// IR's (ir::DimList over ir::Dim), which mean the same thing at two stages.
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>

#include <algorithm>
#include <cstddef>
#include <initializer_list>

namespace delta {

// A set of dims sorted by their `order` member (the canonical order:
// declaration order, which printing and memory layout follow), so that two
// sets with the same dims are equal whatever order they were built in.
// Types have few dims, so membership is a linear search.
template <typename Dim>
class SortedDimSet {
 public:
  SortedDimSet() = default;
  SortedDimSet(std::initializer_list<const Dim*> dims) {
    for (const Dim* dim : dims) Insert(dim);
  }
  explicit SortedDimSet(llvm::ArrayRef<const Dim*> dims) {
    for (const Dim* dim : dims) Insert(dim);
  }

  bool empty() const { return dims_.empty(); }
  size_t size() const { return dims_.size(); }
  const Dim* operator[](size_t i) const { return dims_[i]; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }

  // Position of `dim`, or -1.
  int IndexOf(const Dim* dim) const {
    auto it = std::find(dims_.begin(), dims_.end(), dim);
    return it == dims_.end() ? -1 : static_cast<int>(it - dims_.begin());
  }
  bool Contains(const Dim* dim) const { return IndexOf(dim) >= 0; }
  bool ContainsAll(const SortedDimSet& other) const {
    return std::all_of(other.begin(), other.end(),
                       [&](const Dim* dim) { return Contains(dim); });
  }
  bool Intersects(const SortedDimSet& other) const {
    return std::any_of(other.begin(), other.end(),
                       [&](const Dim* dim) { return Contains(dim); });
  }

  // Returns false (and leaves the set unchanged) if `dim` is present.
  bool Insert(const Dim* dim) {
    if (Contains(dim)) return false;
    dims_.insert(std::upper_bound(dims_.begin(), dims_.end(), dim, ByOrder),
                 dim);
    return true;
  }
  void Erase(const Dim* dim) {
    dims_.erase(std::remove(dims_.begin(), dims_.end(), dim), dims_.end());
  }

  SortedDimSet Union(const SortedDimSet& other) const {
    SortedDimSet result = *this;
    for (const Dim* dim : other) result.Insert(dim);
    return result;
  }
  SortedDimSet Minus(const SortedDimSet& other) const {
    return Filter([&](const Dim* dim) { return !other.Contains(dim); });
  }
  SortedDimSet Intersect(const SortedDimSet& other) const {
    return Filter([&](const Dim* dim) { return other.Contains(dim); });
  }

  bool operator==(const SortedDimSet& other) const {
    return dims_ == other.dims_;
  }
  bool operator!=(const SortedDimSet& other) const {
    return dims_ != other.dims_;
  }

 private:
  static bool ByOrder(const Dim* a, const Dim* b) {
    return a->order < b->order;
  }

  // The dims that satisfy `keep`, still in order.
  template <typename Pred>
  SortedDimSet Filter(Pred keep) const {
    SortedDimSet result;
    for (const Dim* dim : dims_)
      if (keep(dim)) result.dims_.push_back(dim);
    return result;
  }

  llvm::SmallVector<const Dim*, 4> dims_;
};

}  // namespace delta
