// Sums moved into the factor of a product that has the summed dims.
#include "compiler/transforms/opt/distribute_sums.h"

#include <llvm/ADT/DenseSet.h>

#include <vector>

#include "compiler/transforms/opt/eliminate_dead_code.h"
#include "compiler/transforms/rewrite.h"

namespace delta::opt {
namespace {

using ir::DimList;
using ir::Op;
using ir::OpKind;
using ir::Value;

// Note [Distributing sums]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Reverse mode sums an adjoint over the dims that the forward pass
// broadcast. In GMM, y = sum(factor * rename(x - mu, d, e), e) is lifted
// over the points n; the adjoint of mu is then
//
//   -sum over n of rename(sum over d of (dy[n, c, d] * factor[c, d, e]))
//
// a product of 1000 x 64 x 64 per component at d = 64, summed over n
// afterwards. factor has no n, so the sum over n can be taken of dy first:
// -rename(sum over d of ((sum over n of dy) * factor)), a vector sum and a
// matrix-vector product. The gradient does one matrix product fewer (of
// three).
//
// The rewrite starts at a reduce.sum [R] (x) and follows x while x has no
// other user and is made in the same block (so no work moves into a loop):
//   neg y                  the sum of y, negated (exact);
//   rename [a -> b] y      if b is summed, the sum of y over a instead (when
//                          a and b are known to have the same size: the
//                          rename's size check would be lost otherwise);
//                          else the rename of the sum of y;
//   reduce.sum [D] y       the sum of y over R and D;
//   y * z                  the law itself: with Ry the dims of R that y has
//                          and z has not (Rz likewise), the sum over the
//                          rest of R of sum(y, Ry) * sum(z, Rz).
// A factor that is a broadcast is looked through when its source, with the
// other factor, still has every dim of the product.
//
// Every step computes the same sum in another order, so the result may
// differ in the last bits; that is what -O3 allows (docs/performance.md).
// The chain it took in is erased, and broadcasts left unused at the end.

bool IsSumOfNumbers(const Op& op) {
  return op.kind == OpKind::Reduce && op.reduce == ir::ReduceKind::Sum &&
         op.regions.empty() && op.operands.size() == 1 &&
         (ir::IsFloat(op.results[0]->type.elem) ||
          ir::IsInteger(op.results[0]->type.elem));
}

bool HaveSameSize(const ir::Dim* a, const ir::Dim* b) {
  if (a->constant && b->constant) return *a->constant == *b->constant;
  return a->size && a->size == b->size;
}

class Distributor {
 public:
  explicit Distributor(ir::Function& function)
      : function_(function),
        users_(transforms::CountUsers(function)),
        builder_(&function) {}

  bool Run() {
    std::vector<Op*> sums;
    transforms::WalkOps(*function_.body, [&](Op& op) {
      if (IsSumOfNumbers(op)) sums.push_back(&op);
    });
    // Outer sums first, so that a nested sum is taken in whole.
    bool changed = false;
    for (auto it = sums.rbegin(); it != sums.rend(); ++it) {
      Op* sum = *it;
      if (absorbed_.contains(sum)) continue;
      followed_.clear();
      Value* replacement = nullptr;
      builder_.SetLoc(sum->loc);
      transforms::InsertAt(
          builder_, *sum->parent, transforms::IndexOf(*sum), [&] {
            replacement =
                Distribute(sum->operands[0], DimList(llvm::ArrayRef(sum->dims)),
                           *sum->parent);
          });
      if (!replacement) continue;
      // The old chain is unused now; erased here because dead-code
      // elimination keeps renames (they check sizes), even those whose
      // sizes are known to agree.
      transforms::ReplaceAllUses(function_, sum->results[0], replacement);
      transforms::EraseOp(*sum);
      for (auto op = followed_.rbegin(); op != followed_.rend(); ++op) {
        absorbed_.insert(*op);
        transforms::EraseOp(**op);
      }
      changed = true;
    }
    return changed;
  }

