// Emits the C entries of a Delta library as LLVM functions. Each entry only
// stores its arguments into slots and calls delta_abi_invoke with a
// constant descriptor; checks, conversions and error capture are generic
// runtime code (runtime/context.cpp), and a small body function per export
// calls the Delta function itself.
#include "compiler/codegen/c_abi/entry_wrappers.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/raw_ostream.h>

#include "compiler/codegen/llvm/codegen.h"

namespace delta::c_abi {
namespace {

class WrapperEmitter {
 public:
  WrapperEmitter(const AbiModule& abi, llvm::Module& module, bool device)
      : abi_(abi),
        module_(module),
        device_(device),
        context_(module.getContext()),
        ptr_(llvm::PointerType::getUnqual(context_)),
        i64_(llvm::Type::getInt64Ty(context_)),
        i32_(llvm::Type::getInt32Ty(context_)),
        i8_(llvm::Type::getInt8Ty(context_)) {
    // The runtime's structs (context.h): every field is 8 bytes, so these
    // literal structs have the C layout.
    dim_type_ = llvm::StructType::get(context_, {ptr_, i64_, i64_});
    leaf_type_ = llvm::StructType::get(
        context_,
        {ptr_, i64_, i64_, ptr_, ptr_, ptr_, i64_, i64_, i64_, i64_, i64_});
    size_param_type_ = llvm::StructType::get(context_, {ptr_, i64_});
    entry_type_ = llvm::StructType::get(
        context_, {ptr_, i64_, ptr_, i64_, ptr_, i64_, ptr_, ptr_, ptr_});
  }

  void Run();

 private:
  llvm::Constant* String(const std::string& text);
  llvm::Constant* Global(llvm::Constant* init, const std::string& name);
  llvm::Constant* Dim(const AbiDim& dim);
  llvm::Constant* Leaves(const std::vector<AbiLeaf>& leaves,
                         const std::string& name);
  llvm::Function* Body(const AbiEntry& entry);
  llvm::Constant* DeviceTable();
  llvm::Constant* Descriptor(const AbiEntry& entry);
  void Entry(const AbiEntry& entry, llvm::Constant* descriptor,
             const std::vector<CArg>& args, const std::string& name,
             int dlpack);
  void Query(const AbiEntry& entry, llvm::Constant* descriptor);
  void ContextFunctions();
  llvm::Function* Define(const std::string& name, llvm::Type* result,
                         llvm::ArrayRef<llvm::Type*> params);
  void Hide();

  const AbiModule& abi_;
  llvm::Module& module_;
  bool device_;
  llvm::Constant* device_table_ = nullptr;
  llvm::LLVMContext& context_;
  llvm::Type* ptr_;
  llvm::Type* i64_;
  llvm::Type* i32_;
  llvm::Type* i8_;
  llvm::StructType* dim_type_;
  llvm::StructType* leaf_type_;
  llvm::StructType* size_param_type_;
  llvm::StructType* entry_type_;
};

llvm::Constant* WrapperEmitter::String(const std::string& text) {
  auto* global = new llvm::GlobalVariable(
      module_, llvm::ArrayType::get(i8_, text.size() + 1), true,
      llvm::GlobalValue::PrivateLinkage,
      llvm::ConstantDataArray::getString(context_, text), "abi.str");
  global->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  return global;
}

llvm::Constant* WrapperEmitter::Global(llvm::Constant* init,
                                       const std::string& name) {
  return new llvm::GlobalVariable(module_, init->getType(), true,
                                  llvm::GlobalValue::PrivateLinkage, init,
                                  name);
}

llvm::Constant* WrapperEmitter::Dim(const AbiDim& dim) {
  return llvm::ConstantStruct::get(
      dim_type_,
      {String(dim.name), llvm::ConstantInt::get(i64_, dim.size_param),
       llvm::ConstantInt::get(i64_, dim.constant)});
}

llvm::Constant* WrapperEmitter::Leaves(const std::vector<AbiLeaf>& leaves,
                                       const std::string& name) {
  if (leaves.empty())
    return llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(ptr_));
  std::vector<llvm::Constant*> items;
  for (const AbiLeaf& leaf : leaves) {
    std::vector<llvm::Constant*> dims, order;
    for (const AbiDim& dim : leaf.dims) dims.push_back(Dim(dim));
    for (int position : leaf.canonical_order)
      order.push_back(llvm::ConstantInt::get(i64_, position));
    llvm::Constant* null =
        llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(ptr_));
    llvm::Constant* dims_global =
        dims.empty()
            ? null
            : Global(llvm::ConstantArray::get(
                         llvm::ArrayType::get(dim_type_, dims.size()), dims),
                     name + ".dims");
    llvm::Constant* order_global =
        order.empty()
            ? null
            : Global(llvm::ConstantArray::get(
                         llvm::ArrayType::get(i64_, order.size()), order),
                     name + ".order");
    AbiDim index = leaf.index_dim.value_or(AbiDim{"", -1, 0});
    items.push_back(llvm::ConstantStruct::get(
        leaf_type_,
        {String(leaf.path),
         llvm::ConstantInt::get(i64_, codegen::RuntimeElemKind(leaf.elem)),
         llvm::ConstantInt::get(i64_, leaf.dims.size()), dims_global,
         order_global, String(index.name),
         llvm::ConstantInt::get(i64_, index.size_param),
         llvm::ConstantInt::get(i64_, index.constant),
         llvm::ConstantInt::get(i64_, leaf.slot),
         llvm::ConstantInt::get(i64_, leaf.offset),
         llvm::ConstantInt::get(i64_, leaf.dl_slot)}));
  }
  return Global(llvm::ConstantArray::get(
                    llvm::ArrayType::get(leaf_type_, items.size()), items),
                name);
}

