// Elementwise ops (unary, binary, convert, select) with the scalar
// semantics of ir/scalar_eval.h, each operand read by name at the result's
// coordinates; constants; and the ops that only relabel a value: to_index
// (checked) and rename.
#include <optional>
#include <utility>

#include "compiler/codegen/interpreter/evaluator.h"
#include "compiler/ir/scalar_eval.h"

namespace delta::interpreter {

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

}  // namespace delta::interpreter
