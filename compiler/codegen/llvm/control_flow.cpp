// Control flow and calls: counted loops (EmitFor, with the loop metadata
// that guides LLVM's vectorizer), loop (and its scans' stacked outputs),
// while, if, and calls of other Delta functions.
#include "compiler/codegen/llvm/emitter.h"

namespace delta::codegen {

// Note [Masked remainders]: a loop whose body calls exp, log, sin, cos,
// pow, tanh or another libmvec function (target.cpp) is vectorized with its
// last iteration masked (tail folding) at -O3. Its scalar remainder would call
// scalar libm once per element, each call costing about as much as eight lanes
// of libmvec's: LSTM's maps over 14 lanes spent more time in their 6-element
// remainders than in the vector loop. Masked lanes compute on whatever the
// masked loads give and are thrown away; the math functions have no side
// effects.
// Note [Compile-time budgets]: LLVM fully unrolls a loop of a few
// iterations before it vectorizes, so a loop around a loop that stays a
// loop (a trip count unknown or above this) became that many vectorized
// loops, each with its remainder and run-time checks: GradBench ht's
// products of transforms over bones, 4 x 4 copies each. Such a loop
// carries llvm.loop.unroll.disable. Inner loops up to 16 iterations are
// unrolled into straight-line code anyway (a [4, 5] map stays one block
// of vector code).
//
// In a module of kMediumLoopsRolledMinInstructions or more (as emitted),
// a loop of a known trip count above 16, up to kFullyUnrolledMaxTrips
// (LLVM unrolls nothing longer fully), carries it too (LimitUnrolling,
// after the whole module is emitted): LLVM copied GradBench ht's loops over
// 26 pose parameters 26 times each, 55 of them, and then searched the
// copies for vectors (SLP), where the loop vectorizer widens the loop as
// it is: ht's LLVM IR after the optimizer 35k -> 29.5k instructions, its
// LLVM optimizer about 20% faster, its run time unchanged (see
// docs/internals/codegen.md). Smaller modules, every benchmark case and
// example among them (their loops over 32 or 128 are a Transformer's),
// keep LLVM's choice.
constexpr int64_t kUnrolledOuterMaxInnerTrips = 16;
constexpr int64_t kFullyUnrolledMaxTrips = 128;
constexpr unsigned kMediumLoopsRolledMinInstructions = 40000;

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
  name.consume_back("f");
  return llvm::is_contained(
      {"tanh", "tan", "erf", "erfc", "log1p", "expm1", "atan2"}, name);
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
    // powi's exponent varies along the loop where codegen emits it.
    if (callee->getIntrinsicID() == llvm::Intrinsic::powi) return true;
    return !callee->isIntrinsic();
  });
}

llvm::MDNode* UnrollDisable(llvm::LLVMContext& context) {
  return llvm::MDNode::get(
      context, {llvm::MDString::get(context, "llvm.loop.unroll.disable")});
}

// Gives the loop whose latch is `latch` a loop ID of its own holding
// `properties` (whose first entry, the ID's place, is ignored).
void SetLoopID(llvm::BranchInst* latch,
               std::vector<llvm::Metadata*> properties) {
  properties[0] = nullptr;
  llvm::MDNode* loop =
      llvm::MDNode::getDistinct(latch->getContext(), properties);
  loop->replaceOperandWith(0, loop);
  latch->setMetadata(llvm::LLVMContext::MD_loop, loop);
}
}  // namespace

