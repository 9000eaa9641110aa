// IR to LLVM for a whole module: the runtime's declarations, each
// function's LLVM signature, the C `main` of executables, then a
// FunctionEmitter per function (function_emitter.cpp) and LLVM's verifier
// and optimizer.
#include "compiler/codegen/llvm/codegen.h"

#include <llvm/IR/Verifier.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>

#include "compiler/codegen/llvm/emitter.h"
#include "compiler/codegen/llvm/target.h"
#include "runtime/args.h"
#include "runtime/format.h"

namespace delta::codegen {

int32_t RuntimeElemKind(ir::ElemKind kind) {
  switch (kind) {
    case ir::ElemKind::F32:
      return DELTA_ELEM_F32;
    case ir::ElemKind::F64:
      return DELTA_ELEM_F64;
    case ir::ElemKind::I32:
      return DELTA_ELEM_I32;
    case ir::ElemKind::I64:
      return DELTA_ELEM_I64;
    case ir::ElemKind::Bool:
      return DELTA_ELEM_BOOL;
    case ir::ElemKind::Index:
      return DELTA_ELEM_INDEX;
  }
  return DELTA_ELEM_I64;
}

llvm::Type* RegisterType(llvm::LLVMContext& context, ir::ElemKind kind) {
  switch (kind) {
    case ir::ElemKind::F32:
      return llvm::Type::getFloatTy(context);
    case ir::ElemKind::F64:
      return llvm::Type::getDoubleTy(context);
    case ir::ElemKind::I32:
      return llvm::Type::getInt32Ty(context);
    case ir::ElemKind::Bool:
      return llvm::Type::getInt1Ty(context);
    case ir::ElemKind::I64:
    case ir::ElemKind::Index:
      return llvm::Type::getInt64Ty(context);
  }
  return llvm::Type::getInt64Ty(context);
}

llvm::Type* MemoryType(llvm::LLVMContext& context, ir::ElemKind kind) {
  return kind == ir::ElemKind::Bool ? llvm::Type::getInt8Ty(context)
                                    : RegisterType(context, kind);
}

llvm::Type* ValueType(llvm::LLVMContext& context, const ir::Type& type) {
  return type.IsScalar() ? RegisterType(context, type.elem)
                         : llvm::PointerType::getUnqual(context);
}

namespace {

void DeclareRuntime(ModuleContext& context) {
  llvm::Module& module = *context.module;
  llvm::LLVMContext& llvm_context = module.getContext();
  llvm::Type* ptr = llvm::PointerType::getUnqual(llvm_context);
  llvm::Type* i64 = llvm::Type::getInt64Ty(llvm_context);
  llvm::Type* i32 = llvm::Type::getInt32Ty(llvm_context);
  llvm::Type* void_type = llvm::Type::getVoidTy(llvm_context);
  auto declare = [&](llvm::StringRef name, llvm::Type* result,
                     llvm::ArrayRef<llvm::Type*> params) {
    auto callee = module.getOrInsertFunction(
        name, llvm::FunctionType::get(result, params, false));
    llvm::cast<llvm::Function>(callee.getCallee())
        ->addFnAttr(llvm::Attribute::NoUnwind);
    return callee;
  };
  // delta_alloc and delta_free are a malloc/free pair to LLVM, so that it
  // knows fresh buffers alias nothing (vectorization without run-time
  // checks) and may delete unused ones.
  context.alloc = declare("delta_alloc", ptr, {i64});
  auto* alloc = llvm::cast<llvm::Function>(context.alloc.getCallee());
  alloc->addRetAttr(llvm::Attribute::NoAlias);
  alloc->addRetAttr(llvm::Attribute::NonNull);
  alloc->addRetAttr(
      llvm::Attribute::getWithAlignment(llvm_context, llvm::Align(64)));
  alloc->addFnAttr(llvm::Attribute::getWithAllocSizeArgs(llvm_context, 0, {}));
  alloc->addFnAttr(llvm::Attribute::get(
      llvm_context, llvm::Attribute::AllocKind,
      static_cast<uint64_t>(llvm::AllocFnKind::Alloc |
                            llvm::AllocFnKind::Uninitialized)));
  alloc->addFnAttr("alloc-family", "delta_alloc");
  alloc->addFnAttr(llvm::Attribute::WillReturn);
  context.free = declare("delta_free", void_type, {ptr});
  auto* free = llvm::cast<llvm::Function>(context.free.getCallee());
  free->addFnAttr(
      llvm::Attribute::get(llvm_context, llvm::Attribute::AllocKind,
                           static_cast<uint64_t>(llvm::AllocFnKind::Free)));
  free->addFnAttr("alloc-family", "delta_alloc");
  free->addFnAttr(llvm::Attribute::WillReturn);
  free->addParamAttr(0, llvm::Attribute::AllocatedPointer);
  context.fail = declare("delta_fail", void_type, {ptr, i32, i32, ptr});
  context.fail_format =
      declare("delta_fail_format", void_type, {ptr, i32, i32, ptr, i64, i64});
  for (auto* callee : {&context.fail, &context.fail_format}) {
    auto* function = llvm::cast<llvm::Function>(callee->getCallee());
    function->addFnAttr(llvm::Attribute::NoReturn);
    function->addFnAttr(llvm::Attribute::Cold);
  }
  context.print_begin = declare("delta_print_begin", void_type, {});
  context.print_text = declare("delta_print_text", void_type, {ptr});
  context.print_value =
      declare("delta_print_value", void_type, {i32, ptr, i64, ptr, ptr});
  context.print_end = declare("delta_print_end", void_type, {});
  context.read_npy =
      declare("delta_read_npy", void_type,
              {ptr, i32, i32, ptr, i32, i64, ptr, ptr, ptr, ptr});
  context.write_npy = declare("delta_write_npy", void_type,
                              {ptr, i32, i32, ptr, i32, ptr, i64, ptr, ptr});
  context.parallel_for =
      declare("delta_parallel_for", void_type, {i64, ptr, ptr});
  context.set_location =
      declare("delta_set_location", void_type, {ptr, i32, i32, ptr});
  auto* set_location =
      llvm::cast<llvm::Function>(context.set_location.getCallee());
  set_location->addFnAttr(llvm::Attribute::WillReturn);
  set_location->setMemoryEffects(llvm::MemoryEffects::inaccessibleMemOnly());
  context.enter_call = declare("delta_enter_call", void_type, {ptr, ptr});
  context.leave_call = declare("delta_leave_call", void_type, {});
  for (auto* callee : {&context.enter_call, &context.leave_call}) {
    auto* function = llvm::cast<llvm::Function>(callee->getCallee());
    function->addFnAttr(llvm::Attribute::WillReturn);
    function->setMemoryEffects(llvm::MemoryEffects::inaccessibleMemOnly());
  }
}

// The C entry point of an executable (and of `dlc run`'s JIT): parses the
// command line into main's parameters with the runtime's delta_parse_args
// (runtime/args.h), runs the Delta `main`, then flushes. Exits 1 with a
// usage message when the arguments do not fit.
void EmitCMain(ModuleContext& context, const ir::Module& ir_module,
               llvm::Function* delta_main) {
  llvm::Module& module = *context.module;
  llvm::LLVMContext& llvm_context = module.getContext();
  llvm::Type* i32 = llvm::Type::getInt32Ty(llvm_context);
  llvm::Type* i64 = llvm::Type::getInt64Ty(llvm_context);
  llvm::Type* ptr = llvm::PointerType::getUnqual(llvm_context);
  auto* main = llvm::Function::Create(
      llvm::FunctionType::get(i32, {i32, ptr}, false),
      llvm::GlobalValue::ExternalLinkage, "main", module);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(llvm_context, "", main));
  // A sharded program joins the processes `mpirun` started first
  // (runtime/distributed.h).
  if (ir_module.IsSharded())
    builder.CreateCall(module.getOrInsertFunction(
        "delta_shard_init",
        llvm::FunctionType::get(builder.getVoidTy(), false)));

