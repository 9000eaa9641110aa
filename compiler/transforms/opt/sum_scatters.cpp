// Sums of one-hot scatters written as scatters (sum_scatters.h).
#include "compiler/transforms/opt/sum_scatters.h"

#include <optional>
#include <vector>

#include "compiler/transforms/rewrite.h"

namespace delta::opt {
namespace {

using ir::DimList;
using ir::Op;
using ir::OpKind;
using ir::Value;

// How the summed operand is made from one scatter_add: the scatter, then
// each step of the chain from it to the operand (a negation, a broadcast,
// a product with a factor, or a quotient of it by a divisor).
struct ScatterChain {
  const Op* scatter = nullptr;
  std::vector<const Op*> steps;  // from the scatter outwards
};

// The dims the scatter writes at its indices.
DimList IndexedDims(const Op& scatter) {
  DimList dims;
  for (size_t k = 1; k < scatter.operands.size(); ++k)
    dims.Insert(scatter.operands[k]->type.index_dim);
  return dims;
}

// The dims the scatter's indices iterate over.
DimList IndexArrayDims(const Op& scatter) {
  DimList dims;
  for (size_t k = 1; k < scatter.operands.size(); ++k)
    dims = dims.Union(scatter.operands[k]->type.dims);
  return dims;
}

// Follows `value` back to a scatter_add through at most `depth` steps.
std::optional<ScatterChain> MatchChain(const Value* value, int depth = 6) {
  const Op* def = value->def;
  if (!def) return std::nullopt;
  if (def->kind == OpKind::ScatterAdd) return ScatterChain{def, {}};
  if (depth == 0) return std::nullopt;
  std::optional<ScatterChain> chain;
  switch (def->kind) {
    case OpKind::Neg:
    case OpKind::Broadcast:
    case OpKind::Div:  // through the numerator only
      chain = MatchChain(def->operands[0], depth - 1);
      break;
    case OpKind::Mul:
      chain = MatchChain(def->operands[0], depth - 1);
      if (!chain) chain = MatchChain(def->operands[1], depth - 1);
      break;
    default:
      break;
  }
  if (chain) chain->steps.push_back(def);
  return chain;
}

// The operand of a chain step that is not on the chain (`from` is).
Value* OtherOperand(const Op& step, const Value* from) {
  return step.operands[0] == from ? step.operands[1] : step.operands[0];
}

// The sum's operand as a chain whose factors lack the scattered dims,
// summed over dims the indices iterate over, or nothing.
std::optional<ScatterChain> MatchSum(const Op& op) {
  if (op.kind != OpKind::Reduce || op.reduce != ir::ReduceKind::Sum ||
      !op.regions.empty() || op.operands.size() != 1)
    return std::nullopt;
  std::optional<ScatterChain> chain = MatchChain(op.operands[0]);
  if (!chain) return std::nullopt;
  const Op& scatter = *chain->scatter;
  const Value* values = scatter.operands[0];
  // Floats only: reverse mode makes these scatters (a gather's adjoint).
  if (!ir::IsFloat(values->type.elem)) return std::nullopt;
  DimList indexed = IndexedDims(scatter);
  DimList iterated = IndexArrayDims(scatter).Union(values->type.dims);
  const Value* on_chain = scatter.results[0];
  for (const Op* step : chain->steps) {
    if (step->kind == OpKind::Mul || step->kind == OpKind::Div) {
      const Value* factor = OtherOperand(*step, on_chain);
      if (factor == on_chain || factor->type.dims.Intersects(indexed))
        return std::nullopt;
      iterated = iterated.Union(factor->type.dims);
    }
    on_chain = step->results[0];
  }
  // Summing a dim that the values and indices lack (a broadcast) would
  // multiply by its size; summing an indexed dim is not a scatter.
  DimList summed(op.dims);
  if (summed.Intersects(indexed) || !iterated.ContainsAll(summed))
    return std::nullopt;
  return chain;
}

// scatter_add(v * w.., i..) into the sum's result: the chain's steps
// applied to the values instead of the scattered array; dims the indices
// do not iterate over are summed before the scatter.
Value* EmitScatter(ir::Builder& b, const Op& sum, const ScatterChain& chain) {
  const Op& scatter = *chain.scatter;
  Value* values = scatter.operands[0];
  const Value* on_chain = scatter.results[0];
  for (const Op* step : chain.steps) {
    if (step->kind == OpKind::Neg) {
      values = b.Unary(OpKind::Neg, values);
    } else if (step->kind != OpKind::Broadcast) {
      Value* factor = OtherOperand(*step, on_chain);
      values = b.Binary(step->kind, values, factor);
    }
    on_chain = step->results[0];
  }
  DimList before = DimList(sum.dims).Minus(IndexArrayDims(scatter));
  before = before.Intersect(values->type.dims);
  if (!before.empty()) values = b.Reduce(ir::ReduceKind::Sum, values, before);
  std::vector<Value*> indices(scatter.operands.begin() + 1,
                              scatter.operands.end());
  return b.ScatterAdd(values, indices, sum.results[0]->type);
}

bool SumFunction(ir::Function& function) {
  std::vector<Op*> sums;
  transforms::WalkOps(*function.body, [&](Op& op) {
    if (MatchSum(op)) sums.push_back(&op);
  });
  return transforms::ReplaceEach(
      function, sums, [](ir::Builder& builder, Op& op) {
        return EmitScatter(builder, op, *MatchSum(op));
      });
}

}  // namespace

bool SumScatters(ir::Module& module) {
  return transforms::ForEachFunction(module, SumFunction);
}

}  // namespace delta::opt
