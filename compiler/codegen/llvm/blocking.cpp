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
// Note [Re-packed operands]: what packing an operand for the matrix kernel
// costs, in passes over the members' memory that blocking saves.
constexpr int64_t kRepackCost = 2;

// The ops a group may run block by block: each computes the elements of
// its results one point at a time from its operands.
bool IsBlockableKind(const ir::Op& op) {
  if (ir::IsElementwiseUnary(op.kind) || ir::IsElementwiseBinary(op.kind) ||
      op.kind == ir::OpKind::Select || op.kind == ir::OpKind::Map)
    return true;
  return op.kind == ir::OpKind::Reduce;
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
    // An op with regions of its own (an if, a loop) reads no member.
    if (!inner->regions.empty()) {
      bool reads = false;
      ForEachUse(*inner, [&](const ir::Value* value) {
        reads |= members.contains(value);
      });
      if (reads) return false;
      continue;
    }
    for (size_t k = 0; k < inner->operands.size(); ++k) {
      const ir::Value* value = inner->operands[k];
      if (!members.contains(value)) continue;
      // A gather of one element (not a slice) at the region's row.
      if (inner->kind != ir::OpKind::Gather || k != 0 ||
          inner->operands.size() != value->type.dims.size() + 1)
        return false;
      size_t position = value->type.dims.IndexOf(dim);
      if (inner->operands[position + 1] != row) return false;
    }
  }
  return true;
}

}  // namespace

llvm::Value* FunctionEmitter::TypeBytes(const ir::Type& type) {
  return builder_.CreateMul(ElementCount(type.dims),
                            builder_.getInt64(ElemBytes(type.elem)));
}

// Note [Cache blocking]: see docs/internals/codegen.md.
FunctionEmitter::BlockGroup FunctionEmitter::FindBlockGroup(
    const ir::Block& block, size_t first) {
  BlockGroup group;
  if (!module_.parallel || module_.hooks != nullptr || in_parallel_nest_ ||
      access_group_ != nullptr)
    return group;
  const ir::Op& head = *block.ops[first];
  // A map may have no results (all its yields were dead).
  if (!IsBlockableKind(head) || head.results.empty() ||
      head.results[0]->type.IsScalar())
    return group;
  const ir::Dim* dim = LoopOrder(head.results[0]->type.dims)[0];
  if (dim->constant && *dim->constant < 2) return group;
  // Values computed a block of rows at a time, and totals over the rows
  // that are complete only after the last block.
  llvm::SmallPtrSet<const ir::Value*, 16> rows_of, totals;
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
    bool blockable = IsBlockableKind(op) &&
                     ReadsMembersAtRow(op, dim, rows_of) &&
                     llvm::none_of(op.results, [&](const ir::Value* result) {
                       return destinations_.contains(result);
                     });
    bool reduces_rows =
        op.kind == ir::OpKind::Reduce && llvm::is_contained(op.dims, dim);
    const ir::Type& type = op.results[0]->type;
    // A row member: its results are rows of `dim`, outermost.
    if (blockable && !reduces_rows && !type.IsScalar() &&
        LoopOrder(type.dims)[0] == dim) {
      for (const ir::Value* result : op.results) rows_of.insert(result);
      group.members.push_back(i);
      group.hoisted.insert(group.hoisted.end(), hoisted.begin(), hoisted.end());
      hoisted.clear();
      continue;
    }
    // A total: a reduction over the rows (and maybe more), summed per
    // block and then over the blocks in order, which reassociates it: -O3
    // only, as for other float sums.
    if (blockable && reduces_rows && module_.fast_math && uses_rows) {
      totals.insert(op.results[0]);
      group.members.push_back(i);
      group.totals.push_back(i);
      group.hoisted.insert(group.hoisted.end(), hoisted.begin(), hoisted.end());
      hoisted.clear();
      continue;
    }
    if (uses_rows || !IsHoistableKind(op)) break;
    hoisted.push_back(i);
  }
  if (group.members.size() - group.totals.size() < 2) return BlockGroup{};
  group.dim = dim;
  // With every size known (MeasureBlocks then folds to constants and
  // emits nothing), the group is blocked or not here; otherwise
  // EmitBlockGroup decides at run time.
  bool known = true;
  auto all_constant = [](const ir::Type& type) {
    return llvm::all_of(type.dims,
                        [](const ir::Dim* dim) { return dim->constant; });
  };
  for (size_t i : group.members) {
    for (const ir::Value* result : block.ops[i]->results)
      known &= all_constant(result->type);
    // Note [Re-packed operands]: the products' operands count too.
    if (std::optional<MatchedContraction> match =
            MatchContraction(*block.ops[i]))
      known &= all_constant(match->a->type) && all_constant(match->b->type);
  }
  if (known) {
    auto* blocked =
        llvm::cast<llvm::ConstantInt>(MeasureBlocks(block, group).blocked);
    if (blocked->isZero()) return BlockGroup{};
    group.decided = true;
  }
  return group;
}

