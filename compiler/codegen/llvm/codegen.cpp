// IR to LLVM: functions, values and memory, regions and their ownership of
// arrays, control flow, calls and printing. Loop nests are in
// array_ops.cpp, element math in scalar_ops.cpp.
#include "compiler/codegen/llvm/codegen.h"

#include <llvm/IR/Verifier.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include "compiler/codegen/llvm/emitter.h"
#include "compiler/codegen/llvm/target.h"
#include "runtime/format.h"

namespace delta::codegen {

void ForEachUse(const ir::Op& op,
                const std::function<void(const ir::Value*)>& use) {
  for (const ir::Value* operand : op.operands) use(operand);
  for (const auto& region : op.regions)
    for (const auto& inner : region->ops) ForEachUse(*inner, use);
}

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

namespace {

size_t CountUses(const ir::Op& op, const ir::Value* value) {
  size_t count = 0;
  ForEachUse(op, [&](const ir::Value* used) { count += used == value; });
  return count;
}

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
      declare("delta_set_location", void_type, {ptr, i32, i32});
  auto* set_location =
      llvm::cast<llvm::Function>(context.set_location.getCallee());
  set_location->addFnAttr(llvm::Attribute::WillReturn);
  set_location->setMemoryEffects(llvm::MemoryEffects::inaccessibleMemOnly());
}

// The C entry point of an executable: runs the Delta `main`, then flushes.
void EmitCMain(ModuleContext& context, llvm::Function* delta_main) {
  llvm::Module& module = *context.module;
  llvm::LLVMContext& llvm_context = module.getContext();
  llvm::Type* i32 = llvm::Type::getInt32Ty(llvm_context);
  llvm::Type* ptr = llvm::PointerType::getUnqual(llvm_context);
  auto* main = llvm::Function::Create(
      llvm::FunctionType::get(i32, {i32, ptr}, false),
      llvm::GlobalValue::ExternalLinkage, "main", module);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(llvm_context, "", main));
  builder.CreateCall(delta_main);
  builder.CreateCall(module.getOrInsertFunction(
      "delta_flush", llvm::FunctionType::get(builder.getVoidTy(), false)));
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

FunctionEmitter::FunctionEmitter(ModuleContext& module,
                                 const ir::Function& function,
                                 llvm::Function* llvm_function)
    : module_(module),
      function_(function),
      llvm_function_(llvm_function),
      context_(llvm_function->getContext()),
      builder_(context_) {}

void FunctionEmitter::EmitBody() {
  builder_.SetInsertPoint(
      llvm::BasicBlock::Create(context_, "entry", llvm_function_));
  if (module_.hooks != nullptr) module_.hooks->BeginFunction(*this, function_);
  unsigned next = 0;
  for (const ir::Value* size : function_.size_params)
    Set(size, llvm_function_->getArg(next++));
  for (const ir::Value* param : function_.params)
    Set(param, llvm_function_->getArg(next++));
  const ir::Block& body = *function_.body;
  // Parameters are borrowed: the caller frees them. Those whose memory
  // order differs from their canonical one are copied (Note [Physical
  // layout]), and the copies are the body's to free.
  std::vector<llvm::Value*> args;
  std::vector<bool> owned;
  for (const ir::Value* arg : body.args) {
    llvm::Value* data = Get(arg);
    args.push_back(Relayout(arg->type, data, /*to_physical=*/true));
    owned.push_back(args.back() != data);
  }
  std::vector<llvm::Value*> results = EmitRegionValues(body, args, owned);
  const ir::Op* terminator = body.terminator();
  for (size_t i = 0; i < results.size(); ++i)
    results[i] = RelayoutOwned(terminator->operands[i]->type, results[i],
                               /*to_physical=*/false);
  if (module_.hooks != nullptr) module_.hooks->BeforeReturn(*this, function_);
  llvm::Type* result_type = llvm_function_->getReturnType();
  if (results.empty()) {
    builder_.CreateRetVoid();
  } else if (results.size() == 1) {
    builder_.CreateRet(results[0]);
  } else {
    llvm::Value* aggregate = llvm::PoisonValue::get(result_type);
    for (size_t i = 0; i < results.size(); ++i)
      aggregate = builder_.CreateInsertValue(aggregate, results[i],
                                             {static_cast<unsigned>(i)});
    builder_.CreateRet(aggregate);
  }
}

llvm::Value* FunctionEmitter::Get(const ir::Value* value) {
  auto it = values_.find(value);
  if (it == values_.end())
    llvm::report_fatal_error("codegen: @" + llvm::Twine(function_.name) +
                             " uses a value before its definition");
  return it->second;
}

llvm::Value* FunctionEmitter::DimSize(const ir::Dim* dim) {
  if (dim->constant) return builder_.getInt64(*dim->constant);
  if (dim->size == nullptr)
    llvm::report_fatal_error("codegen: dim " + llvm::Twine(dim->name) +
                             " has no size");
  return Get(dim->size);
}

llvm::Type* FunctionEmitter::RegisterType(ir::ElemKind kind) {
  switch (kind) {
    case ir::ElemKind::F32:
      return builder_.getFloatTy();
    case ir::ElemKind::F64:
      return builder_.getDoubleTy();
    case ir::ElemKind::I32:
      return builder_.getInt32Ty();
    case ir::ElemKind::Bool:
      return builder_.getInt1Ty();
    case ir::ElemKind::I64:
    case ir::ElemKind::Index:
      return builder_.getInt64Ty();
  }
  return builder_.getInt64Ty();
}

llvm::Type* FunctionEmitter::MemoryType(ir::ElemKind kind) {
  // A bool is one byte in memory (format.h, the C ABI), an i1 in registers.
  return kind == ir::ElemKind::Bool ? builder_.getInt8Ty() : RegisterType(kind);
}

llvm::Type* FunctionEmitter::ValueType(const ir::Type& type) {
  return type.IsScalar() ? RegisterType(type.elem) : builder_.getPtrTy();
}

int64_t FunctionEmitter::ElemBytes(ir::ElemKind kind) {
  return static_cast<int64_t>(
      module_.module->getDataLayout().getTypeAllocSize(MemoryType(kind)));
}

llvm::Value* FunctionEmitter::ElementCount(const ir::DimList& dims) {
  llvm::Value* count = builder_.getInt64(1);
  for (const ir::Dim* dim : dims)
    count = builder_.CreateMul(count, DimSize(dim));
  return count;
}

llvm::Value* FunctionEmitter::Allocate(const ir::Type& type) {
  llvm::Value* bytes = builder_.CreateMul(
      ElementCount(type.dims), builder_.getInt64(ElemBytes(type.elem)));
  return builder_.CreateCall(module_.alloc, {bytes});
}

void FunctionEmitter::Free(llvm::Value* data) {
  builder_.CreateCall(module_.free, {data});
}

llvm::Value* FunctionEmitter::CopyArray(const ir::Type& type,
                                        llvm::Value* data) {
  llvm::Value* bytes = builder_.CreateMul(
      ElementCount(type.dims), builder_.getInt64(ElemBytes(type.elem)));
  if (module_.copy) return builder_.CreateCall(module_.copy, {data, bytes});
  llvm::Value* copy = Allocate(type);
  builder_.CreateMemCpy(copy, llvm::Align(64), data, llvm::Align(64), bytes);
  return copy;
}

llvm::AllocaInst* FunctionEmitter::EntryAlloca(llvm::Type* type,
                                               llvm::StringRef name) {
  // In the entry block, so that mem2reg turns loop state into SSA values.
  llvm::BasicBlock& entry = llvm_function_->getEntryBlock();
  llvm::IRBuilder<> entry_builder(&entry, entry.begin());
  return entry_builder.CreateAlloca(type, nullptr, name);
}

void FunctionEmitter::EmitFailure(const ir::Loc& loc, llvm::StringRef message,
                                  llvm::Value* first, llvm::Value* second) {
  // Without a location the runtime prints just `error: message`, as the
  // interpreter does.
  llvm::Value* file = loc.IsValid()
                          ? static_cast<llvm::Value*>(module_.String(loc.file))
                          : llvm::ConstantPointerNull::get(builder_.getPtrTy());
  llvm::Value* line = builder_.getInt32(loc.line);
  llvm::Value* column = builder_.getInt32(loc.column);
  if (first == nullptr) {
    builder_.CreateCall(module_.fail,
                        {file, line, column, module_.String(message)});
  } else {
    builder_.CreateCall(module_.fail_format,
                        {file, line, column, module_.String(message), first,
                         second != nullptr ? second : builder_.getInt64(0)});
  }
  builder_.CreateUnreachable();
}

void FunctionEmitter::EmitCheck(llvm::Value* ok, const ir::Loc& loc,
                                llvm::StringRef message, llvm::Value* first,
                                llvm::Value* second) {
  auto* fail = llvm::BasicBlock::Create(context_, "fail", llvm_function_);
  auto* pass = llvm::BasicBlock::Create(context_, "ok", llvm_function_);
  builder_.CreateCondBr(ok, pass, fail);
  builder_.SetInsertPoint(fail);
  EmitFailure(loc, message, first, second);
  builder_.SetInsertPoint(pass);
}

// See Note [Array ownership] in docs/internals/codegen.md: every array an
// op produces is a fresh buffer owned by the block that defines it, freed
// after its last use in that block unless the block's terminator hands it
// on to the op (loop state, if results, return values).
void FunctionEmitter::EmitRegion(const ir::Block& block,
                                 const std::vector<llvm::Value*>& args,
                                 const std::vector<bool>& owned_args,
                                 YieldMode mode, const Consumer& consume) {
  auto* outer_owned = owned_;
  auto* outer_last_use = last_use_;
  size_t outer_index = op_index_;
  llvm::SmallPtrSet<const ir::Value*, 16> owned;
  llvm::DenseMap<const ir::Value*, size_t> last_use;
  for (size_t i = 0; i < block.ops.size(); ++i)
    ForEachUse(*block.ops[i],
               [&](const ir::Value* used) { last_use[used] = i; });
  for (size_t i = 0; i < block.args.size(); ++i) {
    Set(block.args[i], args[i]);
    if (owned_args[i] && !block.args[i]->type.IsScalar())
      owned.insert(block.args[i]);
  }
  owned_ = &owned;
  last_use_ = &last_use;

  size_t terminator = block.ops.empty() ? 0 : block.ops.size() - 1;
  for (size_t i = 0; i < terminator; ++i) {
    // A blocked group (Note [Cache blocking]) emits ops i..last at once.
    size_t last = i;
    BlockGroup group = FindBlockGroup(block, i);
    if (group.members.empty()) {
      op_index_ = i;
      EmitOp(*block.ops[i]);
    } else {
      EmitBlockGroup(block, group);
      last = group.members.back();
    }
    for (size_t k = i; k <= last; ++k)
      for (const ir::Value* result : block.ops[k]->results)
        if (!result->type.IsScalar() && !destinations_.contains(result))
          owned.insert(result);
    i = last;
    std::vector<const ir::Value*> dead;
    for (const ir::Value* value : owned) {
      auto it = last_use.find(value);
      if (it == last_use.end() || it->second <= i) dead.push_back(value);
    }
    for (const ir::Value* value : dead) {
      Free(Get(value));
      owned.erase(value);
    }
  }

  std::vector<llvm::Value*> yielded;
  if (!block.ops.empty()) {
    op_index_ = terminator;
    for (const ir::Value* value : block.terminator()->operands) {
      llvm::Value* llvm_value = Get(value);
      if (mode == YieldMode::Transfer && !value->type.IsScalar()) {
        // A buffer can be handed on once; a second use or a value the block
        // does not own is copied.
        if (owned.contains(value))
          owned.erase(value);
        else if (!destinations_.contains(value))
          llvm_value = CopyArray(value->type, llvm_value);
      }
      yielded.push_back(llvm_value);
    }
  }
  consume(yielded);
  for (const ir::Value* value : owned) Free(Get(value));

  owned_ = outer_owned;
  last_use_ = outer_last_use;
  op_index_ = outer_index;
}

std::vector<llvm::Value*> FunctionEmitter::EmitRegionValues(
    const ir::Block& block, const std::vector<llvm::Value*>& args,
    const std::vector<bool>& owned_args) {
  std::vector<llvm::Value*> result;
  EmitRegion(block, args, owned_args, YieldMode::Transfer,
             [&](const std::vector<llvm::Value*>& values) { result = values; });
  return result;
}

llvm::Value* FunctionEmitter::TakeOperand(const ir::Op& op, size_t i) {
  const ir::Value* value = op.operands[i];
  llvm::Value* llvm_value = Get(value);
  if (value->type.IsScalar()) return llvm_value;
  if (owned_ != nullptr && owned_->contains(value)) {
    auto it = last_use_->find(value);
    if (it != last_use_->end() && it->second == op_index_ &&
        CountUses(op, value) == 1) {
      owned_->erase(value);
      return llvm_value;
    }
  }
  return CopyArray(value->type, llvm_value);
}

// Note [Masked remainders]: a loop whose body calls exp, log, sin, cos,
// pow or tanh is vectorized with its last iteration masked (tail folding)
// at -O3. Its scalar remainder would call scalar libm once per element,
// each call costing about as much as eight lanes of libmvec's: LSTM's maps
// over 14 lanes spent more time in their 6-element remainders than in the
// vector loop. Masked lanes compute on whatever the masked loads give and
// are thrown away; the math functions have no side effects.
namespace {
// Whether `callee` is a math function that -O3 maps to libmvec.
bool IsVectorMath(const llvm::Function& callee) {
  switch (callee.getIntrinsicID()) {
    case llvm::Intrinsic::exp:
    case llvm::Intrinsic::log:
    case llvm::Intrinsic::sin:
    case llvm::Intrinsic::cos:
    case llvm::Intrinsic::pow:
      return true;
    default:
      break;
  }
  llvm::StringRef name = callee.getName();
  return name == "tanh" || name == "tanhf" || name == "tan" || name == "tanf";
}

// Whether any call from block `first` to the function's end satisfies
// `pred` (given the callee, null for an indirect call).
bool AnyCall(const llvm::BasicBlock* first,
             llvm::function_ref<bool(const llvm::Function*)> pred) {
  const llvm::Function& function = *first->getParent();
  for (auto it = first->getIterator(); it != function.end(); ++it)
    for (const llvm::Instruction& instruction : *it)
      if (const auto* call = llvm::dyn_cast<llvm::CallInst>(&instruction))
        if (pred(call->getCalledFunction())) return true;
  return false;
}

// Whether the blocks from `first` to the function's end call vector math.
bool CallsVectorMath(const llvm::BasicBlock* first) {
  return AnyCall(first, [](const llvm::Function* callee) {
    return callee != nullptr && IsVectorMath(*callee);
  });
}

// Whether the blocks from `first` to the function's end call a function
// that the vectorizer cannot widen: anything but an intrinsic, except the
// math functions when `vector_math` maps them to libmvec. Forcing such a
// loop to vectorize makes LLVM warn that it could not (a map calling tanh
// at -O2).
bool CallsScalarOnly(const llvm::BasicBlock* first, bool vector_math) {
  return AnyCall(first, [&](const llvm::Function* callee) {
    if (callee == nullptr) return true;
    if (IsVectorMath(*callee)) return !vector_math;
    return !callee->isIntrinsic();
  });
}
}  // namespace

void FunctionEmitter::EmitFor(llvm::Value* lo, llvm::Value* hi,
                              const std::function<void(llvm::Value*)>& body,
                              llvm::MDNode* parallel_accesses) {
  llvm::AllocaInst* counter = EntryAlloca(builder_.getInt64Ty(), "i");
  builder_.CreateStore(lo, counter);
  auto* header = llvm::BasicBlock::Create(context_, "loop", llvm_function_);
  auto* body_block = llvm::BasicBlock::Create(context_, "body", llvm_function_);
  auto* exit = llvm::BasicBlock::Create(context_, "done", llvm_function_);
  builder_.CreateBr(header);
  builder_.SetInsertPoint(header);
  llvm::Value* i = builder_.CreateLoad(builder_.getInt64Ty(), counter);
  builder_.CreateCondBr(builder_.CreateICmpSLT(i, hi), body_block, exit);
  builder_.SetInsertPoint(body_block);
  int loops_before = loops_emitted_;
  body(i);
  bool innermost = loops_emitted_ == loops_before;
  ++loops_emitted_;
  builder_.CreateStore(builder_.CreateAdd(i, builder_.getInt64(1)), counter);
  llvm::BranchInst* latch = builder_.CreateBr(header);
  std::vector<llvm::Metadata*> loop_properties = {nullptr};
  if (parallel_accesses != nullptr)
    loop_properties.push_back(llvm::MDNode::get(
        context_, {llvm::MDString::get(context_, "llvm.loop.parallel_accesses"),
                   parallel_accesses}));
  if (module_.fast_math && CallsVectorMath(body_block))
    loop_properties.push_back(llvm::MDNode::get(
        context_,
        {llvm::MDString::get(context_, "llvm.loop.vectorize.predicate.enable"),
         llvm::ConstantAsMetadata::get(builder_.getTrue())}));
  if (force_vectorize_ && innermost && parallel_accesses != nullptr &&
      !CallsScalarOnly(body_block, module_.fast_math))
    loop_properties.push_back(llvm::MDNode::get(
        context_, {llvm::MDString::get(context_, "llvm.loop.vectorize.enable"),
                   llvm::ConstantAsMetadata::get(builder_.getTrue())}));
  if (loop_properties.size() > 1) {
    llvm::MDNode* loop = llvm::MDNode::getDistinct(context_, loop_properties);
    loop->replaceOperandWith(0, loop);
    latch->setMetadata(llvm::LLVMContext::MD_loop, loop);
  }
  builder_.SetInsertPoint(exit);
}

void FunctionEmitter::EmitLoop(const ir::Op& op) {
  llvm::Value* lo = Get(op.operands[0]);
  llvm::Value* hi = Get(op.operands[1]);
  std::vector<llvm::AllocaInst*> state;
  for (size_t i = 2; i < op.operands.size(); ++i) {
    state.push_back(EntryAlloca(ValueType(op.operands[i]->type), "state"));
    builder_.CreateStore(TakeOperand(op, i), state.back());
  }
  // A loop over a dim may stack extra yielded values over it (a scan).
  std::vector<ArrayView> stacked;
  for (size_t i = state.size(); i < op.results.size(); ++i) {
    llvm::Value* into = Destination(op.results[i]);
    stacked.push_back(
        View(op.results[i]->type,
             into != nullptr ? into : Allocate(op.results[i]->type)));
  }
  const ir::Block& body = *op.region(0);
  const ir::Op* yield = body.terminator();
  std::vector<bool> in_place = StackedInPlace(op);
  EmitFor(lo, hi, [&](llvm::Value* k) {
    std::vector<llvm::Value*> args = {k};
    for (llvm::AllocaInst* slot : state)
      args.push_back(builder_.CreateLoad(slot->getAllocatedType(), slot));
    for (size_t j = 0; j < stacked.size(); ++j) {
      if (!in_place[j]) continue;
      const ir::Value* value = yield->operands[state.size() + j];
      llvm::Value* bytes = builder_.CreateMul(
          builder_.CreateMul(k, ElementCount(value->type.dims)),
          builder_.getInt64(ElemBytes(value->type.elem)));
      destinations_[value] =
          builder_.CreateGEP(builder_.getInt8Ty(), stacked[j].data, bytes);
    }
    std::vector<bool> owned(args.size(), true);
    owned[0] = false;
    EmitRegion(
        body, args, owned, YieldMode::Transfer,
        [&](const std::vector<llvm::Value*>& next) {
          for (size_t i = 0; i < state.size(); ++i)
            builder_.CreateStore(next[i], state[i]);
          for (size_t j = 0; j < stacked.size(); ++j) {
            const ir::Type& type = yield->operands[state.size() + j]->type;
            llvm::Value* value = next[state.size() + j];
            if (in_place[j]) {
              destinations_.erase(yield->operands[state.size() + j]);
              continue;  // already in its slice
            }
            Coords coords;
            coords[op.dims[0]] = k;
            if (type.IsScalar()) {
              StoreElement(stacked[j], coords, value);
              continue;
            }
            if (module_.hooks != nullptr)
              module_.hooks->BeforeHostRead(*this, type, value);
            ArrayView slice = View(type, value);
            std::vector<const ir::Dim*> dims = LoopOrder(type.dims);
            EmitLoopNest(dims, coords, [&] {
              StoreElement(stacked[j], coords, LoadElement(slice, coords));
            });
            Free(value);  // handed over by the region
          }
        });
  });
  for (size_t i = 0; i < state.size(); ++i)
    Set(op.results[i],
        builder_.CreateLoad(state[i]->getAllocatedType(), state[i]));
  for (size_t j = 0; j < stacked.size(); ++j)
    Set(op.results[state.size() + j], stacked[j].data);
}

// Note [Scan outputs in place]: a loop's stacked output over its own dim,
// when that dim is the outermost of the stack, has a contiguous slice per
// iteration laid out as the yielded array. If a map or an elementwise op of
// the body makes that array, or a loop in the body stacks it (and the body
// yields it once), the op writes it straight into the slice: no buffer of
// its own, no copy and no free per iteration. Reverse mode's tapes
// (docs/internals/ad.md) are such stacks: LSTM's forward scan yields about
// fifteen small arrays per step.
std::vector<bool> FunctionEmitter::StackedInPlace(const ir::Op& loop) {
  size_t state = loop.operands.size() - 2;
  const ir::Block& body = *loop.region(0);
  const ir::Op* yield = body.terminator();
  std::vector<bool> in_place(loop.results.size() - state, false);
  if (module_.hooks != nullptr || loop.dims.empty()) return in_place;
  for (size_t j = 0; j < in_place.size(); ++j) {
    const ir::Value* value = yield->operands[state + j];
    const ir::Type& stacked = loop.results[state + j]->type;
    const ir::Op* def = value->def;
    in_place[j] =
        !value->type.IsScalar() && LoopOrder(stacked.dims)[0] == loop.dims[0] &&
        def != nullptr && def->parent == &body &&
        (def->kind == ir::OpKind::Map || ir::IsElementwise(def->kind) ||
         (def->kind == ir::OpKind::Loop &&
          value->index >= def->operands.size() - 2)) &&
        llvm::count(yield->operands, value) == 1;
  }
  return in_place;
}

void FunctionEmitter::EmitWhile(const ir::Op& op) {
  std::vector<llvm::AllocaInst*> state;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    state.push_back(EntryAlloca(ValueType(op.operands[i]->type), "state"));
    builder_.CreateStore(TakeOperand(op, i), state.back());
  }
  auto load_state = [&] {
    std::vector<llvm::Value*> values;
    for (llvm::AllocaInst* slot : state)
      values.push_back(builder_.CreateLoad(slot->getAllocatedType(), slot));
    return values;
  };
  auto* header = llvm::BasicBlock::Create(context_, "while", llvm_function_);
  auto* body_block = llvm::BasicBlock::Create(context_, "body", llvm_function_);
  auto* exit = llvm::BasicBlock::Create(context_, "done", llvm_function_);
  builder_.CreateBr(header);
  builder_.SetInsertPoint(header);
  // The condition only reads the state; the body owns it.
  std::vector<llvm::Value*> condition = EmitRegionValues(
      *op.region(0), load_state(), std::vector<bool>(state.size(), false));
  builder_.CreateCondBr(condition[0], body_block, exit);
  builder_.SetInsertPoint(body_block);
  EmitRegion(*op.region(1), load_state(), std::vector<bool>(state.size(), true),
             YieldMode::Transfer, [&](const std::vector<llvm::Value*>& next) {
               for (size_t i = 0; i < state.size(); ++i)
                 builder_.CreateStore(next[i], state[i]);
             });
  builder_.CreateBr(header);
  builder_.SetInsertPoint(exit);
  std::vector<llvm::Value*> results = load_state();
  for (size_t i = 0; i < results.size(); ++i) Set(op.results[i], results[i]);
}

