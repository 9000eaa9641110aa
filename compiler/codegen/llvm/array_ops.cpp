// Array ops as loop nests over named dims: every array is dense row-major in
// memory order (canonical dim order, but see Note [Physical layout] in
// layout.cpp), so loops run in that order and the innermost one is
// unit-stride (LLVM vectorizes it). Operands are read at the coordinates of
// the dims they have, which is broadcasting by name.
// This file holds what every array op shares (views, element access, loop
// nests, tabulation, result buffers taken over from operands) and the
// simplest ops: elementwise ops, broadcast and rename. Maps are in
// map_op.cpp, reductions in reduce_ops.cpp, indexing in index_ops.cpp.
#include <llvm/Support/ErrorHandling.h>

#include "compiler/codegen/llvm/emitter.h"

namespace delta::codegen {
namespace {

// True if every use of `value` in `map`'s body is a gather of one element
// at the point the body computes, so that the map may write its result
// over `value` there.
bool ReadsOnlyAtPoint(const ir::Op& map, const ir::Value* value) {
  const ir::Block& body = *map.region(0);
  for (const auto& inner : body.ops) {
    for (size_t k = 0; k < inner->operands.size(); ++k) {
      if (inner->operands[k] != value) continue;
      if (inner->kind != ir::OpKind::Gather || k != 0 ||
          !inner->results[0]->type.IsScalar())
        return false;
      for (size_t m = 1; m < inner->operands.size(); ++m) {
        const ir::Value* index = inner->operands[m];
        auto arg = std::find(body.args.begin(), body.args.end(), index);
        if (arg == body.args.end() ||
            map.dims[arg - body.args.begin()] != index->type.index_dim)
          return false;
      }
    }
    for (const auto& region : inner->regions) {
      bool used = false;
      for (const auto& nested : region->ops)
        ForEachUse(*nested, [&](const ir::Value* used_value) {
          used |= used_value == value;
        });
      if (used) return false;
    }
  }
  return true;
}

}  // namespace

ArrayView FunctionEmitter::View(const ir::Type& type, llvm::Value* data,
                                bool canonical) {
  ArrayView view;
  view.data = data;
  view.type = type;
  view.strides.resize(type.dims.size());
  std::vector<const ir::Dim*> order =
      canonical
          ? std::vector<const ir::Dim*>(type.dims.begin(), type.dims.end())
          : LoopOrder(type.dims);
  llvm::Value* stride = builder_.getInt64(1);
  for (size_t i = order.size(); i-- > 0;) {
    view.strides[type.dims.IndexOf(order[i])] = stride;
    if (i > 0) stride = builder_.CreateMul(stride, DimSize(order[i]));
  }
  return view;
}

llvm::Value* FunctionEmitter::ElementPointer(const ArrayView& view,
                                             const Coords& coords) {
  llvm::Value* offset = builder_.getInt64(0);
  for (size_t i = 0; i < view.type.dims.size(); ++i) {
    auto it = coords.find(view.type.dims[i]);
    if (it == coords.end())
      llvm::report_fatal_error("codegen: no coordinate for dim " +
                               llvm::Twine(view.type.dims[i]->name) + " in " +
                               llvm_function_->getName());
    offset = builder_.CreateAdd(
        offset, builder_.CreateMul(it->second, view.strides[i]));
  }
  return builder_.CreateInBoundsGEP(MemoryType(view.type.elem), view.data,
                                    offset);
}

llvm::Value* FunctionEmitter::LoadElement(const ArrayView& view,
                                          const Coords& coords) {
  llvm::LoadInst* load = builder_.CreateLoad(MemoryType(view.type.elem),
                                             ElementPointer(view, coords));
  if (access_group_ != nullptr)
    load->setMetadata(llvm::LLVMContext::MD_access_group, access_group_);
  llvm::Value* value = load;
  if (view.type.elem == ir::ElemKind::Bool)
    value = builder_.CreateTrunc(value, builder_.getInt1Ty());
  return value;
}

void FunctionEmitter::StoreElement(const ArrayView& view, const Coords& coords,
                                   llvm::Value* value) {
  StoreAt(ElementPointer(view, coords), view.type.elem, value);
}

void FunctionEmitter::StoreAt(llvm::Value* pointer, ir::ElemKind elem,
                              llvm::Value* value) {
  if (elem == ir::ElemKind::Bool)
    value = builder_.CreateZExt(value, builder_.getInt8Ty());
  llvm::StoreInst* store = builder_.CreateStore(value, pointer);
  if (access_group_ != nullptr)
    store->setMetadata(llvm::LLVMContext::MD_access_group, access_group_);
}

Operand FunctionEmitter::Prepare(const ir::Value* value) {
  Operand operand;
  if (value->type.IsScalar()) {
    operand.scalar = Get(value);
    return operand;
  }
  operand.is_array = true;
  operand.array = View(value->type, Get(value));
  return operand;
}

llvm::Value* FunctionEmitter::Read(const Operand& operand,
                                   const Coords& coords) {
  return operand.is_array ? LoadElement(operand.array, coords) : operand.scalar;
}

std::pair<llvm::Value*, llvm::Value*> FunctionEmitter::DimRange(
    const ir::Dim* dim) {
  auto range = dim_ranges_.find(dim);
  if (range != dim_ranges_.end()) return range->second;
  return {builder_.getInt64(0), DimSize(dim)};
}

void FunctionEmitter::EmitLoopNest(llvm::ArrayRef<const ir::Dim*> dims,
                                   Coords& coords,
                                   const std::function<void()>& body,
                                   llvm::MDNode* parallel_accesses) {
  if (dims.empty()) {
    body();
    return;
  }
  const ir::Dim* dim = dims.front();
  bool blocked = dim_ranges_.contains(dim);
  // An innermost dim of a few elements inside another loop is unrolled
  // here, so that the loop around it is the innermost one, which the
  // vectorizer widens (LLVM's own full unrolling gives up on long bodies,
  // such as a fused map's over [obs, comp] with comp = 2).
  if (dims.size() == 1 && !coords.empty() && dim->constant && !blocked &&
      *dim->constant <= kUnrolledDimMax) {
    for (int64_t i = 0; i < *dim->constant; ++i) {
      coords[dim] = builder_.getInt64(i);
      body();
    }
    coords.erase(dim);
    return;
  }
  auto [lo, hi] = DimRange(dim);
  EmitDimFor(
      dim, lo, hi,
      [&](llvm::Value* i) {
        coords[dim] = i;
        EmitLoopNest(dims.drop_front(), coords, body, parallel_accesses);
        coords.erase(dim);
      },
      parallel_accesses);
}

llvm::Value* FunctionEmitter::EmitTabulate(
    const ir::Type& type, const std::function<llvm::Value*(Coords&)>& element,
    llvm::Value* into) {
  Coords coords;
  if (type.IsScalar()) return element(coords);
  llvm::Value* result = into != nullptr ? into : Allocate(type);
  ArrayView view = View(type, result);
  std::vector<const ir::Dim*> dims = LoopOrder(type.dims);
  EmitParallelNest(dims, coords, ElementCount(type.dims),
                   [&] { StoreElement(view, coords, element(coords)); });
  return result;
}

// See Note [In-place array ops] in docs/internals/codegen.md.
llvm::Value* FunctionEmitter::ReusableOperand(const ir::Op& op,
                                              const ir::Type& type) {
  // With a GPU, an operand may have a device copy that a write on the host
  // would leave stale (Note [Data movement] in docs/gpu.md).
  if (owned_ == nullptr || type.IsScalar() || module_.hooks != nullptr)
    return nullptr;
  std::vector<const ir::Value*> candidates;
  if (op.kind == ir::OpKind::Map)
    ForEachUse(op,
               [&](const ir::Value* value) { candidates.push_back(value); });
  else  // an elementwise op
    candidates.assign(op.operands.begin(), op.operands.end());
  for (const ir::Value* value : candidates) {
    if (value->type.IsScalar() || !(value->type.dims == type.dims) ||
        ElemBytes(value->type.elem) != ElemBytes(type.elem) ||
        !owned_->contains(value))
      continue;
    auto it = last_use_->find(value);
    if (it == last_use_->end() || it->second != op_index_) continue;
    if (op.kind == ir::OpKind::Map && !ReadsOnlyAtPoint(op, value)) continue;
    owned_->erase(value);
    return Get(value);
  }
  return nullptr;
}

llvm::Value* FunctionEmitter::Destination(const ir::Value* result) const {
  auto destination = destinations_.find(result);
  return destination != destinations_.end() ? destination->second : nullptr;
}

llvm::Value* FunctionEmitter::ResultBuffer(const ir::Op& op,
                                           const ir::Value* result) {
  if (llvm::Value* destination = Destination(result)) return destination;
  if (result_slots_.contains(result)) return AllocateResult(result);
  return ReusableOperand(op, result->type);
}

void FunctionEmitter::EmitElementwise(const ir::Op& op) {
  std::vector<Operand> operands;
  for (const ir::Value* value : op.operands) operands.push_back(Prepare(value));
  Set(op.results[0], EmitTabulate(
                         op.results[0]->type,
                         [&](Coords& coords) -> llvm::Value* {
                           std::vector<llvm::Value*> x;
                           for (const Operand& operand : operands)
                             x.push_back(Read(operand, coords));
                           if (op.kind == ir::OpKind::Select)
                             return builder_.CreateSelect(x[0], x[1], x[2]);
                           if (x.size() == 1) return EmitUnaryScalar(op, x[0]);
                           return EmitBinaryScalar(op, x[0], x[1]);
                         },
                         ResultBuffer(op, op.results[0])));
}

void FunctionEmitter::EmitBroadcast(const ir::Op& op) {
  Operand x = Prepare(op.operands[0]);
  Set(op.results[0], EmitTabulate(op.results[0]->type, [&](Coords& coords) {
        return Read(x, coords);
      }));
}

void FunctionEmitter::EmitRename(const ir::Op& op) {
  const ir::Dim* from = op.dims[0];
  const ir::Dim* to = op.dims[1];
  llvm::Value* from_size = DimSize(from);
  llvm::Value* to_size = DimSize(to);
  EmitCheck(builder_.CreateICmpEQ(from_size, to_size), op.loc,
            "cannot rename dim " + from->name + " of size %lld to dim " +
                to->name + " of size %lld",
            from_size, to_size);
  Operand x = Prepare(op.operands[0]);
  Set(op.results[0], EmitTabulate(op.results[0]->type, [&](Coords& coords) {
        Coords at = coords;
        at[from] = coords[to];
        return Read(x, at);
      }));
}

}  // namespace delta::codegen
