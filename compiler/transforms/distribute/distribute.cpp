// The distribute pass (distribute.h, docs/internals/distribute.md).
//
// Each process runs the same IR on its block of the sharded dim: every op
// that works point by point over that dim (elementwise ops, broadcasts,
// gathers by its own indices, maps) needs nothing else. What crosses
// blocks is completed here with the collectives of ops.def, so that code
// generators and the interpreter only implement those three ops and the
// block's extent.
#include "compiler/transforms/distribute/distribute.h"

#include <limits>

#include "compiler/ir/builder.h"
#include "compiler/transforms/batch/demap.h"
#include "compiler/transforms/opt/inline_calls.h"
#include "compiler/transforms/rewrite.h"

namespace delta::distribute {
namespace {

using ir::Dim;
using ir::Op;
using ir::OpKind;
using ir::Value;

// The name of the dim of size 1 over which the partial results of a
// reduce(f) are combined; not a Delta name, so never a user's dim.
constexpr const char* kFoldDim = "shard.fold";

const Dim* FirstSharded(llvm::ArrayRef<const Dim*> dims) {
  for (const Dim* dim : dims)
    if (dim->sharded) return dim;
  return nullptr;
}

// The innermost op around `op` that runs its region once per element (a
// map, or a reduction's fused body): a collective there would run a
// different number of times on each process.
const Op* ElementwiseOwner(const Op& op) {
  for (const ir::Block* block = op.parent; block && block->parent;
       block = block->parent->parent) {
    OpKind kind = block->parent->kind;
    if (kind == OpKind::Map || kind == OpKind::Reduce ||
        kind == OpKind::ReduceCustom)
      return block->parent;
  }
  return nullptr;
}

class Distributor {
 public:
  Distributor(ir::Module& module, ir::Function& function)
      : module_(module), function_(function), builder_(&function) {}

  void Run(std::vector<Problem>& problems) {
    std::vector<Op*> ops;
    transforms::WalkOps(*function_.body, [&](Op& op) { ops.push_back(&op); });
    for (Op* op : ops) Rewrite(*op, problems);
    for (Op* op : replaced_) transforms::EraseOp(*op);
  }

 private:
  // argmax/argmin over the dim: the extremum of every block, completed by
  // an allreduce, then the first global position that holds it (the
  // smallest, as on one process) by an allreduce.min of each block's
  // first. An empty block contributes no position. The result is a global
  // position, so it may only become a number: each `convert` of it now
  // converts that position. (The local argmax is not computed: on an
  // empty block it would fail.)
  template <typename Report>
  void ArgExtremum(Op& op, const Dim* sharded, Report& problem) {
    Value* result = op.results[0];
    std::vector<Op*> converts;
    bool other_use = false;
    transforms::WalkOps(*function_.body, [&](Op& user) {
      for (Value* operand : user.operands)
        if (operand == result) {
          if (user.kind == OpKind::Convert &&
              user.results[0]->type.elem != ir::ElemKind::Index)
            converts.push_back(&user);
          else
            other_use = true;
        }
    });
    if (other_use || op.operands.size() != 1) {
      problem("the position that " +
              std::string(op.reduce == ir::ReduceKind::Argmax ? "argmax"
                                                              : "argmin") +
              " finds over the sharded dim `" + sharded->name +
              "` may be in another process's block: only its number "
              "(i64(...)) is supported yet, not indexing with it");
      return;
    }
    Value* x = op.operands[0];
    ir::ReduceKind extremum = op.reduce == ir::ReduceKind::Argmax
                                  ? ir::ReduceKind::Max
                                  : ir::ReduceKind::Min;
    Value* global = nullptr;
    builder_.SetLoc(op.loc);
    transforms::InsertAt(
        builder_, *op.parent, transforms::IndexOf(op) + 1, [&] {
          Value* best = Collective(OpKind::Allreduce, extremum,
                                   builder_.Reduce(extremum, x, {sharded}));
          Value* positions = builder_.Binary(
              OpKind::Add,
              builder_.Convert(builder_.Iota(sharded), ir::ElemKind::I64),
              Offset(sharded));
          Value* none = builder_.IntConst(ir::ElemKind::I64,
                                          std::numeric_limits<int64_t>::max());
          Value* first = builder_.Reduce(
              ir::ReduceKind::Min,
              builder_.Select(builder_.Binary(OpKind::Eq, x, best), positions,
                              none),
              {sharded});
          global = Collective(OpKind::Allreduce, ir::ReduceKind::Min, first);
        });
    for (Op* convert : converts) convert->operands[0] = global;
    replaced_.push_back(&op);
  }

