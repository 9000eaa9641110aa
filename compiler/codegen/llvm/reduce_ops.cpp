// Reductions as loop nests: reduce (sums, products, extrema; see Note
// [Reduction loop order]), argmax and argmin, reductions with a custom
// combining region, and cumsum. Sums of products that the matrix kernel
// runs are in contraction.cpp.
#include "compiler/codegen/llvm/emitter.h"

namespace delta::codegen {

// See Note [Reduction loop order] in docs/internals/codegen.md.
void FunctionEmitter::EmitReduce(const ir::Op& op) {
  if (EmitContraction(op)) return;
  const ir::Type& type = op.results[0]->type;
  ir::ElemKind elem = type.elem;
  ir::DimList reduced(op.dims);
  ir::DimList all = type.dims.Union(reduced);
  std::vector<const ir::Dim*> all_dims(all.begin(), all.end());
  Operand operand;
  if (op.regions.empty()) operand = Prepare(op.operands[0]);
  auto element = [&](Coords& coords) -> llvm::Value* {
    if (op.regions.empty()) return Read(operand, coords);
    std::vector<llvm::Value*> args;
    for (const ir::Dim* dim : all_dims) args.push_back(coords[dim]);
    return EmitRegionValues(*op.region(0), args,
                            std::vector<bool>(args.size(), false))[0];
  };
  // The innermost reduced dims accumulate in a register; the outer ones,
  // if any, accumulate into the result in memory.
  std::vector<const ir::Dim*> loop_dims = LoopOrder(all);
  size_t split = loop_dims.size();
  while (split > 0 && reduced.Contains(loop_dims[split - 1])) --split;
  llvm::ArrayRef<const ir::Dim*> outer(loop_dims.data(), split);
  llvm::ArrayRef<const ir::Dim*> inner(loop_dims.data() + split,
                                       loop_dims.size() - split);
  bool outer_reduces = false;
  for (const ir::Dim* dim : outer) outer_reduces |= reduced.Contains(dim);

  llvm::AllocaInst* acc = EntryAlloca(RegisterType(elem), "acc");
  auto accumulate = [&](Coords& coords) {
    EmitLoopNest(inner, coords, [&] {
      llvm::Value* x = element(coords);
      llvm::Value* old = builder_.CreateLoad(acc->getAllocatedType(), acc);
      llvm::Value* next = ReduceCombine(op.reduce, elem, old, x);
      // At -O3 a float sum may be reassociated, so that the vectorizer can
      // split it into vector lanes (results change in the last bits).
      if (auto* add = llvm::dyn_cast<llvm::Instruction>(next);
          add != nullptr && module_.fast_math &&
          llvm::isa<llvm::FPMathOperator>(add))
        add->setHasAllowReassoc(true);
      builder_.CreateStore(next, acc);
    });
  };
  Coords coords;
  if (type.IsScalar()) {
    builder_.CreateStore(ReduceIdentity(op.reduce, elem), acc);
    accumulate(coords);
    Set(op.results[0], builder_.CreateLoad(acc->getAllocatedType(), acc));
    return;
  }
  llvm::Value* result = AllocateResult(op.results[0]);
  ArrayView view = View(type, result);
  std::vector<const ir::Dim*> result_dims = LoopOrder(type.dims);
  if (outer_reduces) {
    EmitLoopNest(result_dims, coords, [&] {
      StoreElement(view, coords, ReduceIdentity(op.reduce, elem));
    });
  }
  auto reduce_point = [&] {
    builder_.CreateStore(outer_reduces ? LoadElement(view, coords)
                                       : ReduceIdentity(op.reduce, elem),
                         acc);
    accumulate(coords);
    StoreElement(view, coords,
                 builder_.CreateLoad(acc->getAllocatedType(), acc));
  };
  // Result points are independent unless an outer loop reduces too.
  if (outer_reduces)
    EmitLoopNest(outer, coords, reduce_point);
  else
    EmitParallelNest(outer, coords, ElementCount(all), reduce_point);
  Set(op.results[0], result);
}

// See Note [Arg-extremum in lanes] in docs/internals/codegen.md.
void FunctionEmitter::EmitArgReduce(const ir::Op& op) {
  EmitArgReduceCheck(op);
  Operand operand;
  if (op.regions.empty()) operand = Prepare(op.operands[0]);
  Set(op.results[0],
      EmitTabulate(
          op.results[0]->type,
          [&](Coords& coords) { return EmitArgReduceAt(op, operand, coords); },
          Destination(op.results[0])));
}

void FunctionEmitter::EmitArgReduceCheck(const ir::Op& op) {
  const ir::Dim* dim = op.dims[0];
  // An empty dim has no arg-extremum (unless there is nothing to compute).
  llvm::Value* empty = builder_.CreateAnd(
      builder_.CreateICmpEQ(DimSize(dim), builder_.getInt64(0)),
      builder_.CreateICmpNE(ElementCount(op.results[0]->type.dims),
                            builder_.getInt64(0)));
  EmitCheck(
      builder_.CreateNot(empty), op.loc,
      ir::ReduceName(op.reduce).str() + " over the empty dim " + dim->name);
}

llvm::Value* FunctionEmitter::EmitArgReduceAt(const ir::Op& op,
                                              const Operand& operand,
                                              Coords& coords) {
  constexpr int kLanes = 8;
  const ir::Type& type = op.results[0]->type;
  const ir::Dim* dim = op.dims[0];
  bool is_max = op.reduce == ir::ReduceKind::Argmax;
  ir::ElemKind elem = op.regions.empty()
                          ? op.operands[0]->type.elem
                          : op.region(0)->terminator()->operands[0]->type.elem;
  ir::DimList all = type.dims.Union(ir::DimList{dim});
  std::vector<const ir::Dim*> all_dims(all.begin(), all.end());
  auto element = [&](Coords& coords) -> llvm::Value* {
    if (op.regions.empty()) return Read(operand, coords);
    std::vector<llvm::Value*> args;
    for (const ir::Dim* d : all_dims) args.push_back(coords[d]);
    return EmitRegionValues(*op.region(0), args,
                            std::vector<bool>(args.size(), false))[0];
  };
  // Whether x replaces the best so far, old: strictly better, or the
  // first NaN (max and min propagate NaN).
  auto better = [&](llvm::Value* x, llvm::Value* old) -> llvm::Value* {
    if (ir::IsFloat(elem))
      return builder_.CreateOr(
          is_max ? builder_.CreateFCmpOGT(x, old)
                 : builder_.CreateFCmpOLT(x, old),
          builder_.CreateAnd(builder_.CreateFCmpUNO(x, x),
                             builder_.CreateFCmpORD(old, old)));
    if (elem == ir::ElemKind::Bool)
      return is_max ? builder_.CreateICmpUGT(x, old)
                    : builder_.CreateICmpULT(x, old);
    return is_max ? builder_.CreateICmpSGT(x, old)
                  : builder_.CreateICmpSLT(x, old);
  };
  // The same, or as good (equal, or both NaN) at a lower index.
  auto better_or_earlier = [&](llvm::Value* x, llvm::Value* x_index,
                               llvm::Value* old, llvm::Value* old_index) {
    llvm::Value* same =
        ir::IsFloat(elem)
            ? builder_.CreateOr(
                  builder_.CreateFCmpOEQ(x, old),
                  builder_.CreateAnd(builder_.CreateFCmpUNO(x, x),
                                     builder_.CreateFCmpUNO(old, old)))
            : builder_.CreateICmpEQ(x, old);
    return builder_.CreateOr(
        better(x, old),
        builder_.CreateAnd(same, builder_.CreateICmpSLT(x_index, old_index)));
  };
  llvm::Type* i64 = builder_.getInt64Ty();
  llvm::AllocaInst* best =
      EntryAlloca(llvm::ArrayType::get(RegisterType(elem), kLanes), "best");
  llvm::AllocaInst* best_index =
      EntryAlloca(llvm::ArrayType::get(i64, kLanes), "argbest");
  auto lane_of = [&](llvm::AllocaInst* slots, llvm::Value* lane) {
    return builder_.CreateInBoundsGEP(slots->getAllocatedType(), slots,
                                      {builder_.getInt64(0), lane});
  };
  llvm::Value* identity =
      ReduceIdentity(is_max ? ir::ReduceKind::Max : ir::ReduceKind::Min, elem);
  auto [lo, hi] = DimRange(dim);
  for (int lane = 0; lane < kLanes; ++lane) {
    builder_.CreateStore(identity, lane_of(best, builder_.getInt64(lane)));
    builder_.CreateStore(builder_.CreateAdd(lo, builder_.getInt64(lane)),
                         lane_of(best_index, builder_.getInt64(lane)));
  }
  // Index k goes to lane (k - lo) mod kLanes, in increasing order.
  auto visit = [&](llvm::Value* lane, llvm::Value* k) {
    coords[dim] = k;
    llvm::Value* x = element(coords);
    llvm::Value* slot = lane_of(best, lane);
    llvm::Value* old = builder_.CreateLoad(x->getType(), slot);
    llvm::Value* take = better(x, old);
    builder_.CreateStore(builder_.CreateSelect(take, x, old), slot);
    llvm::Value* index_slot = lane_of(best_index, lane);
    builder_.CreateStore(
        builder_.CreateSelect(take, k, builder_.CreateLoad(i64, index_slot)),
        index_slot);
  };
  llvm::Value* rows = builder_.CreateSDiv(builder_.CreateSub(hi, lo),
                                          builder_.getInt64(kLanes));
  EmitFor(builder_.getInt64(0), rows, [&](llvm::Value* row) {
    llvm::Value* first = builder_.CreateAdd(
        lo, builder_.CreateMul(row, builder_.getInt64(kLanes)));
    EmitFor(builder_.getInt64(0), builder_.getInt64(kLanes),
            [&](llvm::Value* lane) {
              visit(lane, builder_.CreateAdd(first, lane));
            });
  });
  llvm::Value* tail = builder_.CreateAdd(
      lo, builder_.CreateMul(rows, builder_.getInt64(kLanes)));
  EmitFor(tail, hi,
          [&](llvm::Value* k) { visit(builder_.CreateSub(k, tail), k); });
  // Each lane holds the first best of its indices; among lanes that
  // are as good, the lowest index wins.
  llvm::Value* value = builder_.CreateLoad(identity->getType(),
                                           lane_of(best, builder_.getInt64(0)));
  llvm::Value* index =
      builder_.CreateLoad(i64, lane_of(best_index, builder_.getInt64(0)));
  for (int lane = 1; lane < kLanes; ++lane) {
    llvm::Value* x = builder_.CreateLoad(
        identity->getType(), lane_of(best, builder_.getInt64(lane)));
    llvm::Value* x_index =
        builder_.CreateLoad(i64, lane_of(best_index, builder_.getInt64(lane)));
    llvm::Value* take = better_or_earlier(x, x_index, value, index);
    value = builder_.CreateSelect(take, x, value);
    index = builder_.CreateSelect(take, x_index, index);
  }
  return index;
}

void FunctionEmitter::EmitReduceCustom(const ir::Op& op) {
  const ir::Type& type = op.results[0]->type;
  const ir::Dim* dim = op.dims[0];
  const ir::Block& body = *op.region(0);
  const ir::Type& acc_type = body.args[0]->type;
  const ir::Type& elem_type = body.args[1]->type;
  Operand init = Prepare(op.operands[0]);
  Operand x = Prepare(op.operands[1]);
  if (acc_type.IsScalar() && elem_type.IsScalar()) {
    // Element by element: the region combines scalars.
    llvm::AllocaInst* acc = EntryAlloca(RegisterType(type.elem), "acc");
    Set(op.results[0], EmitTabulate(type, [&](Coords& coords) -> llvm::Value* {
          builder_.CreateStore(Read(init, coords), acc);
          EmitLoopNest({dim}, coords, [&] {
            llvm::Value* old =
                builder_.CreateLoad(acc->getAllocatedType(), acc);
            llvm::Value* next = EmitRegionValues(body, {old, Read(x, coords)},
                                                 {false, false})[0];
            builder_.CreateStore(next, acc);
          });
          return builder_.CreateLoad(acc->getAllocatedType(), acc);
        }));
    return;
  }
  // The region combines arrays: at each point of the result's other dims,
  // fold the slices of x along `dim` into a copy of init's slice.
  auto slice = [&](const ir::Type& slice_type, const Operand& from,
                   const Coords& at) -> llvm::Value* {
    if (slice_type.IsScalar()) return Read(from, at);
    llvm::Value* data = Allocate(slice_type);
    ArrayView view = View(slice_type, data);
    Coords coords = at;
    std::vector<const ir::Dim*> dims = LoopOrder(slice_type.dims);
    EmitLoopNest(dims, coords,
                 [&] { StoreElement(view, coords, Read(from, coords)); });
    return data;
  };
  llvm::Value* result = type.IsScalar() ? nullptr : Allocate(type);
  ArrayView view;
  if (result != nullptr) view = View(type, result);
  llvm::AllocaInst* acc = EntryAlloca(ValueType(acc_type), "acc");
  std::vector<bool> owned = {!acc_type.IsScalar(), !elem_type.IsScalar()};
  ir::DimList outer = type.dims.Minus(acc_type.dims);
  std::vector<const ir::Dim*> outer_dims(outer.begin(), outer.end());
  Coords coords;
  EmitLoopNest(outer_dims, coords, [&] {
    builder_.CreateStore(slice(acc_type, init, coords), acc);
    EmitFor(builder_.getInt64(0), DimSize(dim), [&](llvm::Value* k) {
      Coords at = coords;
      at[dim] = k;
      llvm::Value* b = slice(elem_type, x, at);
      llvm::Value* a = builder_.CreateLoad(acc->getAllocatedType(), acc);
      EmitRegion(body, {a, b}, owned, YieldMode::Transfer,
                 [&](const std::vector<llvm::Value*>& values) {
                   builder_.CreateStore(values[0], acc);
                 });
    });
    llvm::Value* folded = builder_.CreateLoad(acc->getAllocatedType(), acc);
    if (acc_type.IsScalar()) {
      // A scalar result is read from `acc` after the nest.
      if (result != nullptr) StoreElement(view, coords, folded);
      return;
    }
    ArrayView piece = View(acc_type, folded);
    Coords inner = coords;
    std::vector<const ir::Dim*> dims = LoopOrder(acc_type.dims);
    EmitLoopNest(dims, inner,
                 [&] { StoreElement(view, inner, LoadElement(piece, inner)); });
    Free(folded);
  });
  Set(op.results[0], result != nullptr
                         ? result
                         : builder_.CreateLoad(acc->getAllocatedType(), acc));
}

void FunctionEmitter::EmitCumsum(const ir::Op& op) {
  const ir::Type& type = op.results[0]->type;
  const ir::Dim* dim = op.dims[0];
  Operand x = Prepare(op.operands[0]);
  llvm::Value* result = Allocate(type);
  ArrayView view = View(type, result);
  std::vector<const ir::Dim*> dims = LoopOrder(type.dims);
  Coords coords;
  EmitLoopNest(dims, coords, [&] {
    llvm::Value* value = Read(x, coords);
    llvm::Value* k = coords[dim];
    // Add the previous prefix (in the result already) unless k == 0.
    llvm::Value* has_previous = builder_.CreateICmpSGT(k, builder_.getInt64(0));
    Coords previous = coords;
    previous[dim] = builder_.CreateSelect(
        has_previous, builder_.CreateSub(k, builder_.getInt64(1)), k);
    llvm::Value* sum = ReduceCombine(ir::ReduceKind::Sum, type.elem,
                                     LoadElement(view, previous), value);
    StoreElement(view, coords, builder_.CreateSelect(has_previous, sum, value));
  });
  Set(op.results[0], result);
}

}  // namespace delta::codegen