  const std::vector<ir::ProgramParam>& params = ir_module.main_params;
  std::vector<llvm::Constant*> names;
  std::vector<llvm::Constant*> kinds;
  for (const ir::ProgramParam& param : params) {
    names.push_back(context.String(param.name));
    kinds.push_back(builder.getInt32(param.elem ? RuntimeElemKind(*param.elem)
                                                : DELTA_ARG_PATH));
  }
  auto constant_array = [&](llvm::Type* element,
                            std::vector<llvm::Constant*>& values,
                            const char* name) -> llvm::Constant* {
    auto* type = llvm::ArrayType::get(element, values.size());
    return new llvm::GlobalVariable(
        module, type, /*isConstant=*/true, llvm::GlobalValue::PrivateLinkage,
        llvm::ConstantArray::get(type, values), name);
  };
  llvm::Value* names_array = constant_array(ptr, names, "param_names");
  llvm::Value* kinds_array = constant_array(i32, kinds, "param_kinds");
  auto* slots_type =
      llvm::ArrayType::get(i64, std::max<size_t>(params.size(), 1));
  llvm::Value* slots = builder.CreateAlloca(slots_type, nullptr, "slots");
  llvm::FunctionCallee parse = module.getOrInsertFunction(
      "delta_parse_args",
      llvm::FunctionType::get(i32, {i32, ptr, i64, ptr, ptr, ptr}, false));
  llvm::Value* status = builder.CreateCall(
      parse, {main->getArg(0), main->getArg(1),
              builder.getInt64(static_cast<int64_t>(params.size())),
              names_array, kinds_array, slots});
  auto* failed = llvm::BasicBlock::Create(llvm_context, "failed", main);
  auto* run = llvm::BasicBlock::Create(llvm_context, "run", main);
  builder.CreateCondBr(builder.CreateICmpNE(status, builder.getInt32(0)),
                       failed, run);
  builder.SetInsertPoint(failed);
  builder.CreateRet(builder.getInt32(1));

