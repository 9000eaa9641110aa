// Ops on indices: gather and scatter_add with their range checks (skipped
// where an index was checked when it was made), to_index and iota.
#include "compiler/codegen/llvm/emitter.h"
#include "compiler/ir/index_range.h"

namespace delta::codegen {
namespace {

// An index argument of a region (a map's, a reduction's, a loop's over a
// dim) runs over its dim, so a gather at it needs no range check. Inside
// an outlined chunk LLVM could not prove that itself (the chunk's bounds
// are arguments), and the check's branch kept the loop scalar.
bool IsLoopIndex(const ir::Value* value) {
  return value->def == nullptr && value->block != nullptr &&
         value->block->parent != nullptr &&
         value->type.elem == ir::ElemKind::Index;
}

// Whether every index in `value` was checked against its dim where it was
// made, so that a gather need not check it again: a loop index, a
// to_index or an iota, or elements read from one of those. A gather that
// checks is a loop exit, which keeps LLVM from vectorizing its loop: BA's
// forward pass reads cam[cp, cams] at cam_of's indices of each
// observation, converted once by to_index.
bool IsCheckedIndex(const ir::Value* value) {
  if (IsLoopIndex(value)) return true;
  const ir::Op* def = value->def;
  if (def == nullptr) return false;
  switch (def->kind) {
    case ir::OpKind::ToIndex:
    case ir::OpKind::Iota:
      return true;
    case ir::OpKind::Gather:
      return IsCheckedIndex(def->operands[0]);
    default:
      return false;
  }
}

}  // namespace

void FunctionEmitter::EmitIndexCheck(llvm::Value* index, const ir::Dim* dim,
                                     const ir::Loc& loc) {
  llvm::Value* size = DimSize(dim);
  llvm::Value* in_range =
      builder_.CreateAnd(builder_.CreateICmpSGE(index, builder_.getInt64(0)),
                         builder_.CreateICmpSLT(index, size));
  EmitCheck(in_range, loc,
            "index %lld is out of range for dim " + dim->name + " of size %lld",
            index, size);
}

void FunctionEmitter::EmitGather(const ir::Op& op) {
  ArrayView x = View(op.operands[0]->type, Get(op.operands[0]));
  std::vector<Operand> indices;
  for (size_t i = 1; i < op.operands.size(); ++i)
    indices.push_back(Prepare(op.operands[i]));
  Set(op.results[0],
      EmitTabulate(op.results[0]->type, [&](Coords& coords) -> llvm::Value* {
        Coords at = coords;
        for (size_t i = 0; i < indices.size(); ++i) {
          const ir::Value* operand = op.operands[i + 1];
          const ir::Dim* dim = operand->type.index_dim;
          llvm::Value* index = Read(indices[i], coords);
          if (!IsCheckedIndex(operand)) EmitIndexCheck(index, dim, op.loc);
          at[dim] = index;
        }
        return LoadElement(x, at);
      }));
}

void FunctionEmitter::EmitScatterAdd(const ir::Op& op) {
  const ir::Type& type = op.results[0]->type;
  Operand values = Prepare(op.operands[0]);
  std::vector<Operand> indices;
  ir::DimList indexed;
  ir::DimList space = op.operands[0]->type.dims;
  for (size_t i = 1; i < op.operands.size(); ++i) {
    indices.push_back(Prepare(op.operands[i]));
    indexed.Insert(op.operands[i]->type.index_dim);
    space = space.Union(op.operands[i]->type.dims);
  }
  space = space.Union(type.dims.Minus(indexed));
  llvm::Value* result = Allocate(type);
  llvm::Value* bytes = builder_.CreateMul(
      ElementCount(type.dims), builder_.getInt64(ElemBytes(type.elem)));
  builder_.CreateMemSet(result, builder_.getInt8(0), bytes, llvm::Align(64));
  ArrayView view = View(type, result);
  std::vector<const ir::Dim*> dims(space.begin(), space.end());
  Coords coords;
  // In canonical order, so that colliding indices add up in the same order
  // as in the interpreter.
  EmitLoopNest(dims, coords, [&] {
    Coords at = coords;
    for (size_t i = 0; i < indices.size(); ++i) {
      const ir::Dim* dim = op.operands[i + 1]->type.index_dim;
      llvm::Value* index = Read(indices[i], coords);
      EmitIndexCheck(index, dim, op.loc);
      at[dim] = index;
    }
    llvm::Value* old = LoadElement(view, at);
    StoreElement(view, at,
                 ReduceCombine(ir::ReduceKind::Sum, type.elem, old,
                               Read(values, coords)));
  });
  Set(op.results[0], result);
}

void FunctionEmitter::EmitToIndex(const ir::Op& op) {
  const ir::Dim* dim = op.dims[0];
  Operand k = Prepare(op.operands[0]);
  ir::ElemKind from = op.operands[0]->type.elem;
  // Note [Index ranges]: some positions cannot be out of range.
  bool checked = !op.operands[0]->type.IsScalar() ||
                 !ir::IsIndexInRange(op.operands[0], dim);
  Set(op.results[0], EmitTabulate(op.results[0]->type, [&](Coords& coords) {
        llvm::Value* index =
            EmitConvert(Read(k, coords), from, ir::ElemKind::I64);
        if (checked) EmitIndexCheck(index, dim, op.loc);
        return index;
      }));
}

void FunctionEmitter::EmitIota(const ir::Op& op) {
  const ir::Dim* dim = op.dims[0];
  Set(op.results[0], EmitTabulate(op.results[0]->type,
                                  [&](Coords& coords) { return coords[dim]; }));
}

}  // namespace delta::codegen
