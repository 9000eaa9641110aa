// GPU kernels as LLVM IR for NVPTX: grid-stride loops over result elements,
// block reductions through shared memory, tiled contractions. Element code
// comes from the CPU code generator (FunctionEmitter); only the loops, the
// thread indices and failure reporting differ. See docs/gpu.md.
#include "compiler/codegen/cuda/nvptx_emitter.h"

#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/raw_ostream.h>

#include "compiler/codegen/llvm/codegen.h"
#include "compiler/codegen/llvm/emitter.h"

namespace delta::cuda {
namespace {

using codegen::ArrayView;
using codegen::Coords;
using codegen::FunctionEmitter;
using codegen::ModuleContext;
using codegen::Operand;

constexpr unsigned kSharedAddressSpace = 3;

// Whether a kernel of `op` is bound by memory: elementwise work with no
// transcendental math and no loops of its own (nested reductions, maps,
// ifs). Only those take four elements a trip (Note [Four elements in
// flight]).
bool IsMemoryBound(const ir::Op& op) {
  if (ir::HasFlag(op.kind, ir::kMathCall)) return false;
  if (op.kind == ir::OpKind::Reduce && ir::IsArgExtremum(op.reduce))
    return false;
  for (const auto& region : op.regions)
    for (const auto& inner : region->ops)
      if (!inner->regions.empty() || ir::HasFlag(inner->kind, ir::kMathCall))
        return false;
  return true;
}

class KernelEmitter : public FunctionEmitter {
 public:
  KernelEmitter(ModuleContext& context, const Kernel& kernel,
                llvm::Function* llvm_function, std::vector<DeviceCheck>& checks)
      : FunctionEmitter(context, *kernel.function, llvm_function),
        kernel_(kernel),
        kernel_function_(llvm_function),
        checks_(checks) {
    builder_.SetInsertPoint(
        llvm::BasicBlock::Create(context_, "entry", llvm_function));
    slot_ = llvm_function->getArg(0);
  }

  void EmitTabulateKernel();
  void EmitReduceKernel();
  void EmitCombineKernel();
  void EmitContractionKernel();

 private:
  // A failed check records its code and numbers in the error slot (the
  // first failure wins) and ends the thread; the host reports it at its
  // next synchronization (runtime/cuda.h).
  void EmitFailure(const ir::Loc& loc, llvm::StringRef message,
                   llvm::Value* first, llvm::Value* second) override;
  // A sharded dim's extent and offset: the kernel's parameters.
  llvm::Value* ShardExtent(const ir::Dim* dim) override {
    return ShardParam(dim, 0);
  }
  llvm::Value* ShardOffset(const ir::Dim* dim) override {
    return ShardParam(dim, 1);
  }
  llvm::Value* ShardParam(const ir::Dim* dim, unsigned which);
  // Binds the captured values and the sharded dims' parameters, from
  // parameter `first_arg` on.
  void BindCaptured(unsigned first_arg);
  llvm::Value* SpecialRegister(llvm::Intrinsic::ID id);
  void Barrier();
  // Sets the coordinates of `linear` over `dims` (row-major, canonical).
  void Decompose(llvm::Value* linear, const ir::DimList& dims, Coords& coords);
  // for (i = begin; in_range(i); i += advance) body(i); the index after
  // the loop. With `unroll`, LLVM unrolls it by four.
  llvm::Value* EmitStepLoop(
      llvm::Value* begin, llvm::Value* advance,
      const std::function<llvm::Value*(llvm::Value*)>& in_range,
      const std::function<void(llvm::Value*)>& body, bool unroll = false);
  // for (i = begin; i < end; i += step) body(i).
  void EmitStrided(llvm::Value* begin, llvm::Value* end, llvm::Value* step,
                   const std::function<void(llvm::Value*)>& body,
                   bool unroll = false);
  // What emitting one element's loads and math returns: the emitter of its
  // effect (a store, or adding it to an accumulator).
  using Effect = std::function<void()>;
  // The same loop, four elements a trip while all four are in range (Note
  // [Four elements in flight]), then one at a time.
  void EmitStridedInFours(llvm::Value* begin, llvm::Value* end,
                          llvm::Value* step,
                          const std::function<Effect(llvm::Value*)>& body);
  llvm::GlobalVariable* SharedArray(ir::ElemKind elem, int64_t count);
  llvm::Value* ToMemory(ir::ElemKind elem, llvm::Value* value);
  llvm::Value* FromMemory(ir::ElemKind elem, llvm::Value* value);
  // Combines the block's `acc` values into thread 0's result (Note
  // [Reductions on the GPU]: warp shuffles, then one warp over the warps'
  // results in shared memory; two barriers).
  llvm::Value* BlockReduce(ir::ReduceKind kind, ir::ElemKind elem,
                           llvm::Value* acc, llvm::Value* thread);
  // Combines `value` with the values of the lanes `offset`, ... 1 above it
  // in the warp (a shuffle-down tree); lane 0 holds the warp's result.
  llvm::Value* WarpReduce(ir::ReduceKind kind, ir::ElemKind elem,
                          llvm::Value* value);
  // The `value` of the lane `offset` above this one (shfl.sync.down).
  llvm::Value* ShuffleDown(llvm::Value* value, int offset);
  // Emits `then` when `condition` holds.
  void EmitWhen(llvm::Value* condition, const std::function<void()>& then);

