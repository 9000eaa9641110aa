// Executes IR op by op on dense tensors, with the semantics of ops.def and
// docs/internals/ir.md; see docs/internals/interpreter.md for the design.
#include "compiler/codegen/interpreter/interpreter.h"

#include <llvm/ADT/DenseMap.h>

#include <cmath>
#include <limits>
#include <new>
#include <optional>
#include <unordered_map>
#include <utility>

#include "compiler/ir/scalar_eval.h"
#include "runtime/format.h"
#include "runtime/npy.h"

namespace delta::interpreter {

using ir::Block;
using ir::Dim;
using ir::DimList;
using ir::ElemKind;
using ir::Function;
using ir::Loc;
using ir::Module;
using ir::Op;
using ir::OpKind;
using ir::PrintItem;
using ir::ReduceKind;
using ir::Type;
using ir::Value;

namespace {

using llvm::Error;
using llvm::Expected;

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
// The language has no recursion; this only stops malformed IR.
constexpr int kMaxCallDepth = 1000;

// Coordinates fixed for some dims (a point of a map, a reduction, ...).
using Point = std::vector<std::pair<const Dim*, int64_t>>;
// Renames for Extract: the dim of the source read along a dim of the target.
using DimMap = llvm::DenseMap<const Dim*, const Dim*>;

Error LocatedError(const Loc& loc, const std::string& message) {
  std::string prefix = "error: ";
  if (loc.IsValid())
    prefix = loc.file + ":" + std::to_string(loc.line) + ":" +
             std::to_string(loc.column) + ": error: ";
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 prefix + message);
}

Error InternalError(const Op& op, const std::string& message) {
  return LocatedError(
      op.loc, "internal error: " + OpMnemonic(op.kind).str() + ": " + message);
}

// Row-major strides of a shape.
std::vector<int64_t> StridesOf(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

// Visits every point of `shape` in row-major order, keeping the offset
// `sum(coordinate * stride)` of one strided tensor.
class Walk {
 public:
  Walk(const std::vector<int64_t>& shape, std::vector<int64_t> strides)
      : shape_(shape), strides_(std::move(strides)), coords_(shape.size()) {
    for (int64_t size : shape_)
      if (size == 0) done_ = true;
  }
  bool done() const { return done_; }
  int64_t offset() const { return offset_; }
  const std::vector<int64_t>& coords() const { return coords_; }
  void Next() {
    for (size_t d = shape_.size(); d-- > 0;) {
      ++coords_[d];
      offset_ += strides_[d];
      if (coords_[d] < shape_[d]) return;
      offset_ -= strides_[d] * shape_[d];
      coords_[d] = 0;
    }
    done_ = true;
  }

 private:
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  std::vector<int64_t> coords_;
  int64_t offset_ = 0;
  bool done_ = false;
};

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

// `tensor` read at `point` along the dims that `want` lacks and broadcast
// along the dims of `want` that it lacks; `source_of` (if given) names the
// dim of `tensor` read along a dim of `want` (renames, calls).
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

// Writes `piece` into `into` at `point` (the inverse of Extract).
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

// Folds a stream of elements for reduce.KIND.
class Fold {
 public:
  Fold(ReduceKind kind, ElemKind elem) : kind_(kind), elem_(elem) {
    double inf = std::numeric_limits<double>::infinity();
    int64_t int_min =
        elem == ElemKind::I32    ? std::numeric_limits<int32_t>::min()
        : elem == ElemKind::Bool ? 0
                                 : std::numeric_limits<int64_t>::min();
    int64_t int_max =
        elem == ElemKind::I32    ? std::numeric_limits<int32_t>::max()
        : elem == ElemKind::Bool ? 1
                                 : std::numeric_limits<int64_t>::max();
    switch (kind) {
      case ReduceKind::Sum:
        f_ = 0, i_ = 0;
        break;
      case ReduceKind::Prod:
        f_ = 1, i_ = 1;
        break;
      case ReduceKind::Max:
        f_ = -inf, i_ = int_min;
        break;
      case ReduceKind::Min:
        f_ = inf, i_ = int_max;
        break;
      default:
        break;
    }
  }

  void Add(const Tensor& t, int64_t offset, int64_t position) {
    bool is_float = t.HasFloatStorage();
    double f = is_float ? t.floats[offset] : 0;
    int64_t i = is_float ? 0 : t.ints[offset];
    switch (kind_) {
      case ReduceKind::Sum:
      case ReduceKind::Prod:
        if (is_float) {
          f_ = RoundTo(elem_, kind_ == ReduceKind::Sum ? f_ + f : f_ * f);
        } else {
          OpKind op = kind_ == ReduceKind::Sum ? OpKind::Add : OpKind::Mul;
          i_ = *IntBinary(op, elem_, i_, i);
        }
        break;
      case ReduceKind::Max:
      case ReduceKind::Min: {
        OpKind op = kind_ == ReduceKind::Max ? OpKind::Max : OpKind::Min;
        if (is_float)
          f_ = FloatBinary(op, f_, f);
        else
          i_ = *IntBinary(op, elem_, i_, i);
        break;
      }
      case ReduceKind::Argmax:
      case ReduceKind::Argmin: {
        // The first NaN wins (NaN propagates); ties keep the lowest index.
        bool better;
        bool want_max = kind_ == ReduceKind::Argmax;
        if (position_ < 0) {
          better = true;
        } else if (is_float) {
          better = !std::isnan(f_) &&
                   (std::isnan(f) || (want_max ? f > f_ : f < f_));
        } else {
          better = want_max ? i > i_ : i < i_;
        }
        if (better) f_ = f, i_ = i, position_ = position;
        break;
      }
    }
  }

  bool empty_arg() const { return position_ < 0; }
  void Store(Tensor& into, int64_t offset) const {
    if (kind_ == ReduceKind::Argmax || kind_ == ReduceKind::Argmin)
      into.ints[offset] = position_;
    else if (into.HasFloatStorage())
      into.floats[offset] = f_;
    else
      into.ints[offset] = i_;
  }

 private:
  ReduceKind kind_;
  ElemKind elem_;
  double f_ = 0;
  int64_t i_ = 0;
  int64_t position_ = -1;
};

}  // namespace

// --- Tensors ----------------------------------------------------------------

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
                              tensor.shape.data(), names.data());
}