void FunctionEmitter::EmitIf(const ir::Op& op) {
  std::vector<llvm::AllocaInst*> slots;
  for (const ir::Value* result : op.results)
    slots.push_back(EntryAlloca(ValueType(result->type), "if"));
  auto* then_block = llvm::BasicBlock::Create(context_, "then", llvm_function_);
  auto* else_block = llvm::BasicBlock::Create(context_, "else", llvm_function_);
  auto* merge = llvm::BasicBlock::Create(context_, "endif", llvm_function_);
  builder_.CreateCondBr(Get(op.operands[0]), then_block, else_block);
  for (unsigned branch = 0; branch < 2; ++branch) {
    builder_.SetInsertPoint(branch == 0 ? then_block : else_block);
    EmitRegion(*op.region(branch), {}, {}, YieldMode::Transfer,
               [&](const std::vector<llvm::Value*>& values) {
                 for (size_t i = 0; i < slots.size(); ++i)
                   builder_.CreateStore(values[i], slots[i]);
               });
    builder_.CreateBr(merge);
  }
  builder_.SetInsertPoint(merge);
  for (size_t i = 0; i < slots.size(); ++i)
    Set(op.results[i],
        builder_.CreateLoad(slots[i]->getAllocatedType(), slots[i]));
}

void FunctionEmitter::EmitCall(const ir::Op& op) {
  llvm::Function* callee = module_.functions.lookup(op.callee);
  std::vector<llvm::Value*> args;
  for (const ir::Dim* dim : op.dims) args.push_back(DimSize(dim));
  // Signatures are canonical (Note [Physical layout]).
  std::vector<llvm::Value*> copies;
  for (const ir::Value* operand : op.operands)
    args.push_back(CanonicalTemporary(operand->type, Get(operand), copies));
  llvm::Value* call = builder_.CreateCall(callee, args);
  for (llvm::Value* copy : copies) Free(copy);
  for (unsigned i = 0; i < op.results.size(); ++i) {
    llvm::Value* result =
        op.results.size() == 1 ? call : builder_.CreateExtractValue(call, {i});
    Set(op.results[i],
        RelayoutOwned(op.results[i]->type, result, /*to_physical=*/true));
  }
}

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
    if (type.IsScalar()) {
      llvm::Type* memory_type = MemoryType(type.elem);
      llvm::AllocaInst* slot = EntryAlloca(memory_type, "print");
      if (type.elem == ir::ElemKind::Bool)
        data = builder_.CreateZExt(data, memory_type);
      builder_.CreateStore(data, slot);
      data = slot;
    }
    size_t rank = type.dims.size();
    llvm::Value* sizes = llvm::ConstantPointerNull::get(builder_.getPtrTy());
    llvm::Value* names = sizes;
    if (rank > 0) {
      auto* sizes_slot = EntryAlloca(
          llvm::ArrayType::get(builder_.getInt64Ty(), rank), "sizes");
      std::vector<llvm::Constant*> name_constants;
      for (size_t d = 0; d < rank; ++d) {
        builder_.CreateStore(
            DimSize(type.dims[d]),
            builder_.CreateConstInBoundsGEP2_64(sizes_slot->getAllocatedType(),
                                                sizes_slot, 0, d));
        name_constants.push_back(module_.String(type.dims[d]->name));
      }
      auto* names_type = llvm::ArrayType::get(builder_.getPtrTy(), rank);
      auto* names_global = new llvm::GlobalVariable(
          *module_.module, names_type, /*isConstant=*/true,
          llvm::GlobalValue::PrivateLinkage,
          llvm::ConstantArray::get(names_type, name_constants), "dims");
      sizes = sizes_slot;
      names = names_global;
    }
    builder_.CreateCall(
        module_.print_value,
        {builder_.getInt32(RuntimeElemKind(type.elem)), data,
         builder_.getInt64(static_cast<int64_t>(rank)), sizes, names});
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
  llvm::Value* sizes = llvm::ConstantPointerNull::get(builder_.getPtrTy());
  llvm::Value* names = sizes;
  llvm::Value* axes = sizes;
  if (rank > 0) {
    auto* sizes_slot =
        EntryAlloca(llvm::ArrayType::get(builder_.getInt64Ty(), rank), "sizes");
    std::vector<llvm::Constant*> name_constants;
    for (size_t d = 0; d < rank; ++d) {
      builder_.CreateStore(
          DimSize(type.dims[d]),
          builder_.CreateConstInBoundsGEP2_64(sizes_slot->getAllocatedType(),
                                              sizes_slot, 0, d));
      name_constants.push_back(module_.String(type.dims[d]->name));
    }
    std::vector<llvm::Constant*> axis_constants;
    for (const ir::Dim* dim : op.dims) {
      size_t position = 0;
      while (position < rank && type.dims[position] != dim) ++position;
      axis_constants.push_back(builder_.getInt64(position));
    }
    auto* names_type = llvm::ArrayType::get(builder_.getPtrTy(), rank);
    names = new llvm::GlobalVariable(
        *module_.module, names_type, /*isConstant=*/true,
        llvm::GlobalValue::PrivateLinkage,
        llvm::ConstantArray::get(names_type, name_constants), "dims");
    auto* axes_type = llvm::ArrayType::get(builder_.getInt64Ty(), rank);
    axes = new llvm::GlobalVariable(
        *module_.module, axes_type, /*isConstant=*/true,
        llvm::GlobalValue::PrivateLinkage,
        llvm::ConstantArray::get(axes_type, axis_constants), "axes");
    sizes = sizes_slot;
  }
  const ir::Loc& loc = op.loc;
  llvm::Value* file = loc.IsValid()
                          ? static_cast<llvm::Value*>(module_.String(loc.file))
                          : llvm::ConstantPointerNull::get(builder_.getPtrTy());
  llvm::Value* line = builder_.getInt32(loc.line);
  llvm::Value* column = builder_.getInt32(loc.column);
  llvm::Value* path = module_.String(op.print_items[0].text);
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
    builder_.CreateCall(module_.read_npy,
                        {file, line, column, path, kind,
                         builder_.getInt64(static_cast<int64_t>(rank)), sizes,
                         names, axes, data});
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
  if (type.IsScalar()) {
    llvm::AllocaInst* slot = EntryAlloca(memory_type, "npy");
    if (type.elem == ir::ElemKind::Bool)
      data = builder_.CreateZExt(data, memory_type);
    builder_.CreateStore(data, slot);
    data = slot;
  }
  builder_.CreateCall(
      module_.write_npy,
      {file, line, column, path, kind, data,
       builder_.getInt64(static_cast<int64_t>(rank)), sizes, axes});
  for (llvm::Value* copy : copies) Free(copy);
}