llvm::Function* WrapperEmitter::Define(const std::string& name,
                                       llvm::Type* result,
                                       llvm::ArrayRef<llvm::Type*> params) {
  auto* function =
      llvm::Function::Create(llvm::FunctionType::get(result, params, false),
                             llvm::GlobalValue::ExternalLinkage, name, module_);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  return function;
}

// body(sizes, params, results): loads the slots, calls delta.NAME, stores
// its results (bools as one byte, as C has them).
llvm::Function* WrapperEmitter::Body(const AbiEntry& entry) {
  llvm::Function* target =
      module_.getFunction(codegen::LlvmFunctionName(entry.function->name));
  if (target == nullptr)
    llvm::report_fatal_error("c_abi: no LLVM function for export " +
                             llvm::Twine(entry.delta_name));
  llvm::Function* body =
      Define(entry.c_name + ".body", llvm::Type::getVoidTy(context_),
             {ptr_, ptr_, ptr_});
  body->setLinkage(llvm::GlobalValue::InternalLinkage);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context_, "", body));
  std::vector<llvm::Value*> args;
  llvm::FunctionType* type = target->getFunctionType();
  for (size_t i = 0; i < entry.size_params.size(); ++i)
    args.push_back(builder.CreateLoad(
        i64_, builder.CreateConstGEP1_64(i64_, body->getArg(0), i)));
  for (size_t j = 0; j < entry.param_leaves.size(); ++j) {
    llvm::Type* param_type = type->getParamType(args.size());
    llvm::Value* slot = builder.CreateConstGEP1_64(i64_, body->getArg(1), j);
    if (param_type->isIntegerTy(1))
      args.push_back(
          builder.CreateTrunc(builder.CreateLoad(i8_, slot), param_type));
    else
      args.push_back(builder.CreateLoad(param_type, slot));
  }
  llvm::Value* call = builder.CreateCall(target, args);
  for (size_t k = 0; k < entry.result_leaves.size(); ++k) {
    llvm::Value* value =
        entry.result_leaves.size() == 1
            ? call
            : builder.CreateExtractValue(call, {static_cast<unsigned>(k)});
    if (value->getType()->isIntegerTy(1))
      value = builder.CreateZExt(value, i8_);
    builder.CreateStore(value,
                        builder.CreateConstGEP1_64(i64_, body->getArg(2), k));
  }
  builder.CreateRetVoid();
  return body;
}