// --- Evaluation -------------------------------------------------------------

// Runs one function call: its values and the sizes of its local dims.
class Evaluator {
 public:
  explicit Evaluator(Interpreter& interpreter) : interpreter_(interpreter) {}

  Expected<std::vector<Tensor>> Call(const Function& function,
                                     std::vector<Tensor> args);

 private:
  Expected<int64_t> DimSize(const Dim* dim, const Loc& loc);
  Expected<std::vector<int64_t>> ShapeOf(const DimList& dims, const Loc& loc);
  Expected<Tensor> New(const Type& type, const Loc& loc);
  // `tensor` broadcast to `type` (sizes from this frame), read at `point`.
  Expected<Tensor> ExtractAs(const Tensor& tensor, const Type& type,
                             const Loc& loc, const Point& point = {});
  const Tensor& Get(const Value* value) { return values_[value]; }
  // The element kind whose precision `elem`'s arithmetic uses: F64 for F32
  // under InterpreterOptions::f32_as_f64, otherwise `elem` itself.
  ElemKind Precision(ElemKind elem) const {
    return elem == ElemKind::F32 && interpreter_.options_.f32_as_f64
               ? ElemKind::F64
               : elem;
  }
  Expected<std::vector<Tensor>> RunBlock(const Block& block,
                                         std::vector<Tensor> args);
  Expected<Tensor> RunScalarRegion(const Op& op, const Block& block,
                                   std::vector<Tensor> args);

  Error RunOp(const Op& op);
  // Every array `op` computes is within DELTA_MAX_ELEMENTS (runtime/format.h),
  // checked before it runs, as compiled code does.
  Error CheckResultSizes(const Op& op);
  Error RunUnary(const Op& op);
  Error RunBinary(const Op& op);
  Error RunOther(const Op& op);
  Error RunConvert(const Op& op);
  Error RunTernary(const Op& op);  // select
  Error RunConst(const Op& op);
  Error RunToIndex(const Op& op);
  Error RunRename(const Op& op);
  Error RunGather(const Op& op);
  Error RunScatterAdd(const Op& op);
  Error RunReduce(const Op& op);
  Error RunReduceCustom(const Op& op);
  Error RunCumsum(const Op& op);
  Error RunMap(const Op& op);
  Error RunLoop(const Op& op);
  Error RunWhile(const Op& op);
  Error RunIf(const Op& op);
  Error RunCall(const Op& op);
  Error RunPrint(const Op& op);
  Error RunNpy(const Op& op);
  Error SetResults(const Op& op, std::vector<Tensor> results);

  Interpreter& interpreter_;
  // Node-based, so that a reference to a value stays valid while regions
  // add values (a loop holds its bounds while running its body).
  std::unordered_map<const Value*, Tensor> values_;
  llvm::DenseMap<const Dim*, int64_t> dim_sizes_;
};

Expected<int64_t> Evaluator::DimSize(const Dim* dim, const Loc& loc) {
  if (dim->constant) return *dim->constant;
  auto it = dim_sizes_.find(dim);
  if (it != dim_sizes_.end()) return it->second;
  auto value = values_.find(dim->size);
  if (dim->size && value != values_.end() &&
      value->second.elem == ElemKind::I64 && value->second.ints.size() == 1)
    return value->second.ints[0];
  return LocatedError(loc, "internal error: the size of dim " + dim->name +
                               " is not known here");
}

Expected<std::vector<int64_t>> Evaluator::ShapeOf(const DimList& dims,
                                                  const Loc& loc) {
  std::vector<int64_t> shape;
  for (const Dim* dim : dims) {
    Expected<int64_t> size = DimSize(dim, loc);
    if (!size) return size.takeError();
    shape.push_back(*size);
  }
  return shape;
}

Expected<Tensor> Evaluator::New(const Type& type, const Loc& loc) {
  Expected<std::vector<int64_t>> shape = ShapeOf(type.dims, loc);
  if (!shape) return shape.takeError();
  return Allocate(type, std::move(*shape), loc);
}

Expected<Tensor> Evaluator::ExtractAs(const Tensor& tensor, const Type& type,
                                      const Loc& loc, const Point& point) {
  Expected<std::vector<int64_t>> shape = ShapeOf(type.dims, loc);
  if (!shape) return shape.takeError();
  return Extract(tensor, point, type, std::move(*shape), nullptr, loc);
}

Expected<std::vector<Tensor>> Interpreter::Call(const Function& function,
                                                std::vector<Tensor> args,
                                                const Loc& loc) {
  // The interpreter recurses on the host's stack: a chain of calls deeper
  // than this is a located error (compiled code runs it).
  if (call_depth_ >= kMaxCallDepth)
    return LocatedError(
        loc, "calls nest deeper than " + std::to_string(kMaxCallDepth) +
                 " in the interpreter (compiled code has no such limit)");
  ++call_depth_;
  Evaluator evaluator(*this);
  auto results = evaluator.Call(function, std::move(args));
  --call_depth_;
  return results;
}