void FunctionEmitter::EmitSizeChecks(const ir::Op& op) {
  for (const ir::Value* result : op.results) {
    const ir::Type& type = result->type;
    if (type.dims.empty()) continue;
    std::vector<int64_t> constant_sizes;
    for (const ir::Dim* dim : type.dims)
      if (dim->constant) constant_sizes.push_back(*dim->constant);
    int64_t count = 0;
    if (constant_sizes.size() == type.dims.size() &&
        delta_element_count(static_cast<int64_t>(constant_sizes.size()),
                            constant_sizes.data(), &count) == 0)
      continue;
    // Sizes are >= 0 (dim ops and entries check them); a zero size makes
    // the count 0 whatever the others.
    llvm::Value* product = builder_.getInt64(1);
    llvm::Value* overflow = builder_.getFalse();
    llvm::Value* empty = builder_.getFalse();
    for (const ir::Dim* dim : type.dims) {
      llvm::Value* size = DimSize(dim);
      empty = builder_.CreateOr(
          empty, builder_.CreateICmpEQ(size, builder_.getInt64(0)));
      llvm::Value* step = builder_.CreateBinaryIntrinsic(
          llvm::Intrinsic::umul_with_overflow, product, size);
      product = builder_.CreateExtractValue(step, 0);
      overflow =
          builder_.CreateOr(overflow, builder_.CreateExtractValue(step, 1));
    }
    llvm::Value* within = builder_.CreateAnd(
        builder_.CreateNot(overflow),
        builder_.CreateICmpULE(product, builder_.getInt64(DELTA_MAX_ELEMENTS)));
    EmitCheck(builder_.CreateOr(empty, within), op.loc,
              "an array of type " + ir::TypeString(type) +
                  " would exceed the limit of " DELTA_MAX_ELEMENTS_TEXT
                  " elements");
  }
}