  builder.SetInsertPoint(run);
  // Sizes read from files (ir::FileExtent), the last parameters of main.
  const std::vector<ir::FileExtent>& extents = ir_module.main_extents;
  llvm::Value* sizes = nullptr;
  if (!extents.empty()) {
    std::vector<llvm::Constant*> path_params, axes, lines, columns;
    for (const ir::FileExtent& extent : extents) {
      path_params.push_back(builder.getInt64(extent.path_param));
      axes.push_back(builder.getInt64(extent.axis));
      lines.push_back(builder.getInt32(extent.loc.line));
      columns.push_back(builder.getInt32(extent.loc.column));
    }
    sizes =
        builder.CreateAlloca(i64, builder.getInt64(extents.size()), "sizes");
    llvm::FunctionCallee read_extents = module.getOrInsertFunction(
        "delta_npy_extents",
        llvm::FunctionType::get(i32, {i64, ptr, ptr, ptr, ptr, ptr, ptr},
                                false));
    llvm::Value* read_status = builder.CreateCall(
        read_extents, {builder.getInt64(static_cast<int64_t>(extents.size())),
                       constant_array(i64, path_params, "extent_params"),
                       constant_array(i64, axes, "extent_axes"),
                       context.String(extents.front().loc.file),
                       constant_array(i32, lines, "extent_lines"),
                       constant_array(i32, columns, "extent_columns"), sizes});
    auto* read = llvm::BasicBlock::Create(llvm_context, "read", main);
    builder.CreateCondBr(builder.CreateICmpNE(read_status, builder.getInt32(0)),
                         failed, read);
    builder.SetInsertPoint(read);
  }
  std::vector<llvm::Value*> args;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].elem) continue;  // a path: delta_path_arg(i)
    llvm::Value* slot =
        builder.CreateConstInBoundsGEP2_64(slots_type, slots, 0, i);
    ir::ElemKind elem = *params[i].elem;
    llvm::Value* value =
        builder.CreateLoad(MemoryType(llvm_context, elem), slot);
    if (elem == ir::ElemKind::Bool)
      value = builder.CreateICmpNE(value, builder.getInt8(0));
    args.push_back(value);
  }
  for (size_t i = 0; i < extents.size(); ++i)
    args.push_back(builder.CreateLoad(
        i64, builder.CreateConstInBoundsGEP1_64(i64, sizes, i)));
  builder.CreateCall(delta_main, args);
  builder.CreateCall(module.getOrInsertFunction(
      "delta_flush", llvm::FunctionType::get(builder.getVoidTy(), false)));
  if (ir_module.IsSharded())
    builder.CreateCall(module.getOrInsertFunction(
        "delta_shard_finalize",
        llvm::FunctionType::get(builder.getVoidTy(), false)));
  builder.CreateRet(builder.getInt32(0));
}

}  // namespace

std::string LlvmFunctionName(llvm::StringRef name) {
  return ("delta." + name).str();
}

llvm::Constant* ModuleContext::String(llvm::StringRef text) {
  auto it = strings.find(text);
  if (it != strings.end()) return it->second;
  llvm::IRBuilder<> builder(module->getContext());
  auto* global = new llvm::GlobalVariable(
      *module, llvm::ArrayType::get(builder.getInt8Ty(), text.size() + 1),
      /*isConstant=*/true, llvm::GlobalValue::PrivateLinkage,
      llvm::ConstantDataArray::getString(module->getContext(), text), "str");
  global->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  global->setAlignment(llvm::Align(1));
  strings[text] = global;
  return global;
}