  // reduce(f, init, x, d) over the dim: each process folds its block from
  // init (the op itself), then the partial results are folded with f in
  // rank order, p0 ⊕ p1 ⊕ … (on one process: p0, unchanged). Equal to one
  // process's fold when f is associative and init is its identity. The
  // processes take p_k in turn from an allreduce.sum where every other
  // process adds zeros; f is applied by a copy of the op over `shard.fold`,
  // a dim of size 1.
  template <typename Report>
  void FoldPartials(Op& op, const Dim* sharded, Report& problem) {
    const ir::Type& acc_type = op.regions[0]->args[0]->type;
    const ir::Type& elem_type = op.regions[0]->args[1]->type;
    // Sema gives both arguments one type; an index cannot be summed.
    if (!(acc_type == elem_type) || acc_type.elem == ir::ElemKind::Index) {
      problem("reduce with a function over the sharded dim `" + sharded->name +
              "` of indices is not supported yet");
      return;
    }
    Complete(op, [&](Value* partial) {
      const ir::Type& type = partial->type;
      ir::ElemKind elem = type.elem;
      Value* zero = elem == ir::ElemKind::Bool ? builder_.BoolConst(false)
                    : ir::IsFloat(elem)        ? builder_.FloatConst(elem, 0)
                                               : builder_.IntConst(elem, 0);
      // This process's partial on process k, zeros elsewhere: summed, p_k.
      Value* me = Collective(OpKind::Exscan, ir::ReduceKind::Sum,
                             builder_.IntConst(ir::ElemKind::I64, 1));
      auto take = [&](Value* k) {
        return Collective(
            OpKind::Allreduce, ir::ReduceKind::Sum,
            builder_.Select(builder_.Binary(OpKind::Eq, me, k), partial, zero));
      };
      Value* processes = Collective(OpKind::Allreduce, ir::ReduceKind::Sum,
                                    builder_.IntConst(ir::ElemKind::I64, 1));
      Value* first = take(builder_.IntConst(ir::ElemKind::I64, 0));
      Op* loop = builder_.Create(
          OpKind::Loop,
          {builder_.IntConst(ir::ElemKind::I64, 1), processes, first}, {type});
      ir::Block* body = builder_.AddRegion(
          loop, {ir::Type{ir::ElemKind::I64, nullptr, {}}, type});
      ir::InsertionGuard guard(builder_);
      builder_.SetInsertionBlock(body);
      ir::DimList with_fold = type.dims;
      const Dim* fold = FoldDim();
      with_fold.Insert(fold);
      Value* part = builder_.Broadcast(take(body->args[0]), with_fold);
      transforms::CloneMap map;
      Op* combine = transforms::CloneOp(builder_, op, map);
      combine->operands = {body->args[1], part};
      combine->dims = {fold};
      builder_.Yield({combine->results[0]});
      return loop->results[0];
    });
  }

  // The module's dim of size 1 that FoldPartials folds over.
  const Dim* FoldDim() {
    for (const auto& dim : module_.dims)
      if (dim->name == kFoldDim) return dim.get();
    return module_.AddDim(kFoldDim, 1);
  }

  // The global position (i64) of this process's first element of `dim`.
  Value* Offset(const Dim* dim) {
    Op* offset_op = builder_.Create(OpKind::ShardOffset, {},
                                    {ir::Type{ir::ElemKind::I64, nullptr, {}}});
    offset_op->dims = {dim};
    return offset_op->result();
  }

