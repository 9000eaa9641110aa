// The per-function IR-to-LLVM emitter, whose members are defined by topic
// in function_emitter.cpp (values, memory, regions), control_flow.cpp,
// io_ops.cpp, layout.cpp, array_ops.cpp and the files after it (loop
// nests), and scalar_ops.cpp (element math). Internal to the code
// generator.
#pragma once

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/contraction_shape.h"
#include "compiler/ir/index_range.h"
#include "compiler/ir/ir.h"

namespace delta::codegen {

class FunctionEmitter;
struct ModuleContext;

// Lets another backend take over ops of the host code: the CUDA backend
// launches kernels for parallel ops and moves arrays between host and
// device (compiler/codegen/cuda/host_launch.h).
class HostHooks {
 public:
  virtual ~HostHooks() = default;
  // After the runtime is declared, before any function is emitted.
  virtual void BeginModule(ModuleContext& module) { (void)module; }
  // At the entry of each function, and before its return.
  virtual void BeginFunction(FunctionEmitter& emitter,
                             const ir::Function& function) {
    (void)emitter;
    (void)function;
  }
  virtual void BeforeReturn(FunctionEmitter& emitter,
                            const ir::Function& function) {
    (void)emitter;
    (void)function;
  }
  // Emits `op` and returns true, or returns false to let the CPU code
  // generator emit it.
  virtual bool EmitOp(FunctionEmitter& emitter, const ir::Op& op) = 0;
  // Before host code reads the array `data` of `type` that is not an
  // operand of the op being emitted (a loop copying a yielded array into
  // its stack, a map copying one into its result).
  virtual void BeforeHostRead(FunctionEmitter& emitter, const ir::Type& type,
                              llvm::Value* data) {
    (void)emitter;
    (void)type;
    (void)data;
  }
};

// Note [Physical layout]: the dims laid out (and looped over) outermost,
// after the tapes' steps, and innermost in every array of the module that
// has them, wherever they are in canonical order; null: canonical.
// The most elements of a dim that loops unroll instead of looping over
// (EmitLoopNest, UnrolledMapDims).
constexpr int64_t kUnrolledDimMax = 4;

struct PhysicalLayout {
  const ir::Dim* outermost = nullptr;
  const ir::Dim* innermost = nullptr;
  // Note [Batch dims outermost]: the arrays over exactly these dims have
  // this batch dim outermost instead.
  std::vector<std::pair<ir::DimList, const ir::Dim*>> batch_outermost;
};
// The order in memory (outermost first) of an array over `dims`.
std::vector<const ir::Dim*> PhysicalOrder(const PhysicalLayout& layout,
                                          const ir::DimList& dims);

// What every function of a module shares: the LLVM module, the runtime's
// declarations and interned strings.
struct ModuleContext {
  llvm::Module* module = nullptr;
  llvm::DenseMap<const ir::Function*, llvm::Function*> functions;
  llvm::StringMap<llvm::Constant*> strings;
  llvm::FunctionCallee alloc, free, fail, fail_format;
  llvm::FunctionCallee print_begin, print_text, print_value, print_end;
  llvm::FunctionCallee read_npy, write_npy, parallel_for;
  // delta_abi_alloc_result in library modules (Note [Results in the
  // caller's buffers] in docs/internals/c_abi.md); null otherwise.
  llvm::FunctionCallee alloc_result;
  // delta_set_location, delta_enter_call and delta_leave_call (host
  // modules only: null in kernel modules).
  llvm::FunctionCallee set_location, enter_call, leave_call;
  // -O3: contractions may use FMA, float sums may be reassociated and loops
  // may call vector math (docs/performance.md); otherwise results are
  // bitwise the interpreter's.
  bool fast_math = false;
  // Large loop nests run their outermost loop on the runtime's thread pool
  // (parallel.cpp); off for -O0/-O1 and under HostHooks.
  bool parallel = false;
  // Note [Physical layout]: chosen by ChoosePhysicalLayout at -O3 on the
  // CPU; none: canonical order.
  PhysicalLayout layout;
  // Set by HostHooks::BeginModule to replace what CopyArray does (a
  // `ptr (ptr, i64 bytes)` function); null: a memcpy.
  llvm::FunctionCallee copy;
  HostHooks* hooks = nullptr;
  // The latches of loops of a constant trip count that LimitUnrolling keeps
  // rolled in a large module (Note [Compile-time budgets]).
  std::vector<llvm::BranchInst*> medium_loops;

