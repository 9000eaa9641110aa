// The distribute pass (distribute.h, docs/internals/distribute.md).
//
// Each process runs the same IR on its block of the sharded dim: every op
// that works point by point over that dim (elementwise ops, broadcasts,
// gathers by its own indices, maps) needs nothing else. What crosses
// blocks is completed here with the collectives of ops.def, so that code
// generators and the interpreter only implement those three ops and the
// block's extent.
#include "compiler/transforms/distribute/distribute.h"

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
  explicit Distributor(ir::Function& function)
      : function_(function), builder_(&function) {}

  void Run(std::vector<Problem>& problems) {
    std::vector<Op*> ops;
    transforms::WalkOps(*function_.body, [&](Op& op) { ops.push_back(&op); });
    for (Op* op : ops) Rewrite(*op, problems);
  }

 private:
  void Rewrite(Op& op, std::vector<Problem>& problems) {
    auto problem = [&](std::string message) {
      problems.push_back({op.loc, std::move(message)});
    };
    const Dim* sharded = FirstSharded(op.dims);
    switch (op.kind) {
      case OpKind::Reduce:
        if (!sharded) return;
        if (op.reduce == ir::ReduceKind::Argmax ||
            op.reduce == ir::ReduceKind::Argmin) {
          problem("argmax and argmin over the sharded dim `" + sharded->name +
                  "` are not supported yet: the position they find is in "
                  "another process's block");
          return;
        }
        if (!InPlainCode(op, sharded, problem)) return;
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
          Op* offset_op =
              builder_.Create(OpKind::ShardOffset, {},
                              {ir::Type{ir::ElemKind::I64, nullptr, {}}});
          offset_op->dims = {dim};
          Value* offset =
              builder_.Convert(offset_op->result(), local->type.elem);
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
        if (sharded)
          problem("reduce with a function over the sharded dim `" +
                  sharded->name + "` is not supported yet");
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
    for (Op* new_op : added)
      for (Value*& operand : new_op->operands)
        if (operand == whole) operand = local;
  }

  ir::Function& function_;
  ir::Builder builder_;
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
    if (function->body) Distributor(*function).Run(problems);
  }
  for (const auto& dim : module.dims)
    if (dim->sharded && dim->constant) {
      dim->global_constant = dim->constant;
      dim->constant.reset();
    }
  return problems;
}

}  // namespace delta::distribute
