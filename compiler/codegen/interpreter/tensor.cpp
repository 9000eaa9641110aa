// Tensors and their element access: the dense storage of run-time values,
// reading a tensor by dim name at a point and broadcast to another type
// (Extract, which also relabels dims for renames and calls), writing a piece
// back (Insert), and the §7 text of a value.
#include <utility>

#include "compiler/codegen/interpreter/evaluator.h"
#include "compiler/ir/scalar_eval.h"
#include "runtime/format.h"

namespace delta::interpreter {

namespace {

static_assert(static_cast<int>(ElemKind::F32) == DELTA_ELEM_F32 &&
                  static_cast<int>(ElemKind::F64) == DELTA_ELEM_F64 &&
                  static_cast<int>(ElemKind::I32) == DELTA_ELEM_I32 &&
                  static_cast<int>(ElemKind::I64) == DELTA_ELEM_I64 &&
                  static_cast<int>(ElemKind::Bool) == DELTA_ELEM_BOOL &&
                  static_cast<int>(ElemKind::Index) == DELTA_ELEM_INDEX,
              "runtime/format.h numbers element kinds as ir::ElemKind");

// No tensor may exceed 8 GiB (2^30 elements of 8 bytes): a huge run-time
// size is reported instead of exhausting memory.
constexpr int64_t kMaxElements = int64_t{1} << 30;

}  // namespace

std::vector<int64_t> StridesOf(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

Point PointOf(const DimList& dims, const std::vector<int64_t>& coords) {
  Point point;
  for (size_t i = 0; i < dims.size(); ++i)
    point.emplace_back(dims[i], coords[i]);
  return point;
}

std::optional<int64_t> Lookup(const Point& point, const Dim* dim) {
  for (const auto& [d, coord] : point)
    if (d == dim) return coord;
  return std::nullopt;
}

void CopyElement(Tensor& to, int64_t to_offset, const Tensor& from,
                 int64_t from_offset) {
  if (to.HasFloatStorage())
    to.floats[to_offset] = from.floats[from_offset];
  else
    to.ints[to_offset] = from.ints[from_offset];
}

Expected<Tensor> Allocate(const Type& type, std::vector<int64_t> shape,
                          const Loc& loc) {
  int64_t count = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0)
      return LocatedError(loc, "size " + std::to_string(shape[i]) + " of dim " +
                                   type.dims[i]->name + " is negative");
    if (shape[i] > 0 && count > kMaxElements / shape[i])
      return LocatedError(loc, "an array of type " + TypeString(type) +
                                   " would exceed the 8 GiB limit");
    count *= shape[i];
  }
  Tensor tensor;
  tensor.elem = type.elem;
  tensor.index_dim = type.index_dim;
  tensor.dims = type.dims;
  tensor.shape = std::move(shape);
  if (tensor.HasFloatStorage())
    tensor.floats.assign(count, 0.0);
  else
    tensor.ints.assign(count, 0);
  return tensor;
}

Expected<Tensor> Extract(const Tensor& tensor, const Point& point,
                         const Type& want, std::vector<int64_t> want_shape,
                         const DimMap* source_of, const Loc& loc) {
  if (tensor.elem != want.elem)
    return LocatedError(loc, "internal error: a value of type " +
                                 TypeString(tensor.GetType()) + " where " +
                                 TypeString(want) + " was expected");
  std::vector<int64_t> tensor_strides = StridesOf(tensor.shape);
  std::vector<bool> used(tensor.dims.size());
  std::vector<int64_t> strides(want.dims.size(), 0);
  for (size_t i = 0; i < want.dims.size(); ++i) {
    const Dim* source = want.dims[i];
    if (source_of) {
      auto it = source_of->find(source);
      if (it != source_of->end()) source = it->second;
    }
    int p = tensor.dims.IndexOf(source);
    if (p < 0) continue;
    if (used[p])
      return LocatedError(
          loc, "internal error: dim " + source->name + " is read twice");
    if (tensor.shape[p] != want_shape[i])
      return LocatedError(loc,
                          "size mismatch: dim " + source->name + " has size " +
                              std::to_string(tensor.shape[p]) + " where dim " +
                              want.dims[i]->name + " has size " +
                              std::to_string(want_shape[i]));
    strides[i] = tensor_strides[p];
    used[p] = true;
  }
  int64_t base = 0;
  for (size_t p = 0; p < tensor.dims.size(); ++p) {
    if (used[p]) continue;
    std::optional<int64_t> coord = Lookup(point, tensor.dims[p]);
    if (!coord)
      return LocatedError(loc, "internal error: dim " + tensor.dims[p]->name +
                                   " of " + TypeString(tensor.GetType()) +
                                   " is missing from " + TypeString(want));
    if (*coord < 0 || *coord >= tensor.shape[p])
      return LocatedError(loc, "index " + std::to_string(*coord) +
                                   " is out of range for dim " +
                                   tensor.dims[p]->name + " of size " +
                                   std::to_string(tensor.shape[p]));
    base += *coord * tensor_strides[p];
  }
  Expected<Tensor> result = Allocate(want, std::move(want_shape), loc);
  if (!result) return result.takeError();
  int64_t element = 0;
  for (Walk walk(result->shape, strides); !walk.done(); walk.Next())
    CopyElement(*result, element++, tensor, base + walk.offset());
  return result;
}