 private:
  // Whether the sum may look into x: its only user is the op being
  // rewritten, in `block`. Counts are from before the pass, so values the
  // pass made (count 0) are not looked into.
  bool MayFollow(const Value* x, const ir::Block& block) const {
    auto it = users_.find(x);
    return x->def && x->def->parent == &block && it != users_.end() &&
           it->second == 1;
  }

  // The sum of x over `dims`, distributed as far as it goes.
  Value* Sum(Value* x, const DimList& dims, const ir::Block& block) {
    if (dims.empty()) return x;
    if (Value* distributed = Distribute(x, dims, block)) return distributed;
    return builder_.Reduce(ir::ReduceKind::Sum, x, dims);
  }

  // The sum of x over `dims` rewritten by the rules of the Note, or null
  // when the chain from x does not end in a product that the law applies
  // to (then nothing is built).
  Value* Distribute(Value* x, const DimList& dims, const ir::Block& block) {
    if (!MayFollow(x, block)) return nullptr;
    Op& def = *x->def;
    Value* inner = nullptr;
    switch (def.kind) {
      case OpKind::Neg:
        if ((inner = Distribute(def.operands[0], dims, block)))
          inner = builder_.Unary(OpKind::Neg, inner);
        break;
      case OpKind::Rename: {
        const ir::Dim* from = def.dims[0];
        const ir::Dim* to = def.dims[1];
        if (!dims.Contains(to)) {
          if ((inner = Distribute(def.operands[0], dims, block)))
            inner = builder_.Rename(inner, from, to);
        } else if (HaveSameSize(from, to)) {
          DimList renamed = dims.Minus({to});
          renamed.Insert(from);
          inner = Distribute(def.operands[0], renamed, block);
        }
        break;
      }
      case OpKind::Reduce:
        if (IsSumOfNumbers(def))
          inner =
              Distribute(def.operands[0],
                         dims.Union(DimList(llvm::ArrayRef(def.dims))), block);
        break;
      case OpKind::Mul:
        inner = DistributeOverProduct(def, dims, block);
        break;
      default:
        break;
    }
    if (inner) followed_.push_back(&def);
    return inner;
  }

  Value* DistributeOverProduct(const Op& product, const DimList& dims,
                               const ir::Block& block) {
    Value* left = product.operands[0];
    Value* right = product.operands[1];
    const DimList& all = product.results[0]->type.dims;
    auto source = [&](Value* factor, const Value* other) {
      const Op* def = factor->def;
      if (!def || def->kind != OpKind::Broadcast) return factor;
      Value* inner = def->operands[0];
      return inner->type.dims.Union(other->type.dims) == all ? inner : factor;
    };
    left = source(left, right);
    right = source(right, left);
    DimList left_only = dims.Minus(right->type.dims);
    DimList right_only = dims.Minus(left->type.dims);
    if (left_only.empty() && right_only.empty()) return nullptr;
    // A broadcast's source is not followed: its user is the broadcast.
    auto factor_sum = [&](Value* factor, Value* operand, const DimList& over) {
      if (factor == operand) return Sum(factor, over, block);
      return over.empty() ? factor
                          : builder_.Reduce(ir::ReduceKind::Sum, factor, over);
    };
    Value* left_sum = factor_sum(left, product.operands[0], left_only);
    Value* right_sum = factor_sum(right, product.operands[1], right_only);
    Value* summed = builder_.Binary(OpKind::Mul, left_sum, right_sum);
    DimList rest = dims.Minus(left_only).Minus(right_only);
    return rest.empty() ? summed
                        : builder_.Reduce(ir::ReduceKind::Sum, summed, rest);
  }

  ir::Function& function_;
  transforms::UserCounts users_;
  ir::Builder builder_;
  // The ops that rewrites took in (erased; compared, never read), and
  // those of the rewrite being tried, innermost first.
  llvm::DenseSet<const Op*> absorbed_;
  std::vector<Op*> followed_;
};

}  // namespace

bool DistributeSums(ir::Module& module) {
  bool changed = false;
  for (auto& function : module.functions)
    changed |= Distributor(*function).Run();
  if (changed) EliminateDeadCode(module);
  return changed;
}

}  // namespace delta::opt
