// Cache blocking of op groups: a run of array ops that each compute
// independent rows of one outer dim runs block by block of that dim, all
// of its ops per block, so that what one op writes is still in cache when
// the next one reads it. See Note [Cache blocking] in
// docs/internals/codegen.md.
#include <llvm/ADT/SmallPtrSet.h>

#include "compiler/codegen/llvm/emitter.h"

namespace delta::codegen {
namespace {

// Groups whose arrays are smaller than this fit the caches anyway.
constexpr int64_t kBlockingMinBytes = 8 << 20;
// What one block of a group should touch: about half of a core's L2 ...
constexpr int64_t kBlockBytes = 512 << 10;
// ... but with at least as many rows as the matrix kernel's row block, so
// that a product in the group keeps its kernel's efficiency ...
constexpr int64_t kBlockMinRows = 96;
// ... and no group at all when such blocks would not fit a share of L3.
constexpr int64_t kBlockMaxBytes = 8 << 20;

// The ops a group may run block by block: each computes the elements of
// its results one point at a time from its operands.
bool IsBlockableKind(const ir::Op& op) {
  if (ir::IsElementwiseUnary(op.kind) || ir::IsElementwiseBinary(op.kind) ||
      op.kind == ir::OpKind::Select || op.kind == ir::OpKind::Map)
    return true;
  return op.kind == ir::OpKind::Reduce && op.reduce != ir::ReduceKind::Argmax &&
         op.reduce != ir::ReduceKind::Argmin;
}

// Ops without effects that may run before the group although they come
// between its members (a reduction over the parameters, a constant).
bool IsHoistableKind(const ir::Op& op) {
  switch (op.kind) {
    case ir::OpKind::Const:
    case ir::OpKind::Size:
    case ir::OpKind::Iota:
    case ir::OpKind::Broadcast:
    case ir::OpKind::Rename:
      return true;
    default:
      return IsBlockableKind(op);
  }
}

// The dims a region's arguments stand for: a map's own dims, a
// reduction's result dims and reduced dims in canonical order.
std::vector<const ir::Dim*> RegionDims(const ir::Op& op) {
  if (op.kind == ir::OpKind::Map) return op.dims;
  ir::DimList all = op.results[0]->type.dims.Union(ir::DimList(op.dims));
  return std::vector<const ir::Dim*>(all.begin(), all.end());
}

// True if `op` reads the values of `members` only at its own coordinate
// of `dim`: as an operand of an elementwise op or a plain reduction, or
// through a gather in its region whose index for `dim` is the region's.
bool ReadsMembersAtRow(const ir::Op& op, const ir::Dim* dim,
                       const llvm::SmallPtrSetImpl<const ir::Value*>& members) {
  if (op.regions.empty()) return true;
  const ir::Block& body = *op.region(0);
  std::vector<const ir::Dim*> dims = RegionDims(op);
  auto at = std::find(dims.begin(), dims.end(), dim);
  if (at == dims.end()) return false;
  const ir::Value* row = body.args[at - dims.begin()];
  for (const auto& inner : body.ops) {
    for (const auto& region : inner->regions)
      for (const auto& nested : region->ops) {
        bool reads = false;
        ForEachUse(*nested, [&](const ir::Value* value) {
          reads |= members.contains(value);
        });
        if (reads) return false;
      }
    for (size_t k = 0; k < inner->operands.size(); ++k) {
      const ir::Value* value = inner->operands[k];
      if (!members.contains(value)) continue;
      if (inner->kind != ir::OpKind::Gather || k != 0) return false;
      size_t position = value->type.dims.IndexOf(dim);
      if (inner->operands[position + 1] != row) return false;
    }
  }
  return true;
}

}  // namespace

int64_t FunctionEmitter::StaticBytes(const ir::Type& type) {
  int64_t count = 1;
  for (const ir::Dim* dim : type.dims) {
    if (!dim->constant) return -1;
    count *= *dim->constant;
  }
  return count * ElemBytes(type.elem);
}

// Note [Cache blocking]: see docs/internals/codegen.md.
FunctionEmitter::BlockGroup FunctionEmitter::FindBlockGroup(
    const ir::Block& block, size_t first) {
  BlockGroup group;
  if (!module_.parallel || module_.hooks != nullptr || in_parallel_nest_ ||
      access_group_ != nullptr)
    return group;
  const ir::Op& head = *block.ops[first];
  if (!IsBlockableKind(head) || head.results[0]->type.IsScalar()) return group;
  const ir::Dim* dim = head.results[0]->type.dims[0];
  if (!dim->constant || *dim->constant < 2) return group;
  // Values computed a block of rows at a time, and totals over the rows
  // that are complete only after the last block.
  llvm::SmallPtrSet<const ir::Value*, 16> rows_of, totals;
  int64_t bytes = 0;
  int64_t row_bytes = 0;
  int64_t total_bytes = 0;
  std::vector<size_t> hoisted;
  size_t terminator = block.ops.size() - 1;
  for (size_t i = first; i < terminator; ++i) {
    const ir::Op& op = *block.ops[i];
    bool uses_rows = false;
    bool uses_total = false;
    ForEachUse(op, [&](const ir::Value* value) {
      uses_rows |= rows_of.contains(value);
      uses_total |= totals.contains(value);
    });
    if (uses_total || op.results.empty()) break;
    bool blockable = IsBlockableKind(op) && ReadsMembersAtRow(op, dim, rows_of);
    bool reduces_rows =
        op.kind == ir::OpKind::Reduce && llvm::is_contained(op.dims, dim);
    int64_t op_bytes = 0;
    bool known = true;
    for (const ir::Value* result : op.results) {
      int64_t result_bytes = StaticBytes(result->type);
      known &= result_bytes >= 0 && !destinations_.contains(result);
      op_bytes += result_bytes;
    }
    const ir::Type& type = op.results[0]->type;
    // A row member: its results are rows of `dim`, outermost.
    if (blockable && known && !reduces_rows && !type.IsScalar() &&
        type.dims[0] == dim) {
      for (const ir::Value* result : op.results) rows_of.insert(result);
      group.members.push_back(i);
      group.hoisted.insert(group.hoisted.end(), hoisted.begin(), hoisted.end());
      hoisted.clear();
      bytes += op_bytes;
      row_bytes += op_bytes / *dim->constant;
      continue;
    }
    // A total: a reduction over the rows (and maybe more), summed per
    // block and then over the blocks in order, which reassociates it: -O3
    // only, as for other float sums.
    if (blockable && known && reduces_rows && module_.fast_math && uses_rows) {
      totals.insert(op.results[0]);
      group.members.push_back(i);
      group.totals.push_back(i);
      group.hoisted.insert(group.hoisted.end(), hoisted.begin(), hoisted.end());
      hoisted.clear();
      total_bytes += op_bytes;
      continue;
    }
    if (uses_rows || !IsHoistableKind(op)) break;
    hoisted.push_back(i);
  }
  if (group.members.size() - group.totals.size() < 2 ||
      bytes < kBlockingMinBytes)
    return BlockGroup{};
  int64_t rows =
      std::clamp<int64_t>(kBlockBytes / std::max<int64_t>(row_bytes, 1),
                          kBlockMinRows, *dim->constant);
  int64_t blocks = (*dim->constant + rows - 1) / rows;
  // Blocks that the caches cannot hold anyway only cost calls.
  if (blocks < 2 || rows * row_bytes > kBlockMaxBytes ||
      blocks * total_bytes > kBlockMaxBytes)
    return BlockGroup{};
  group.dim = dim;
  group.rows = rows;
  return group;
}

void FunctionEmitter::EmitBlockGroup(const ir::Block& block,
                                     const BlockGroup& group) {
  // Ops between the members that do not depend on them run first; they
  // may not take over a buffer that a member still reads.
  auto* owned = owned_;
  owned_ = nullptr;
  for (size_t i : group.hoisted) {
    op_index_ = i;
    EmitOp(*block.ops[i]);
  }
  owned_ = owned;
  int64_t size = *group.dim->constant;
  int64_t blocks = (size + group.rows - 1) / group.rows;
  // Row members write into whole arrays made here, a block at a time;
  // totals into a partial result per block.
  llvm::DenseMap<const ir::Value*, llvm::Value*> partials;
  int64_t work = 0;
  for (size_t i : group.members) {
    for (const ir::Value* result : block.ops[i]->results) {
      int64_t bytes = StaticBytes(result->type);
      work += bytes;
      if (llvm::is_contained(group.totals, i))
        partials[result] = builder_.CreateCall(
            module_.alloc, {builder_.getInt64(blocks * bytes)});
      else
        destinations_[result] = Allocate(result->type);
    }
  }
  EmitOutlinedFor(
      builder_.getInt64(blocks), builder_.getInt64(work), [&](llvm::Value* b) {
        llvm::Value* lo = builder_.CreateMul(b, builder_.getInt64(group.rows));
        llvm::Value* hi = builder_.CreateBinaryIntrinsic(
            llvm::Intrinsic::smin,
            builder_.CreateAdd(lo, builder_.getInt64(group.rows)),
            builder_.getInt64(size));
        dim_ranges_[group.dim] = {lo, hi};
        for (size_t i : group.members) {
          const ir::Op& op = *block.ops[i];
          const ir::Value* result = op.results[0];
          llvm::Value* slot = nullptr;
          if (auto partial = partials.find(result); partial != partials.end()) {
            slot = builder_.CreateGEP(
                builder_.getInt8Ty(), partial->second,
                builder_.CreateMul(
                    b, builder_.getInt64(StaticBytes(result->type))));
            if (!result->type.IsScalar()) destinations_[result] = slot;
          }
          op_index_ = i;
          EmitOp(op);
          if (slot != nullptr && result->type.IsScalar())
            builder_.CreateStore(Get(result), slot);
        }
        dim_ranges_.erase(group.dim);
      });
  for (size_t i : group.members)
    for (const ir::Value* result : block.ops[i]->results)
      destinations_.erase(result);
  for (size_t i : group.totals) {
    const ir::Op& op = *block.ops[i];
    llvm::Value* partial = partials[op.results[0]];
    Set(op.results[0], CombinePartials(op, partial, blocks));
    Free(partial);
  }
}

// The total of a reduction from its partial results, one per block, in
// block order.
llvm::Value* FunctionEmitter::CombinePartials(const ir::Op& op,
                                              llvm::Value* partials,
                                              int64_t blocks) {
  const ir::Type& type = op.results[0]->type;
  ArrayView first = View(type, partials);
  int64_t count = StaticBytes(type) / ElemBytes(type.elem);
  llvm::AllocaInst* acc = EntryAlloca(RegisterType(type.elem), "total");
  auto total_at = [&](Coords& coords) {
    llvm::Value* at = ElementPointer(first, coords);
    builder_.CreateStore(LoadElement(first, coords), acc);
    EmitFor(
        builder_.getInt64(1), builder_.getInt64(blocks), [&](llvm::Value* b) {
          llvm::Value* element = builder_.CreateLoad(
              MemoryType(type.elem),
              builder_.CreateGEP(
                  MemoryType(type.elem), at,
                  builder_.CreateMul(b, builder_.getInt64(count))));
          builder_.CreateStore(
              ReduceCombine(op.reduce, type.elem,
                            builder_.CreateLoad(acc->getAllocatedType(), acc),
                            element),
              acc);
        });
    return builder_.CreateLoad(acc->getAllocatedType(), acc);
  };
  return EmitTabulate(type, total_at);
}

}  // namespace delta::codegen
