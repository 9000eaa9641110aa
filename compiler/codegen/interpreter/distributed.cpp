// The collectives of a sharded run (ops.def: allreduce, exscan,
// shard_offset) and the gathering that print and write_npy do, through the
// runtime's MPI layer (runtime/distributed.h), as generated code does.
#include "runtime/distributed.h"

#include "compiler/codegen/interpreter/evaluator.h"
#include "runtime/format.h"

namespace delta::interpreter {

// The runtime's DELTA_COMBINE_* follow the IR's reduction kinds.
static_assert(DELTA_COMBINE_SUM == int(ir::ReduceKind::Sum) &&
              DELTA_COMBINE_PROD == int(ir::ReduceKind::Prod) &&
              DELTA_COMBINE_MAX == int(ir::ReduceKind::Max) &&
              DELTA_COMBINE_MIN == int(ir::ReduceKind::Min));

Error Evaluator::RunCollective(const Op& op) {
  if (op.kind == OpKind::ShardOffset) {
    Expected<int64_t> global = GlobalDimSize(op.dims[0], op.loc);
    if (!global) return global.takeError();
    return SetResults(
        op, {Tensor::Int(ElemKind::I64, delta_shard_offset(*global))});
  }
  // Floats are held as f64 here, every integer kind as i64.
  Tensor result = Get(op.operands[0]);
  bool floats = result.HasFloatStorage();
  void* data = floats ? static_cast<void*>(result.floats.data())
                      : static_cast<void*>(result.ints.data());
  int32_t elem = floats ? DELTA_ELEM_F64 : DELTA_ELEM_I64;
  auto count = static_cast<int64_t>(result.NumElements());
  if (op.kind == OpKind::Allreduce)
    delta_shard_allreduce(elem, static_cast<int32_t>(op.reduce), data, count);
  else
    delta_shard_exscan_sum(elem, data, count);
  if (result.elem == ElemKind::F32)
    for (double& value : result.floats)
      value = static_cast<double>(static_cast<float>(value));
  return SetResults(op, {std::move(result)});
}

Expected<Tensor> Evaluator::Gathered(const Tensor& tensor, const Loc& loc) {
  size_t axis = 0;
  while (axis < tensor.dims.size() && !tensor.dims[axis]->sharded) ++axis;
  if (axis == tensor.dims.size()) return tensor;
  Expected<int64_t> global = GlobalDimSize(tensor.dims[axis], loc);
  if (!global) return global.takeError();
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < tensor.shape.size(); ++d)
    (d < axis ? outer : inner) *= d == axis ? 1 : tensor.shape[d];
  Tensor whole = tensor;
  whole.shape[axis] = *global;
  size_t count = static_cast<size_t>(outer * *global * inner);
  if (tensor.HasFloatStorage()) {
    whole.floats.assign(count, 0.0);
    delta_shard_gather(8, tensor.floats.data(), outer, *global, inner,
                       whole.floats.data());
  } else {
    whole.ints.assign(count, 0);
    delta_shard_gather(8, tensor.ints.data(), outer, *global, inner,
                       whole.ints.data());
  }
  return whole;
}

}  // namespace delta::interpreter