Expected<std::vector<Tensor>> Evaluator::Call(const Function& function,
                                              std::vector<Tensor> args) {
  size_t sizes = function.size_params.size();
  if (args.size() != sizes + function.params.size() ||
      function.dims.size() < sizes)
    return LocatedError(
        {}, "@" + function.name + " takes " + std::to_string(sizes) +
                " sizes and " + std::to_string(function.params.size()) +
                " arguments, given " + std::to_string(args.size()) + " in all");
  for (size_t k = 0; k < sizes; ++k) {
    const Tensor& size = args[k];
    if (size.elem != ElemKind::I64 || size.ints.size() != 1)
      return LocatedError({}, "the size of " + function.dims[k]->name +
                                  " must be an i64 scalar");
    if (size.ints[0] < 0)
      return LocatedError({}, "size " + std::to_string(size.ints[0]) +
                                  " of dim " + function.dims[k]->name +
                                  " is negative");
    dim_sizes_[function.dims[k]] = size.ints[0];
    values_[function.size_params[k]] = size;
  }
  std::vector<Tensor> params;
  for (size_t i = 0; i < function.params.size(); ++i) {
    // Checks the argument's dims and sizes against the parameter's type.
    Expected<Tensor> param =
        ExtractAs(args[sizes + i], function.params[i]->type, {});
    if (!param) return param.takeError();
    params.push_back(std::move(*param));
  }
  auto results = RunBlock(*function.body, std::move(params));
  if (!results) return results.takeError();
  if (results->size() != function.result_types.size())
    return LocatedError({}, "internal error: @" + function.name +
                                " returns the wrong number of values");
  return results;
}

