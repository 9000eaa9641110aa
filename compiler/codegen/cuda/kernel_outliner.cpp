// The choice of kernels: see Note [What runs on the GPU] in docs/gpu.md.
#include "compiler/codegen/cuda/kernel_outliner.h"

#include <llvm/ADT/SmallPtrSet.h>

#include <algorithm>
#include <cctype>
#include <functional>

namespace delta::cuda {
namespace {

bool IsPlainReduce(const ir::Op& op) {
  return op.kind == ir::OpKind::Reduce && !ir::IsArgExtremum(op.reduce);
}

// Whether a region's op can run inside one GPU thread: scalar results only
// (nothing allocates), no calls, prints or loops over state.
bool IsDeviceScalarOp(const ir::Op& op, bool device_math);

bool IsDeviceBlock(const ir::Block& block, bool device_math) {
  for (const auto& op : block.ops)
    if (!IsDeviceScalarOp(*op, device_math)) return false;
  return true;
}

bool IsDeviceScalarOp(const ir::Op& op, bool device_math) {
  if (op.kind == ir::OpKind::Yield) return true;
  for (const ir::Value* result : op.results)
    if (!result->type.IsScalar()) return false;
  if (ir::HasFlag(op.kind, ir::kMathCall) && !device_math) return false;
  if (ir::IsElementwiseUnary(op.kind) || ir::IsElementwiseBinary(op.kind))
    return true;
  switch (op.kind) {
    case ir::OpKind::Select:
    case ir::OpKind::Const:
    case ir::OpKind::Size:
    case ir::OpKind::ToIndex:
    case ir::OpKind::Gather:
      return true;
    case ir::OpKind::Reduce:
      // A reduction inside a thread is a sequential loop.
      return IsPlainReduce(op) &&
             (op.regions.empty() || IsDeviceBlock(*op.region(0), device_math));
    case ir::OpKind::If:
      return IsDeviceBlock(*op.region(0), device_math) &&
             IsDeviceBlock(*op.region(1), device_math);
    default:
      return false;
  }
}

bool ResultsAreArrays(const ir::Op& op) {
  for (const ir::Value* result : op.results)
    if (result->type.IsScalar()) return false;
  return !op.results.empty();
}

bool IsBlockArgOf(const ir::Value* value, const ir::Block& block) {
  return value->def == nullptr && value->block == &block;
}

// Whether a reduction's body is { x = gather a …; y = gather b …; yield
// x * y }.
bool IsProductOfLoads(const ir::Block& body) {
  if (body.ops.size() != 4) return false;
  const ir::Op& load_a = *body.ops[0];
  const ir::Op& load_b = *body.ops[1];
  const ir::Op& product = *body.ops[2];
  const ir::Op& yield = *body.ops[3];
  return load_a.kind == ir::OpKind::Gather &&
         load_b.kind == ir::OpKind::Gather && product.kind == ir::OpKind::Mul &&
         yield.operands.size() == 1 &&
         yield.operands[0] == product.results[0] &&
         product.operands[0] == load_a.results[0] &&
         product.operands[1] == load_b.results[0];
}

// reduce.sum [k] { ^(…): x = gather a …; y = gather b …; yield x * y }
// with a result over two dims, one from a and one from b.
bool MatchContraction(const ir::Op& op, Kernel& kernel) {
  if (op.kind != ir::OpKind::Reduce || op.reduce != ir::ReduceKind::Sum ||
      op.regions.empty() || op.dims.size() != 1 ||
      op.results[0]->type.dims.size() != 2)
    return false;
  const ir::Block& body = *op.region(0);
  if (!IsProductOfLoads(body)) return false;
  const ir::Op& load_a = *body.ops[0];
  const ir::Op& load_b = *body.ops[1];
  const ir::Dim* k = op.dims[0];
  const ir::DimList& result_dims = op.results[0]->type.dims;
  // Each load reads a whole 2-d array at the region's own indices: k and
  // one result dim.
  auto other_dim = [&](const ir::Op& load) -> const ir::Dim* {
    const ir::Value* array = load.operands[0];
    if (array->type.dims.size() != 2 || load.operands.size() != 3 ||
        array->block == &body ||
        (array->def != nullptr && array->def->parent == &body))
      return nullptr;
    ir::DimList indexed;
    for (size_t i = 1; i < load.operands.size(); ++i) {
      if (!IsBlockArgOf(load.operands[i], body)) return nullptr;
      indexed.Insert(load.operands[i]->type.index_dim);
    }
    if (indexed != array->type.dims || !indexed.Contains(k)) return nullptr;
    const ir::Dim* other = indexed[0] == k ? indexed[1] : indexed[0];
    return result_dims.Contains(other) ? other : nullptr;
  };
  const ir::Dim* i = other_dim(load_a);
  const ir::Dim* j = other_dim(load_b);
  if (i == nullptr || j == nullptr || i == j) return false;
  kernel.kind = KernelKind::Contraction;
  kernel.a = load_a.operands[0];
  kernel.b = load_b.operands[0];
  kernel.i = i;
  kernel.j = j;
  kernel.k = k;
  return true;
}

// reduce.sum [k] { x = gather a …; y = gather b …; yield x * y } over a
// result [batch…, i, j] whose batch dims are outermost in every array that
// has them: a is [batch…, i, k] or [i, k] (any order of i and k), b likewise.
bool MatchBatchedContraction(const ir::Op& op, Kernel& kernel) {
  if (op.kind != ir::OpKind::Reduce || op.reduce != ir::ReduceKind::Sum ||
      op.regions.empty() || op.dims.size() != 1 ||
      op.results[0]->type.dims.size() < 3)
    return false;
  const ir::Block& body = *op.region(0);
  if (!IsProductOfLoads(body)) return false;
  const ir::Op& load_a = *body.ops[0];
  const ir::Op& load_b = *body.ops[1];
  // Each load reads a whole array of the function at the region's indices.
  auto whole = [&](const ir::Op& load) {
    const ir::Value* array = load.operands[0];
    if (array->block == &body ||
        (array->def != nullptr && array->def->parent == &body) ||
        load.operands.size() != array->type.dims.size() + 1)
      return false;
    ir::DimList indexed;
    for (size_t i = 1; i < load.operands.size(); ++i) {
      if (!IsBlockArgOf(load.operands[i], body)) return false;
      indexed.Insert(load.operands[i]->type.index_dim);
    }
    return indexed == array->type.dims;
  };
  if (!whole(load_a) || !whole(load_b)) return false;
  const ir::Dim* k = op.dims[0];
  const ir::DimList& result = op.results[0]->type.dims;
  const ir::DimList& a = load_a.operands[0]->type.dims;
  const ir::DimList& b = load_b.operands[0]->type.dims;
  if (!a.Contains(k) || !b.Contains(k)) return false;
  const ir::Dim* i = nullptr;
  const ir::Dim* j = nullptr;
  std::vector<const ir::Dim*> batch;
  for (const ir::Dim* dim : result) {
    bool in_a = a.Contains(dim), in_b = b.Contains(dim);
    if (in_a && !in_b && i == nullptr)
      i = dim;
    else if (in_b && !in_a && j == nullptr)
      j = dim;
    else
      batch.push_back(dim);
  }
  if (i == nullptr || j == nullptr) return false;
  // a and b have all batch dims or none, and nothing else.
  auto fits = [&](const ir::DimList& dims, const ir::Dim* own) {
    size_t batch_dims = 0;
    for (const ir::Dim* dim : batch) batch_dims += dims.Contains(dim) ? 1 : 0;
    return (batch_dims == 0 || batch_dims == batch.size()) &&
           dims.size() == batch_dims + 2 && dims.Contains(own);
  };
  if (!fits(a, i) || !fits(b, j)) return false;
  // Batch dims outermost: each batch's matrix is contiguous.
  for (const ir::Dim* dim : batch)
    if (dim->order > i->order || dim->order > j->order || dim->order > k->order)
      return false;
  kernel.a = load_a.operands[0];
  kernel.b = load_b.operands[0];
  kernel.i = i;
  kernel.j = j;
  kernel.k = k;
  kernel.batch = std::move(batch);
  return true;
}

bool MakeKernel(const ir::Op& op, bool device_math, Kernel& kernel) {
  kernel.op = &op;
  if (ir::IsElementwiseUnary(op.kind) || ir::IsElementwiseBinary(op.kind) ||
      op.kind == ir::OpKind::Select || op.kind == ir::OpKind::Broadcast ||
      op.kind == ir::OpKind::Iota) {
    kernel.kind = KernelKind::Tabulate;
    return ResultsAreArrays(op) &&
           !(ir::HasFlag(op.kind, ir::kMathCall) && !device_math);
  }
  if (op.kind == ir::OpKind::Map) {
    kernel.kind = KernelKind::Tabulate;
    if (!ResultsAreArrays(op)) return false;
    for (const ir::Value* value : op.region(0)->terminator()->operands)
      if (!value->type.IsScalar()) return false;
    return IsDeviceBlock(*op.region(0), device_math);
  }
  if (op.kind == ir::OpKind::Reduce && !IsPlainReduce(op)) {
    // argmax/argmin: one thread per result element scans the reduced dim.
    kernel.kind = KernelKind::Tabulate;
    return ResultsAreArrays(op) &&
           (op.regions.empty() || IsDeviceBlock(*op.region(0), device_math));
  }
  if (IsPlainReduce(op)) {
    if (MatchContraction(op, kernel)) return true;
    MatchBatchedContraction(op, kernel);
    kernel.kind = KernelKind::Reduce;
    return op.regions.empty() || IsDeviceBlock(*op.region(0), device_math);
  }
  return false;
}

// Whether `op` is known to be too small for a launch to pay: every dim of
// its result and every dim it reduces over has a constant size, and their
// product is below `min_work`.
bool IsSmall(const ir::Op& op, int64_t min_work) {
  if (min_work <= 0) return false;
  int64_t work = 1;
  auto multiply = [&](const ir::Dim* dim) {
    if (!dim->constant) return false;
    // Saturates at min_work (sizes can be near 2^63).
    work = std::min(work * std::min(*dim->constant, min_work), min_work);
    return true;
  };
  // Each dim once: a map's dims are also its results'.
  ir::DimList dims(op.dims);
  for (const ir::Value* result : op.results)
    dims = dims.Union(result->type.dims);
  for (const ir::Dim* dim : dims)
    if (!multiply(dim)) return false;
  return work < min_work;
}

void Collect(const ir::Op& op, llvm::SmallPtrSetImpl<const ir::Value*>& defined,
             std::vector<const ir::Value*>& used) {
  for (const ir::Value* operand : op.operands) used.push_back(operand);
  for (const auto& region : op.regions) {
    for (const ir::Value* arg : region->args) defined.insert(arg);
    for (const auto& inner : region->ops) {
      Collect(*inner, defined, used);
      for (const ir::Value* result : inner->results) defined.insert(result);
    }
  }
}

// What `op` and its regions read (`used`, with repeats), define inside
// (`defined`), and the dims of all of it, of `op` and of its regions' ops
// (`dims`, with repeats).
struct Uses {
  llvm::SmallPtrSet<const ir::Value*, 16> defined;
  std::vector<const ir::Value*> used;
  std::vector<const ir::Dim*> dims;
};

Uses UsesOf(const ir::Op& op) {
  Uses uses;
  Collect(op, uses.defined, uses.used);
  std::vector<const ir::Dim*>& dims = uses.dims;
  dims.assign(op.dims.begin(), op.dims.end());
  auto add_dims = [&](const ir::Value* value) {
    for (const ir::Dim* dim : value->type.dims) dims.push_back(dim);
    if (value->type.index_dim != nullptr) dims.push_back(value->type.index_dim);
  };
  for (const ir::Value* value : uses.used) add_dims(value);
  for (const ir::Value* value : uses.defined) add_dims(value);
  for (const ir::Value* value : op.results) add_dims(value);
  std::function<void(const ir::Op&)> add_op_dims = [&](const ir::Op& inner) {
    dims.insert(dims.end(), inner.dims.begin(), inner.dims.end());
    for (const auto& region : inner.regions)
      for (const auto& nested : region->ops) add_op_dims(*nested);
  };
  add_op_dims(op);
  return uses;
}

// The values defined outside the op that it reads, and the sizes of the
// dims it uses, without repeats (CapturedValues).
std::vector<const ir::Value*> Captured(const Uses& uses) {
  std::vector<const ir::Value*> used = uses.used;
  for (const ir::Dim* dim : uses.dims)
    if (!dim->constant && dim->size != nullptr) used.push_back(dim->size);
  std::vector<const ir::Value*> captured;
  llvm::SmallPtrSet<const ir::Value*, 16> seen;
  for (const ir::Value* value : used)
    if (!uses.defined.contains(value) && seen.insert(value).second)
      captured.push_back(value);
  return captured;
}

// The sharded dims the op uses, without repeats (Kernel::sharded).
std::vector<const ir::Dim*> Sharded(const Uses& uses) {
  std::vector<const ir::Dim*> sharded;
  for (const ir::Dim* dim : uses.dims)
    if (dim->sharded && !llvm::is_contained(sharded, dim))
      sharded.push_back(dim);
  return sharded;
}

// Whether `op` reads an array that a kernel made: on the host it would
// wait for the GPU and copy that array back, which costs more than a
// launch (Note [Small ops on the host]).
bool ReadsKernelResult(const ir::Op& op,
                       const llvm::SmallPtrSetImpl<const ir::Value*>& made) {
  for (const ir::Value* value : CapturedValues(op))
    if (!value->type.IsScalar() && made.contains(value)) return true;
  return false;
}

// Ops of `block` and of the sequential regions below it; `made` holds the
// arrays that kernels make.
void Outline(const ir::Block& block, bool device_math, int64_t min_work,
             const ir::Function& function, KernelPlan& plan,
             llvm::SmallPtrSetImpl<const ir::Value*>& made) {
  for (const auto& op : block.ops) {
    if (op->kind == ir::OpKind::Loop || op->kind == ir::OpKind::While ||
        op->kind == ir::OpKind::If) {
      for (const auto& region : op->regions)
        Outline(*region, device_math, min_work, function, plan, made);
      continue;
    }
    Kernel kernel;
    bool small = IsSmall(*op, min_work) && !ReadsKernelResult(*op, made);
    if (small || !MakeKernel(*op, device_math, kernel)) continue;
    kernel.function = &function;
    kernel.name = "delta_k" + std::to_string(plan.kernels.size()) + "_" +
                  function.name + "_" + ir::OpMnemonic(op->kind).str();
    for (char& c : kernel.name)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    Uses uses = UsesOf(*op);
    kernel.captured = Captured(uses);
    kernel.sharded = Sharded(uses);
    plan.index[op.get()] = plan.kernels.size();
    plan.kernels.push_back(std::move(kernel));
    for (const ir::Value* result : op->results) made.insert(result);
  }
}

}  // namespace

std::vector<const ir::Value*> CapturedValues(const ir::Op& op) {
  return Captured(UsesOf(op));
}

KernelPlan OutlineKernels(const ir::Module& module, bool device_math,
                          int64_t min_work) {
  KernelPlan plan;
  llvm::SmallPtrSet<const ir::Value*, 32> made;
  for (const auto& function : module.functions)
    if (function->body != nullptr)
      Outline(*function->body, device_math, min_work, *function, plan, made);
  return plan;
}

}  // namespace delta::cuda
