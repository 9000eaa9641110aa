// Ops that read or write at computed positions: gather, which reads an
// array at index arrays, and scatter_add, which sums values into the
// positions they name; both check every position against its dim.
#include <utility>

#include "compiler/codegen/interpreter/evaluator.h"
#include "compiler/ir/scalar_eval.h"

namespace delta::interpreter {
namespace {

// The index arrays of a gather or scatter_add, each spread over the points
// walked, with the stride and the size of the dim it selects.
struct IndexArrays {
  std::vector<Tensor> indices;
  std::vector<int64_t> strides;
  std::vector<int64_t> sizes;

  void Add(Tensor index, int64_t stride, int64_t size) {
    indices.push_back(std::move(index));
    strides.push_back(stride);
    sizes.push_back(size);
  }

  // `offset` moved to the positions the indices hold at `element`. Indices
  // made by an unchecked convert may be out of range.
  Expected<int64_t> Offset(int64_t offset, int64_t element,
                           const Loc& loc) const {
    for (size_t k = 0; k < indices.size(); ++k) {
      int64_t position = indices[k].ints[element];
      if (position < 0 || position >= sizes[k])
        return LocatedError(loc, "index " + std::to_string(position) +
                                     " is out of range for dim " +
                                     indices[k].index_dim->name + " of size " +
                                     std::to_string(sizes[k]));
      offset += position * strides[k];
    }
    return offset;
  }
};

}  // namespace

Error Evaluator::RunGather(const Op& op) {
  if (op.operands.empty() || op.results.size() != 1)
    return InternalError(op, "needs an array and indices");
  const Tensor& x = Get(op.operands[0]);
  const Type& type = op.results[0]->type;
  Expected<Tensor> result = New(type, op.loc);
  if (!result) return result.takeError();
  std::vector<int64_t> x_strides = StridesOf(x.shape);
  // Each index array, broadcast to the result's dims, and where it reads x.
  IndexArrays indices;
  std::vector<bool> indexed(x.dims.size());
  for (size_t k = 1; k < op.operands.size(); ++k) {
    const Tensor& index = Get(op.operands[k]);
    int p = x.dims.IndexOf(index.index_dim);
    if (index.elem != ElemKind::Index || p < 0 || indexed[p])
      return InternalError(op, "each index must select a distinct dim of x");
    indexed[p] = true;
    Expected<Tensor> spread =
        ExtractAs(index, op.operands[k]->type.WithDims(type.dims), op.loc);
    if (!spread) return spread.takeError();
    indices.Add(std::move(*spread), x_strides[p], x.shape[p]);
  }
  // The dims of x that are not indexed are read at the result's coordinates.
  std::vector<int64_t> strides(type.dims.size(), 0);
  for (size_t p = 0; p < x.dims.size(); ++p) {
    if (indexed[p]) continue;
    int i = type.dims.IndexOf(x.dims[p]);
    if (i < 0 || result->shape[i] != x.shape[p])
      return InternalError(
          op, "dim " + x.dims[p]->name + " does not match the result");
    strides[i] = x_strides[p];
  }
  int64_t element = 0;
  for (Walk walk(result->shape, strides); !walk.done(); walk.Next()) {
    Expected<int64_t> offset = indices.Offset(walk.offset(), element, op.loc);
    if (!offset) return offset.takeError();
    CopyElement(*result, element++, x, *offset);
  }
  return SetResults(op, {std::move(*result)});
}

Error Evaluator::RunScatterAdd(const Op& op) {
  if (op.operands.size() < 2 || op.results.size() != 1)
    return InternalError(op, "needs values, indices and one result");
  const Tensor& values = Get(op.operands[0]);
  const Type& type = op.results[0]->type;
  if (!Supports(OpKind::Add, values.elem) || type.elem != values.elem)
    return InternalError(op, "not defined on " + ElemName(values.elem).str());
  // Every point of the values' and the indices' dims adds one element.
  DimList space = op.operands[0]->type.dims;
  DimList indexed;
  for (size_t k = 1; k < op.operands.size(); ++k) {
    const Type& index = op.operands[k]->type;
    if (index.elem != ElemKind::Index || indexed.Contains(index.index_dim) ||
        !type.dims.Contains(index.index_dim))
      return InternalError(op, "each index must select a distinct result dim");
    indexed.Insert(index.index_dim);
    space = space.Union(index.dims);
  }
  // The sums live on the indexed dims and the result dims that the values
  // have; the result is constant along its other dims (a broadcast).
  DimList core;
  for (const Dim* dim : type.dims)
    if (indexed.Contains(dim) || space.Contains(dim)) core.Insert(dim);
  Expected<Tensor> sums = New(type.WithDims(core), op.loc);
  if (!sums) return sums.takeError();
  Expected<Tensor> spread_values =
      ExtractAs(values, op.operands[0]->type.WithDims(space), op.loc);
  if (!spread_values) return spread_values.takeError();
  std::vector<int64_t> sum_strides = StridesOf(sums->shape);
  IndexArrays indices;
  for (size_t k = 1; k < op.operands.size(); ++k) {
    Expected<Tensor> spread = ExtractAs(
        Get(op.operands[k]), op.operands[k]->type.WithDims(space), op.loc);
    if (!spread) return spread.takeError();
    int p = core.IndexOf(spread->index_dim);
    indices.Add(std::move(*spread), sum_strides[p], sums->shape[p]);
  }
  std::vector<int64_t> strides(space.size(), 0);
  for (size_t p = 0; p < core.size(); ++p) {
    if (indexed.Contains(core[p])) continue;
    int i = space.IndexOf(core[p]);
    if (spread_values->shape[i] != sums->shape[p])
      return InternalError(
          op, "dim " + core[p]->name + " does not match the result");
    strides[i] = sum_strides[p];
  }
  int64_t element = 0;
  for (Walk walk(spread_values->shape, strides); !walk.done(); walk.Next()) {
    Expected<int64_t> found = indices.Offset(walk.offset(), element, op.loc);
    if (!found) return found.takeError();
    int64_t offset = *found;
    if (sums->HasFloatStorage())
      sums->floats[offset] =
          RoundTo(Precision(sums->elem),
                  sums->floats[offset] + spread_values->floats[element]);
    else
      sums->ints[offset] =
          *IntBinary(OpKind::Add, sums->elem, sums->ints[offset],
                     spread_values->ints[element]);
    ++element;
  }
  Expected<Tensor> result = ExtractAs(*sums, type, op.loc);
  if (!result) return result.takeError();
  return SetResults(op, {std::move(*result)});
}

}  // namespace delta::interpreter