Expected<std::vector<Tensor>> Evaluator::RunBlock(const Block& block,
                                                  std::vector<Tensor> args) {
  if (args.size() != block.args.size())
    return LocatedError({}, "internal error: a block takes " +
                                std::to_string(block.args.size()) +
                                " arguments, given " +
                                std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    values_[block.args[i]] = std::move(args[i]);
  const Op* terminator = block.terminator();
  if (!terminator ||
      (terminator->kind != OpKind::Yield && terminator->kind != OpKind::Return))
    return LocatedError({}, "internal error: a block without terminator");
  for (const auto& op : block.ops) {
    if (op.get() == terminator) break;
    // The host running out of memory is the program's run-time error, at
    // the innermost op that was running (as in compiled code).
    try {
      if (Error error = RunOp(*op)) return std::move(error);
    } catch (const std::bad_alloc&) {
      return LocatedError(op->loc, "out of memory running this operation");
    }
  }
  interpreter_.executed_kinds_.insert(terminator->kind);
  std::vector<Tensor> results;
  for (const Value* value : terminator->operands) {
    if (!values_.count(value))
      return InternalError(*terminator, "a value is used before it is defined");
    results.push_back(values_[value]);
  }
  // A region's values die with it; forgetting them bounds the memory of
  // long loops.
  if (block.parent) {
    for (const Value* arg : block.args) values_.erase(arg);
    for (const auto& op : block.ops)
      for (const Value* result : op->results) values_.erase(result);
  }
  return results;
}

Expected<Tensor> Evaluator::RunScalarRegion(const Op& op, const Block& block,
                                            std::vector<Tensor> args) {
  auto results = RunBlock(block, std::move(args));
  if (!results) return results.takeError();
  if (results->size() != 1)
    return InternalError(op, "the region must yield one value");
  return std::move((*results)[0]);
}

Error Evaluator::SetResults(const Op& op, std::vector<Tensor> results) {
  if (results.size() != op.results.size())
    return InternalError(op, "wrong number of results");
  for (size_t i = 0; i < results.size(); ++i)
    values_[op.results[i]] = std::move(results[i]);
  return Error::success();
}

Error Evaluator::RunOp(const Op& op) {
  interpreter_.executed_kinds_.insert(op.kind);
  for (const Value* operand : op.operands)
    if (!values_.count(operand))
      return InternalError(op, "an operand is used before it is defined");
  if (Error error = CheckResultSizes(op)) return error;
  switch (op.kind) {
#define DELTA_OP(Name, mnemonic, Arity, ...) \
  case OpKind::Name:                         \
    return Run##Arity(op);
#include "compiler/ir/ops.def"
  }
  return InternalError(op, "unknown op");
}

Error Evaluator::CheckResultSizes(const Op& op) {
  for (const Value* result : op.results) {
    const Type& type = result->type;
    if (type.dims.empty()) continue;
    std::vector<int64_t> shape;
    for (const Dim* dim : type.dims) {
      Expected<int64_t> size = DimSize(dim, op.loc);
      if (!size) {  // left to the op, which reports it
        llvm::consumeError(size.takeError());
        return Error::success();
      }
      shape.push_back(*size);
    }
    int64_t count = 0;
    if (delta_element_count(static_cast<int64_t>(shape.size()), shape.data(),
                            &count) != 0)
      return LocatedError(op.loc, "an array of type " + TypeString(type) +
                                      " would exceed the limit of " +
                                      DELTA_MAX_ELEMENTS_TEXT " elements");
  }
  return Error::success();
}

Error Evaluator::RunUnary(const Op& op) {
  if (op.kind == OpKind::Convert) return RunConvert(op);
  if (op.operands.size() != 1 || op.results.size() != 1)
    return InternalError(op, "needs one operand and one result");
  const Tensor& x = Get(op.operands[0]);
  if (!Supports(op.kind, x.elem))
    return InternalError(op, "not defined on " + ElemName(x.elem).str());
  Tensor result = x;
  if (Precision(x.elem) == ElemKind::F32) {
    for (double& value : result.floats)
      value = FloatUnary(op.kind, static_cast<float>(value));
  } else if (IsFloat(x.elem)) {
    for (double& value : result.floats) value = FloatUnary(op.kind, value);
  } else {
    for (int64_t& value : result.ints) value = IntUnary(op.kind, x.elem, value);
  }
  return SetResults(op, {std::move(result)});
}

Error Evaluator::RunConvert(const Op& op) {
  if (op.operands.size() != 1 || op.results.size() != 1)
    return InternalError(op, "needs one operand and one result");
  const Tensor& x = Get(op.operands[0]);
  const Type& type = op.results[0]->type;
  Expected<Tensor> result = Allocate(type, x.shape, op.loc);
  if (!result) return result.takeError();
  for (size_t i = 0; i < x.NumElements(); ++i) {
    double f = x.HasFloatStorage() ? x.floats[i] : 0;
    int64_t n = x.HasFloatStorage() ? 0 : x.ints[i];
    double* f_out = result->HasFloatStorage() ? &result->floats[i] : nullptr;
    int64_t* i_out = result->HasFloatStorage() ? nullptr : &result->ints[i];
    double f_unused;
    int64_t i_unused;
    ConvertElement(x.elem, Precision(type.elem), f, n,
                   f_out ? f_out : &f_unused, i_out ? i_out : &i_unused);
  }
  return SetResults(op, {std::move(*result)});
}

Error Evaluator::RunBinary(const Op& op) {
  if (op.operands.size() != 2 || op.results.size() != 1)
    return InternalError(op, "needs two operands and one result");
  const Type& type = op.results[0]->type;
  ElemKind elem = op.operands[0]->type.elem;
  if (!Supports(op.kind, elem) || Get(op.operands[1]).elem != elem)
    return InternalError(op, "not defined on " + ElemName(elem).str());
  // Lifting by name: each operand is read at the coordinates of its dims.
  Expected<Tensor> a = ExtractAs(
      Get(op.operands[0]), op.operands[0]->type.WithDims(type.dims), op.loc);
  if (!a) return a.takeError();
  Expected<Tensor> b = ExtractAs(
      Get(op.operands[1]), op.operands[1]->type.WithDims(type.dims), op.loc);
  if (!b) return b.takeError();
  Expected<Tensor> result = Allocate(type, a->shape, op.loc);
  if (!result) return result.takeError();
  bool boolean = type.elem == ElemKind::Bool;
  ElemKind precision = Precision(elem);
  for (size_t i = 0; i < a->NumElements(); ++i) {
    if (precision == ElemKind::F32) {
      auto x = static_cast<float>(a->floats[i]);
      auto y = static_cast<float>(b->floats[i]);
      if (boolean)
        result->ints[i] = Compare(op.kind, x, y);
      else
        result->floats[i] = FloatBinary(op.kind, x, y);
    } else if (precision == ElemKind::F64) {
      double x = a->floats[i];
      double y = b->floats[i];
      if (boolean)
        result->ints[i] = Compare(op.kind, x, y);
      else
        result->floats[i] = FloatBinary(op.kind, x, y);
    } else if (boolean) {
      result->ints[i] = Compare(op.kind, a->ints[i], b->ints[i]);
    } else {
      std::optional<int64_t> value =
          IntBinary(op.kind, elem, a->ints[i], b->ints[i]);
      if (!value) return LocatedError(op.loc, "integer division by zero");
      result->ints[i] = *value;
    }
  }
  return SetResults(op, {std::move(*result)});
}

Error Evaluator::RunOther(const Op& op) {
  switch (op.kind) {
    case OpKind::Const:
      return RunConst(op);
    case OpKind::Size:
    case OpKind::Iota: {
      if (op.dims.size() != 1) return InternalError(op, "needs one dim");
      Expected<int64_t> size = DimSize(op.dims[0], op.loc);
      if (!size) return size.takeError();
      if (op.kind == OpKind::Size)
        return SetResults(op, {Tensor::Int(ElemKind::I64, *size)});
      Expected<Tensor> iota = New(op.results[0]->type, op.loc);
      if (!iota) return iota.takeError();
      for (int64_t i = 0; i < *size; ++i) iota->ints[i] = i;
      return SetResults(op, {std::move(*iota)});
    }
    case OpKind::ToIndex:
      return RunToIndex(op);
    case OpKind::Broadcast: {
      Expected<Tensor> result =
          ExtractAs(Get(op.operands[0]), op.results[0]->type, op.loc);
      if (!result) return result.takeError();
      return SetResults(op, {std::move(*result)});
    }
    case OpKind::Rename:
      return RunRename(op);
    case OpKind::Gather:
      return RunGather(op);
    case OpKind::ScatterAdd:
      return RunScatterAdd(op);
    case OpKind::Reduce:
      return RunReduce(op);
    case OpKind::ReduceCustom:
      return RunReduceCustom(op);
    case OpKind::Cumsum:
      return RunCumsum(op);
    case OpKind::Map:
      return RunMap(op);
    case OpKind::Loop:
      return RunLoop(op);
    case OpKind::While:
      return RunWhile(op);
    case OpKind::If:
      return RunIf(op);
    case OpKind::Call:
      return RunCall(op);
    case OpKind::DimDef: {
      if (op.dims.size() != 1 || op.operands.size() != 1)
        return InternalError(op, "needs one dim and its size");
      const Tensor& size = Get(op.operands[0]);
      if (size.elem != ElemKind::I64 || size.ints.size() != 1)
        return InternalError(op, "the size must be an i64 scalar");
      if (size.ints[0] < 0)
        return LocatedError(op.loc, "size " + std::to_string(size.ints[0]) +
                                        " of dim " + op.dims[0]->name +
                                        " is negative");
      dim_sizes_[op.dims[0]] = size.ints[0];
      return Error::success();
    }
    case OpKind::Print:
      return RunPrint(op);
    case OpKind::ReadNpy:
    case OpKind::WriteNpy:
      return RunNpy(op);
    case OpKind::Yield:
    case OpKind::Return:
      return InternalError(op, "a terminator in the middle of a block");
      // RunOp sends elementwise ops to RunUnary, RunBinary and RunTernary;
      // listing them here keeps this switch exhaustive, so that a new op in
      // ops.def is a compile error until it is handled.
#define DELTA_OP_Unary(Name) case OpKind::Name:
#define DELTA_OP_Binary(Name) case OpKind::Name:
#define DELTA_OP_Ternary(Name) case OpKind::Name:
#define DELTA_OP_Other(Name)
#define DELTA_OP(Name, mnemonic, Arity, ...) DELTA_OP_##Arity(Name)
#include "compiler/ir/ops.def"
#undef DELTA_OP_Unary
#undef DELTA_OP_Binary
#undef DELTA_OP_Ternary
#undef DELTA_OP_Other
      return InternalError(op, "not an elementwise op");
  }
  return InternalError(op, "unknown op");
}

Error Evaluator::RunTernary(const Op& op) {
  if (op.operands.size() != 3 || op.results.size() != 1)
    return InternalError(op, "needs three operands");
  const Type& type = op.results[0]->type;
  Expected<Tensor> c = ExtractAs(
      Get(op.operands[0]), op.operands[0]->type.WithDims(type.dims), op.loc);
  if (!c) return c.takeError();
  Expected<Tensor> a = ExtractAs(Get(op.operands[1]), type, op.loc);
  if (!a) return a.takeError();
  Expected<Tensor> b = ExtractAs(Get(op.operands[2]), type, op.loc);
  if (!b) return b.takeError();
  for (size_t i = 0; i < c->ints.size(); ++i)
    if (!c->ints[i]) CopyElement(*a, i, *b, i);
  return SetResults(op, {std::move(*a)});
}

Error Evaluator::RunConst(const Op& op) {
  const Type& type = op.results[0]->type;
  if (IsFloat(type.elem)) {
    Tensor value = Tensor::Float(Precision(type.elem), op.float_value);
    value.elem = type.elem;
    return SetResults(op, {std::move(value)});
  }
  Tensor value = Tensor::Int(type.elem, op.int_value);
  value.index_dim = type.index_dim;
  return SetResults(op, {std::move(value)});
}

Error Evaluator::RunToIndex(const Op& op) {
  if (op.dims.size() != 1 || op.operands.size() != 1)
    return InternalError(op, "needs one dim and one operand");
  const Tensor& k = Get(op.operands[0]);
  if (k.HasFloatStorage()) return InternalError(op, "needs an integer");
  Expected<int64_t> size = DimSize(op.dims[0], op.loc);
  if (!size) return size.takeError();
  for (int64_t position : k.ints)
    if (position < 0 || position >= *size)
      return LocatedError(op.loc, "index " + std::to_string(position) +
                                      " is out of range for dim " +
                                      op.dims[0]->name + " of size " +
                                      std::to_string(*size));
  Tensor result = k;
  result.elem = ElemKind::Index;
  result.index_dim = op.dims[0];
  return SetResults(op, {std::move(result)});
}

Error Evaluator::RunRename(const Op& op) {
  if (op.dims.size() != 2 || op.operands.size() != 1)
    return InternalError(op, "needs two dims and one operand");
  const Dim* from = op.dims[0];
  const Dim* to = op.dims[1];
  Expected<int64_t> from_size = DimSize(from, op.loc);
  if (!from_size) return from_size.takeError();
  Expected<int64_t> to_size = DimSize(to, op.loc);
  if (!to_size) return to_size.takeError();
  if (*from_size != *to_size)
    return LocatedError(op.loc, "cannot rename dim " + from->name +
                                    " of size " + std::to_string(*from_size) +
                                    " to dim " + to->name + " of size " +
                                    std::to_string(*to_size));
  const Type& type = op.results[0]->type;
  Expected<std::vector<int64_t>> shape = ShapeOf(type.dims, op.loc);
  if (!shape) return shape.takeError();
  DimMap source_of;
  source_of[to] = from;
  Expected<Tensor> result = Extract(Get(op.operands[0]), {}, type,
                                    std::move(*shape), &source_of, op.loc);
  if (!result) return result.takeError();
  return SetResults(op, {std::move(*result)});
}

Error Evaluator::RunGather(const Op& op) {
  if (op.operands.empty() || op.results.size() != 1)
    return InternalError(op, "needs an array and indices");
  const Tensor& x = Get(op.operands[0]);
  const Type& type = op.results[0]->type;
  Expected<Tensor> result = New(type, op.loc);
  if (!result) return result.takeError();
  std::vector<int64_t> x_strides = StridesOf(x.shape);
  // Each index array, broadcast to the result's dims, and where it reads x.
  std::vector<Tensor> indices;
  std::vector<int64_t> index_strides;
  std::vector<int64_t> index_sizes;
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
    indices.push_back(std::move(*spread));
    index_strides.push_back(x_strides[p]);
    index_sizes.push_back(x.shape[p]);
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
    int64_t offset = walk.offset();
    for (size_t k = 0; k < indices.size(); ++k) {
      int64_t position = indices[k].ints[element];
      // Indices made by an unchecked convert may be out of range.
      if (position < 0 || position >= index_sizes[k])
        return LocatedError(op.loc, "index " + std::to_string(position) +
                                        " is out of range for dim " +
                                        indices[k].index_dim->name +
                                        " of size " +
                                        std::to_string(index_sizes[k]));
      offset += position * index_strides[k];
    }
    CopyElement(*result, element++, x, offset);
  }
  return SetResults(op, {std::move(*result)});
}