  llvm::Constant* String(llvm::StringRef text);
};

// A contraction the matrix kernel runs: its operands and kernel shape.
struct MatchedContraction {
  const ir::Value* a;
  const ir::Value* b;
  ir::ContractionShape shape;
};
std::optional<MatchedContraction> MatchContraction(const ir::Op& op);
// Whether `dim` is known to be wide enough to fill the kernel's columns.
bool MayFillColumns(const ir::Dim* dim);
// See Note [Physical layout] (layout.cpp).
PhysicalLayout ChoosePhysicalLayout(const ir::Module& module);
// Note [Compile-time budgets] (control_flow.cpp): in a module emitted with
// that many instructions, the loops of medium constant trip counts stay
// rolled; whether it did.
bool LimitUnrolling(ModuleContext& module);

// Calls `use` for every value `op` reads, in its regions too.
void ForEachUse(const ir::Op& op,
                const std::function<void(const ir::Value*)>& use);

// A point of an iteration space: the coordinate (i64) of each dim.
using Coords = llvm::SmallDenseMap<const ir::Dim*, llvm::Value*, 8>;

// An array in memory, with its strides computed once before a loop nest.
struct ArrayView {
  llvm::Value* data = nullptr;
  ir::Type type;
  std::vector<llvm::Value*> strides;  // per dim of type.dims, in elements
};

// A value read elementwise inside a loop nest: a scalar, or an array read
// at the coordinates of the dims it has (broadcast by name).
struct Operand {
  llvm::Value* scalar = nullptr;
  ArrayView array;
  bool is_array = false;
};

class FunctionEmitter {
 public:
  FunctionEmitter(ModuleContext& module, const ir::Function& function,
                  llvm::Function* llvm_function);
  virtual ~FunctionEmitter() = default;
  void EmitBody();

  // For HostHooks and the kernels of the CUDA backend.
  llvm::IRBuilder<>& Builder() { return builder_; }
  ModuleContext& Context() { return module_; }
  const ir::Function& Function() const { return function_; }
  llvm::Value* Get(const ir::Value* value);
  void Set(const ir::Value* value, llvm::Value* llvm_value) {
    values_[value] = llvm_value;
  }
  // The extent of `dim` here: of this process's block for a sharded dim.
  llvm::Value* DimSize(const ir::Dim* dim);
  // The size of the whole dim (what `size` gives).
  llvm::Value* GlobalDimSize(const ir::Dim* dim);
  // This process's block of the sharded `dim`: its extent and where it
  // starts in the whole dim (distributed_ops.cpp). Kernels take them as
  // parameters: they cannot call the runtime.
  virtual llvm::Value* ShardExtent(const ir::Dim* dim);
  virtual llvm::Value* ShardOffset(const ir::Dim* dim);
  llvm::Type* RegisterType(ir::ElemKind kind);
  llvm::Type* MemoryType(ir::ElemKind kind);
  llvm::Type* ValueType(const ir::Type& type);
  int64_t ElemBytes(ir::ElemKind kind);
  llvm::Value* ElementCount(const ir::DimList& dims);
  llvm::AllocaInst* EntryAlloca(llvm::Type* type, llvm::StringRef name);

 protected:
  // How a region hands its yielded arrays to its op.
  enum class YieldMode {
    Transfer,  // yielded arrays become the op's (loop, if, return)
    Borrow,    // the op copies them before the region frees them (map)
  };
  using Consumer = std::function<void(const std::vector<llvm::Value*>&)>;

