// The collectives of a sharded run (ops.def: allreduce, exscan,
// shard_offset) as calls of the runtime's MPI layer, runtime/distributed.h.
#include "compiler/codegen/llvm/codegen.h"
#include "compiler/codegen/llvm/emitter.h"
#include "runtime/distributed.h"

namespace delta::codegen {

// The runtime's DELTA_COMBINE_* follow the IR's reduction kinds.
static_assert(DELTA_COMBINE_SUM == int(ir::ReduceKind::Sum) &&
              DELTA_COMBINE_PROD == int(ir::ReduceKind::Prod) &&
              DELTA_COMBINE_MAX == int(ir::ReduceKind::Max) &&
              DELTA_COMBINE_MIN == int(ir::ReduceKind::Min));

llvm::Value* FunctionEmitter::CallShard(llvm::StringRef name,
                                        llvm::Type* result,
                                        llvm::ArrayRef<llvm::Value*> args) {
  std::vector<llvm::Type*> params;
  for (llvm::Value* arg : args) params.push_back(arg->getType());
  llvm::FunctionCallee callee = module_.module->getOrInsertFunction(
      name, llvm::FunctionType::get(result, params, false));
  auto* function = llvm::cast<llvm::Function>(callee.getCallee());
  function->addFnAttr(llvm::Attribute::NoUnwind);
  // The block's extent and offset depend only on the size and the process:
  // LLVM may hoist and merge them.
  if (name == "delta_shard_extent" || name == "delta_shard_offset") {
    function->addFnAttr(llvm::Attribute::WillReturn);
    function->setMemoryEffects(llvm::MemoryEffects::none());
  }
  return builder_.CreateCall(callee, args);
}

llvm::Value* FunctionEmitter::ShardExtent(const ir::Dim* dim) {
  return CallShard("delta_shard_extent", builder_.getInt64Ty(),
                   {GlobalDimSize(dim)});
}

llvm::Value* FunctionEmitter::ShardOffset(const ir::Dim* dim) {
  return CallShard("delta_shard_offset", builder_.getInt64Ty(),
                   {GlobalDimSize(dim)});
}

void FunctionEmitter::EmitCollective(const ir::Op& op) {
  if (op.kind == ir::OpKind::ShardOffset) {
    Set(op.results[0], ShardOffset(op.dims[0]));
    return;
  }
  // In place on a copy (a scalar goes through a stack slot): the operand
  // may have other uses.
  const ir::Type& type = op.results[0]->type;
  llvm::Value* operand = Get(op.operands[0]);
  llvm::Value* data = nullptr;
  llvm::Type* memory_type = MemoryType(type.elem);
  if (type.IsScalar()) {
    data = EntryAlloca(memory_type, "collective");
    llvm::Value* stored = type.elem == ir::ElemKind::Bool
                              ? builder_.CreateZExt(operand, memory_type)
                              : operand;
    builder_.CreateStore(stored, data);
  } else {
    data = CopyArray(type, operand);
  }
  llvm::Value* kind = builder_.getInt32(RuntimeElemKind(type.elem));
  llvm::Value* count = ElementCount(type.dims);
  if (op.kind == ir::OpKind::Allreduce)
    CallShard("delta_shard_allreduce", builder_.getVoidTy(),
              {kind, builder_.getInt32(static_cast<int32_t>(op.reduce)), data,
               count});
  else
    CallShard("delta_shard_exscan_sum", builder_.getVoidTy(),
              {kind, data, count});
  if (!type.IsScalar()) {
    Set(op.results[0], data);
    return;
  }
  llvm::Value* loaded = builder_.CreateLoad(memory_type, data);
  if (type.elem == ir::ElemKind::Bool)
    loaded =
        builder_.CreateICmpNE(loaded, llvm::ConstantInt::get(memory_type, 0));
  Set(op.results[0], loaded);
}

}  // namespace delta::codegen