Error Evaluator::RunReduce(const Op& op) {
  if (op.results.size() != 1) return InternalError(op, "needs one result");
  const Type& type = op.results[0]->type;
  DimList reduced(op.dims);
  bool arg = op.reduce == ReduceKind::Argmax || op.reduce == ReduceKind::Argmin;
  if (arg && reduced.size() != 1)
    return InternalError(op, "argmax and argmin reduce one dim");
  bool fused = !op.regions.empty();
  if (fused ? !op.operands.empty() || op.regions.size() != 1
            : op.operands.size() != 1)
    return InternalError(op, "needs an operand or a region");
  const Op* yield = fused ? op.regions[0]->terminator() : nullptr;
  if (fused && (!yield || yield->operands.size() != 1))
    return InternalError(op, "the region must yield one value");
  const Type element_type = fused ? yield->operands[0]->type.WithDims({})
                                  : op.operands[0]->type.WithDims({});
  if (!arg && element_type.elem != type.elem)
    return InternalError(op, "changes the element type");
  if (!Supports(OpKind::Add, element_type.elem) &&
      (op.reduce == ReduceKind::Sum || op.reduce == ReduceKind::Prod))
    return InternalError(op,
                         "not defined on " + ElemName(element_type.elem).str());
  Expected<Tensor> result = New(type, op.loc);
  if (!result) return result.takeError();
  Expected<std::vector<int64_t>> reduced_shape = ShapeOf(reduced, op.loc);
  if (!reduced_shape) return reduced_shape.takeError();
  if (arg && (*reduced_shape)[0] == 0 && result->NumElements() > 0)
    return LocatedError(op.loc, ReduceName(op.reduce).str() +
                                    " over the empty dim " + reduced[0]->name);
  DimList all = type.dims.Union(reduced);
  int64_t element = 0;
  for (Walk outer(result->shape, StridesOf(result->shape)); !outer.done();
       outer.Next()) {
    Point point = PointOf(type.dims, outer.coords());
    Fold fold(op.reduce, Precision(element_type.elem));
    if (!fused) {
      // The slice of x at this point, over the reduced dims in index order.
      Expected<Tensor> slice =
          ExtractAs(Get(op.operands[0]), op.operands[0]->type.WithDims(reduced),
                    op.loc, point);
      if (!slice) return slice.takeError();
      for (size_t i = 0; i < slice->NumElements(); ++i)
        fold.Add(*slice, static_cast<int64_t>(i), static_cast<int64_t>(i));
    } else {
      int64_t position = 0;
      for (Walk inner(*reduced_shape, StridesOf(*reduced_shape)); !inner.done();
           inner.Next()) {
        // Region arguments: one index per dim, in canonical order.
        std::vector<Tensor> args;
        for (const Dim* dim : all) {
          std::optional<int64_t> coord = Lookup(point, dim);
          if (!coord) coord = inner.coords()[reduced.IndexOf(dim)];
          args.push_back(Tensor::Index(dim, *coord));
        }
        Expected<Tensor> value =
            RunScalarRegion(op, *op.regions[0], std::move(args));
        if (!value) return value.takeError();
        if (value->NumElements() != 1 || value->elem != element_type.elem)
          return InternalError(op, "the region must yield a scalar");
        fold.Add(*value, 0, position++);
      }
    }
    fold.Store(*result, element++);
  }
  return SetResults(op, {std::move(*result)});
}

