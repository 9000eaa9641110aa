// Printing and .npy files: the runtime calls behind print, read_npy and
// write_npy, which take arrays in canonical order with the sizes and
// names of their dims.
#include "compiler/codegen/llvm/codegen.h"
#include "compiler/codegen/llvm/emitter.h"

namespace delta::codegen {
namespace {

// The dims of an array as the runtime's print and npy calls take them:
// their sizes (an i64 array on the stack) and names (a constant array of
// strings); null pointers for a scalar.
struct DimArrays {
  llvm::Value* sizes;
  llvm::Value* names;
};

DimArrays EmitDimArrays(FunctionEmitter& emitter, const ir::Type& type) {
  llvm::IRBuilder<>& builder = emitter.Builder();
  ModuleContext& module = emitter.Context();
  size_t rank = type.dims.size();
  llvm::Value* null = llvm::ConstantPointerNull::get(builder.getPtrTy());
  if (rank == 0) return {null, null};
  auto* sizes = emitter.EntryAlloca(
      llvm::ArrayType::get(builder.getInt64Ty(), rank), "sizes");
  std::vector<llvm::Constant*> names;
  for (size_t d = 0; d < rank; ++d) {
    builder.CreateStore(emitter.DimSize(type.dims[d]),
                        builder.CreateConstInBoundsGEP2_64(
                            sizes->getAllocatedType(), sizes, 0, d));
    names.push_back(module.String(type.dims[d]->name));
  }
  auto* names_type = llvm::ArrayType::get(builder.getPtrTy(), rank);
  auto* names_global = new llvm::GlobalVariable(
      *module.module, names_type, /*isConstant=*/true,
      llvm::GlobalValue::PrivateLinkage,
      llvm::ConstantArray::get(names_type, names), "dims");
  return {sizes, names_global};
}

// A stack slot holding the scalar `value` as it is in memory (a bool as a
// byte), for the runtime to read.
llvm::Value* EmitScalarSlot(FunctionEmitter& emitter, ir::ElemKind elem,
                            llvm::Value* value, llvm::StringRef name) {
  llvm::Type* memory_type = emitter.MemoryType(elem);
  llvm::AllocaInst* slot = emitter.EntryAlloca(memory_type, name);
  if (elem == ir::ElemKind::Bool)
    value = emitter.Builder().CreateZExt(value, memory_type);
  emitter.Builder().CreateStore(value, slot);
  return slot;
}

// Where an array's sharded dim is among its dims, or -1.
int64_t ShardedPosition(const ir::Type& type) {
  for (size_t d = 0; d < type.dims.size(); ++d)
    if (type.dims[d]->sharded) return static_cast<int64_t>(d);
  return -1;
}

}  // namespace

void FunctionEmitter::EmitPrint(const ir::Op& op) {
  builder_.CreateCall(module_.print_begin);
  size_t next = 0;
  std::vector<llvm::Value*> copies;
  for (const ir::PrintItem& item : op.print_items) {
    if (!item.is_value) {
      builder_.CreateCall(module_.print_text, {module_.String(item.text)});
      continue;
    }
    if (next >= op.operands.size()) break;
    const ir::Value* value = op.operands[next++];
    const ir::Type& type = value->type;
    // Printed in canonical order (Note [Physical layout]).
    llvm::Value* data = CanonicalTemporary(type, Get(value), copies);
    if (type.IsScalar()) data = EmitScalarSlot(*this, type.elem, data, "print");
    size_t rank = type.dims.size();
    DimArrays dims = EmitDimArrays(*this, type);
    std::vector<llvm::Value*> args = {
        builder_.getInt32(RuntimeElemKind(type.elem)), data,
        builder_.getInt64(static_cast<int64_t>(rank)), dims.sizes, dims.names};
    // A sharded array is gathered and printed by the root process.
    if (int64_t sharded = ShardedPosition(type); sharded >= 0) {
      args.push_back(builder_.getInt64(sharded));
      args.push_back(GlobalDimSize(type.dims[sharded]));
      CallShard("delta_shard_print_value", builder_.getVoidTy(), args);
    } else {
      builder_.CreateCall(module_.print_value, args);
    }
  }
  builder_.CreateCall(module_.print_end);
  for (llvm::Value* copy : copies) Free(copy);
}

void FunctionEmitter::EmitNpy(const ir::Op& op) {
  // runtime/npy.h: the array in memory (dims in type order), its sizes and
  // names, and the memory position of each file axis (op.dims).
  bool read = op.kind == ir::OpKind::ReadNpy;
  const ir::Value* value = read ? op.results[0] : op.operands[0];
  const ir::Type& type = value->type;
  size_t rank = type.dims.size();
  DimArrays dims = EmitDimArrays(*this, type);
  llvm::Value* axes = dims.sizes;  // null for a scalar
  if (rank > 0) {
    std::vector<llvm::Constant*> axis_constants;
    for (const ir::Dim* dim : op.dims) {
      size_t position = 0;
      while (position < rank && type.dims[position] != dim) ++position;
      axis_constants.push_back(builder_.getInt64(position));
    }
    auto* axes_type = llvm::ArrayType::get(builder_.getInt64Ty(), rank);
    axes = new llvm::GlobalVariable(
        *module_.module, axes_type, /*isConstant=*/true,
        llvm::GlobalValue::PrivateLinkage,
        llvm::ConstantArray::get(axes_type, axis_constants), "axes");
  }
  const ir::Loc& loc = op.loc;
  llvm::Value* file = loc.IsValid()
                          ? static_cast<llvm::Value*>(module_.String(loc.file))
                          : llvm::ConstantPointerNull::get(builder_.getPtrTy());
  llvm::Value* line = builder_.getInt32(loc.line);
  llvm::Value* column = builder_.getInt32(loc.column);
  llvm::Value* path = nullptr;
  if (op.print_items[0].is_value) {
    // Note [Path arguments]: main's parameter number k, from the runtime.
    llvm::FunctionCallee path_arg = module_.module->getOrInsertFunction(
        "delta_path_arg",
        llvm::FunctionType::get(builder_.getPtrTy(), {builder_.getInt64Ty()},
                                false));
    path = builder_.CreateCall(
        path_arg, {builder_.getInt64(std::stoll(op.print_items[0].text))});
  } else {
    path = module_.String(op.print_items[0].text);
  }
  llvm::Value* kind = builder_.getInt32(RuntimeElemKind(type.elem));
  llvm::Type* memory_type = MemoryType(type.elem);
  if (read) {
    llvm::Value* data = nullptr;
    llvm::AllocaInst* slot = nullptr;
    if (type.IsScalar()) {
      slot = EntryAlloca(memory_type, "npy");
      data = slot;
    } else {
      data = Allocate(type);
    }
    std::vector<llvm::Value*> args = {
        file,       line,       column,
        path,       kind,       builder_.getInt64(static_cast<int64_t>(rank)),
        dims.sizes, dims.names, axes};
    // Of a sharded array, this process's block.
    if (int64_t sharded = ShardedPosition(type); sharded >= 0) {
      args.push_back(builder_.getInt64(sharded));
      args.push_back(GlobalDimSize(type.dims[sharded]));
      args.push_back(data);
      CallShard("delta_shard_read_npy", builder_.getVoidTy(), args);
    } else {
      args.push_back(data);
      builder_.CreateCall(module_.read_npy, args);
    }
    if (slot != nullptr) {
      llvm::Value* loaded = builder_.CreateLoad(memory_type, slot);
      if (type.elem == ir::ElemKind::Bool)
        loaded = builder_.CreateICmpNE(loaded,
                                       llvm::ConstantInt::get(memory_type, 0));
      data = loaded;
    } else {
      // The file is read in canonical order (Note [Physical layout]).
      data = RelayoutOwned(type, data, /*to_physical=*/true);
    }
    Set(op.results[0], data);
    return;
  }
  std::vector<llvm::Value*> copies;
  llvm::Value* data = CanonicalTemporary(type, Get(value), copies);
  if (type.IsScalar()) data = EmitScalarSlot(*this, type.elem, data, "npy");
  std::vector<llvm::Value*> args = {
      file,
      line,
      column,
      path,
      kind,
      data,
      builder_.getInt64(static_cast<int64_t>(rank)),
      dims.sizes,
      axes};
  // In a sharded program the root process writes (a sharded array
  // gathered), and the others wait until the file is there.
  if (function_.module->IsSharded()) {
    int64_t sharded = ShardedPosition(type);
    args.push_back(builder_.getInt64(sharded));
    args.push_back(sharded >= 0 ? GlobalDimSize(type.dims[sharded])
                                : builder_.getInt64(0));
    CallShard("delta_shard_write_npy", builder_.getVoidTy(), args);
  } else {
    builder_.CreateCall(module_.write_npy, args);
  }
  for (llvm::Value* copy : copies) Free(copy);
}

}  // namespace delta::codegen