  // --- function_emitter.cpp: values, memory, checks, regions ---
  llvm::Value* Allocate(const ir::Type& type);
  // A new array for `result` of the op being emitted: its destination, the
  // caller's buffer (Note [Results in the caller's buffers] in
  // docs/internals/c_abi.md), or a fresh buffer.
  llvm::Value* AllocateResult(const ir::Value* result);
  // Result `index` of an exported library function: the caller's buffer
  // for it when the call offers one, else a fresh buffer.
  llvm::Value* AllocateInCallerBuffer(int64_t index, const ir::Type& type);
  void Free(llvm::Value* data);
  llvm::Value* CopyArray(const ir::Type& type, llvm::Value* data);
  // Reports a run-time error and leaves the current block terminated
  // (kernels record the error for the host instead).
  virtual void EmitFailure(const ir::Loc& loc, llvm::StringRef message,
                           llvm::Value* first = nullptr,
                           llvm::Value* second = nullptr);
  // The text of loc's chain of calls as a C string, or null for none.
  llvm::Value* ChainString(const ir::Loc& loc);
  // Branches to a run-time error unless `ok`.
  void EmitCheck(llvm::Value* ok, const ir::Loc& loc, llvm::StringRef message,
                 llvm::Value* first = nullptr, llvm::Value* second = nullptr);
  // Emits `block` with its arguments bound to `args`; `owned_args` says
  // which array arguments the region frees. Calls `consume` with the
  // yielded values before the region's last frees.
  void EmitRegion(const ir::Block& block, const std::vector<llvm::Value*>& args,
                  const std::vector<bool>& owned_args, YieldMode mode,
                  const Consumer& consume);
  std::vector<llvm::Value*> EmitRegionValues(
      const ir::Block& block, const std::vector<llvm::Value*>& args,
      const std::vector<bool>& owned_args);
  void EmitOp(const ir::Op& op);
  // Fails at op.loc unless every array `op` computes has at most
  // DELTA_MAX_ELEMENTS elements (runtime/format.h), as the interpreter does.
  void EmitSizeChecks(const ir::Op& op);
  // Tells the runtime the location of an op that allocates or prints
  // (Note [Locations of run-time errors]).
  void EmitLocation(const ir::Op& op);
  // An owned copy of op.operands[i] for an op that takes ownership (loop
  // state): the buffer itself when this is its last use, else a copy.
  llvm::Value* TakeOperand(const ir::Op& op, size_t i);

  // --- control_flow.cpp: counted loops, loop, while, if, calls ---
  // A counted loop; with `parallel_accesses`, its latch says that the
  // accesses in that group carry no dependence between iterations.
  void EmitFor(llvm::Value* lo, llvm::Value* hi,
               const std::function<void(llvm::Value*)>& body,
               llvm::MDNode* parallel_accesses = nullptr);
  // EmitFor over [lo, hi) of `dim`, in two loops where the map being
  // emitted peels it (Note [Boundary peeling] in map_op.cpp).
  void EmitDimFor(const ir::Dim* dim, llvm::Value* lo, llvm::Value* hi,
                  const std::function<void(llvm::Value*)>& body,
                  llvm::MDNode* parallel_accesses = nullptr);
  void EmitLoop(const ir::Op& op);
  // Which stacked outputs of a loop its body writes in place (Note [Scan
  // outputs in place]).
  std::vector<bool> StackedInPlace(const ir::Op& loop);
  void EmitWhile(const ir::Op& op);
  void EmitIf(const ir::Op& op);
  void EmitCall(const ir::Op& op);

  // --- io_ops.cpp: print and .npy files ---
  void EmitPrint(const ir::Op& op);
  void EmitNpy(const ir::Op& op);

  // --- distributed_ops.cpp: a sharded run's collectives (runtime/
  // distributed.h) ---
  void EmitCollective(const ir::Op& op);
  // A call of the runtime's distributed.h function `name` (i64 or void
  // results; the arguments' types give its parameters).
  llvm::Value* CallShard(llvm::StringRef name, llvm::Type* result,
                         llvm::ArrayRef<llvm::Value*> args);

