// Parallel loop nests. The nest is emitted in place, as a sequential loop
// whose outermost range is [lo, hi); LLVM's CodeExtractor then moves it into
// a function of its own, and a small trampoline with the runtime's
// `void body(ctx, begin, end)` signature unpacks the captured values from a
// context struct. See Note [Parallel loops] in docs/internals/codegen.md.
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/IR/CFG.h>
#include <llvm/IR/Instructions.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>
#include <llvm/Transforms/Utils/CodeExtractor.h>

#include "compiler/codegen/llvm/emitter.h"

namespace delta::codegen {
namespace {

// Below this many elements a nest runs on the calling thread: waking the
// pool costs a few microseconds, about as much as this much elementwise work.
constexpr int64_t kParallelWork = 1 << 15;
// Note [Parallel loops in sequential loops]: inside a loop or while, a
// nest runs on the pool from this much work. Such a nest runs once per
// step, one after another (an LSTM's 256 steps over a hidden state of
// 1024), and each run pays the pool's wake-up and join; with the general
// threshold the LSTM c256 b1024 gradient took 22 ms on 2 threads against
// 16 on one.
constexpr int64_t kParallelWorkInSequentialLoop = 1 << 17;

// The work from which a nest runs on the pool.
int64_t ParallelWork(int sequential_loops) {
  return sequential_loops > 0 ? kParallelWorkInSequentialLoop : kParallelWork;
}

// The blocks reachable from `entry` without passing `exit`.
std::vector<llvm::BasicBlock*> RegionBlocks(llvm::BasicBlock* entry,
                                            llvm::BasicBlock* exit) {
  std::vector<llvm::BasicBlock*> blocks = {entry};
  llvm::SmallPtrSet<llvm::BasicBlock*, 32> seen = {entry, exit};
  for (size_t i = 0; i < blocks.size(); ++i)
    for (llvm::BasicBlock* next : llvm::successors(blocks[i]))
      if (seen.insert(next).second) blocks.push_back(next);
  return blocks;
}

// Moves the allocas of `function`'s entry block that only `blocks` use
// into `into`, so that each thread gets its own (loop counters,
// accumulators).
void SinkPrivateAllocas(llvm::Function& function,
                        llvm::ArrayRef<llvm::BasicBlock*> blocks,
                        llvm::BasicBlock* into) {
  llvm::SmallPtrSet<llvm::BasicBlock*, 32> region(blocks.begin(), blocks.end());
  std::vector<llvm::AllocaInst*> private_allocas;
  for (llvm::Instruction& instruction : function.getEntryBlock()) {
    auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(&instruction);
    if (alloca == nullptr) continue;
    bool only_region = !alloca->use_empty();
    for (llvm::User* user : alloca->users()) {
      auto* use = llvm::dyn_cast<llvm::Instruction>(user);
      only_region &= use != nullptr && region.contains(use->getParent());
    }
    if (only_region) private_allocas.push_back(alloca);
  }
  for (llvm::AllocaInst* alloca : private_allocas)
    alloca->moveBefore(*into, into->getFirstInsertionPt());
}

// Moves the allocas of `function` into its entry block, where mem2reg
// promotes them.
void HoistAllocas(llvm::Function& function) {
  llvm::BasicBlock& entry = function.getEntryBlock();
  std::vector<llvm::AllocaInst*> allocas;
  for (llvm::BasicBlock& block : function) {
    if (&block == &entry) continue;
    for (llvm::Instruction& instruction : block)
      if (auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(&instruction))
        allocas.push_back(alloca);
  }
  for (llvm::AllocaInst* alloca : allocas)
    alloca->moveBefore(entry, entry.getFirstInsertionPt());
}

}  // namespace

// Note [Independent iterations]: the points of an EmitParallelNest are
// independent by construction (each writes its own elements and reads what
// no other point writes), but LLVM sees pointers loaded from a chunk's
// context and cannot prove that a result does not alias an input: with
// more than a few arrays it gives up on the runtime checks and leaves the
// loop scalar (a map with twenty results, say). So the array loads and
// stores of the nest join one access group and each of its loops carries
// llvm.loop.parallel_accesses for it, which lets the vectorizer skip the
// dependence analysis. Loops inside the body (a reduction's) are not
// marked; their accesses belong to one point of the nest, so the group
// stays truthful. A nest inside another one's body joins the outer group.
void FunctionEmitter::EmitParallelNest(llvm::ArrayRef<const ir::Dim*> dims,
                                       Coords& coords, llvm::Value* work,
                                       const std::function<void()>& body) {
  if (access_group_ != nullptr || dims.empty()) {
    EmitLoopNest(dims, coords, body);
    return;
  }
  llvm::MDNode* group = llvm::MDNode::getDistinct(context_, {});
  access_group_ = group;
  EmitIndependentNest(dims, coords, work, body, group);
  access_group_ = nullptr;
}

void FunctionEmitter::EmitIndependentNest(llvm::ArrayRef<const ir::Dim*> dims,
                                          Coords& coords, llvm::Value* work,
                                          const std::function<void()>& body,
                                          llvm::MDNode* group) {
  if (!module_.parallel || in_parallel_nest_) {
    EmitLoopNest(dims, coords, body, group);
    return;
  }
  const ir::Dim* outer = dims.front();
  EmitOutlinedFor(
      DimSize(outer), work,
      [&](llvm::Value* i) {
        coords[outer] = i;
        EmitLoopNest(dims.drop_front(), coords, body, group);
        coords.erase(outer);
      },
      group, outer);
}

void FunctionEmitter::EmitOutlinedFor(
    llvm::Value* n, llvm::Value* work,
    const std::function<void(llvm::Value*)>& body, llvm::MDNode* group,
    const ir::Dim* dim) {
  // Note [Compile-time budgets]: a nest whose work is a constant below the
  // threshold always runs here, so it is not outlined at all.
  auto* constant_work = llvm::dyn_cast<llvm::ConstantInt>(work);
  if (constant_work != nullptr &&
      constant_work->getSExtValue() < ParallelWork(sequential_loops_)) {
    in_parallel_nest_ = true;
    EmitDimFor(dim, builder_.getInt64(0), n, body, group);
    in_parallel_nest_ = false;
    return;
  }
  // The range of one chunk: distinct values defined outside the region,
  // so that the extracted function takes them as arguments.
  llvm::Value* lo = builder_.CreateFreeze(builder_.getInt64(0), "chunk.lo");
  llvm::Value* hi = builder_.CreateFreeze(n, "chunk.hi");
  auto* region = llvm::BasicBlock::Create(context_, "par", llvm_function_);
  auto* after = llvm::BasicBlock::Create(context_, "par.done", llvm_function_);
  builder_.CreateBr(region);
  builder_.SetInsertPoint(region);
  in_parallel_nest_ = true;
  EmitDimFor(dim, lo, hi, body, group);
  in_parallel_nest_ = false;
  builder_.CreateBr(after);

  std::vector<llvm::BasicBlock*> blocks = RegionBlocks(region, after);
  SinkPrivateAllocas(*llvm_function_, blocks, region);
  llvm::CodeExtractor extractor(
      blocks, nullptr, /*AggregateArgs=*/false, nullptr, nullptr, nullptr,
      /*AllowVarArgs=*/false, /*AllowAlloca=*/true, nullptr, "chunk");
  llvm::CodeExtractorAnalysisCache cache(*llvm_function_);
  llvm::SetVector<llvm::Value*> inputs, outputs, sinks;
  extractor.findInputsOutputs(inputs, outputs, sinks);
  if (!extractor.isEligible() || !outputs.empty())
    llvm::report_fatal_error("codegen: cannot outline a parallel loop nest");
  llvm::Function* chunk = extractor.extractCodeRegion(cache, inputs, outputs);
  if (chunk == nullptr)
    llvm::report_fatal_error("codegen: outlining a parallel loop nest failed");
  HoistAllocas(*chunk);
  chunk->setLinkage(llvm::GlobalValue::InternalLinkage);
  chunk->addFnAttr(llvm::Attribute::AlwaysInline);
  auto* call = llvm::cast<llvm::CallInst>(chunk->user_back());

  // The context: every captured value but the chunk's range.
  std::vector<llvm::Type*> fields;
  std::vector<llvm::Value*> captured;
  for (llvm::Value* arg : call->args()) {
    if (arg == lo || arg == hi) continue;
    fields.push_back(arg->getType());
    captured.push_back(arg);
  }
  auto* ctx_type = llvm::StructType::get(context_, fields);

  // void trampoline(ptr ctx, i64 begin, i64 end)
  llvm::Type* i64 = builder_.getInt64Ty();
  llvm::Type* ptr = builder_.getPtrTy();
  auto* trampoline = llvm::Function::Create(
      llvm::FunctionType::get(builder_.getVoidTy(), {ptr, i64, i64}, false),
      llvm::GlobalValue::InternalLinkage, chunk->getName() + ".body",
      module_.module);
  for (const llvm::Attribute& attribute :
       llvm_function_->getAttributes().getFnAttrs())
    trampoline->addFnAttr(attribute);
  // Note [Compile-time budgets]: the call for small work below stays a
  // call, so that the nest is optimized and compiled once, not twice.
  if (constant_work == nullptr)
    trampoline->addFnAttr(llvm::Attribute::NoInline);
  {
    llvm::IRBuilder<> inner(
        llvm::BasicBlock::Create(context_, "entry", trampoline));
    std::vector<llvm::Value*> args;
    unsigned field = 0;
    for (llvm::Value* arg : call->args()) {
      if (arg == lo) {
        args.push_back(trampoline->getArg(1));
      } else if (arg == hi) {
        args.push_back(trampoline->getArg(2));
      } else {
        llvm::Value* slot =
            inner.CreateStructGEP(ctx_type, trampoline->getArg(0), field);
        args.push_back(inner.CreateLoad(fields[field], slot));
        ++field;
      }
    }
    inner.CreateCall(chunk, args);
    inner.CreateRetVoid();
  }

  // The call site: fill the context, then run the chunks on the pool, or
  // all at once here when the nest is small.
  builder_.SetInsertPoint(call);
  llvm::AllocaInst* ctx = EntryAlloca(ctx_type, "par.ctx");
  for (unsigned i = 0; i < captured.size(); ++i)
    builder_.CreateStore(captured[i],
                         builder_.CreateStructGEP(ctx_type, ctx, i));
  llvm::Value* large = builder_.CreateICmpSGE(
      work, builder_.getInt64(ParallelWork(sequential_loops_)));
  llvm::Instruction* then_point = nullptr;
  llvm::Instruction* else_point = nullptr;
  llvm::SplitBlockAndInsertIfThenElse(large, call, &then_point, &else_point);
  builder_.SetInsertPoint(then_point);
  builder_.CreateCall(module_.parallel_for, {n, trampoline, ctx});
  builder_.SetInsertPoint(else_point);
  builder_.CreateCall(trampoline, {ctx, builder_.getInt64(0), n});
  call->eraseFromParent();
  for (llvm::Value* range : {lo, hi})
    llvm::cast<llvm::Instruction>(range)->eraseFromParent();
  builder_.SetInsertPoint(after);
}

}  // namespace delta::codegen