FunctionEmitter::BlockSizes FunctionEmitter::MeasureBlocks(
    const ir::Block& block, const BlockGroup& group) {
  llvm::Value* row_bytes = builder_.getInt64(0);
  llvm::Value* total_bytes = builder_.getInt64(0);
  for (size_t i : group.members) {
    bool total = llvm::is_contained(group.totals, i);
    for (const ir::Value* result : block.ops[i]->results) {
      const ir::Type& type = result->type;
      if (total)
        total_bytes = builder_.CreateAdd(total_bytes, TypeBytes(type));
      else
        row_bytes = builder_.CreateAdd(
            row_bytes,
            TypeBytes(type.WithDims(type.dims.Minus(ir::DimList{group.dim}))));
    }
  }
  // Note [Re-packed operands]: the operands that the group's products
  // read whole in every block (weights without the blocked dim).
  llvm::Value* repacked_bytes = builder_.getInt64(0);
  llvm::SmallPtrSet<const ir::Value*, 8> repacked;
  for (size_t i : group.members) {
    std::optional<MatchedContraction> match = MatchContraction(*block.ops[i]);
    if (!match) continue;
    for (const ir::Value* operand : {match->a, match->b})
      if (!operand->type.dims.Contains(group.dim) &&
          repacked.insert(operand).second)
        repacked_bytes =
            builder_.CreateAdd(repacked_bytes, TypeBytes(operand->type));
  }
  BlockSizes sizes;
  llvm::Value* size = DimSize(group.dim);
  // Selects rather than min/max intrinsics, which IRBuilder does not fold.
  auto smax = [&](llvm::Value* a, llvm::Value* b) {
    return builder_.CreateSelect(builder_.CreateICmpSGT(a, b), a, b);
  };
  auto smin = [&](llvm::Value* a, llvm::Value* b) {
    return builder_.CreateSelect(builder_.CreateICmpSLT(a, b), a, b);
  };
  auto constant = [&](int64_t value) { return builder_.getInt64(value); };
  llvm::Value* target =
      smax(smin(builder_.CreateSDiv(constant(kBlockBytes),
                                    smax(row_bytes, constant(1))),
                size),
           smin(constant(kBlockMinRows), size));
  target = smax(target, constant(1));
  // Blocks of equal size, none smaller than the target: a short last block
  // (32 rows of 128 after a block of 96) would run a product in the group
  // at a third of its speed, and pack its other operand once more.
  sizes.blocks = smax(builder_.CreateSDiv(size, target), constant(1));
  sizes.rows = builder_.CreateSDiv(
      builder_.CreateAdd(size, builder_.CreateSub(sizes.blocks, constant(1))),
      sizes.blocks);
  sizes.work =
      builder_.CreateAdd(builder_.CreateMul(row_bytes, size), total_bytes);
  // Blocks that the caches cannot hold anyway only cost calls.
  sizes.blocked = builder_.CreateAnd(
      {builder_.CreateICmpSGE(builder_.CreateMul(row_bytes, size),
                              constant(kBlockingMinBytes)),
       builder_.CreateICmpSGE(sizes.blocks, constant(2)),
       builder_.CreateICmpSLE(builder_.CreateMul(sizes.rows, row_bytes),
                              constant(kBlockMaxBytes)),
       builder_.CreateICmpSLE(builder_.CreateMul(sizes.blocks, total_bytes),
                              constant(kBlockMaxBytes)),
       builder_.CreateICmpSLE(
           builder_.CreateMul(
               builder_.CreateMul(builder_.CreateSub(sizes.blocks, constant(1)),
                                  repacked_bytes),
               constant(kRepackCost)),
           builder_.CreateMul(row_bytes, size))});
  return sizes;
}

