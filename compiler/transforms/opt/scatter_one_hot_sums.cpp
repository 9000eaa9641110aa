// Sums of one-hot-masked terms written as scatters (scatter_one_hot_sums.h).
#include "compiler/transforms/opt/scatter_one_hot_sums.h"

#include <llvm/ADT/SmallPtrSet.h>

#include <optional>
#include <vector>

#include "compiler/transforms/rewrite.h"

namespace delta::opt {
namespace {

using ir::Op;
using ir::OpKind;
using ir::Value;

// Note [Scattering one-hot sums]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The gradient of min over k sends each row's adjoint to its arg-minimum
// i[n]: a one-hot [n, k] that simplify reads as select(j == i[n], 1, 0)
// and fusion takes into the reduction that sums the adjoint over n. In
// k-means' Newton direction that is
//
//   reduce.sum [n] { ^(n, j, d): select(j == i[n], 1, 0) * 2 (c[j, d] - p[n,
//   d]) }
//
// (and the same with 2 for the Hessian's diagonal): n k d terms of which
// n d are not zero. Only the terms at j = i[n] count, so the sum is
// scatter_add(map [n, d] { 2 (c[i[n], d] - p[n, d]) }, i): each row's
// term computed once and added into the row i[n] of a zeroed [k, d].
//
// The rewrite takes a fused reduce.sum whose yielded term is
// select(j == i[..], w, 0) or select(j == i[..], a, 0) * w (either order
// of the product and of the comparison; a * w is the term, w if a is 1), where
// j is the region's index of a result dim K (not summed), i an index array into
// K defined outside the region, read at other indices of the region. The map
// runs over the region's dims but K, with the region's ops copied and j
// replaced by i[..]; the scatter adds its values at i over the summed dims. The
// select and the comparison are left dead in the map (the cleanups after remove
// them).
//
// The original adds 0 * w for the other points of K, which is NaN where w
// is inf or NaN; the scatter skips them. That is why the pass runs at -O3
// only, with the reassociating passes (docs/performance.md).

bool IsFloatConstant(const Value* value, double constant) {
  const Op* def = value->def;
  return def && def->kind == OpKind::Const && value->type.IsScalar() &&
         ir::IsFloat(value->type.elem) && def->float_value == constant;
}

bool IsArgOf(const Value* value, const ir::Block& body) {
  return !value->def && value->block == &body;
}

// A term masked by a one-hot: the term, the region's index j of the
// masked dim, and the read i[..] that it is compared with.
struct OneHotTerm {
  Value* term = nullptr;
  Value* factor = nullptr;  // the mask's kept value when it is not 1
  Value* arg = nullptr;
  const Op* index_read = nullptr;
};

// j and i[..] if `condition` is j == i[..] (either order) as described in
// the Note, with j the index of a dim not in `summed`.
std::optional<OneHotTerm> MatchMask(const Value* condition,
                                    const ir::Block& body,
                                    const ir::DimList& summed) {
  const Op* eq = condition->def;
  if (!eq || eq->kind != OpKind::Eq || eq->parent != &body) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    Value* arg = eq->operands[side];
    const Op* read = eq->operands[1 - side]->def;
    if (!IsArgOf(arg, body) || !read || read->kind != OpKind::Gather ||
        read->parent != &body || summed.Contains(arg->type.index_dim))
      continue;
    const Value* index = read->operands[0];
    bool defined_outside =
        index->def ? index->def->parent != &body : index->block != &body;
    if (index->type.elem != ir::ElemKind::Index ||
        index->type.index_dim != arg->type.index_dim || !defined_outside ||
        !read->results[0]->type.IsScalar())
      continue;
    bool at_other_args = true;
    for (size_t k = 1; k < read->operands.size(); ++k)
      at_other_args &=
          IsArgOf(read->operands[k], body) && read->operands[k] != arg;
    if (at_other_args) return OneHotTerm{nullptr, nullptr, arg, read};
  }
  return std::nullopt;
}

std::optional<OneHotTerm> MatchOneHotSum(const Op& op) {
  if (op.kind != OpKind::Reduce || op.reduce != ir::ReduceKind::Sum ||
      op.regions.size() != 1 || op.results.size() != 1 ||
      !ir::IsFloat(op.results[0]->type.elem))
    return std::nullopt;
  const ir::Block& body = *op.regions[0];
  const ir::DimList summed(llvm::ArrayRef(op.dims));
  const Op* term = body.terminator()->operands[0]->def;
  if (!term || term->parent != &body) return std::nullopt;
  std::optional<OneHotTerm> match;
  if (term->kind == OpKind::Select && IsFloatConstant(term->operands[2], 0)) {
    match = MatchMask(term->operands[0], body, summed);
    if (match) match->term = term->operands[1];
  } else if (term->kind == OpKind::Mul) {
    for (int side = 0; side < 2 && !match; ++side) {
      const Op* mask = term->operands[side]->def;
      if (!mask || mask->kind != OpKind::Select || mask->parent != &body ||
          !IsFloatConstant(mask->operands[2], 0))
        continue;
      match = MatchMask(mask->operands[0], body, summed);
      if (!match) continue;
      match->term = term->operands[1 - side];
      if (!IsFloatConstant(mask->operands[1], 1))
        match->factor = mask->operands[1];
    }
  }
  return match;
}

Value* EmitScatter(ir::Builder& b, const Op& sum, const OneHotTerm& match) {
  const ir::Block& body = *sum.regions[0];
  const ir::Type& type = sum.results[0]->type;
  const ir::Dim* masked = match.arg->type.index_dim;
  ir::DimList dims =
      type.dims.Union(ir::DimList(llvm::ArrayRef(sum.dims))).Minus({masked});
  Op* map = b.Create(OpKind::Map, {}, {type.WithDims(dims)});
  map->dims.assign(dims.begin(), dims.end());
  {
    ir::InsertionGuard guard(b);
    ir::Block* region = b.AddRegion(map, ir::IndexTypes(dims));
    b.SetInsertionBlock(region);
    transforms::CloneMap clone;
    for (Value* arg : body.args)
      for (Value* new_arg : region->args)
        if (new_arg->type.index_dim == arg->type.index_dim)
          clone.values[arg] = new_arg;
    Op* read = transforms::CloneOp(b, *match.index_read, clone);
    clone.values[match.arg] = read->results[0];
    for (const auto& op : body.ops)
      if (op.get() != match.index_read && op->kind != OpKind::Yield)
        transforms::CloneOp(b, *op, clone);
    Value* term = clone.Lookup(match.term);
    if (match.factor)
      term = b.Binary(OpKind::Mul, clone.Lookup(match.factor), term);
    b.Yield({term});
  }
  return b.ScatterAdd(map->results[0], {match.index_read->operands[0]}, type);
}

bool ScatterFunction(ir::Function& function) {
  std::vector<Op*> sums;
  llvm::SmallPtrSet<const Op*, 8> taken;
  transforms::WalkOps(*function.body, [&](Op& op) {
    if (!MatchOneHotSum(op)) return;
    // Not inside one already taken: the rewrites must not nest.
    for (const Op* outer = op.parent->parent; outer;
         outer = outer->parent->parent)
      if (taken.contains(outer)) return;
    taken.insert(&op);
    sums.push_back(&op);
  });
  return transforms::ReplaceEach(
      function, sums, [](ir::Builder& builder, Op& op) {
        return EmitScatter(builder, op, *MatchOneHotSum(op));
      });
}

}  // namespace

bool ScatterOneHotSums(ir::Module& module) {
  return transforms::ForEachFunction(module, ScatterFunction);
}

}  // namespace delta::opt