// Note [Locations of run-time errors]: the runtime's own failures (out of
// memory, a GPU driver error) have no op to name, so before each op that
// touches an array (allocates, reads, prints, launches a kernel) the host
// code tells the runtime where it is. Element code (the bodies of maps and
// reductions, run once per element) never does, so loops stay free of
// calls.
void FunctionEmitter::EmitLocation(const ir::Op& op) {
  if (module_.set_location.getCallee() == nullptr || !op.loc.IsValid()) return;
  const ir::Op* owner = op.parent != nullptr ? op.parent->parent : nullptr;
  if (owner != nullptr && owner->kind != ir::OpKind::Loop &&
      owner->kind != ir::OpKind::While && owner->kind != ir::OpKind::If)
    return;  // element code
  bool needs = op.kind == ir::OpKind::Print || op.kind == ir::OpKind::ReadNpy ||
               op.kind == ir::OpKind::WriteNpy;
  for (const ir::Value* result : op.results) needs |= !result->type.IsScalar();
  ForEachUse(op,
             [&](const ir::Value* used) { needs |= !used->type.IsScalar(); });
  if (!needs) return;
  builder_.CreateCall(module_.set_location, {module_.String(op.loc.file),
                                             builder_.getInt32(op.loc.line),
                                             builder_.getInt32(op.loc.column)});
}