void FunctionEmitter::EmitBlockGroup(const ir::Block& block,
                                     const BlockGroup& group) {
  // Ops between the members that do not depend on them run first. No op
  // of the group takes over a buffer that it reads (Note [In-place array
  // ops]): a member may read what a later op would overwrite.
  auto* owned = owned_;
  owned_ = nullptr;
  for (size_t i : group.hoisted) {
    op_index_ = i;
    EmitOp(*block.ops[i]);
  }
  BlockSizes sizes = MeasureBlocks(block, group);
  // The members run in a loop over blocks, or in one of two branches: their
  // size checks hold for no later op (Note [Size checks once]).
  bool record_checks = record_checks_;
  record_checks_ = false;
  if (group.decided) {
    EmitBlocks(block, group, sizes);
    owned_ = owned;
    record_checks_ = record_checks;
    return;
  }
  // Sizes known at run time only: blocked or op by op, as they say.
  std::vector<const ir::Value*> results;
  for (size_t i : group.members)
    for (const ir::Value* result : block.ops[i]->results)
      results.push_back(result);
  std::vector<llvm::AllocaInst*> slots;
  for (const ir::Value* result : results)
    slots.push_back(EntryAlloca(ValueType(result->type), "blocked"));
  auto* blocked = llvm::BasicBlock::Create(context_, "blocked", llvm_function_);
  auto* whole = llvm::BasicBlock::Create(context_, "unblocked", llvm_function_);
  auto* merge = llvm::BasicBlock::Create(context_, "merge", llvm_function_);
  builder_.CreateCondBr(sizes.blocked, blocked, whole);
  auto keep_results = [&] {
    for (size_t j = 0; j < results.size(); ++j)
      builder_.CreateStore(Get(results[j]), slots[j]);
    builder_.CreateBr(merge);
  };
  builder_.SetInsertPoint(blocked);
  EmitBlocks(block, group, sizes);
  keep_results();
  builder_.SetInsertPoint(whole);
  for (size_t i : group.members) {
    op_index_ = i;
    EmitOp(*block.ops[i]);
  }
  keep_results();
  builder_.SetInsertPoint(merge);
  for (size_t j = 0; j < results.size(); ++j)
    Set(results[j],
        builder_.CreateLoad(slots[j]->getAllocatedType(), slots[j]));
  owned_ = owned;
  record_checks_ = record_checks;
}

void FunctionEmitter::EmitBlocks(const ir::Block& block,
                                 const BlockGroup& group,
                                 const BlockSizes& sizes) {
  // Row members write into whole arrays made here, a block at a time;
  // totals into a partial result per block.
  llvm::DenseMap<const ir::Value*, llvm::Value*> partials;
  for (size_t i : group.members) {
    for (const ir::Value* result : block.ops[i]->results) {
      if (llvm::is_contained(group.totals, i))
        partials[result] = builder_.CreateCall(
            module_.alloc,
            {builder_.CreateMul(sizes.blocks, TypeBytes(result->type))});
      else
        destinations_[result] = AllocateResult(result);
    }
  }
  llvm::Value* size = DimSize(group.dim);
  EmitOutlinedFor(sizes.blocks, sizes.work, [&](llvm::Value* b) {
    llvm::Value* lo = builder_.CreateMul(b, sizes.rows);
    llvm::Value* hi = builder_.CreateBinaryIntrinsic(
        llvm::Intrinsic::smin, builder_.CreateAdd(lo, sizes.rows), size);
    dim_ranges_[group.dim] = {lo, hi};
    for (size_t i : group.members) {
      const ir::Op& op = *block.ops[i];
      const ir::Value* result = op.results[0];
      llvm::Value* slot = nullptr;
      if (auto partial = partials.find(result); partial != partials.end()) {
        slot =
            builder_.CreateGEP(builder_.getInt8Ty(), partial->second,
                               builder_.CreateMul(b, TypeBytes(result->type)));
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
    Set(op.results[0], CombinePartials(op, partial, sizes.blocks));
    Free(partial);
  }
}

// The total of a reduction from its partial results, one per block, in
// block order.
llvm::Value* FunctionEmitter::CombinePartials(const ir::Op& op,
                                              llvm::Value* partials,
                                              llvm::Value* blocks) {
  const ir::Type& type = op.results[0]->type;
  ArrayView first = View(type, partials);
  llvm::Value* count = ElementCount(type.dims);
  llvm::AllocaInst* acc = EntryAlloca(RegisterType(type.elem), "total");
  auto total_at = [&](Coords& coords) {
    llvm::Value* at = ElementPointer(first, coords);
    builder_.CreateStore(LoadElement(first, coords), acc);
    EmitFor(builder_.getInt64(1), blocks, [&](llvm::Value* b) {
      llvm::Value* element =
          builder_.CreateLoad(MemoryType(type.elem),
                              builder_.CreateGEP(MemoryType(type.elem), at,
                                                 builder_.CreateMul(b, count)));
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
