// Host code for --target=cuda: each kernel op becomes a launch through the
// runtime (runtime/cuda.h); other ops read their arrays on the host after
// making the host copy current. See docs/gpu.md.
#include "compiler/codegen/cuda/host_launch.h"

#include "compiler/codegen/cuda/kernel_outliner.h"
#include "compiler/codegen/cuda/nvptx_emitter.h"
#include "compiler/codegen/cuda/ptx.h"

namespace delta::cuda {

namespace {

class CudaHost final : public CudaCompilation {
 public:
  CudaHost(KernelPlan plan, std::string ptx, std::vector<DeviceCheck> checks)
      : plan_(std::move(plan)),
        ptx_(std::move(ptx)),
        checks_(std::move(checks)) {}

  const std::string& ptx() const override { return ptx_; }

  void BeginModule(codegen::ModuleContext& module) override;
  void BeginFunction(codegen::FunctionEmitter& emitter,
                     const ir::Function& function) override;
  void BeforeReturn(codegen::FunctionEmitter& emitter,
                    const ir::Function& function) override;
  bool EmitOp(codegen::FunctionEmitter& emitter, const ir::Op& op) override;
  void BeforeHostRead(codegen::FunctionEmitter& emitter, const ir::Type& type,
                      llvm::Value* data) override;

 private:
  llvm::Value* Bytes(codegen::FunctionEmitter& emitter, const ir::Type& type);
  llvm::Value* DevicePointer(codegen::FunctionEmitter& emitter,
                             const ir::Value* value);
  // A fresh array written by the device: its host handle and device address.
  // When `value` is what an exported function returns (at the top of its
  // body), the array may be the caller's own device buffer (Note [Results
  // written in place] in docs/gpu.md).
  std::pair<llvm::Value*, llvm::Value*> DeviceArray(
      codegen::FunctionEmitter& emitter, llvm::Value* bytes,
      const ir::Value* value = nullptr);
  llvm::Value* Function(codegen::FunctionEmitter& emitter,
                        const std::string& name);
  // The kernel arguments after the leading ones: the captured values.
  void AddCaptured(codegen::FunctionEmitter& emitter, const Kernel& kernel,
                   std::vector<llvm::Value*>& args);
  void Launch(codegen::FunctionEmitter& emitter, llvm::Value* function,
              llvm::Value* grid_x, llvm::Value* grid_y, int64_t block_x,
              int64_t block_y, const std::vector<llvm::Value*>& args);
  void EmitTabulate(codegen::FunctionEmitter& emitter, const Kernel& kernel);
  void EmitReduce(codegen::FunctionEmitter& emitter, const Kernel& kernel);
  void EmitContraction(codegen::FunctionEmitter& emitter, const Kernel& kernel);
  llvm::Value* EmitGemm(codegen::FunctionEmitter& emitter, const Kernel& kernel,
                        llvm::Value* out);

