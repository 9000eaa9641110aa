// The core of FunctionEmitter: a function's body, its values and their
// LLVM types, array memory, run-time checks and failures, and regions with
// their ownership of arrays (Note [Array ownership]). EmitOp hands each op
// to control_flow.cpp, io_ops.cpp, array_ops.cpp and the other files that
// emit ops.
#include <llvm/Support/ErrorHandling.h>

#include "compiler/codegen/llvm/codegen.h"
#include "compiler/codegen/llvm/emitter.h"
#include "runtime/format.h"

namespace delta::codegen {

void ForEachUse(const ir::Op& op,
                const std::function<void(const ir::Value*)>& use) {
  for (const ir::Value* operand : op.operands) use(operand);
  for (const auto& region : op.regions)
    for (const auto& inner : region->ops) ForEachUse(*inner, use);
}

namespace {

size_t CountUses(const ir::Op& op, const ir::Value* value) {
  size_t count = 0;
  ForEachUse(op, [&](const ir::Value* used) { count += used == value; });
  return count;
}

}  // namespace

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
  // Note [Results in the caller's buffers]: an array made at the top of
  // the body and returned in canonical order is made where the caller
  // wants it (the first result it is, if it is several).
  const ir::Op* terminator = body.terminator();
  bool offers_buffers = module_.alloc_result && function_.is_export;
  if (offers_buffers)
    for (size_t i = 0; i < terminator->operands.size(); ++i) {
      const ir::Value* value = terminator->operands[i];
      if (!value->type.IsScalar() && value->def != nullptr &&
          value->def->parent == &body && IsCanonicalLayout(value->type))
        result_slots_.try_emplace(value, static_cast<int64_t>(i));
    }
  std::vector<llvm::Value*> results = EmitRegionValues(body, args, owned);
  for (size_t i = 0; i < results.size(); ++i) {
    const ir::Type& type = terminator->operands[i]->type;
    // A result in another memory order is copied into canonical order
    // anyway: the copy goes to the caller's buffer.
    llvm::Value* into = nullptr;
    if (offers_buffers && !type.IsScalar() && !IsCanonicalLayout(type))
      into = AllocateInCallerBuffer(static_cast<int64_t>(i), type);
    results[i] = RelayoutOwned(type, results[i], /*to_physical=*/false, into);
  }
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
  return dim->sharded ? ShardExtent(dim) : GlobalDimSize(dim);
}

llvm::Value* FunctionEmitter::GlobalDimSize(const ir::Dim* dim) {
  if (dim->constant) return builder_.getInt64(*dim->constant);
  if (dim->global_constant) return builder_.getInt64(*dim->global_constant);
  if (dim->size == nullptr)
    llvm::report_fatal_error("codegen: dim " + llvm::Twine(dim->name) +
                             " has no size");
  return Get(dim->size);
}

llvm::Type* FunctionEmitter::RegisterType(ir::ElemKind kind) {
  return codegen::RegisterType(context_, kind);
}

llvm::Type* FunctionEmitter::MemoryType(ir::ElemKind kind) {
  return codegen::MemoryType(context_, kind);
}