  // --- layout.cpp: Note [Physical layout] ---
  // `dims` in memory order, outermost first: the order loop nests run in.
  std::vector<const ir::Dim*> LoopOrder(const ir::DimList& dims) const;
  std::vector<const ir::Dim*> LoopOrder(
      llvm::ArrayRef<const ir::Dim*> dims) const {
    return LoopOrder(ir::DimList(dims));
  }
  bool IsCanonicalLayout(const ir::Type& type) const;
  // A copy of the array between canonical and memory order (the array
  // itself when they agree), for function boundaries, printing and files.
  // A copy goes to `into` if given.
  llvm::Value* Relayout(const ir::Type& type, llvm::Value* data,
                        bool to_physical, llvm::Value* into = nullptr);
  // Relayout of an array the caller owns: the original is freed if copied.
  llvm::Value* RelayoutOwned(const ir::Type& type, llvm::Value* data,
                             bool to_physical, llvm::Value* into = nullptr);
  // The array in canonical order, to read for a call, printing or a file;
  // a copy made for it is added to `temporaries`, for the caller to free.
  llvm::Value* CanonicalTemporary(const ir::Type& type, llvm::Value* data,
                                  std::vector<llvm::Value*>& temporaries);

  // --- array_ops.cpp: views, element access and loop nests ---
  // The array in memory order, or in canonical order if `canonical`.
  ArrayView View(const ir::Type& type, llvm::Value* data,
                 bool canonical = false);
  llvm::Value* ElementPointer(const ArrayView& view, const Coords& coords);
  llvm::Value* LoadElement(const ArrayView& view, const Coords& coords);
  void StoreElement(const ArrayView& view, const Coords& coords,
                    llvm::Value* value);
  // A store of an element of kind `elem` (bools as bytes) at `pointer`,
  // in the nest's access group.
  void StoreAt(llvm::Value* pointer, ir::ElemKind elem, llvm::Value* value);
  Operand Prepare(const ir::Value* value);
  llvm::Value* Read(const Operand& operand, const Coords& coords);
  // The coordinates [lo, hi) of `dim` that the ops being emitted cover:
  // one block of it in a blocked group (Note [Cache blocking]), else all.
  std::pair<llvm::Value*, llvm::Value*> DimRange(const ir::Dim* dim);
  // Loops over `dims` (outermost first), calling `body` at each point with
  // the coordinates of these dims added to `coords`.
  void EmitLoopNest(llvm::ArrayRef<const ir::Dim*> dims, Coords& coords,
                    const std::function<void()>& body,
                    llvm::MDNode* parallel_accesses = nullptr);
  // parallel.cpp: EmitLoopNest whose iterations are independent: when
  // `work` (an estimate of the elements the nest touches) is large, the
  // outermost loop is split into chunks that run on the thread pool.
  void EmitParallelNest(llvm::ArrayRef<const ir::Dim*> dims, Coords& coords,
                        llvm::Value* work, const std::function<void()>& body);
  void EmitIndependentNest(llvm::ArrayRef<const ir::Dim*> dims, Coords& coords,
                           llvm::Value* work, const std::function<void()>& body,
                           llvm::MDNode* group);
  // A loop over [0, count) whose iterations are independent, outlined into
  // chunks that run on the thread pool when `work` is large.
  void EmitOutlinedFor(llvm::Value* count, llvm::Value* work,
                       const std::function<void(llvm::Value*)>& body,
                       llvm::MDNode* group = nullptr,
                       const ir::Dim* dim = nullptr);

  // --- blocking.cpp: Note [Cache blocking] ---
  struct BlockGroup {
    const ir::Dim* dim = nullptr;  // blocked: each member's outermost dim
    bool decided = false;          // blocked for sure (sizes known)
    std::vector<size_t> members;   // indices in the region, in order
    std::vector<size_t> totals;    // members that reduce over `dim`
    std::vector<size_t> hoisted;   // independent ops between them
  };
  // How a group is cut into blocks: LLVM values, constants when the sizes
  // are known.
  struct BlockSizes {
    llvm::Value* rows;     // of the dim per block
    llvm::Value* blocks;   // how many
    llvm::Value* work;     // bytes the group writes
    llvm::Value* blocked;  // i1: whether blocking pays
  };
  // The group of ops starting at `first` in `block` that runs blocked, or
  // one without members.
  BlockGroup FindBlockGroup(const ir::Block& block, size_t first);
  BlockSizes MeasureBlocks(const ir::Block& block, const BlockGroup& group);
  void EmitBlockGroup(const ir::Block& block, const BlockGroup& group);
  void EmitBlocks(const ir::Block& block, const BlockGroup& group,
                  const BlockSizes& sizes);
  llvm::Value* CombinePartials(const ir::Op& op, llvm::Value* partials,
                               llvm::Value* blocks);
  // The bytes of an array of `type`.
  llvm::Value* TypeBytes(const ir::Type& type);