// The DeltaAbiDevice table of a --target=cuda library: runtime/cuda.h's
// session functions, so that only such libraries link the CUDA runtime.
llvm::Constant* WrapperEmitter::DeviceTable() {
  if (!device_)
    return llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(ptr_));
  if (device_table_ != nullptr) return device_table_;
  llvm::Type* void_type = llvm::Type::getVoidTy(context_);
  auto function = [&](const char* name, llvm::Type* result,
                      llvm::ArrayRef<llvm::Type*> params) {
    return llvm::cast<llvm::Constant>(
        module_
            .getOrInsertFunction(name,
                                 llvm::FunctionType::get(result, params, false))
            .getCallee());
  };
  std::vector<llvm::Constant*> fields = {
      function("delta_cuda_session_create", ptr_, {ptr_, ptr_}),
      function("delta_cuda_session_destroy", void_type, {ptr_}),
      function("delta_cuda_session_enter", void_type, {ptr_}),
      function("delta_cuda_host", void_type, {ptr_, i64_}),
      function("delta_cuda_check", void_type, {}),
      function("delta_cuda_session_leave", void_type, {ptr_, i32_}),
      function("delta_cuda_adopt", ptr_, {ptr_, i64_}),
      function("delta_cuda_to_device", void_type, {ptr_, i64_, ptr_}),
      function("delta_cuda_copy_to_host", void_type, {ptr_, ptr_, i64_}),
      function("delta_cuda_alloc", ptr_, {i64_}),
      function("delta_cuda_device", ptr_, {ptr_, i64_}),
      function("delta_cuda_transpose", i32_, {i32_, i64_, i64_, ptr_, ptr_}),
      function("delta_cuda_result_buffers", void_type, {i64_, ptr_, ptr_})};
  std::vector<llvm::Type*> types(fields.size(), ptr_);
  device_table_ = Global(
      llvm::ConstantStruct::get(llvm::StructType::get(context_, types), fields),
      "abi.device");
  return device_table_;
}

llvm::Constant* WrapperEmitter::Descriptor(const AbiEntry& entry) {
  std::vector<llvm::Constant*> sizes;
  for (size_t i = 0; i < entry.size_params.size(); ++i)
    sizes.push_back(llvm::ConstantStruct::get(
        size_param_type_,
        {String(entry.size_params[i]),
         llvm::ConstantInt::get(i64_, entry.explicit_size_slot[i])}));
  llvm::Constant* null =
      llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(ptr_));
  llvm::Constant* sizes_global =
      sizes.empty()
          ? null
          : Global(llvm::ConstantArray::get(
                       llvm::ArrayType::get(size_param_type_, sizes.size()),
                       sizes),
                   entry.c_name + ".size_params");
  return Global(
      llvm::ConstantStruct::get(
          entry_type_,
          {String(entry.c_name),
           llvm::ConstantInt::get(i64_, entry.size_params.size()), sizes_global,
           llvm::ConstantInt::get(i64_, entry.param_leaves.size()),
           Leaves(entry.param_leaves, entry.c_name + ".params"),
           llvm::ConstantInt::get(i64_, entry.result_leaves.size()),
           Leaves(entry.result_leaves, entry.c_name + ".results"), Body(entry),
           DeviceTable()}),
      entry.c_name + ".entry");
}

// The entry: argument i goes to slot i, then delta_abi_invoke does the rest.
void WrapperEmitter::Entry(const AbiEntry& entry, llvm::Constant* descriptor,
                           const std::vector<CArg>& args,
                           const std::string& name, int dlpack) {
  std::vector<llvm::Type*> params = {ptr_};
  for (const CArg& arg : args)
    params.push_back(arg.kind == CArg::Kind::Size ? i64_
                     : arg.kind == CArg::Kind::Pointer
                         ? ptr_
                         : codegen::RegisterType(context_, arg.elem));
  llvm::Function* function = Define(name, i32_, params);
  for (size_t i = 0; i < args.size(); ++i) {
    function->getArg(i + 1)->setName(args[i].name);
    // C passes a bool zero-extended, as clang declares it.
    if (params[i + 1]->isIntegerTy(1))
      function->addParamAttr(i + 1, llvm::Attribute::ZExt);
  }
  function->getArg(0)->setName("ctx");
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context_, "", function));
  llvm::Value* slots = builder.CreateAlloca(
      llvm::ArrayType::get(i64_, std::max<size_t>(args.size(), 1)));
  for (size_t i = 0; i < args.size(); ++i) {
    llvm::Value* value = function->getArg(i + 1);
    if (value->getType()->isIntegerTy(1))
      value = builder.CreateZExt(value, i64_);
    builder.CreateStore(value, builder.CreateConstGEP1_64(i64_, slots, i));
  }
  llvm::FunctionCallee invoke = module_.getOrInsertFunction(
      "delta_abi_invoke",
      llvm::FunctionType::get(i32_, {ptr_, ptr_, ptr_, i32_}, false));
  builder.CreateRet(builder.CreateCall(
      invoke,
      {function->getArg(0), descriptor, slots, builder.getInt32(dlpack)}));
  (void)entry;
}