Error Evaluator::RunReduceCustom(const Op& op) {
  if (op.dims.size() != 1 || op.operands.size() != 2 ||
      op.regions.size() != 1 || op.results.size() != 1 ||
      op.regions[0]->args.size() != 2)
    return InternalError(op, "needs a dim, init, x and a two-argument region");
  const Dim* dim = op.dims[0];
  const Type& type = op.results[0]->type;
  // The region folds values of its argument type; the dims of the result
  // that are not theirs are iterated here.
  const Type& acc_type = op.regions[0]->args[0]->type;
  const Type& elem_type = op.regions[0]->args[1]->type;
  DimList outer_dims = type.dims.Minus(acc_type.dims);
  Expected<Tensor> result = New(type, op.loc);
  if (!result) return result.takeError();
  Expected<std::vector<int64_t>> outer_shape = ShapeOf(outer_dims, op.loc);
  if (!outer_shape) return outer_shape.takeError();
  Expected<int64_t> size = DimSize(dim, op.loc);
  if (!size) return size.takeError();
  for (Walk outer(*outer_shape, StridesOf(*outer_shape)); !outer.done();
       outer.Next()) {
    Point point = PointOf(outer_dims, outer.coords());
    Expected<Tensor> init =
        ExtractAs(Get(op.operands[0]), acc_type, op.loc, point);
    if (!init) return init.takeError();
    Tensor acc = std::move(*init);
    point.emplace_back(dim, 0);
    for (int64_t k = 0; k < *size; ++k) {
      point.back().second = k;
      Expected<Tensor> x =
          ExtractAs(Get(op.operands[1]), elem_type, op.loc, point);
      if (!x) return x.takeError();
      Expected<Tensor> next =
          RunScalarRegion(op, *op.regions[0], {std::move(acc), std::move(*x)});
      if (!next) return next.takeError();
      acc = std::move(*next);
    }
    point.pop_back();
    if (Error error = Insert(*result, acc, point, op.loc)) return error;
  }
  return SetResults(op, {std::move(*result)});
}

Error Evaluator::RunCumsum(const Op& op) {
  if (op.dims.size() != 1 || op.operands.size() != 1)
    return InternalError(op, "needs one dim and one operand");
  const Tensor& x = Get(op.operands[0]);
  if (!Supports(OpKind::Add, x.elem))
    return InternalError(op, "not defined on " + ElemName(x.elem).str());
  int p = x.dims.IndexOf(op.dims[0]);
  if (p < 0) return InternalError(op, "scans a missing dim");
  Tensor result = x;
  std::vector<int64_t> strides = StridesOf(x.shape);
  // Every line along the dim starts at a point whose coordinate on it is 0.
  std::vector<int64_t> starts_shape = x.shape;
  starts_shape[p] = 1;
  for (Walk walk(starts_shape, strides); !walk.done(); walk.Next()) {
    for (int64_t k = 1; k < x.shape[p]; ++k) {
      int64_t at = walk.offset() + k * strides[p];
      int64_t before = at - strides[p];
      if (result.HasFloatStorage())
        result.floats[at] = RoundTo(Precision(x.elem),
                                    result.floats[before] + result.floats[at]);
      else
        result.ints[at] = *IntBinary(OpKind::Add, x.elem, result.ints[before],
                                     result.ints[at]);
    }
  }
  return SetResults(op, {std::move(result)});
}

Error Evaluator::RunMap(const Op& op) {
  if (op.regions.size() != 1 || op.regions[0]->args.size() != op.dims.size())
    return InternalError(op, "needs one region with an index per dim");
  std::vector<Tensor> results;
  for (const Value* value : op.results) {
    Expected<Tensor> result = New(value->type, op.loc);
    if (!result) return result.takeError();
    results.push_back(std::move(*result));
  }
  DimList map_dims(op.dims);
  Expected<std::vector<int64_t>> shape = ShapeOf(map_dims, op.loc);
  if (!shape) return shape.takeError();
  for (Walk walk(*shape, StridesOf(*shape)); !walk.done(); walk.Next()) {
    Point point = PointOf(map_dims, walk.coords());
    std::vector<Tensor> args;
    for (const Dim* dim : op.dims)
      args.push_back(Tensor::Index(dim, *Lookup(point, dim)));
    auto yielded = RunBlock(*op.regions[0], std::move(args));
    if (!yielded) return yielded.takeError();
    if (yielded->size() != results.size())
      return InternalError(op, "the region must yield one value per result");
    // A yielded array is placed by name among the result's dims.
    for (size_t i = 0; i < results.size(); ++i)
      if (Error error = Insert(results[i], (*yielded)[i], point, op.loc))
        return error;
  }
  return SetResults(op, std::move(results));
}