  // --- array_ops.cpp (continued): result buffers, the simplest ops ---
  // An array of `type` whose element at each point is `element()`: a fresh
  // buffer, or `into` (which must have room for it).
  llvm::Value* EmitTabulate(const ir::Type& type,
                            const std::function<llvm::Value*(Coords&)>& element,
                            llvm::Value* into = nullptr);
  // A buffer that a result of `op` with `type` may take over (Note
  // [In-place array ops]), and that no longer needs freeing; null if none.
  llvm::Value* ReusableOperand(const ir::Op& op, const ir::Type& type);
  // Where `result` of `op` goes: its destination (Note [Scan outputs in
  // place]), the caller's buffer, a reusable operand, or null for a new
  // buffer.
  llvm::Value* ResultBuffer(const ir::Op& op, const ir::Value* result);
  // The buffer `result` is to be written into (Note [Scan outputs in
  // place]), or null.
  llvm::Value* Destination(const ir::Value* result) const;
  void EmitElementwise(const ir::Op& op);
  void EmitBroadcast(const ir::Op& op);
  void EmitRename(const ir::Op& op);

  // --- map_op.cpp: maps, Note [One-hot dims] ---
  void EmitMap(const ir::Op& op);
  ir::DimList UnrolledMapDims(const ir::Op& op);

  // --- reduce_ops.cpp: reductions and cumsum ---
  void EmitReduce(const ir::Op& op);
  void EmitArgReduce(const ir::Op& op);
  // An arg-extremum's parts: the check that its dim is not empty (where
  // the result is), and its index at one point of the result, reading
  // `operand` (prepared where the op has no region). The GPU's kernels
  // emit them apart (compiler/codegen/cuda/nvptx_emitter.cpp).
  void EmitArgReduceCheck(const ir::Op& op);
  llvm::Value* EmitArgReduceAt(const ir::Op& op, const Operand& operand,
                               Coords& coords);
  void EmitReduceCustom(const ir::Op& op);
  void EmitCumsum(const ir::Op& op);
  // contraction.cpp: a reduce.sum of a product as matrix-product calls;
  // false if `op` is not one.
  bool EmitContraction(const ir::Op& op);
  const ir::Dim* InnermostIfAdjacent(const std::vector<const ir::Dim*>& reduced,
                                     const ir::DimList& dims) const;
  std::vector<const ir::Dim*> MergedFreeDims(
      const ir::Dim* free, const ir::DimList& operand, const ir::DimList& c,
      const std::vector<const ir::Dim*>& outer) const;
  // The products of a batched contraction (one `product` per point of
  // `batch`, m x n x k each): Note [Parallel batches].
  void EmitBatchedProducts(llvm::ArrayRef<const ir::Dim*> batch, Coords& coords,
                           llvm::Value* m, llvm::Value* n, llvm::Value* k,
                           const std::function<void()>& product);

  // --- index_ops.cpp: gather, scatter_add, to_index, iota ---
  void EmitGather(const ir::Op& op);
  void EmitScatterAdd(const ir::Op& op);
  // Checks 0 <= index < size(dim), as indices made by an unchecked convert
  // may be out of range.
  void EmitIndexCheck(llvm::Value* index, const ir::Dim* dim,
                      const ir::Loc& loc);
  void EmitToIndex(const ir::Op& op);
  void EmitIota(const ir::Op& op);