  const Kernel& kernel_;
  llvm::Function* kernel_function_;
  std::vector<DeviceCheck>& checks_;
  llvm::Value* slot_ = nullptr;
  unsigned first_shard_arg_ = 0;  // set by BindCaptured
};

void KernelEmitter::EmitFailure(const ir::Loc& loc, llvm::StringRef message,
                                llvm::Value* first, llvm::Value* second) {
  checks_.push_back(DeviceCheck{loc.IsValid() ? loc.file : "", loc.line,
                                loc.column, message.str(), first != nullptr});
  llvm::Value* code = builder_.getInt64(static_cast<int64_t>(checks_.size()));
  auto* exchange = builder_.CreateAtomicCmpXchg(
      slot_, builder_.getInt64(0), code, llvm::MaybeAlign(8),
      llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Monotonic);
  auto* record = llvm::BasicBlock::Create(context_, "record", kernel_function_);
  auto* done = llvm::BasicBlock::Create(context_, "exit", kernel_function_);
  builder_.CreateCondBr(builder_.CreateExtractValue(exchange, {1}), record,
                        done);
  builder_.SetInsertPoint(record);
  llvm::Value* values[] = {first, second};
  for (unsigned i = 0; i < 2; ++i) {
    llvm::Value* value =
        values[i] != nullptr
            ? builder_.CreateSExtOrTrunc(values[i], builder_.getInt64Ty())
            : builder_.getInt64(0);
    builder_.CreateStore(value, builder_.CreateConstInBoundsGEP1_64(
                                    builder_.getInt64Ty(), slot_, i + 1));
  }
  builder_.CreateBr(done);
  builder_.SetInsertPoint(done);
  builder_.CreateRetVoid();
}

void KernelEmitter::BindCaptured(unsigned first_arg) {
  unsigned next = first_arg;
  for (const ir::Value* value : kernel_.captured) {
    llvm::Value* arg = kernel_function_->getArg(next++);
    if (value->type.IsScalar() && value->type.elem == ir::ElemKind::Bool)
      arg = builder_.CreateTrunc(arg, builder_.getInt1Ty());
    Set(value, arg);
  }
  first_shard_arg_ = next;
}

llvm::Value* KernelEmitter::ShardParam(const ir::Dim* dim, unsigned which) {
  const auto& sharded = kernel_.sharded;
  auto it = llvm::find(sharded, dim);
  if (it == sharded.end() || first_shard_arg_ == 0)
    llvm::report_fatal_error("cuda: kernel " + llvm::Twine(kernel_.name) +
                             " uses sharded dim " + dim->name +
                             " without its parameters");
  return kernel_function_->getArg(
      first_shard_arg_ + 2 * static_cast<unsigned>(it - sharded.begin()) +
      which);
}

llvm::Value* KernelEmitter::SpecialRegister(llvm::Intrinsic::ID id) {
  return builder_.CreateZExt(builder_.CreateIntrinsic(id, {}, {}),
                             builder_.getInt64Ty());
}

void KernelEmitter::Barrier() {
  builder_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
}

void KernelEmitter::Decompose(llvm::Value* linear, const ir::DimList& dims,
                              Coords& coords) {
  for (size_t i = dims.size(); i-- > 0;) {
    llvm::Value* size = DimSize(dims[i]);
    if (i == 0) {
      coords[dims[i]] = linear;
      break;
    }
    coords[dims[i]] = builder_.CreateURem(linear, size);
    linear = builder_.CreateUDiv(linear, size);
  }
}

llvm::Value* KernelEmitter::EmitStepLoop(
    llvm::Value* begin, llvm::Value* advance,
    const std::function<llvm::Value*(llvm::Value*)>& in_range,
    const std::function<void(llvm::Value*)>& body, bool unroll) {
  llvm::AllocaInst* counter = EntryAlloca(builder_.getInt64Ty(), "i");
  builder_.CreateStore(begin, counter);
  auto* header = llvm::BasicBlock::Create(context_, "loop", kernel_function_);
  auto* body_block =
      llvm::BasicBlock::Create(context_, "body", kernel_function_);
  auto* exit = llvm::BasicBlock::Create(context_, "done", kernel_function_);
  builder_.CreateBr(header);
  builder_.SetInsertPoint(header);
  llvm::Value* i = builder_.CreateLoad(builder_.getInt64Ty(), counter);
  builder_.CreateCondBr(in_range(i), body_block, exit);
  builder_.SetInsertPoint(body_block);
  body(i);
  builder_.CreateStore(builder_.CreateAdd(i, advance), counter);
  llvm::BranchInst* latch = builder_.CreateBr(header);
  builder_.SetInsertPoint(exit);
  if (unroll) {
    llvm::MDNode* loop = llvm::MDNode::getDistinct(
        context_,
        {nullptr,
         llvm::MDNode::get(
             context_, {llvm::MDString::get(context_, "llvm.loop.unroll.count"),
                        llvm::ConstantAsMetadata::get(builder_.getInt32(4))})});
    loop->replaceOperandWith(0, loop);
    latch->setMetadata(llvm::LLVMContext::MD_loop, loop);
  }
  return builder_.CreateLoad(builder_.getInt64Ty(), counter);
}

void KernelEmitter::EmitStrided(llvm::Value* begin, llvm::Value* end,
                                llvm::Value* step,
                                const std::function<void(llvm::Value*)>& body,
                                bool unroll) {
  EmitStepLoop(
      begin, step,
      [&](llvm::Value* i) { return builder_.CreateICmpSLT(i, end); }, body,
      unroll);
}

// Note [Four elements in flight]
//
// A thread of a grid-stride loop that loads an element, computes it and
// stores it has one element's loads in flight: the next element's loads
// come after the store, which they may alias, and after the branch that
// tests the index. That is too few to reach the memory's bandwidth (a
// chain x * y + x * 0.5 - y ran at 2.3-2.9 TB/s on an H200 whose copies
// run at 3.8-4.1). So while four elements i, i + step, i + 2 step and
// i + 3 step are all in range, a trip emits the loads and math of all four
// before the first effect: eight loads in flight for two operands. The
// rest, fewer than four elements per thread, go one at a time. Accumulating
// four values in order keeps the reduction's order of additions.
//
// Only bodies bound by memory do this (IsMemoryBound). With every body in
// fours, GMM's gradient, whose kernels are maps of exp and log (up to 96
// registers a thread), was 1.45x slower on the H200 (4.4 -> 6.4 ms at
// n = 10^4); bodies with transcendental math or loops of their own keep the
// loop that LLVM unrolls by four with the index test between elements.
void KernelEmitter::EmitStridedInFours(
    llvm::Value* begin, llvm::Value* end, llvm::Value* step,
    const std::function<Effect(llvm::Value*)>& body) {
  constexpr int kInFlight = 4;
  llvm::Value* last_offset =
      builder_.CreateMul(step, builder_.getInt64(kInFlight - 1));
  llvm::Value* rest = EmitStepLoop(
      begin, builder_.CreateMul(step, builder_.getInt64(kInFlight)),
      [&](llvm::Value* i) {
        return builder_.CreateICmpSLT(builder_.CreateAdd(i, last_offset), end);
      },
      [&](llvm::Value* i) {
        std::vector<Effect> effects;
        llvm::Value* element = i;
        for (int n = 0; n < kInFlight; ++n) {
          effects.push_back(body(element));
          element = builder_.CreateAdd(element, step);
        }
        for (const Effect& effect : effects) effect();
      });
  EmitStrided(rest, end, step, [&](llvm::Value* index) { body(index)(); });
}

void KernelEmitter::EmitWhen(llvm::Value* condition,
                             const std::function<void()>& then) {
  auto* then_block =
      llvm::BasicBlock::Create(context_, "then", kernel_function_);
  auto* merge = llvm::BasicBlock::Create(context_, "endif", kernel_function_);
  builder_.CreateCondBr(condition, then_block, merge);
  builder_.SetInsertPoint(then_block);
  then();
  builder_.CreateBr(merge);
  builder_.SetInsertPoint(merge);
}

llvm::GlobalVariable* KernelEmitter::SharedArray(ir::ElemKind elem,
                                                 int64_t count) {
  auto* type = llvm::ArrayType::get(MemoryType(elem), count);
  auto* global = new llvm::GlobalVariable(
      *module_.module, type, /*isConstant=*/false,
      llvm::GlobalValue::InternalLinkage, llvm::UndefValue::get(type),
      kernel_function_->getName() + ".shared", nullptr,
      llvm::GlobalValue::NotThreadLocal, kSharedAddressSpace);
  global->setAlignment(llvm::Align(16));
  return global;
}

llvm::Value* KernelEmitter::ToMemory(ir::ElemKind elem, llvm::Value* value) {
  return elem == ir::ElemKind::Bool
             ? builder_.CreateZExt(value, builder_.getInt8Ty())
             : value;
}

llvm::Value* KernelEmitter::FromMemory(ir::ElemKind elem, llvm::Value* value) {
  return elem == ir::ElemKind::Bool
             ? builder_.CreateTrunc(value, builder_.getInt1Ty())
             : value;
}

llvm::Value* KernelEmitter::ShuffleDown(llvm::Value* value, int offset) {
  // Only the lanes still running take part: a thread that failed a check
  // has exited, and the block's result is then discarded anyway.
  llvm::Value* mask =
      builder_.CreateIntrinsic(llvm::Intrinsic::nvvm_activemask, {}, {});
  auto shuffle = [&](llvm::Value* word, llvm::Intrinsic::ID id) {
    return builder_.CreateIntrinsic(
        id, {}, {mask, word, builder_.getInt32(offset), builder_.getInt32(31)});
  };
  llvm::Type* type = value->getType();
  if (type->isFloatTy())
    return shuffle(value, llvm::Intrinsic::nvvm_shfl_sync_down_f32);
  unsigned bits = type->getPrimitiveSizeInBits();
  if (bits <= 32) {  // i1, i8, i32
    llvm::Value* word =
        builder_.CreateZExtOrBitCast(value, builder_.getInt32Ty());
    llvm::Value* moved =
        shuffle(word, llvm::Intrinsic::nvvm_shfl_sync_down_i32);
    return builder_.CreateTruncOrBitCast(moved, type);
  }
  // 64 bits (f64, i64): two 32-bit shuffles.
  llvm::Value* whole = builder_.CreateBitCast(value, builder_.getInt64Ty());
  llvm::Value* low = shuffle(builder_.CreateTrunc(whole, builder_.getInt32Ty()),
                             llvm::Intrinsic::nvvm_shfl_sync_down_i32);
  llvm::Value* high =
      shuffle(builder_.CreateTrunc(builder_.CreateLShr(whole, 32),
                                   builder_.getInt32Ty()),
              llvm::Intrinsic::nvvm_shfl_sync_down_i32);
  llvm::Value* joined = builder_.CreateOr(
      builder_.CreateZExt(low, builder_.getInt64Ty()),
      builder_.CreateShl(builder_.CreateZExt(high, builder_.getInt64Ty()), 32));
  return builder_.CreateBitCast(joined, type);
}

llvm::Value* KernelEmitter::WarpReduce(ir::ReduceKind kind, ir::ElemKind elem,
                                       llvm::Value* value) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    value = ReduceCombine(kind, elem, value, ShuffleDown(value, offset));
  return value;
}

llvm::Value* KernelEmitter::BlockReduce(ir::ReduceKind kind, ir::ElemKind elem,
                                        llvm::Value* acc, llvm::Value* thread) {
  constexpr int kWarps = kBlockSize / kWarpSize;
  llvm::GlobalVariable* shared = SharedArray(elem, kWarps);
  llvm::Type* memory_type = MemoryType(elem);
  auto at = [&](llvm::Value* index) {
    return builder_.CreateInBoundsGEP(memory_type, shared, index);
  };
  llvm::Value* lane = builder_.CreateAnd(thread, kWarpSize - 1);
  llvm::Value* warp = builder_.CreateLShr(thread, 5);
  llvm::Value* warp_total = WarpReduce(kind, elem, acc);
  EmitWhen(builder_.CreateICmpEQ(lane, builder_.getInt64(0)),
           [&] { builder_.CreateStore(ToMemory(elem, warp_total), at(warp)); });
  Barrier();
  // The first warp combines the warps' results; the others read identity.
  llvm::Value* mine = builder_.CreateSelect(
      builder_.CreateICmpULT(thread, builder_.getInt64(kWarps)),
      FromMemory(elem,
                 builder_.CreateLoad(
                     memory_type, at(builder_.CreateAnd(
                                      thread, builder_.getInt64(kWarps - 1))))),
      ReduceIdentity(kind, elem));
  llvm::Value* total = WarpReduce(kind, elem, mine);
  Barrier();  // the shared array may be reused by a later reduction
  return total;
}

void KernelEmitter::EmitTabulateKernel() {
  const ir::Op& op = *kernel_.op;
  unsigned result_count = static_cast<unsigned>(op.results.size());
  BindCaptured(1 + result_count);
  std::vector<ArrayView> results;
  for (unsigned i = 0; i < result_count; ++i)
    results.push_back(
        View(op.results[i]->type, kernel_function_->getArg(1 + i)));
  bool arg_reduce =
      op.kind == ir::OpKind::Reduce && ir::IsArgExtremum(op.reduce);
  std::vector<Operand> operands;
  if (op.kind != ir::OpKind::Map && !(arg_reduce && !op.regions.empty()))
    for (const ir::Value* value : op.operands)
      operands.push_back(Prepare(value));
  if (arg_reduce) EmitArgReduceCheck(op);
  const ir::DimList& dims = op.results[0]->type.dims;
  llvm::Value* total = ElementCount(dims);
  llvm::Value* threads =
      SpecialRegister(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
  llvm::Value* start = builder_.CreateAdd(
      builder_.CreateMul(
          SpecialRegister(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x),
          threads),
      SpecialRegister(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x));
  llvm::Value* step = builder_.CreateMul(
      threads, SpecialRegister(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x));
  auto element = [&](llvm::Value* linear) -> Effect {
    Coords coords;
    Decompose(linear, dims, coords);
    std::vector<llvm::Value*> values;
    if (op.kind == ir::OpKind::Map) {
      std::vector<llvm::Value*> args;
      for (const ir::Dim* dim : op.dims) args.push_back(coords[dim]);
      values = EmitRegionValues(*op.region(0), args,
                                std::vector<bool>(args.size(), false));
    } else if (op.kind == ir::OpKind::Iota) {
      values.push_back(coords[op.dims[0]]);
    } else if (arg_reduce) {
      values.push_back(EmitArgReduceAt(
          op, operands.empty() ? Operand() : operands[0], coords));
    } else {
      std::vector<llvm::Value*> x;
      for (const Operand& operand : operands)
        x.push_back(Read(operand, coords));
      if (op.kind == ir::OpKind::Broadcast)
        values.push_back(x[0]);
      else if (op.kind == ir::OpKind::Select)
        values.push_back(builder_.CreateSelect(x[0], x[1], x[2]));
      else if (x.size() == 1)
        values.push_back(EmitUnaryScalar(op, x[0]));
      else
        values.push_back(EmitBinaryScalar(op, x[0], x[1]));
    }
    return [this, &results, coords, values] {
      for (size_t i = 0; i < results.size(); ++i)
        StoreElement(results[i], coords, values[i]);
    };
  };
  if (IsMemoryBound(op))
    EmitStridedInFours(start, total, step, element);
  else
    EmitStrided(
        start, total, step, [&](llvm::Value* linear) { element(linear)(); },
        /*unroll=*/!arg_reduce);
  builder_.CreateRetVoid();
}

void KernelEmitter::EmitReduceKernel() {
  const ir::Op& op = *kernel_.op;
  const ir::Type& type = op.results[0]->type;
  ir::ElemKind elem = type.elem;
  llvm::Value* out = kernel_function_->getArg(1);
  llvm::Value* split = kernel_function_->getArg(2);
  BindCaptured(3);
  ir::DimList reduced(op.dims);
  ir::DimList all = type.dims.Union(reduced);
  Operand operand;
  if (op.regions.empty()) operand = Prepare(op.operands[0]);
  llvm::Value* reduced_count = ElementCount(reduced);
  llvm::Value* threads =
      SpecialRegister(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
  llvm::Value* thread =
      SpecialRegister(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
  llvm::Value* block =
      SpecialRegister(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
  llvm::Value* result_index = builder_.CreateUDiv(block, split);
  llvm::Value* part = builder_.CreateURem(block, split);
  Coords result_coords;
  Decompose(result_index, type.dims, result_coords);
  llvm::AllocaInst* acc = EntryAlloca(RegisterType(elem), "acc");
  builder_.CreateStore(ReduceIdentity(op.reduce, elem), acc);
  auto element = [&](llvm::Value* linear) -> Effect {
    Coords coords = result_coords;
    Decompose(linear, reduced, coords);
    llvm::Value* x = nullptr;
    if (op.regions.empty()) {
      x = Read(operand, coords);
    } else {
      std::vector<llvm::Value*> args;
      for (const ir::Dim* dim : all) args.push_back(coords[dim]);
      x = EmitRegionValues(*op.region(0), args,
                           std::vector<bool>(args.size(), false))[0];
    }
    return [this, &op, elem, acc, x] {
      llvm::Value* old = builder_.CreateLoad(RegisterType(elem), acc);
      builder_.CreateStore(ReduceCombine(op.reduce, elem, old, x), acc);
    };
  };
  llvm::Value* begin =
      builder_.CreateAdd(builder_.CreateMul(part, threads), thread);
  llvm::Value* step = builder_.CreateMul(split, threads);
  if (IsMemoryBound(op))
    EmitStridedInFours(begin, reduced_count, step, element);
  else
    EmitStrided(
        begin, reduced_count, step,
        [&](llvm::Value* linear) { element(linear)(); }, /*unroll=*/true);
  llvm::Value* total = BlockReduce(
      op.reduce, elem, builder_.CreateLoad(RegisterType(elem), acc), thread);
  EmitWhen(builder_.CreateICmpEQ(thread, builder_.getInt64(0)), [&] {
    builder_.CreateStore(
        ToMemory(elem, total),
        builder_.CreateInBoundsGEP(MemoryType(elem), out, block));
  });
  builder_.CreateRetVoid();
}

void KernelEmitter::EmitCombineKernel() {
  const ir::Op& op = *kernel_.op;
  ir::ElemKind elem = op.results[0]->type.elem;
  llvm::Value* out = kernel_function_->getArg(1);
  llvm::Value* partials = kernel_function_->getArg(2);
  llvm::Value* split = kernel_function_->getArg(3);
  llvm::Value* threads =
      SpecialRegister(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x);
  llvm::Value* thread =
      SpecialRegister(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
  llvm::Value* block =
      SpecialRegister(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
  llvm::Value* base = builder_.CreateMul(block, split);
  llvm::AllocaInst* acc = EntryAlloca(RegisterType(elem), "acc");
  builder_.CreateStore(ReduceIdentity(op.reduce, elem), acc);
  EmitStrided(thread, split, threads, [&](llvm::Value* s) {
    llvm::Value* x = FromMemory(
        elem, builder_.CreateLoad(
                  MemoryType(elem),
                  builder_.CreateInBoundsGEP(MemoryType(elem), partials,
                                             builder_.CreateAdd(base, s))));
    llvm::Value* old = builder_.CreateLoad(RegisterType(elem), acc);
    builder_.CreateStore(ReduceCombine(op.reduce, elem, old, x), acc);
  });
  llvm::Value* total = BlockReduce(
      op.reduce, elem, builder_.CreateLoad(RegisterType(elem), acc), thread);
  EmitWhen(builder_.CreateICmpEQ(thread, builder_.getInt64(0)), [&] {
    builder_.CreateStore(
        ToMemory(elem, total),
        builder_.CreateInBoundsGEP(MemoryType(elem), out, block));
  });
  builder_.CreateRetVoid();
}

// See Note [Tiled contraction] in docs/gpu.md.
void KernelEmitter::EmitContractionKernel() {
  const ir::Op& op = *kernel_.op;
  const ir::Type& type = op.results[0]->type;
  ir::ElemKind elem = type.elem;
  const ir::Op& product = *op.region(0)->ops[2];
  BindCaptured(2);
  ArrayView result = View(type, kernel_function_->getArg(1));
  ArrayView a = View(kernel_.a->type, Get(kernel_.a));
  ArrayView b = View(kernel_.b->type, Get(kernel_.b));
  llvm::Value* rows = DimSize(kernel_.i);
  llvm::Value* columns = DimSize(kernel_.j);
  llvm::Value* depth = DimSize(kernel_.k);
  llvm::Value* tile = builder_.getInt64(kTile);
  llvm::Value* tx = SpecialRegister(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
  llvm::Value* ty = SpecialRegister(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y);
  llvm::Value* row = builder_.CreateAdd(
      builder_.CreateMul(
          SpecialRegister(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y), tile),
      ty);
  llvm::Value* column = builder_.CreateAdd(
      builder_.CreateMul(
          SpecialRegister(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), tile),
      tx);
  llvm::GlobalVariable* a_tile = SharedArray(elem, kTile * kTile);
  llvm::GlobalVariable* b_tile = SharedArray(elem, kTile * kTile);
  llvm::Type* memory_type = MemoryType(elem);
  auto tile_at = [&](llvm::GlobalVariable* shared, llvm::Value* r,
                     llvm::Value* c) {
    return builder_.CreateInBoundsGEP(
        memory_type, shared,
        builder_.CreateAdd(builder_.CreateMul(r, tile), c));
  };
  llvm::Value* zero = ToMemory(elem, ReduceIdentity(ir::ReduceKind::Sum, elem));
  llvm::AllocaInst* acc = EntryAlloca(RegisterType(elem), "acc");
  builder_.CreateStore(ReduceIdentity(ir::ReduceKind::Sum, elem), acc);
  // Loads a[row, k] into the tile, or 0 outside the array (padding terms
  // are 0 * 0 and change no sum).
  auto load_tile = [&](const ArrayView& view, llvm::Value* inside,
                       const Coords& coords, llvm::GlobalVariable* shared) {
    llvm::Value* target = tile_at(shared, ty, tx);
    builder_.CreateStore(zero, target);
    EmitWhen(inside, [&] {
      builder_.CreateStore(ToMemory(elem, LoadElement(view, coords)), target);
    });
  };
  EmitStrided(builder_.getInt64(0), depth, tile, [&](llvm::Value* k0) {
    llvm::Value* a_k = builder_.CreateAdd(k0, tx);
    Coords a_coords;
    a_coords[kernel_.i] = row;
    a_coords[kernel_.k] = a_k;
    load_tile(a,
              builder_.CreateAnd(builder_.CreateICmpSLT(row, rows),
                                 builder_.CreateICmpSLT(a_k, depth)),
              a_coords, a_tile);
    llvm::Value* b_k = builder_.CreateAdd(k0, ty);
    Coords b_coords;
    b_coords[kernel_.k] = b_k;
    b_coords[kernel_.j] = column;
    load_tile(b,
              builder_.CreateAnd(builder_.CreateICmpSLT(b_k, depth),
                                 builder_.CreateICmpSLT(column, columns)),
              b_coords, b_tile);
    Barrier();
    llvm::Value* sum = builder_.CreateLoad(RegisterType(elem), acc);
    for (int64_t kk = 0; kk < kTile; ++kk) {
      llvm::Value* x = FromMemory(
          elem, builder_.CreateLoad(
                    memory_type, tile_at(a_tile, ty, builder_.getInt64(kk))));
      llvm::Value* y = FromMemory(
          elem, builder_.CreateLoad(
                    memory_type, tile_at(b_tile, builder_.getInt64(kk), tx)));
      sum = ReduceCombine(ir::ReduceKind::Sum, elem, sum,
                          EmitBinaryScalar(product, x, y));
    }
    builder_.CreateStore(sum, acc);
    Barrier();
  });
  EmitWhen(builder_.CreateAnd(builder_.CreateICmpSLT(row, rows),
                              builder_.CreateICmpSLT(column, columns)),
           [&] {
             Coords coords;
             coords[kernel_.i] = row;
             coords[kernel_.j] = column;
             StoreElement(result, coords,
                          builder_.CreateLoad(RegisterType(elem), acc));
           });
  builder_.CreateRetVoid();
}

llvm::Type* ParamType(llvm::LLVMContext& context, const ir::Value* value) {
  // A captured scalar is passed as it is in memory (a bool as a byte).
  if (!value->type.IsScalar()) return llvm::PointerType::getUnqual(context);
  return codegen::MemoryType(context, value->type.elem);
}

llvm::Function* CreateKernel(llvm::Module& module, const std::string& name,
                             llvm::ArrayRef<llvm::Type*> params) {
  llvm::LLVMContext& context = module.getContext();
  auto* function = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(context), params, false),
      llvm::GlobalValue::ExternalLinkage, name, module);
  function->setCallingConv(llvm::CallingConv::PTX_Kernel);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  // Both spellings of "this is an entry": the calling convention and the
  // nvvm.annotations metadata that older tools read.
  llvm::Metadata* annotation[] = {
      llvm::ValueAsMetadata::get(function),
      llvm::MDString::get(context, "kernel"),
      llvm::ValueAsMetadata::get(
          llvm::ConstantInt::get(llvm::Type::getInt32Ty(context), 1))};
  module.getOrInsertNamedMetadata("nvvm.annotations")
      ->addOperand(llvm::MDNode::get(context, annotation));
  return function;
}

}  // namespace

std::unique_ptr<llvm::Module> EmitKernels(const ir::Module& module,
                                          const KernelPlan& plan,
                                          llvm::LLVMContext& context,
                                          std::vector<DeviceCheck>& checks) {
  auto device = std::make_unique<llvm::Module>(
      (module.name.empty() ? "delta" : module.name) + ".kernels", context);
  ModuleContext module_context;
  module_context.module = device.get();
  llvm::Type* ptr = llvm::PointerType::getUnqual(context);
  llvm::Type* i64 = llvm::Type::getInt64Ty(context);
  for (const Kernel& kernel : plan.kernels) {
    std::vector<llvm::Type*> params = {ptr};
    switch (kernel.kind) {
      case KernelKind::Tabulate:
        params.insert(params.end(), kernel.op->results.size(), ptr);
        break;
      case KernelKind::Reduce:
        params.push_back(ptr);
        params.push_back(i64);
        break;
      case KernelKind::Contraction:
        params.push_back(ptr);
        break;
    }
    for (const ir::Value* value : kernel.captured)
      params.push_back(ParamType(context, value));
    params.insert(params.end(), 2 * kernel.sharded.size(), i64);
    llvm::Function* function = CreateKernel(*device, kernel.name, params);
    KernelEmitter emitter(module_context, kernel, function, checks);
    switch (kernel.kind) {
      case KernelKind::Tabulate:
        emitter.EmitTabulateKernel();
        break;
      case KernelKind::Reduce: {
        emitter.EmitReduceKernel();
        llvm::Function* combine = CreateKernel(
            *device, kernel.name + "_combine", {ptr, ptr, ptr, i64});
        KernelEmitter(module_context, kernel, combine, checks)
            .EmitCombineKernel();
        break;
      }
      case KernelKind::Contraction:
        emitter.EmitContractionKernel();
        break;
    }
  }
  std::string problems;
  llvm::raw_string_ostream problems_stream(problems);
  if (llvm::verifyModule(*device, &problems_stream))
    llvm::report_fatal_error("cuda: invalid kernel IR: " +
                             llvm::Twine(problems));
  return device;
}

}  // namespace delta::cuda