std::unique_ptr<llvm::Module> EmitLLVM(const ir::Module& module,
                                       llvm::LLVMContext& context,
                                       const CodegenOptions& options) {
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine =
      CreateHostTargetMachine(options.opt_level, error);
  if (machine == nullptr)
    llvm::report_fatal_error("codegen: no target for the host: " +
                             llvm::Twine(error));
  auto llvm_module = std::make_unique<llvm::Module>(
      module.name.empty() ? "delta" : module.name, context);
  llvm_module->setDataLayout(machine->createDataLayout());
  llvm_module->setTargetTriple(machine->getTargetTriple().str());

  ModuleContext module_context;
  module_context.module = llvm_module.get();
  module_context.fast_math = options.opt_level >= 3;
  module_context.parallel = options.opt_level >= 2 && options.hooks == nullptr;
  if (module_context.fast_math && options.hooks == nullptr)
    module_context.layout = ChoosePhysicalLayout(module);
  DeclareRuntime(module_context);
  if (options.library && options.hooks == nullptr) {
    llvm::Type* ptr = llvm::PointerType::getUnqual(context);
    module_context.alloc_result = llvm_module->getOrInsertFunction(
        "delta_abi_alloc_result",
        llvm::FunctionType::get(
            ptr,
            {llvm::Type::getInt64Ty(context), llvm::Type::getInt64Ty(context)},
            false));
    // Fresh memory or a caller's buffer that overlaps no input and no
    // other result: no alias, but only the element's alignment.
    auto* alloc_result =
        llvm::cast<llvm::Function>(module_context.alloc_result.getCallee());
    alloc_result->addFnAttr(llvm::Attribute::NoUnwind);
    alloc_result->addFnAttr(llvm::Attribute::WillReturn);
    alloc_result->addRetAttr(llvm::Attribute::NoAlias);
    alloc_result->addRetAttr(llvm::Attribute::NonNull);
  }
  module_context.hooks = options.hooks;
  if (options.hooks != nullptr) options.hooks->BeginModule(module_context);

  std::string cpu = llvm::sys::getHostCPUName().str();
  std::string features = machine->getTargetFeatureString().str();
  for (const auto& function : module.functions) {
    std::vector<llvm::Type*> params;
    for (size_t i = 0; i < function->size_params.size(); ++i)
      params.push_back(llvm::Type::getInt64Ty(context));
    for (const ir::Value* param : function->params)
      params.push_back(ValueType(context, param->type));
    std::vector<llvm::Type*> results;
    for (const ir::Type& type : function->result_types)
      results.push_back(ValueType(context, type));
    llvm::Type* result = results.empty() ? llvm::Type::getVoidTy(context)
                         : results.size() == 1
                             ? results[0]
                             : llvm::StructType::get(context, results);
    // Only `main` and exported functions are visible outside, so that LLVM
    // inlines and deletes the rest.
    bool external = function->name == "main" || function->is_export;
    auto* llvm_function =
        llvm::Function::Create(llvm::FunctionType::get(result, params, false),
                               external ? llvm::GlobalValue::ExternalLinkage
                                        : llvm::GlobalValue::InternalLinkage,
                               LlvmFunctionName(function->name), *llvm_module);
    llvm_function->addFnAttr(llvm::Attribute::NoUnwind);
    llvm_function->addFnAttr("target-cpu", cpu);
    llvm_function->addFnAttr("target-features", features);
    module_context.functions[function.get()] = llvm_function;
  }
  auto start = Clock::now();
  for (const auto& function : module.functions)
    FunctionEmitter(module_context, *function,
                    module_context.functions[function.get()])
        .EmitBody();
  if (options.emit_c_main) {
    if (const ir::Function* main = module.FindFunction("main"))
      EmitCMain(module_context, module, module_context.functions[main]);
  }
  unsigned emitted = llvm_module->getInstructionCount();
  bool limited = options.hooks == nullptr && LimitUnrolling(module_context);
  if (options.timings != nullptr)
    options.timings->steps.Add(
        "emit LLVM IR (" + std::to_string(emitted) + " instructions" +
            (limited ? ", medium loops kept rolled" : "") + ")",
        SecondsSince(start));

  start = Clock::now();
  std::string problems;
  llvm::raw_string_ostream problems_stream(problems);
  if (llvm::verifyModule(*llvm_module, &problems_stream))
    llvm::report_fatal_error("codegen produced invalid LLVM IR: " +
                             llvm::Twine(problems));
  if (options.timings != nullptr)
    options.timings->steps.Add("verify LLVM IR", SecondsSince(start));
  start = Clock::now();
  OptimizeModule(*llvm_module, *machine, options.opt_level,
                 /*vector_math=*/module_context.fast_math,
                 options.timings ? &options.timings->llvm_passes : nullptr);
  if (options.timings != nullptr)
    options.timings->steps.Add(
        "LLVM optimization -O" + std::to_string(options.opt_level) + " (" +
            std::to_string(emitted) + " -> " +
            std::to_string(llvm_module->getInstructionCount()) +
            " instructions)",
        SecondsSince(start));
  return llvm_module;
}

}  // namespace delta::codegen