  // --- scalar_ops.cpp: one element ---
  llvm::Value* EmitUnaryScalar(const ir::Op& op, llvm::Value* x);
  llvm::Value* EmitFloatMath(ir::OpKind kind, llvm::Value* x);
  llvm::Value* EmitFastTanh(llvm::Value* x);
  llvm::Value* EmitFastLgamma(llvm::Value* x);
  llvm::Value* EmitBinaryScalar(const ir::Op& op, llvm::Value* a,
                                llvm::Value* b);
  llvm::Value* EmitConvert(llvm::Value* x, ir::ElemKind from, ir::ElemKind to);
  llvm::Value* EmitConst(const ir::Op& op);
  // The neutral element and the combination of a reduction.
  llvm::Value* ReduceIdentity(ir::ReduceKind kind, ir::ElemKind elem);
  llvm::Value* ReduceCombine(ir::ReduceKind kind, ir::ElemKind elem,
                             llvm::Value* acc, llvm::Value* x);
  // A call of the C math function `name` (`name`f for f32), which has no
  // effects; its arguments share one float type.
  llvm::Value* CallLibm(llvm::StringRef name,
                        llvm::ArrayRef<llvm::Value*> args);
  llvm::Value* CallIntrinsic(llvm::Intrinsic::ID id, llvm::Value* x,
                             llvm::Value* y = nullptr);
  // x ^ y of floats: llvm.powi at -O3 where y is a converted integer.
  llvm::Value* EmitPow(llvm::Value* x, llvm::Value* y);

  ModuleContext& module_;
  const ir::Function& function_;
  llvm::Function* llvm_function_;
  llvm::LLVMContext& context_;
  llvm::IRBuilder<> builder_;
  llvm::DenseMap<const ir::Value*, llvm::Value*> values_;
  // Array values of the regions being emitted that are still to be freed.
  llvm::SmallPtrSet<const ir::Value*, 16>* owned_ = nullptr;
  // Arrays that their op writes into a given buffer (a scan's slice), which
  // the region neither owns nor frees.
  llvm::DenseMap<const ir::Value*, llvm::Value*> destinations_;
  // An exported library function's results that the op making them may
  // allocate in the caller's buffer: value -> result index.
  llvm::DenseMap<const ir::Value*, int64_t> result_slots_;
  // Uses of owned values at the op being emitted, for TakeOperand.
  llvm::DenseMap<const ir::Value*, size_t>* last_use_ = nullptr;
  size_t op_index_ = 0;
  // The coordinates [lo, hi) of a dim that the ops being emitted cover,
  // where a blocked group (Note [Cache blocking]) runs one block of it.
  llvm::DenseMap<const ir::Dim*, std::pair<llvm::Value*, llvm::Value*>>
      dim_ranges_;
  // Loops EmitFor has made, to tell an innermost loop from the others.
  int loops_emitted_ = 0;
  // Those of them that stay loops after LLVM's full unrolling (Note
  // [Compile-time budgets] in control_flow.cpp).
  int long_loops_emitted_ = 0;
  // Note [Boundary peeling] (map_op.cpp): the dim of the map being emitted
  // whose loop splits in three, and its index argument; and, while the
  // middle loop's body is emitted, the bounds that decide its compares.
  struct Peel {
    const ir::Dim* dim;
    const ir::Value* index;
    int64_t first = 0;  // the middle loop starts there
    int64_t last = 0;   // and stops this many before the end
  };
  std::optional<Peel> peel_;
  std::optional<ir::IndexBounds> index_bounds_;
  // EmitFor asks LLVM to vectorize innermost parallel loops, whatever its
  // cost model says (Note [One-hot dims]).
  bool force_vectorize_ = false;
  // Inside a loop nest that EmitParallelNest outlines (no nested outlining).
  bool in_parallel_nest_ = false;
  // How many sequential loops (loop, while) enclose the op being emitted
  // (Note [Parallel loops in sequential loops] in parallel.cpp).
  int sequential_loops_ = 0;
  // The access group of the EmitParallelNest being emitted: array loads
  // and stores join it (Note [Independent iterations]).
  llvm::MDNode* access_group_ = nullptr;
  // Note [Size checks once]: the dims whose element count each region
  // being emitted has checked, innermost last; and whether the ops being
  // emitted run on every path after them (not a blocked group's members).
  std::vector<std::set<std::vector<const ir::Dim*>>> checked_sizes_;
  bool record_checks_ = true;
};

}  // namespace delta::codegen