Error Evaluator::RunLoop(const Op& op) {
  if (op.operands.size() < 2 || op.regions.size() != 1)
    return InternalError(op, "needs bounds, state and a region");
  const Tensor& lo = Get(op.operands[0]);
  const Tensor& hi = Get(op.operands[1]);
  if (lo.HasFloatStorage() || hi.HasFloatStorage() || lo.ints.size() != 1 ||
      hi.ints.size() != 1)
    return InternalError(op, "bounds must be integer scalars");
  // Copied: running the body adds values to values_, which may rehash and
  // leave references into it dangling.
  int64_t first = lo.ints[0], last = hi.ints[0];
  std::vector<Tensor> state;
  for (size_t i = 2; i < op.operands.size(); ++i)
    state.push_back(Get(op.operands[i]));
  size_t state_size = state.size();
  const Dim* dim = op.dims.empty() ? nullptr : op.dims[0];
  // Values yielded after the state are stacked over the loop's dim (a scan).
  std::vector<Tensor> stacked;
  for (size_t i = state_size; i < op.results.size(); ++i) {
    if (!dim) return InternalError(op, "only a loop over a dim can stack");
    Expected<Tensor> output = New(op.results[i]->type, op.loc);
    if (!output) return output.takeError();
    stacked.push_back(std::move(*output));
  }
  for (int64_t k = first; k < last; ++k) {
    std::vector<Tensor> args;
    args.push_back(dim ? Tensor::Index(dim, k) : Tensor::Int(ElemKind::I64, k));
    for (Tensor& value : state) args.push_back(std::move(value));
    auto next = RunBlock(*op.regions[0], std::move(args));
    if (!next) return next.takeError();
    if (next->size() != state_size + stacked.size())
      return InternalError(op, "the body yields the wrong number of values");
    for (size_t i = 0; i < stacked.size(); ++i)
      if (Error error =
              Insert(stacked[i], (*next)[state_size + i], {{dim, k}}, op.loc))
        return error;
    next->resize(state_size);
    state = std::move(*next);
  }
  for (Tensor& output : stacked) state.push_back(std::move(output));
  return SetResults(op, std::move(state));
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
  std::vector<Tensor> indices;
  std::vector<int64_t> index_strides;
  std::vector<int64_t> index_sizes;
  for (size_t k = 1; k < op.operands.size(); ++k) {
    Expected<Tensor> spread = ExtractAs(
        Get(op.operands[k]), op.operands[k]->type.WithDims(space), op.loc);
    if (!spread) return spread.takeError();
    int p = core.IndexOf(spread->index_dim);
    indices.push_back(std::move(*spread));
    index_strides.push_back(sum_strides[p]);
    index_sizes.push_back(sums->shape[p]);
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
    int64_t offset = walk.offset();
    for (size_t k = 0; k < indices.size(); ++k) {
      int64_t position = indices[k].ints[element];
      if (position < 0 || position >= index_sizes[k])
        return LocatedError(op.loc, "index " + std::to_string(position) +
                                        " is out of range for dim " +
                                        indices[k].index_dim->name +
                                        " of size " +
                                        std::to_string(index_sizes[k]));
      offset += position * index_strides[k];
    }
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

Error Evaluator::RunWhile(const Op& op) {
  if (op.regions.size() != 2) return InternalError(op, "needs two regions");
  std::vector<Tensor> state;
  for (const Value* value : op.operands) state.push_back(Get(value));
  while (true) {
    Expected<Tensor> condition = RunScalarRegion(op, *op.regions[0], state);
    if (!condition) return condition.takeError();
    if (condition->elem != ElemKind::Bool || condition->ints.size() != 1)
      return InternalError(op, "the condition must be a bool scalar");
    if (!condition->ints[0]) break;
    auto next = RunBlock(*op.regions[1], std::move(state));
    if (!next) return next.takeError();
    state = std::move(*next);
  }
  return SetResults(op, std::move(state));
}

Error Evaluator::RunIf(const Op& op) {
  if (op.regions.size() != 2 || op.operands.size() != 1)
    return InternalError(op, "needs a condition and two regions");
  const Tensor& condition = Get(op.operands[0]);
  if (condition.elem != ElemKind::Bool || condition.ints.size() != 1)
    return InternalError(op, "the condition must be a bool scalar");
  auto results = RunBlock(*op.regions[condition.ints[0] ? 0 : 1], {});
  if (!results) return results.takeError();
  return SetResults(op, std::move(*results));
}

Error Evaluator::RunCall(const Op& op) {
  const Function* callee = op.callee;
  if (!callee || op.dims.size() != callee->size_params.size() ||
      op.operands.size() != callee->params.size() ||
      callee->dims.size() < op.dims.size())
    return InternalError(op, "does not match the callee's signature");
  // op.dims[k] (ours) is bound to callee->dims[k] (its k-th size parameter).
  DimMap ours_of;
  std::vector<Tensor> args;
  for (size_t k = 0; k < op.dims.size(); ++k) {
    ours_of[callee->dims[k]] = op.dims[k];
    Expected<int64_t> size = DimSize(op.dims[k], op.loc);
    if (!size) return size.takeError();
    args.push_back(Tensor::Int(ElemKind::I64, *size));
  }
  // Arguments and results are relabeled by name (and so transposed where the
  // two canonical orders differ).
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const Type& type = callee->params[i]->type;
    std::vector<int64_t> shape;
    for (const Dim* dim : type.dims) {
      auto it = ours_of.find(dim);
      Expected<int64_t> size =
          DimSize(it == ours_of.end() ? dim : it->second, op.loc);
      if (!size) return size.takeError();
      shape.push_back(*size);
    }
    Expected<Tensor> arg = Extract(Get(op.operands[i]), {}, type,
                                   std::move(shape), &ours_of, op.loc);
    if (!arg) return arg.takeError();
    args.push_back(std::move(*arg));
  }
  auto results = interpreter_.Call(*callee, std::move(args), op.loc);
  if (!results) return results.takeError();
  if (results->size() != op.results.size())
    return InternalError(op, "wrong number of results");
  std::vector<Tensor> ours;
  for (size_t i = 0; i < results->size(); ++i) {
    const Tensor& result = (*results)[i];
    DimMap theirs_of;
    for (const Dim* dim : result.dims) {
      auto it = ours_of.find(dim);
      if (it != ours_of.end()) theirs_of[it->second] = dim;
    }
    const Type& type = op.results[i]->type;
    Expected<std::vector<int64_t>> shape = ShapeOf(type.dims, op.loc);
    if (!shape) return shape.takeError();
    Expected<Tensor> value =
        Extract(result, {}, type, std::move(*shape), &theirs_of, op.loc);
    if (!value) return value.takeError();
    ours.push_back(std::move(*value));
  }
  return SetResults(op, std::move(ours));
}

Error Evaluator::RunPrint(const Op& op) {
  // Items are concatenated as they are (lowering puts the spaces between
  // print's arguments and the punctuation of tuples and structs into the
  // text items); the line ends with a newline and is written at once.
  std::string line;
  size_t next = 0;
  for (size_t i = 0; i < op.print_items.size(); ++i) {
    const PrintItem& item = op.print_items[i];
    if (!item.is_value) {
      line += item.text;
      continue;
    }
    if (next >= op.operands.size())
      return InternalError(op, "more value items than operands");
    line += FormatTensor(Get(op.operands[next++]));
  }
  line += "\n";
  interpreter_.out_ << line;
  interpreter_.out_.flush();
  return Error::success();
}

// read_npy and write_npy (runtime/npy.h): the array is passed in the
// tensor's canonical order, with the position of each file axis in it.
Error Evaluator::RunNpy(const Op& op) {
  bool read = op.kind == OpKind::ReadNpy;
  if (op.print_items.size() != 1 || op.operands.size() != (read ? 0u : 1u) ||
      op.results.size() != (read ? 1u : 0u))
    return InternalError(op, "needs a path and one array");
  const std::string& path = op.print_items[0].text;
  Tensor tensor;
  if (read) {
    Expected<Tensor> result = New(op.results[0]->type, op.loc);
    if (!result) return result.takeError();
    tensor = std::move(*result);
  } else {
    tensor = Get(op.operands[0]);
  }
  if (op.dims.size() != tensor.dims.size())
    return InternalError(op, "the dims do not match the array");
  std::vector<const char*> names;
  for (const Dim* dim : tensor.dims) names.push_back(dim->name.c_str());
  std::vector<int64_t> axes;
  for (const Dim* dim : op.dims) {
    int64_t position = 0;
    for (const Dim* other : tensor.dims) {
      if (other == dim) break;
      ++position;
    }
    if (position == static_cast<int64_t>(tensor.dims.size()))
      return InternalError(op, "a dim is not in the array");
    axes.push_back(position);
  }
  int64_t rank = static_cast<int64_t>(tensor.shape.size());
  char error[1024];
  int status = 0;
  if (read) {
    if (tensor.HasFloatStorage()) {
      status = delta_npy_read(path.c_str(), DELTA_ELEM_F64, rank,
                              tensor.shape.data(), names.data(), axes.data(),
                              tensor.floats.data(), error, sizeof error);
      if (tensor.elem == ElemKind::F32)
        for (double& value : tensor.floats)
          value = static_cast<double>(static_cast<float>(value));
    } else {
      status = delta_npy_read(path.c_str(), DELTA_ELEM_I64, rank,
                              tensor.shape.data(), names.data(), axes.data(),
                              tensor.ints.data(), error, sizeof error);
    }
    if (status != 0) return LocatedError(op.loc, error);
    return SetResults(op, {std::move(tensor)});
  }
  auto write = [&](int32_t kind, const void* data) {
    return delta_npy_write(path.c_str(), kind, data, rank, tensor.shape.data(),
                           axes.data(), error, sizeof error);
  };
  switch (tensor.elem) {
    case ElemKind::F32: {
      std::vector<float> data(tensor.floats.begin(), tensor.floats.end());
      status = write(DELTA_ELEM_F32, data.data());
      break;
    }
    case ElemKind::F64:
      status = write(DELTA_ELEM_F64, tensor.floats.data());
      break;
    case ElemKind::I32: {
      std::vector<int32_t> data;
      for (int64_t value : tensor.ints)
        data.push_back(static_cast<int32_t>(value));
      status = write(DELTA_ELEM_I32, data.data());
      break;
    }
    case ElemKind::Bool: {
      std::vector<unsigned char> data;
      for (int64_t value : tensor.ints) data.push_back(value != 0 ? 1 : 0);
      status = write(DELTA_ELEM_BOOL, data.data());
      break;
    }
    default:
      status = write(DELTA_ELEM_I64, tensor.ints.data());
      break;
  }
  if (status != 0) return LocatedError(op.loc, error);
  return Error::success();
}

Interpreter::Interpreter(const Module& module, llvm::raw_ostream& out,
                         InterpreterOptions options)
    : module_(module), out_(out), options_(options) {}

Error RunMain(const Module& module, llvm::raw_ostream& out) {
  const Function* main = module.FindFunction("main");
  if (!main)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "error: the module has no main function");
  Interpreter interpreter(module, out);
  auto results = interpreter.Call(*main, {});
  out.flush();
  if (!results) return results.takeError();
  return Error::success();
}

}  // namespace delta::interpreter