bool LimitUnrolling(ModuleContext& module) {
  if (module.module->getInstructionCount() < kMediumLoopsRolledMinInstructions)
    return false;
  for (llvm::BranchInst* latch : module.medium_loops) {
    llvm::MDNode* old = latch->getMetadata(llvm::LLVMContext::MD_loop);
    std::vector<llvm::Metadata*> properties(old->op_begin(), old->op_end());
    properties.push_back(UnrollDisable(latch->getContext()));
    SetLoopID(latch, std::move(properties));
  }
  return true;
}

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
  int long_loops_before = long_loops_emitted_;
  body(i);
  bool innermost = loops_emitted_ == loops_before;
  bool around_long_loop = long_loops_emitted_ != long_loops_before;
  ++loops_emitted_;
  auto* constant_lo = llvm::dyn_cast<llvm::ConstantInt>(lo);
  auto* constant_hi = llvm::dyn_cast<llvm::ConstantInt>(hi);
  std::optional<int64_t> trips;
  if (constant_lo != nullptr && constant_hi != nullptr)
    trips = constant_hi->getSExtValue() - constant_lo->getSExtValue();
  if (!trips || *trips > kUnrolledOuterMaxInnerTrips) ++long_loops_emitted_;
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
  if (around_long_loop) loop_properties.push_back(UnrollDisable(context_));
  bool medium = trips && *trips > kUnrolledOuterMaxInnerTrips &&
                *trips <= kFullyUnrolledMaxTrips;
  if (loop_properties.size() > 1 || medium)
    SetLoopID(latch, std::move(loop_properties));
  if (medium) module_.medium_loops.push_back(latch);
  builder_.SetInsertPoint(exit);
}

void FunctionEmitter::EmitDimFor(const ir::Dim* dim, llvm::Value* lo,
                                 llvm::Value* hi,
                                 const std::function<void(llvm::Value*)>& body,
                                 llvm::MDNode* parallel_accesses) {
  if (!peel_ || peel_->dim != dim || dim == nullptr) {
    EmitFor(lo, hi, body, parallel_accesses);
    return;
  }
  // Note [Boundary peeling]: [lo, first) and [last, hi) as written, the
  // middle with the compares that the index's bounds decide folded.
  Peel peel = *peel_;
  peel_.reset();  // the body's own loops are not this map's
  auto clamp = [&](llvm::Value* at, llvm::Value* low, llvm::Value* high) {
    at = builder_.CreateSelect(builder_.CreateICmpSLT(high, at), high, at);
    return builder_.CreateSelect(builder_.CreateICmpSLT(at, low), low, at);
  };
  llvm::Value* first = clamp(builder_.getInt64(peel.first), lo, hi);
  llvm::Value* last =
      clamp(builder_.CreateSub(DimSize(dim), builder_.getInt64(peel.last)),
            first, hi);
  EmitFor(lo, first, body, parallel_accesses);
  std::optional<ir::IndexBounds> outer_bounds = index_bounds_;
  index_bounds_ = ir::IndexBounds{peel.index, peel.first, peel.last};
  EmitFor(first, last, body, parallel_accesses);
  index_bounds_ = outer_bounds;
  EmitFor(last, hi, body, parallel_accesses);
  peel_ = peel;
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
    stacked.push_back(View(op.results[i]->type, AllocateResult(op.results[i])));
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
  // A call that is not inlined (-O0) is on the runtime's stack of calls
  // while it runs, for the chain of calls of its errors (Note [Call chains]).
  // A call the compiler made (no location) shows no line of its own.
  bool tracked = module_.enter_call.getCallee() != nullptr;
  if (tracked) {
    std::string site = op.loc.IsValid()
                           ? ir::CalledFromText(ir::SiteOfCall(op, function_))
                           : "";
    builder_.CreateCall(module_.enter_call, {module_.String(op.callee->name),
                                             module_.String(site)});
  }
  llvm::Value* call = builder_.CreateCall(callee, args);
  if (tracked) builder_.CreateCall(module_.leave_call, {});
  for (llvm::Value* copy : copies) Free(copy);
  for (unsigned i = 0; i < op.results.size(); ++i) {
    llvm::Value* result =
        op.results.size() == 1 ? call : builder_.CreateExtractValue(call, {i});
    Set(op.results[i],
        RelayoutOwned(op.results[i]->type, result, /*to_physical=*/true));
  }
}

}  // namespace delta::codegen
