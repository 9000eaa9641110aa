// Ops that run regions and calls: map over the points of its dims, loop
// (with its stacked scan outputs), while, if, and call, whose arguments and
// results are relabeled between the caller's dims and the callee's.
#include <utility>

#include "compiler/codegen/interpreter/evaluator.h"

namespace delta::interpreter {

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
  ActiveCall active(ir::SiteOfCall(op, *function_));
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

}  // namespace delta::interpreter