llvm::Type* FunctionEmitter::ValueType(const ir::Type& type) {
  return codegen::ValueType(context_, type);
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

llvm::Value* FunctionEmitter::AllocateResult(const ir::Value* result) {
  if (llvm::Value* destination = Destination(result)) return destination;
  auto slot = result_slots_.find(result);
  if (slot != result_slots_.end())
    return AllocateInCallerBuffer(slot->second, result->type);
  return Allocate(result->type);
}

llvm::Value* FunctionEmitter::AllocateInCallerBuffer(int64_t index,
                                                     const ir::Type& type) {
  llvm::Value* bytes = builder_.CreateMul(
      ElementCount(type.dims), builder_.getInt64(ElemBytes(type.elem)));
  return builder_.CreateCall(module_.alloc_result,
                             {builder_.getInt64(index), bytes});
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
  // `data` may be the caller's (a parameter, a result made in its buffer):
  // only the element's alignment is known.
  builder_.CreateMemCpy(
      copy, llvm::Align(64), data,
      llvm::Align(static_cast<uint64_t>(ElemBytes(type.elem))), bytes);
  return copy;
}

llvm::AllocaInst* FunctionEmitter::EntryAlloca(llvm::Type* type,
                                               llvm::StringRef name) {
  // In the entry block, so that mem2reg turns loop state into SSA values.
  llvm::BasicBlock& entry = llvm_function_->getEntryBlock();
  llvm::IRBuilder<> entry_builder(&entry, entry.begin());
  return entry_builder.CreateAlloca(type, nullptr, name);
}

llvm::Value* FunctionEmitter::ChainString(const ir::Loc& loc) {
  std::string chain = ir::CallChainText(loc);
  if (chain.empty()) return llvm::ConstantPointerNull::get(builder_.getPtrTy());
  return module_.String(chain);
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
  // An op inlined from another function tells the runtime its chain of
  // calls (Note [Call chains]); the failure path is cold, so this is free.
  if (loc.inlined_at && module_.set_location.getCallee() != nullptr)
    builder_.CreateCall(module_.set_location,
                        {file, line, column, ChainString(loc)});
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
  checked_sizes_.emplace_back();

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
  checked_sizes_.pop_back();
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

// Note [Size checks once]: an array's element count depends only on its
// dims, whose sizes do not change while a function runs, so a check of
// some dims holds for every op that runs after it. The emitter follows
// the IR's nesting: a check made by an op of a region holds for the later
// ops of that region and of the regions inside them (in outlined chunks
// too, which run after it), but not after the region (a loop may run no
// iteration, an `if` the other branch), nor for a blocked group's members
// (one of two branches, or the body of a loop over blocks). Without this,
// GradBench ht's Jacobian checked [pts, xyz] and its like hundreds of
// times, each with its own failure block for LLVM to compile.
void FunctionEmitter::EmitSizeChecks(const ir::Op& op) {
  for (const ir::Value* result : op.results) {
    const ir::Type& type = result->type;
    if (type.dims.empty()) continue;
    std::vector<const ir::Dim*> dims(type.dims.begin(), type.dims.end());
    if (llvm::any_of(checked_sizes_,
                     [&](const auto& checked) { return checked.count(dims); }))
      continue;
    if (record_checks_ && !checked_sizes_.empty())
      checked_sizes_.back().insert(dims);
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
  builder_.CreateCall(
      module_.set_location,
      {module_.String(op.loc.file), builder_.getInt32(op.loc.line),
       builder_.getInt32(op.loc.column), ChainString(op.loc)});
}

void FunctionEmitter::EmitOp(const ir::Op& op) {
  EmitLocation(op);
  EmitSizeChecks(op);
  if (module_.hooks != nullptr && module_.hooks->EmitOp(*this, op)) return;
  // Note [Boundary peeling] in map_op.cpp.
  if (index_bounds_ && ir::HasFlag(op.kind, ir::kCompare))
    if (std::optional<bool> known = ir::DecideCompare(op, *index_bounds_)) {
      Set(op.results[0], builder_.getInt1(*known));
      return;
    }
  if (ir::IsElementwise(op.kind)) {
    EmitElementwise(op);
    return;
  }
  switch (op.kind) {
    case ir::OpKind::Const:
      Set(op.results[0], EmitConst(op));
      return;
    case ir::OpKind::Size:
      Set(op.results[0], GlobalDimSize(op.dims[0]));
      return;
    case ir::OpKind::Allreduce:
    case ir::OpKind::Exscan:
    case ir::OpKind::ShardOffset:
      EmitCollective(op);
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
      if (ir::IsArgExtremum(op.reduce))
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

}  // namespace delta::codegen