void FunctionEmitter::EmitOp(const ir::Op& op) {
  EmitLocation(op);
  EmitSizeChecks(op);
  if (module_.hooks != nullptr && module_.hooks->EmitOp(*this, op)) return;
  if (ir::IsElementwise(op.kind)) {
    EmitElementwise(op);
    return;
  }
  switch (op.kind) {
    case ir::OpKind::Const:
      Set(op.results[0], EmitConst(op));
      return;
    case ir::OpKind::Size:
      Set(op.results[0], DimSize(op.dims[0]));
      return;
    case ir::OpKind::Iota:
      EmitIota(op);
      return;
    case ir::OpKind::ToIndex:
      EmitToIndex(op);
      return;
    case ir::OpKind::Broadcast:
      EmitBroadcast(op);
      return;
    case ir::OpKind::Rename:
      EmitRename(op);
      return;
    case ir::OpKind::Gather:
      EmitGather(op);
      return;
    case ir::OpKind::ScatterAdd:
      EmitScatterAdd(op);
      return;
    case ir::OpKind::Reduce:
      if (op.reduce == ir::ReduceKind::Argmax ||
          op.reduce == ir::ReduceKind::Argmin)
        EmitArgReduce(op);
      else
        EmitReduce(op);
      return;
    case ir::OpKind::ReduceCustom:
      EmitReduceCustom(op);
      return;
    case ir::OpKind::Cumsum:
      EmitCumsum(op);
      return;
    case ir::OpKind::Map:
      EmitMap(op);
      return;
    case ir::OpKind::Loop:
      ++sequential_loops_;
      EmitLoop(op);
      --sequential_loops_;
      return;
    case ir::OpKind::While:
      ++sequential_loops_;
      EmitWhile(op);
      --sequential_loops_;
      return;
    case ir::OpKind::If:
      EmitIf(op);
      return;
    case ir::OpKind::Call:
      EmitCall(op);
      return;
    case ir::OpKind::DimDef: {
      llvm::Value* size = Get(op.operands[0]);
      EmitCheck(builder_.CreateICmpSGE(size, builder_.getInt64(0)), op.loc,
                "size %lld of dim " + op.dims[0]->name + " is negative", size);
      return;
    }
    case ir::OpKind::Print:
      EmitPrint(op);
      return;
    case ir::OpKind::ReadNpy:
    case ir::OpKind::WriteNpy:
      EmitNpy(op);
      return;
    case ir::OpKind::Yield:
    case ir::OpKind::Return:
      // Terminators are handled by EmitRegion.
      return;
    default:
      llvm::report_fatal_error("codegen: unhandled op " +
                               ir::OpMnemonic(op.kind));
  }
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
  module_context.hooks = options.hooks;
  if (options.hooks != nullptr) options.hooks->BeginModule(module_context);

  llvm::Type* ptr = llvm::PointerType::getUnqual(context);
  auto value_type = [&](const ir::Type& type) -> llvm::Type* {
    if (!type.IsScalar()) return ptr;
    switch (type.elem) {
      case ir::ElemKind::F32:
        return llvm::Type::getFloatTy(context);
      case ir::ElemKind::F64:
        return llvm::Type::getDoubleTy(context);
      case ir::ElemKind::I32:
        return llvm::Type::getInt32Ty(context);
      case ir::ElemKind::Bool:
        return llvm::Type::getInt1Ty(context);
      default:
        return llvm::Type::getInt64Ty(context);
    }
  };
  std::string cpu = llvm::sys::getHostCPUName().str();
  std::string features = machine->getTargetFeatureString().str();
  for (const auto& function : module.functions) {
    std::vector<llvm::Type*> params;
    for (size_t i = 0; i < function->size_params.size(); ++i)
      params.push_back(llvm::Type::getInt64Ty(context));
    for (const ir::Value* param : function->params)
      params.push_back(value_type(param->type));
    std::vector<llvm::Type*> results;
    for (const ir::Type& type : function->result_types)
      results.push_back(value_type(type));
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
  for (const auto& function : module.functions)
    FunctionEmitter(module_context, *function,
                    module_context.functions[function.get()])
        .EmitBody();
  if (options.emit_c_main) {
    if (const ir::Function* main = module.FindFunction("main"))
      EmitCMain(module_context, module_context.functions[main]);
  }

  std::string problems;
  llvm::raw_string_ostream problems_stream(problems);
  if (llvm::verifyModule(*llvm_module, &problems_stream))
    llvm::report_fatal_error("codegen produced invalid LLVM IR: " +
                             llvm::Twine(problems));
  OptimizeModule(*llvm_module, *machine, options.opt_level,
                 /*vector_math=*/module_context.fast_math);
  return llvm_module;
}

}  // namespace delta::codegen
