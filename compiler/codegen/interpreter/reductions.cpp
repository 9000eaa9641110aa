// Reductions: reduce.KIND over an operand or a fused region (the Fold of
// each kind, with argmax's and argmin's tie and NaN rules), reduce.custom
// with its combiner region in index order, and cumsum.
#include <cmath>
#include <limits>
#include <utility>

#include "compiler/codegen/interpreter/evaluator.h"
#include "compiler/ir/scalar_eval.h"

namespace delta::interpreter {

namespace {

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
    if (IsArgExtremum(kind_))
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

Error Evaluator::RunReduce(const Op& op) {
  if (op.results.size() != 1) return InternalError(op, "needs one result");
  const Type& type = op.results[0]->type;
  DimList reduced(op.dims);
  bool arg = IsArgExtremum(op.reduce);
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

}  // namespace delta::interpreter