void WrapperEmitter::Query(const AbiEntry& entry, llvm::Constant* descriptor) {
  std::vector<llvm::Type*> params(entry.size_params.size(), i64_);
  params.push_back(ptr_);
  llvm::Function* function =
      Define(entry.c_name + "_result_sizes", i32_, params);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context_, "", function));
  llvm::Value* sizes = builder.CreateAlloca(
      llvm::ArrayType::get(i64_, std::max<size_t>(params.size(), 1)));
  for (size_t i = 0; i < entry.size_params.size(); ++i)
    builder.CreateStore(function->getArg(i),
                        builder.CreateConstGEP1_64(i64_, sizes, i));
  llvm::FunctionCallee query = module_.getOrInsertFunction(
      "delta_abi_result_sizes",
      llvm::FunctionType::get(i32_, {ptr_, ptr_, ptr_}, false));
  builder.CreateRet(builder.CreateCall(
      query, {descriptor, sizes, function->getArg(entry.size_params.size())}));
}

// PREFIX_context_create and friends forward to the runtime's copy that is
// linked (hidden) into this library.
void WrapperEmitter::ContextFunctions() {
  auto forward = [&](const std::string& name, const char* runtime_name,
                     llvm::Type* result, llvm::ArrayRef<llvm::Type*> params) {
    llvm::Function* function = Define(abi_.prefix + name, result, params);
    llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context_, "", function));
    llvm::FunctionCallee callee = module_.getOrInsertFunction(
        runtime_name, llvm::FunctionType::get(result, params, false));
    std::vector<llvm::Value*> args;
    for (llvm::Argument& arg : function->args()) args.push_back(&arg);
    llvm::Value* value = builder.CreateCall(callee, args);
    if (result->isVoidTy())
      builder.CreateRetVoid();
    else
      builder.CreateRet(value);
  };
  forward("_context_create", "delta_context_create", ptr_, {ptr_});
  forward("_context_destroy", "delta_context_destroy",
          llvm::Type::getVoidTy(context_), {ptr_});
  forward("_context_set_device_memory", "delta_context_set_device_memory", i32_,
          {ptr_, i32_});
  forward("_context_set_mpi_comm", "delta_context_set_mpi_comm", i32_,
          {ptr_, llvm::Type::getInt64Ty(context_)});
  forward("_last_error", "delta_context_last_error", ptr_, {ptr_});
  forward("_status_string", "delta_status_string", ptr_, {i32_});
  // PREFIX_shard_block(ctx, offset, extent) passes the sharded dim's size.
  for (const auto& [name, size] : abi_.constant_dims) {
    if (name != abi_.sharded_dim) continue;
    llvm::Function* function =
        Define(abi_.prefix + "_shard_block", i32_, {ptr_, ptr_, ptr_});
    llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context_, "", function));
    llvm::FunctionCallee callee = module_.getOrInsertFunction(
        "delta_context_shard_block",
        llvm::FunctionType::get(i32_, {ptr_, i64_, ptr_, ptr_}, false));
    builder.CreateRet(builder.CreateCall(
        callee, {function->getArg(0), llvm::ConstantInt::get(i64_, size),
                 function->getArg(1), function->getArg(2)}));
  }
}

// Generated code allocates through the tracked allocator, and no Delta
// symbol stays visible: two libraries define the same `delta.f`.
void WrapperEmitter::Hide() {
  for (auto [from, to] : {std::pair{"delta_alloc", "delta_abi_alloc"},
                          std::pair{"delta_free", "delta_abi_free"}})
    if (llvm::Function* function = module_.getFunction(from))
      function->setName(to);
  for (llvm::Function& function : module_)
    if (!function.isDeclaration() && function.getName().starts_with("delta."))
      function.setLinkage(llvm::GlobalValue::InternalLinkage);
  // `delta.main` and functions only it called are dead here.
  bool erased = true;
  while (erased) {
    erased = false;
    for (llvm::Function& function : llvm::make_early_inc_range(module_))
      if (function.hasLocalLinkage() && function.use_empty()) {
        function.eraseFromParent();
        erased = true;
      }
  }
}

void WrapperEmitter::Run() {
  ContextFunctions();
  for (const AbiEntry& entry : abi_.entries) {
    llvm::Constant* descriptor = Descriptor(entry);
    Entry(entry, descriptor, PlainArgs(abi_, entry), entry.c_name, 0);
    Entry(entry, descriptor, DlpackArgs(entry), entry.c_name + "_dl", 1);
    if (entry.result_sizes_query) Query(entry, descriptor);
  }
  Hide();
  std::string problems;
  llvm::raw_string_ostream stream(problems);
  if (llvm::verifyModule(module_, &stream))
    llvm::report_fatal_error("c_abi: invalid wrappers: " +
                             llvm::Twine(problems));
}

}  // namespace

void EmitEntryWrappers(const AbiModule& abi, llvm::Module& module,
                       bool device) {
  WrapperEmitter(abi, module, device).Run();
}

}  // namespace delta::c_abi