Error Insert(Tensor& into, const Tensor& piece, const Point& point,
             const Loc& loc) {
  if (into.elem != piece.elem)
    return LocatedError(loc, "internal error: inserting " +
                                 TypeString(piece.GetType()) + " into " +
                                 TypeString(into.GetType()));
  std::vector<int64_t> into_strides = StridesOf(into.shape);
  int64_t base = 0;
  std::vector<int64_t> strides;
  for (size_t p = 0; p < into.dims.size(); ++p) {
    int i = piece.dims.IndexOf(into.dims[p]);
    std::optional<int64_t> coord = Lookup(point, into.dims[p]);
    if (i >= 0 && !coord) {
      if (piece.shape[i] != into.shape[p])
        return LocatedError(loc, "size mismatch: dim " + into.dims[p]->name +
                                     " has size " +
                                     std::to_string(piece.shape[i]) + " and " +
                                     std::to_string(into.shape[p]));
      continue;
    }
    if (i >= 0 || !coord || *coord < 0 || *coord >= into.shape[p])
      return LocatedError(loc, "internal error: cannot place " +
                                   TypeString(piece.GetType()) + " in " +
                                   TypeString(into.GetType()));
    base += *coord * into_strides[p];
  }
  for (const Dim* dim : piece.dims) {
    int p = into.dims.IndexOf(dim);
    if (p < 0)
      return LocatedError(loc, "internal error: dim " + dim->name +
                                   " is missing from " +
                                   TypeString(into.GetType()));
    strides.push_back(into_strides[p]);
  }
  int64_t element = 0;
  for (Walk walk(piece.shape, strides); !walk.done(); walk.Next())
    CopyElement(into, base + walk.offset(), piece, element++);
  return Error::success();
}

Tensor Tensor::Float(ElemKind elem, double value) {
  Tensor tensor;
  tensor.elem = elem;
  tensor.floats = {RoundTo(elem, value)};
  return tensor;
}

Tensor Tensor::Int(ElemKind elem, int64_t value) {
  Tensor tensor;
  tensor.elem = elem;
  tensor.ints = {WrapTo(elem, static_cast<uint64_t>(value))};
  return tensor;
}

Tensor Tensor::Bool(bool value) { return Int(ElemKind::Bool, value); }

Tensor Tensor::Index(const Dim* dim, int64_t position) {
  Tensor tensor = Int(ElemKind::Index, position);
  tensor.index_dim = dim;
  return tensor;
}

Tensor Tensor::FloatArray(ElemKind elem, DimList dims,
                          std::vector<int64_t> shape,
                          std::vector<double> values) {
  Tensor tensor;
  tensor.elem = elem;
  tensor.dims = std::move(dims);
  tensor.shape = std::move(shape);
  for (double& value : values) value = RoundTo(elem, value);
  tensor.floats = std::move(values);
  return tensor;
}

Tensor Tensor::IntArray(ElemKind elem, DimList dims, std::vector<int64_t> shape,
                        std::vector<int64_t> values, const Dim* index_dim) {
  Tensor tensor;
  tensor.elem = elem;
  tensor.index_dim = index_dim;
  tensor.dims = std::move(dims);
  tensor.shape = std::move(shape);
  for (int64_t& value : values)
    value = WrapTo(elem, static_cast<uint64_t>(value));
  tensor.ints = std::move(values);
  return tensor;
}

std::string FormatTensor(const Tensor& tensor) {
  // The runtime formats the memory layout of compiled code, so the
  // interpreter's wider storage is narrowed first.
  std::vector<float> f32;
  std::vector<int32_t> i32;
  std::vector<unsigned char> bytes;
  const void* data = nullptr;
  switch (tensor.elem) {
    case ElemKind::F32:
      f32.assign(tensor.floats.begin(), tensor.floats.end());
      data = f32.data();
      break;
    case ElemKind::F64:
      data = tensor.floats.data();
      break;
    case ElemKind::I32:
      i32.assign(tensor.ints.begin(), tensor.ints.end());
      data = i32.data();
      break;
    case ElemKind::Bool:
      for (int64_t value : tensor.ints) bytes.push_back(value != 0);
      data = bytes.data();
      break;
    case ElemKind::I64:
    case ElemKind::Index:
      data = tensor.ints.data();
      break;
  }
  if (tensor.NumElements() == 0 && tensor.dims.empty()) return "?";
  std::vector<const char*> names;
  for (const Dim* dim : tensor.dims) names.push_back(dim->name.c_str());
  return runtime::FormatArray(static_cast<int>(tensor.elem), data,
                              static_cast<int64_t>(tensor.shape.size()),
                              tensor.shape.data(), names.data(),
                              /*for_print=*/true);
}

}  // namespace delta::interpreter