  void Rewrite(Op& op, std::vector<Problem>& problems) {
    auto problem = [&](std::string message) {
      problems.push_back({op.loc, std::move(message)});
    };
    const Dim* sharded = FirstSharded(op.dims);
    switch (op.kind) {
      case OpKind::Reduce:
        if (!sharded) return;
        if (!InPlainCode(op, sharded, problem)) return;
        if (ir::IsArgExtremum(op.reduce)) {
          ArgExtremum(op, sharded, problem);
          return;
        }
        Complete(op, [&](Value* local) {
          return Collective(OpKind::Allreduce, op.reduce, local);
        });
        return;
      case OpKind::Cumsum: {
        if (!sharded || !InPlainCode(op, sharded, problem)) return;
        // The block's running sums, plus the totals of the blocks before.
        Value* x = op.operands[0];
        Complete(op, [&](Value* local) {
          Value* total = builder_.Reduce(ir::ReduceKind::Sum, x, {sharded});
          Value* before =
              Collective(OpKind::Exscan, ir::ReduceKind::Sum, total);
          return builder_.Binary(OpKind::Add, local, before);
        });
        return;
      }
      case OpKind::Convert: {
        const ir::Type& from = op.operands[0]->type;
        if (from.elem != ir::ElemKind::Index || !from.index_dim->sharded)
          return;
        const Dim* dim = from.index_dim;
        if (op.results[0]->type.elem == ir::ElemKind::Index) {
          problem("an index of the sharded dim `" + dim->name +
                  "` cannot become an index of another dim yet");
          return;
        }
        // An index is a position in the block; as a number it is global.
        Complete(op, [&](Value* local) {
          Value* offset = builder_.Convert(Offset(dim), local->type.elem);
          return builder_.Binary(OpKind::Add, local, offset);
        });
        return;
      }
      case OpKind::ToIndex:
        if (sharded)
          problem("indexing the sharded dim `" + sharded->name +
                  "` by a number needs another process's block: not "
                  "supported yet; compute per element over `" +
                  sharded->name + "` instead");
        return;
      case OpKind::Rename:
        if (sharded)
          problem("renaming the sharded dim `" + sharded->name +
                  "` is not supported yet");
        return;
      case OpKind::Loop:
        if (sharded)
          problem("a sequential loop over the sharded dim `" + sharded->name +
                  "` is not supported yet");
        return;
      case OpKind::ReduceCustom:
        if (sharded && InPlainCode(op, sharded, problem))
          FoldPartials(op, sharded, problem);
        return;
      case OpKind::Call:
        if (sharded)
          problem("internal: a call passes the sharded dim `" + sharded->name +
                  "` as a size parameter");
        return;
      default:
        return;
    }
  }

  // Whether `op`, which needs a collective over `dim`, runs once per
  // program step rather than once per element.
  template <typename Report>
  bool InPlainCode(const Op& op, const Dim* dim, Report& problem) {
    const Op* owner = ElementwiseOwner(op);
    if (owner == nullptr) return true;
    problem("a reduction over the sharded dim `" + dim->name +
            "` inside a per-element computation is not supported yet: "
            "compute it once, outside the comprehension or lifted call");
    return false;
  }

  Value* Collective(OpKind kind, ir::ReduceKind reduce, Value* x) {
    Op* op = builder_.Create(kind, {x}, {x->type});
    op->reduce = reduce;
    return op->result();
  }

  // Inserts what `complete` builds from `op`'s result right after `op`
  // and makes every other use of the result use what it returns.
  template <typename Build>
  void Complete(Op& op, Build complete) {
    Value* local = op.results[0];
    Value* whole = nullptr;
    builder_.SetLoc(op.loc);
    std::vector<Op*> added;
    ir::Block& block = *op.parent;
    size_t index = transforms::IndexOf(op) + 1;
    size_t count = transforms::InsertAt(builder_, block, index,
                                        [&] { whole = complete(local); });
    for (size_t i = 0; i < count; ++i)
      added.push_back(block.ops[index + i].get());
    transforms::ReplaceAllUses(function_, local, whole);
    auto restore = [&](Op& new_op) {
      for (Value*& operand : new_op.operands)
        if (operand == whole) operand = local;
    };
    for (Op* new_op : added) {
      restore(*new_op);
      for (auto& region : new_op->regions)
        transforms::WalkOps(*region, restore);
    }
  }

  ir::Module& module_;
  ir::Function& function_;
  ir::Builder builder_;
  std::vector<Op*> replaced_;  // argmax/argmin ops, erased after Run
};

}  // namespace

std::vector<Problem> Distribute(ir::Module& module) {
  std::vector<Problem> problems;
  if (!module.IsSharded()) return problems;
  // A callee would see the sharded dim as a size parameter, and a map's
  // body as a scalar: both hide the ops that cross blocks.
  opt::InlineCalls(module);
  batch::Demap(module);
  for (const auto& function : module.functions) {
    if (function->body) Distributor(module, *function).Run(problems);
  }
  for (const auto& dim : module.dims)
    if (dim->sharded && dim->constant) {
      dim->global_constant = dim->constant;
      dim->constant.reset();
    }
  return problems;
}

}  // namespace delta::distribute
