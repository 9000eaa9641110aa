// Contractions: a fused `reduce.sum [k] { gather a .. * gather b .. }` (what
// fusion makes of sum(a * b, k), and what AD and vmap produce) becomes calls
// of the runtime's blocked matrix product (runtime/kernels.h) instead of a
// loop nest. See Note [GEMM kernel] in docs/performance.md.
#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/Casting.h>

#include <algorithm>
#include <tuple>

#include "compiler/codegen/llvm/emitter.h"
#include "compiler/ir/contraction_shape.h"
#include "runtime/kernels.h"

namespace delta::codegen {
namespace {

// The array a region gathers at the region's own coordinates, or null.
const ir::Value* PlainGather(const ir::Op& gather, const ir::Block& body,
                             const std::vector<const ir::Dim*>& arg_dims) {
  if (gather.kind != ir::OpKind::Gather) return nullptr;
  const ir::Value* array = gather.operands[0];
  if (array->block == &body || array->type.dims.size() == 0) return nullptr;
  if (gather.operands.size() != array->type.dims.size() + 1) return nullptr;
  for (size_t i = 0; i + 1 < gather.operands.size(); ++i) {
    const ir::Value* index = gather.operands[i + 1];
    if (index->block != &body || index->def != nullptr) return nullptr;
    if (arg_dims[index->index] != array->type.dims[i]) return nullptr;
  }
  return array;
}

}  // namespace

// Columns of the kernel's tiles that a swapped product must fill (see
// EmitContraction; at d10 the 16-column tiles would run 10 wide, slower).
constexpr int64_t kMinSwappedColumns = 32;
// Decided at run time, f64 products swap from one full 16-column tile:
// GradBench gmm (size parameters) at d = 20, K = 50: objective 7.8 -> 2.6
// ms swapped (one thread). Constant dims keep 32: the layout has already
// put the points innermost for GMM d10 and d20 (Note [Physical layout]).
constexpr int64_t kMinSwappedF64Columns = 16;

// Note [Parallel batches]: from this many products per thread in a batch
// (GMM's components), the pool runs whole products, each serial. A
// product on the pool meets the other threads once to pack each strip of
// B and once to multiply it: GMM d64 K25's gradient is 25 components x 2
// products x up to 4 depth blocks, some 200 parallel loops of 20-50 us.
constexpr int64_t kBatchesPerThread = 2;

bool MayFillColumns(const ir::Dim* dim) {
  return dim->constant && *dim->constant >= kMinSwappedColumns;
}

std::optional<MatchedContraction> MatchContraction(const ir::Op& op) {
  if (op.kind != ir::OpKind::Reduce || op.reduce != ir::ReduceKind::Sum ||
      op.regions.empty())
    return std::nullopt;
  const ir::Type& type = op.results[0]->type;
  if (type.elem != ir::ElemKind::F32 && type.elem != ir::ElemKind::F64)
    return std::nullopt;
  const ir::Block& body = *op.region(0);
  if (body.ops.size() != 4) return std::nullopt;
  ir::DimList reduced(op.dims);
  ir::DimList all = type.dims.Union(reduced);
  std::vector<const ir::Dim*> arg_dims(all.begin(), all.end());
  const ir::Op& mul = *body.ops[2];
  const ir::Op& yield = *body.ops[3];
  if (mul.kind != ir::OpKind::Mul || yield.operands.size() != 1 ||
      yield.operands[0] != mul.results[0] ||
      mul.operands[0] != body.ops[0]->results[0] ||
      mul.operands[1] != body.ops[1]->results[0])
    return std::nullopt;
  const ir::Value* a = PlainGather(*body.ops[0], body, arg_dims);
  const ir::Value* b = PlainGather(*body.ops[1], body, arg_dims);
  if (a == nullptr || b == nullptr || a->type.elem != type.elem ||
      b->type.elem != type.elem)
    return std::nullopt;
  std::optional<ir::ContractionShape> shape =
      ir::ClassifyContraction(type.dims, a->type.dims, b->type.dims, reduced);
  if (!shape) return std::nullopt;
  return MatchedContraction{a, b, *shape};
}

// The innermost in memory of `reduced` when, in an array over `dims`, they
// follow each other in memory in the order given; or null.
const ir::Dim* FunctionEmitter::InnermostIfAdjacent(
    const std::vector<const ir::Dim*>& reduced, const ir::DimList& dims) const {
  std::vector<const ir::Dim*> order = LoopOrder(dims);
  auto first = std::find(order.begin(), order.end(), reduced.front());
  if (first == order.end() ||
      static_cast<size_t>(order.end() - first) < reduced.size() ||
      !std::equal(reduced.begin(), reduced.end(), first))
    return nullptr;
  return reduced.back();
}

// Note [Merged free dims]: the outer dims just outside `free` (m or n) in
// memory, in the same order in `operand` and in C, with `free` last; they
// are one m (n) of their product's extent, stepped by `free`'s strides.
// The Transformer's projection dot(a, wq, model) to [seq, heads, hd] was
// one product per head, each packing all of a again; it is one product
// with n = heads x hd.
std::vector<const ir::Dim*> FunctionEmitter::MergedFreeDims(
    const ir::Dim* free, const ir::DimList& operand, const ir::DimList& c,
    const std::vector<const ir::Dim*>& outer) const {
  std::vector<const ir::Dim*> x_order = LoopOrder(operand);
  std::vector<const ir::Dim*> c_order = LoopOrder(c);
  auto x_at = llvm::find(x_order, free);
  auto c_at = llvm::find(c_order, free);
  std::vector<const ir::Dim*> merged = {free};
  if (dim_ranges_.contains(free)) return merged;
  while (x_at != x_order.begin() && c_at != c_order.begin()) {
    const ir::Dim* dim = *--x_at;
    if (*--c_at != dim || !llvm::is_contained(outer, dim) ||
        dim_ranges_.contains(dim))
      break;
    merged.insert(merged.begin(), dim);
  }
  return merged;
}

bool FunctionEmitter::EmitContraction(const ir::Op& op) {
  std::optional<MatchedContraction> match = MatchContraction(op);
  if (!match) return false;
  const ir::Type& type = op.results[0]->type;
  const ir::Value* a = match->a;
  const ir::Value* b = match->b;
  ir::ContractionShape* shape = &match->shape;
  // The kernel stores whole vectors along n when C's rows are contiguous
  // in n; with m innermost in C instead, every element of a tile is a
  // store of its own, strided. So C^T = B^T A^T is computed when m is C's
  // innermost dim (in memory, Note [Physical layout]) and wide enough to
  // fill the kernel's columns (GMM d64: 1.4x faster; at d10 the 16-column
  // tiles would run 10 wide, slower). A dim of unknown size (a library's
  // size parameter) decides at run time, by its extent.
  bool m_innermost = LoopOrder(type.dims).back() == shape->m;
  bool swap_at_run_time = m_innermost && !shape->m->constant;
  if (m_innermost && MayFillColumns(shape->m)) {
    std::swap(a, b);
    std::swap(shape->m, shape->n);
  }
  const ir::Dim* m_dim = shape->m;
  const ir::Dim* n_dim = shape->n;
  // Several reduced dims are one k of their product's extent, stepped by
  // the innermost one's strides, when they are adjacent in memory in the
  // same order in both operands (and none is cut into cache blocks);
  // otherwise the reduction is a loop nest.
  std::vector<const ir::Dim*> reduced = shape->k_rest;
  reduced.push_back(shape->k);
  const ir::Dim* k_dim = InnermostIfAdjacent(reduced, a->type.dims);
  if (k_dim == nullptr || k_dim != InnermostIfAdjacent(reduced, b->type.dims) ||
      (reduced.size() > 1 && llvm::any_of(reduced, [&](const ir::Dim* dim) {
         return dim_ranges_.contains(dim);
       })))
    return false;
  // Outer dims loop like batch dims (the operand that lacks one reads the
  // same block at every coordinate); the batch dims stay outermost, as
  // the layout placed them.
  std::vector<const ir::Dim*> m_dims =
      MergedFreeDims(m_dim, a->type.dims, type.dims, shape->outer);
  std::vector<const ir::Dim*> n_dims =
      MergedFreeDims(n_dim, b->type.dims, type.dims, shape->outer);
  std::vector<const ir::Dim*> batch = shape->batch;
  for (const ir::Dim* dim : shape->outer)
    if (!llvm::is_contained(m_dims, dim) && !llvm::is_contained(n_dims, dim))
      batch.push_back(dim);

  bool f32 = type.elem == ir::ElemKind::F32;
  llvm::Type* i64 = builder_.getInt64Ty();
  llvm::Type* ptr = builder_.getPtrTy();
  llvm::FunctionCallee gemm = module_.module->getOrInsertFunction(
      f32 ? "delta_gemm_f32" : "delta_gemm_f64",
      llvm::FunctionType::get(builder_.getVoidTy(),
                              {i64, i64, i64, ptr, i64, i64, ptr, i64, i64, ptr,
                               i64, i64, builder_.getInt32Ty()},
                              false));
  llvm::cast<llvm::Function>(gemm.getCallee())
      ->addFnAttr(llvm::Attribute::NoUnwind);

  ArrayView a_view = View(a->type, Get(a));
  ArrayView b_view = View(b->type, Get(b));
  llvm::Value* result = AllocateResult(op.results[0]);
  ArrayView c_view = View(type, result);
  auto stride = [&](const ArrayView& view, const ir::Dim* dim) {
    return view.strides[view.type.dims.IndexOf(dim)];
  };
  // In a blocked group (Note [Cache blocking]) the products cover one
  // block of m, n or k, and the group's blocks are what runs in parallel.
  auto extent = [&](const ir::Dim* dim) {
    auto [lo, hi] = DimRange(dim);
    return builder_.CreateSub(hi, lo);
  };
  auto extents = [&](const std::vector<const ir::Dim*>& dims) {
    llvm::Value* product = extent(dims.front());
    for (const ir::Dim* dim : llvm::drop_begin(dims))
      product = builder_.CreateMul(product, extent(dim));
    return product;
  };
  llvm::Value* m_extent = extents(m_dims);
  llvm::Value* n_extent = extents(n_dims);
  llvm::Value* k_extent = extents(reduced);
  Coords coords;
  auto product = [&] {
    // The batch coordinates place each product; the other dims are at the
    // start of their range. Inside a parallel nest the product is serial.
    auto base = [&](const ArrayView& view) {
      Coords at = coords;
      for (const ir::Dim* dim : view.type.dims)
        if (!at.count(dim)) at[dim] = DimRange(dim).first;
      return ElementPointer(view, at);
    };
    int32_t flags = (module_.fast_math ? DELTA_GEMM_FMA : 0) |
                    (in_parallel_nest_ ? DELTA_GEMM_SERIAL : 0);
    llvm::Value* m = m_extent;
    llvm::Value* n = n_extent;
    llvm::Value* a_base = base(a_view);
    llvm::Value* b_base = base(b_view);
    llvm::Value* a_m = stride(a_view, m_dim);
    llvm::Value* a_k = stride(a_view, k_dim);
    llvm::Value* b_k = stride(b_view, k_dim);
    llvm::Value* b_n = stride(b_view, n_dim);
    llvm::Value* c_m = stride(c_view, m_dim);
    llvm::Value* c_n = stride(c_view, n_dim);
    if (swap_at_run_time) {
      // C^T = B^T A^T: B's columns are the rows, A's rows the columns.
      llvm::Value* swap = builder_.CreateICmpSGE(
          m,
          builder_.getInt64(f32 ? kMinSwappedColumns : kMinSwappedF64Columns));
      auto pick = [&](llvm::Value* swapped, llvm::Value* plain) {
        return builder_.CreateSelect(swap, swapped, plain);
      };
      std::tie(m, n, a_base, b_base, a_m, a_k, b_k, b_n, c_m, c_n) =
          std::make_tuple(pick(n, m), pick(m, n), pick(b_base, a_base),
                          pick(a_base, b_base), pick(b_n, a_m), pick(b_k, a_k),
                          pick(a_k, b_k), pick(a_m, b_n), pick(c_n, c_m),
                          pick(c_m, c_n));
    }
    builder_.CreateCall(
        gemm, {m, n, k_extent, a_base, a_m, a_k, b_base, b_k, b_n, base(c_view),
               c_m, c_n, builder_.getInt32(flags)});
  };
  if (batch.empty() || in_parallel_nest_ || !module_.parallel ||
      module_.hooks != nullptr)
    EmitLoopNest(batch, coords, product);
  else
    EmitBatchedProducts(batch, coords, m_extent, n_extent, k_extent, product);
  Set(op.results[0], result);
  return true;
}

// Note [Parallel batches]: with many products, the threads take whole
// products (each serial); with a few, each product runs on the pool.
void FunctionEmitter::EmitBatchedProducts(
    llvm::ArrayRef<const ir::Dim*> batch, Coords& coords, llvm::Value* m,
    llvm::Value* n, llvm::Value* k, const std::function<void()>& product) {
  llvm::Type* i64 = builder_.getInt64Ty();
  llvm::Value* count = ElementCount(ir::DimList(batch));
  llvm::FunctionCallee num_threads = module_.module->getOrInsertFunction(
      "delta_num_threads", builder_.getInt32Ty());
  llvm::Value* enough = builder_.CreateICmpSGE(
      count, builder_.CreateMul(
                 builder_.CreateSExt(builder_.CreateCall(num_threads), i64),
                 builder_.getInt64(kBatchesPerThread)));
  llvm::Value* work = builder_.CreateMul(builder_.CreateMul(count, k),
                                         builder_.CreateMul(m, n));
  auto* by_batch =
      llvm::BasicBlock::Create(context_, "batch.par", llvm_function_);
  auto* by_product =
      llvm::BasicBlock::Create(context_, "batch.seq", llvm_function_);
  auto* done = llvm::BasicBlock::Create(context_, "batch.done", llvm_function_);
  builder_.CreateCondBr(enough, by_batch, by_product);
  builder_.SetInsertPoint(by_batch);
  EmitParallelNest(batch, coords, work, product);
  builder_.CreateBr(done);
  builder_.SetInsertPoint(by_product);
  EmitLoopNest(batch, coords, product);
  builder_.CreateBr(done);
  builder_.SetInsertPoint(done);
}

}  // namespace delta::codegen