  KernelPlan plan_;
  std::string ptx_;
  std::vector<DeviceCheck> checks_;
  llvm::Module* module_ = nullptr;
  llvm::Constant* ptx_global_ = nullptr;
  llvm::Constant* checks_global_ = nullptr;
  llvm::StringMap<llvm::GlobalVariable*> function_slots_;
  llvm::FunctionCallee init_, function_, launch_, resident_blocks_, error_slot_,
      check_, alloc_, alloc_result_, device_, host_, free_, gemm_;
  const ir::Function* current_function_ = nullptr;
  codegen::ModuleContext* context_ = nullptr;
};

llvm::Value* CeilDiv(llvm::IRBuilder<>& builder, llvm::Value* a, int64_t b) {
  return builder.CreateUDiv(builder.CreateAdd(a, builder.getInt64(b - 1)),
                            builder.getInt64(b));
}

llvm::Value* Min(llvm::IRBuilder<>& builder, llvm::Value* a, llvm::Value* b) {
  return builder.CreateBinaryIntrinsic(llvm::Intrinsic::smin, a, b);
}

llvm::Value* Max(llvm::IRBuilder<>& builder, llvm::Value* a, llvm::Value* b) {
  return builder.CreateBinaryIntrinsic(llvm::Intrinsic::smax, a, b);
}

void CudaHost::BeginModule(codegen::ModuleContext& module) {
  context_ = &module;
  module_ = module.module;
  llvm::LLVMContext& context = module_->getContext();
  llvm::Type* ptr = llvm::PointerType::getUnqual(context);
  llvm::Type* i64 = llvm::Type::getInt64Ty(context);
  llvm::Type* i32 = llvm::Type::getInt32Ty(context);
  llvm::Type* void_type = llvm::Type::getVoidTy(context);
  auto declare = [&](llvm::StringRef name, llvm::Type* result,
                     llvm::ArrayRef<llvm::Type*> params) {
    auto callee = module_->getOrInsertFunction(
        name, llvm::FunctionType::get(result, params, false));
    llvm::cast<llvm::Function>(callee.getCallee())
        ->addFnAttr(llvm::Attribute::NoUnwind);
    return callee;
  };
  init_ = declare("delta_cuda_init", void_type, {});
  function_ = declare("delta_cuda_function", ptr, {ptr, ptr, ptr, ptr, i64});
  launch_ = declare("delta_cuda_launch", void_type,
                    {ptr, i64, i64, i64, i64, i64, ptr});
  resident_blocks_ = declare("delta_cuda_resident_blocks", i64, {});
  error_slot_ = declare("delta_cuda_error_slot", ptr, {});
  check_ = declare("delta_cuda_check", void_type, {});
  alloc_ = declare("delta_cuda_alloc", ptr, {i64});
  alloc_result_ = declare("delta_cuda_alloc_result", ptr, {i64, i64});
  device_ = declare("delta_cuda_device", ptr, {ptr, i64});
  host_ = declare("delta_cuda_host", void_type, {ptr, i64});
  free_ = declare("delta_cuda_free", void_type, {ptr});
  gemm_ = declare(
      "delta_cuda_gemm", i32,
      {i32, i64, i64, i64, ptr, i32, ptr, i32, ptr, i64, i64, i64, i64});
  // Arrays may have device copies: freeing and copying go through the
  // runtime, which knows.
  module.free = free_;
  module.copy = declare("delta_cuda_clone", ptr, {ptr, i64});
  ptx_global_ = module.String(ptx_);
  auto* check_type = llvm::StructType::get(context, {ptr, i32, i32, ptr, i32});
  std::vector<llvm::Constant*> entries;
  for (const DeviceCheck& check : checks_)
    entries.push_back(llvm::ConstantStruct::get(
        check_type,
        {check.file.empty() ? llvm::ConstantPointerNull::get(
                                  llvm::PointerType::getUnqual(context))
                            : module.String(check.file),
         llvm::ConstantInt::get(i32, check.line),
         llvm::ConstantInt::get(i32, check.column),
         module.String(check.message),
         llvm::ConstantInt::get(i32, check.formatted ? 1 : 0)}));
  auto* table_type = llvm::ArrayType::get(check_type, entries.size());
  checks_global_ = new llvm::GlobalVariable(
      *module_, table_type, /*isConstant=*/true,
      llvm::GlobalValue::PrivateLinkage,
      llvm::ConstantArray::get(table_type, entries), "delta.cuda.checks");
}

void CudaHost::BeginFunction(codegen::FunctionEmitter& emitter,
                             const ir::Function& function) {
  current_function_ = &function;
  // A program built for the GPU says so at once when there is none.
  if (function.name == "main") emitter.Builder().CreateCall(init_);
}

void CudaHost::BeforeReturn(codegen::FunctionEmitter& emitter,
                            const ir::Function& function) {
  // Failed checks of kernels whose results were never read.
  if (function.name == "main") emitter.Builder().CreateCall(check_);
}

llvm::Value* CudaHost::Bytes(codegen::FunctionEmitter& emitter,
                             const ir::Type& type) {
  return emitter.Builder().CreateMul(
      emitter.ElementCount(type.dims),
      emitter.Builder().getInt64(emitter.ElemBytes(type.elem)));
}

llvm::Value* CudaHost::DevicePointer(codegen::FunctionEmitter& emitter,
                                     const ir::Value* value) {
  return emitter.Builder().CreateCall(
      device_, {emitter.Get(value), Bytes(emitter, value->type)});
}

std::pair<llvm::Value*, llvm::Value*> CudaHost::DeviceArray(
    codegen::FunctionEmitter& emitter, llvm::Value* bytes,
    const ir::Value* value) {
  llvm::Value* host = nullptr;
  const ir::Function* function = current_function_;
  if (value != nullptr && function != nullptr && function->is_export &&
      value->def != nullptr && value->def->parent == function->body.get()) {
    const ir::Op* ret = function->body->terminator();
    for (size_t k = 0; k < ret->operands.size() && host == nullptr; ++k)
      if (ret->operands[k] == value)
        host = emitter.Builder().CreateCall(
            alloc_result_,
            {emitter.Builder().getInt64(static_cast<int64_t>(k)), bytes});
  }
  if (host == nullptr) host = emitter.Builder().CreateCall(alloc_, {bytes});
  llvm::Value* device = emitter.Builder().CreateCall(device_, {host, bytes});
  return {host, device};
}

llvm::Value* CudaHost::Function(codegen::FunctionEmitter& emitter,
                                const std::string& name) {
  llvm::GlobalVariable*& slot = function_slots_[name];
  llvm::Type* ptr = emitter.Builder().getPtrTy();
  if (slot == nullptr)
    slot = new llvm::GlobalVariable(
        *module_, ptr, /*isConstant=*/false, llvm::GlobalValue::InternalLinkage,
        llvm::ConstantPointerNull::get(
            llvm::PointerType::getUnqual(module_->getContext())),
        "delta.cuda." + name);
  return emitter.Builder().CreateCall(
      function_,
      {slot, ptx_global_, context_->String(name), checks_global_,
       emitter.Builder().getInt64(static_cast<int64_t>(checks_.size()))});
}

void CudaHost::AddCaptured(codegen::FunctionEmitter& emitter,
                           const Kernel& kernel,
                           std::vector<llvm::Value*>& args) {
  for (const ir::Value* value : kernel.captured) {
    if (!value->type.IsScalar()) {
      args.push_back(DevicePointer(emitter, value));
    } else if (value->type.elem == ir::ElemKind::Bool) {
      args.push_back(emitter.Builder().CreateZExt(
          emitter.Get(value), emitter.Builder().getInt8Ty()));
    } else {
      args.push_back(emitter.Get(value));
    }
  }
  for (const ir::Dim* dim : kernel.sharded) {
    args.push_back(emitter.DimSize(dim));
    args.push_back(emitter.ShardOffset(dim));
  }
}

void CudaHost::Launch(codegen::FunctionEmitter& emitter, llvm::Value* function,
                      llvm::Value* grid_x, llvm::Value* grid_y, int64_t block_x,
                      int64_t block_y, const std::vector<llvm::Value*>& args) {
  llvm::IRBuilder<>& builder = emitter.Builder();
  auto* array_type = llvm::ArrayType::get(builder.getPtrTy(), args.size());
  llvm::AllocaInst* array = emitter.EntryAlloca(array_type, "kernel.args");
  for (size_t i = 0; i < args.size(); ++i) {
    llvm::AllocaInst* slot = emitter.EntryAlloca(args[i]->getType(), "arg");
    builder.CreateStore(args[i], slot);
    builder.CreateStore(
        slot, builder.CreateConstInBoundsGEP2_64(array_type, array, 0, i));
  }
  builder.CreateCall(launch_,
                     {function, grid_x, grid_y, builder.getInt64(block_x),
                      builder.getInt64(block_y), builder.getInt64(0), array});
}

// See Note [Launch geometry] in docs/gpu.md.
void CudaHost::EmitTabulate(codegen::FunctionEmitter& emitter,
                            const Kernel& kernel) {
  llvm::IRBuilder<>& builder = emitter.Builder();
  const ir::Op& op = *kernel.op;
  llvm::Value* function = Function(emitter, kernel.name);
  std::vector<llvm::Value*> args = {builder.CreateCall(error_slot_)};
  std::vector<llvm::Value*> hosts;
  for (const ir::Value* result : op.results) {
    auto [host, device] =
        DeviceArray(emitter, Bytes(emitter, result->type), result);
    hosts.push_back(host);
    args.push_back(device);
  }
  AddCaptured(emitter, kernel, args);
  llvm::Value* total = emitter.ElementCount(op.results[0]->type.dims);
  // One wave: every thread of the device loops over its share (Note
  // [Launch geometry]).
  llvm::Value* blocks = Min(builder, CeilDiv(builder, total, kBlockSize),
                            builder.CreateCall(resident_blocks_));
  Launch(emitter, function, blocks, builder.getInt64(1), kBlockSize, 1, args);
  for (size_t i = 0; i < hosts.size(); ++i)
    emitter.Set(op.results[i], hosts[i]);
}

// See Note [Reductions on the GPU] in docs/gpu.md.
void CudaHost::EmitReduce(codegen::FunctionEmitter& emitter,
                          const Kernel& kernel) {
  llvm::IRBuilder<>& builder = emitter.Builder();
  const ir::Op& op = *kernel.op;
  const ir::Type& type = op.results[0]->type;
  llvm::Value* result_count = emitter.ElementCount(type.dims);
  llvm::Value* reduced_count = emitter.ElementCount(ir::DimList(op.dims));
  llvm::Value* elem_bytes = builder.getInt64(emitter.ElemBytes(type.elem));
  // Enough blocks to fill the GPU, each with at least 8 elements per
  // thread, at most 1024 parts per result.
  llvm::Value* wanted = builder.CreateCall(resident_blocks_);
  llvm::Value* split =
      Min(builder,
          Min(builder,
              Max(builder, builder.getInt64(1),
                  builder.CreateUDiv(
                      wanted, Max(builder, result_count, builder.getInt64(1)))),
              Max(builder, builder.getInt64(1),
                  CeilDiv(builder, reduced_count, 8 * kBlockSize))),
          builder.getInt64(1024));
  auto [out_host, out_device] =
      DeviceArray(emitter, builder.CreateMul(result_count, elem_bytes),
                  type.IsScalar() ? nullptr : op.results[0]);
  llvm::Function* parent = builder.GetInsertBlock()->getParent();
  llvm::LLVMContext& context = builder.getContext();
  auto* done = llvm::BasicBlock::Create(context, "reduce.done", parent);
  if (!kernel.batch.empty()) {
    // A batch of matrix products: cuBLAS's strided-batched GEMM when the
    // runtime has it, else the reduction kernel.
    auto* fallback = llvm::BasicBlock::Create(context, "reduce.kernel", parent);
    builder.CreateCondBr(
        builder.CreateICmpEQ(EmitGemm(emitter, kernel, out_device),
                             builder.getInt32(0)),
        fallback, done);
    builder.SetInsertPoint(fallback);
  }
  llvm::Value* function = Function(emitter, kernel.name);
  llvm::Value* error_slot = builder.CreateCall(error_slot_);
  auto* one_pass = llvm::BasicBlock::Create(context, "reduce.direct", parent);
  auto* two_pass = llvm::BasicBlock::Create(context, "reduce.split", parent);
  builder.CreateCondBr(builder.CreateICmpEQ(split, builder.getInt64(1)),
                       one_pass, two_pass);
  // One block per result element writes the result itself.
  builder.SetInsertPoint(one_pass);
  {
    std::vector<llvm::Value*> args = {error_slot, out_device, split};
    AddCaptured(emitter, kernel, args);
    Launch(emitter, function, result_count, builder.getInt64(1), kBlockSize, 1,
           args);
    builder.CreateBr(done);
  }
  // `split` blocks per result element write partial results; a second
  // kernel combines them.
  builder.SetInsertPoint(two_pass);
  {
    llvm::Value* parts = builder.CreateMul(result_count, split);
    auto [partial_host, partial_device] =
        DeviceArray(emitter, builder.CreateMul(parts, elem_bytes));
    std::vector<llvm::Value*> args = {error_slot, partial_device, split};
    AddCaptured(emitter, kernel, args);
    Launch(emitter, function, parts, builder.getInt64(1), kBlockSize, 1, args);
    Launch(emitter, Function(emitter, kernel.name + "_combine"), result_count,
           builder.getInt64(1), kBlockSize, 1,
           {error_slot, out_device, partial_device, split});
    builder.CreateCall(free_, {partial_host});
    builder.CreateBr(done);
  }
  builder.SetInsertPoint(done);
  if (!type.IsScalar()) {
    emitter.Set(op.results[0], out_host);
    return;
  }
  // A scalar result is a host value: read it back now.
  builder.CreateCall(host_, {out_host, elem_bytes});
  llvm::Value* value =
      builder.CreateLoad(emitter.MemoryType(type.elem), out_host);
  if (type.elem == ir::ElemKind::Bool)
    value = builder.CreateTrunc(value, builder.getInt1Ty());
  builder.CreateCall(free_, {out_host});
  emitter.Set(op.results[0], value);
}

// A call of delta_cuda_gemm for the contraction `kernel` into `out`: 1 if
// cuBLAS ran it, 0 if it is absent. The result is row-major over its dims
// in canonical order (batch dims first): out[p, q] = sum over k of
// x[p, k] * y[k, q] for each batch element.
llvm::Value* CudaHost::EmitGemm(codegen::FunctionEmitter& emitter,
                                const Kernel& kernel, llvm::Value* out) {
  llvm::IRBuilder<>& builder = emitter.Builder();
  const ir::Type& type = kernel.op->results[0]->type;
  size_t rank = type.dims.size();
  bool i_outer = type.dims[rank - 2] == kernel.i;
  const ir::Value* x = i_outer ? kernel.a : kernel.b;
  const ir::Value* y = i_outer ? kernel.b : kernel.a;
  const ir::Dim* p = type.dims[rank - 2];
  const ir::Dim* q = type.dims[rank - 1];
  llvm::Value* batch = builder.getInt64(1);
  for (const ir::Dim* dim : kernel.batch)
    batch = builder.CreateMul(batch, emitter.DimSize(dim));
  // Elements between two batch elements' matrices (0: shared by all).
  auto stride = [&](const ir::Value* array, const ir::Dim* other) {
    if (kernel.batch.empty() || array->type.dims.size() == 2)
      return static_cast<llvm::Value*>(builder.getInt64(0));
    return builder.CreateMul(emitter.DimSize(other), emitter.DimSize(kernel.k));
  };
  const ir::DimList& x_dims = x->type.dims;
  const ir::DimList& y_dims = y->type.dims;
  llvm::Value* out_stride =
      kernel.batch.empty()
          ? static_cast<llvm::Value*>(builder.getInt64(0))
          : builder.CreateMul(emitter.DimSize(p), emitter.DimSize(q));
  return builder.CreateCall(
      gemm_,
      {builder.getInt32(emitter.ElemBytes(type.elem)), emitter.DimSize(p),
       emitter.DimSize(q), emitter.DimSize(kernel.k), DevicePointer(emitter, x),
       builder.getInt32(x_dims[x_dims.size() - 1] == kernel.k ? 1 : 0),
       DevicePointer(emitter, y),
       builder.getInt32(y_dims[y_dims.size() - 2] == kernel.k ? 1 : 0), out,
       batch, stride(x, p), stride(y, q), out_stride});
}

// See Note [Contractions through cuBLAS] and Note [Tiled contraction] in
// docs/gpu.md: cuBLAS when the runtime finds it, else the tiled kernel.
void CudaHost::EmitContraction(codegen::FunctionEmitter& emitter,
                               const Kernel& kernel) {
  llvm::IRBuilder<>& builder = emitter.Builder();
  const ir::Op& op = *kernel.op;
  const ir::Type& type = op.results[0]->type;
  auto [host, device] =
      DeviceArray(emitter, Bytes(emitter, type), op.results[0]);
  llvm::Value* used_blas = EmitGemm(emitter, kernel, device);
  llvm::Function* parent = builder.GetInsertBlock()->getParent();
  llvm::LLVMContext& context = builder.getContext();
  auto* tiled = llvm::BasicBlock::Create(context, "gemm.tiled", parent);
  auto* done = llvm::BasicBlock::Create(context, "gemm.done", parent);
  builder.CreateCondBr(builder.CreateICmpEQ(used_blas, builder.getInt32(0)),
                       tiled, done);
  builder.SetInsertPoint(tiled);
  llvm::Value* function = Function(emitter, kernel.name);
  std::vector<llvm::Value*> args = {builder.CreateCall(error_slot_), device};
  AddCaptured(emitter, kernel, args);
  Launch(emitter, function, CeilDiv(builder, emitter.DimSize(kernel.j), kTile),
         CeilDiv(builder, emitter.DimSize(kernel.i), kTile), kTile, kTile,
         args);
  builder.CreateBr(done);
  builder.SetInsertPoint(done);
  emitter.Set(op.results[0], host);
}

bool CudaHost::EmitOp(codegen::FunctionEmitter& emitter, const ir::Op& op) {
  if (const Kernel* kernel = plan_.Find(op)) {
    switch (kernel->kind) {
      case KernelKind::Tabulate:
        EmitTabulate(emitter, *kernel);
        break;
      case KernelKind::Reduce:
        EmitReduce(emitter, *kernel);
        break;
      case KernelKind::Contraction:
        EmitContraction(emitter, *kernel);
        break;
    }
    return true;
  }
  // Ops that only pass array pointers around: the ops inside them read.
  if (ir::HasFlag(op.kind, ir::kMovesNoData)) return false;
  // The CPU code reads this op's arrays: their host copies must be current
  // (a no-op for arrays made on the host).
  for (const ir::Value* value : CapturedValues(op))
    if (!value->type.IsScalar())
      emitter.Builder().CreateCall(
          host_, {emitter.Get(value), Bytes(emitter, value->type)});
  return false;
}

void CudaHost::BeforeHostRead(codegen::FunctionEmitter& emitter,
                              const ir::Type& type, llvm::Value* data) {
  emitter.Builder().CreateCall(host_, {data, Bytes(emitter, type)});
}

}  // namespace

std::unique_ptr<CudaCompilation> CompileKernels(const ir::Module& module,
                                                const CudaOptions& options,
                                                std::string& error) {
  if (!IsSupportedArch(options.gpu_arch)) {
    error = "unsupported GPU architecture '" + options.gpu_arch +
            "' (expected sm_XY, e.g. sm_80 or sm_90)";
    return nullptr;
  }
  KernelPlan plan =
      OutlineKernels(module, !FindLibdevice().empty(), options.min_work);
  llvm::LLVMContext context;
  std::vector<DeviceCheck> checks;
  std::unique_ptr<llvm::Module> kernels =
      EmitKernels(module, plan, context, checks);
  std::string ptx;
  if (!EmitPtx(*kernels, options.gpu_arch, options.opt_level, ptx, error))
    return nullptr;
  return std::make_unique<CudaHost>(std::move(plan), std::move(ptx),
                                    std::move(checks));
}

const std::string& Ptx(const CudaCompilation& compilation) {
  return compilation.ptx();
}

codegen::HostHooks& Hooks(CudaCompilation& compilation) { return compilation; }

}  // namespace delta::cuda
