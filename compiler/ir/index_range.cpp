// Interval analysis of index arithmetic (index_range.h).
//
// Note [Index ranges]
// A shifted read, `if i == 0 { 1.0 } else { y[n: i - 1] }`, becomes after
// batching `to_index [n] select(i != 0, i - 1, 0)`, and its range check
// sits in the loop that reads y. A check is a branch out of the loop, so
// LLVM does not vectorize the loop, and an op with effects stays where it
// is (no hoisting or dead-code removal). The check cannot fail: i is an
// index of n, so i - 1 lies in [0, size(n) - 1) where i != 0. This
// analysis follows such values back through constants, conversions of
// indices, adding or subtracting a constant, and selects, each arm under
// the select's condition (comparisons of a value with a constant, `not`,
// `and`). A bound is a constant or size(d) plus a constant. Anything else
// is unknown, and the check stays.
#include "compiler/ir/index_range.h"

#include <llvm/ADT/DenseMap.h>

#include <algorithm>
#include <optional>
#include <utility>

namespace delta::ir {
namespace {

// size(dim) + offset, or the constant `offset` when dim is null.
struct Bound {
  const Dim* dim = nullptr;
  int64_t offset = 0;
};

struct Range {
  std::optional<int64_t> lo;  // a constant lower bound
  std::optional<Bound> hi;    // an upper bound, inclusive
};

std::optional<Bound> Shift(std::optional<Bound> bound, int64_t by) {
  if (!bound) return std::nullopt;
  return Bound{bound->dim, bound->offset + by};
}

// The larger of two upper bounds, or none. A bound in size(d) comes from
// an index of d, so where it holds size(d) >= 1, and a constant c is at
// most size(d) + c - 1.
std::optional<Bound> Max(std::optional<Bound> a, std::optional<Bound> b) {
  if (!a || !b) return std::nullopt;
  if (a->dim != b->dim && a->dim && b->dim) return std::nullopt;
  if (!a->dim && b->dim) std::swap(a, b);
  if (a->dim && !b->dim) b = Bound{a->dim, b->offset - 1};
  return a->offset >= b->offset ? a : b;
}

// The smaller one: either, when they do not compare.
std::optional<Bound> Min(std::optional<Bound> a, std::optional<Bound> b) {
  if (!a) return b;
  if (!b || a->dim != b->dim) return a;
  return a->offset <= b->offset ? a : b;
}

std::optional<int64_t> ConstantOf(const Value* value) {
  const Op* def = value->def;
  if (def && def->kind == OpKind::Const && IsInteger(value->type.elem))
    return def->int_value;
  return std::nullopt;
}

// What is known of values under the conditions of the selects on the way.
using Facts = llvm::DenseMap<const Value*, Range>;

constexpr int kMaxDepth = 32;

// The steps left to the query being answered: a select's arms are each
// analysed under its condition, so nested selects cost exponential time;
// past the budget, values are unknown.
constexpr int kStepBudget = 2000;
thread_local int steps_left = 0;

Range RangeOf(const Value* value, const Facts& facts, int depth);

// Whether no integer lies in `range` (as far as constants tell).
bool IsEmpty(const Range& range) {
  return range.lo && range.hi && !range.hi->dim && *range.lo > range.hi->offset;
}

// `facts` with what `cond` (or its negation) says of the values it
// compares with a constant; nullopt if that contradicts them (the arm of a
// select that is never taken).
std::optional<Facts> Assume(const Value* cond, bool holds, Facts facts,
                            int depth) {
  const Op* def = cond->def;
  if (!def || depth > kMaxDepth) return facts;
  if (def->kind == OpKind::Not)
    return Assume(def->operands[0], !holds, std::move(facts), depth + 1);
  if (def->kind == OpKind::And && holds) {
    std::optional<Facts> first =
        Assume(def->operands[0], true, std::move(facts), depth + 1);
    if (!first) return std::nullopt;
    return Assume(def->operands[1], true, std::move(*first), depth + 1);
  }
  if (def->operands.size() != 2) return facts;
  const Value* x = def->operands[0];
  std::optional<int64_t> c = ConstantOf(def->operands[1]);
  if (!c || (!IsInteger(x->type.elem) && x->type.elem != ElemKind::Index))
    return facts;
  OpKind kind = def->kind;
  if (!holds) {  // the negated comparison
    switch (kind) {
      case OpKind::Eq:
        kind = OpKind::Ne;
        break;
      case OpKind::Ne:
        kind = OpKind::Eq;
        break;
      case OpKind::Lt:
        kind = OpKind::Ge;
        break;
      case OpKind::Le:
        kind = OpKind::Gt;
        break;
      case OpKind::Gt:
        kind = OpKind::Le;
        break;
      case OpKind::Ge:
        kind = OpKind::Lt;
        break;
      default:
        return facts;
    }
  }
  Range range = RangeOf(x, facts, depth + 1);
  auto at_least = [&](int64_t lo) {
    range.lo = std::max(range.lo.value_or(lo), lo);
  };
  auto at_most = [&](int64_t hi) {
    range.hi = Min(range.hi, Bound{nullptr, hi});
  };
  switch (kind) {
    case OpKind::Eq:
      if (range.lo && *range.lo > *c) return std::nullopt;
      at_least(*c);
      at_most(*c);
      break;
    case OpKind::Ne:  // excludes an end of the range
      if (range.lo == c) range.lo = *c + 1;
      if (range.hi && !range.hi->dim && range.hi->offset == *c)
        range.hi = Bound{nullptr, *c - 1};
      break;
    case OpKind::Ge:
      at_least(*c);
      break;
    case OpKind::Gt:
      at_least(*c + 1);
      break;
    case OpKind::Le:
      at_most(*c);
      break;
    case OpKind::Lt:
      at_most(*c - 1);
      break;
    default:
      return facts;
  }
  if (IsEmpty(range)) return std::nullopt;
  facts[x] = range;
  return facts;
}

Range RangeOf(const Value* value, const Facts& facts, int depth) {
  if (auto it = facts.find(value); it != facts.end()) return it->second;
  if (--steps_left < 0) return {};
  const Op* def = value->def;
  if (value->type.elem == ElemKind::Index && value->type.index_dim &&
      !value->type.index_dim->sharded) {
    // An index of d lies in [0, size(d) - 1], and where it is a checked
    // position, in that position's range too.
    Range range{0, Bound{value->type.index_dim, -1}};
    if (def && def->kind == OpKind::ToIndex && depth <= kMaxDepth &&
        value->type.IsScalar()) {
      Range position = RangeOf(def->operands[0], facts, depth + 1);
      if (position.lo) range.lo = std::max<int64_t>(*position.lo, 0);
      range.hi = Min(position.hi, range.hi);
    }
    return range;
  }
  if (std::optional<int64_t> c = ConstantOf(value))
    return {c, Bound{nullptr, *c}};
  if (!def || depth > kMaxDepth || !IsInteger(value->type.elem) ||
      !value->type.IsScalar())
    return {};
  switch (def->kind) {
    case OpKind::Convert:
      if (!IsInteger(def->operands[0]->type.elem) &&
          def->operands[0]->type.elem != ElemKind::Index)
        return {};
      return RangeOf(def->operands[0], facts, depth + 1);
    case OpKind::Add:
    case OpKind::Sub: {
      std::optional<int64_t> c = ConstantOf(def->operands[1]);
      if (!c) return {};
      int64_t by = def->kind == OpKind::Add ? *c : -*c;
      Range range = RangeOf(def->operands[0], facts, depth + 1);
      if (range.lo) range.lo = *range.lo + by;
      range.hi = Shift(range.hi, by);
      return range;
    }
    case OpKind::Select: {
      const Value* cond = def->operands[0];
      std::optional<Facts> if_true = Assume(cond, true, facts, depth + 1);
      std::optional<Facts> if_false = Assume(cond, false, facts, depth + 1);
      if (!if_true && !if_false) return {};
      if (!if_false) return RangeOf(def->operands[1], *if_true, depth + 1);
      if (!if_true) return RangeOf(def->operands[2], *if_false, depth + 1);
      Range a = RangeOf(def->operands[1], *if_true, depth + 1);
      Range b = RangeOf(def->operands[2], *if_false, depth + 1);
      Range range;
      if (a.lo && b.lo) range.lo = std::min(*a.lo, *b.lo);
      range.hi = Max(a.hi, b.hi);
      return range;
    }
    default:
      return {};
  }
}

// `facts` that say that `index` (an index of a map's dim) is at least lo.
Facts FloorFacts(const IndexFloor& floor) {
  Facts facts;
  if (floor.index != nullptr)
    facts[floor.index] = {floor.lo, Bound{floor.index->type.index_dim, -1}};
  return facts;
}

}  // namespace

std::optional<bool> DecideCompare(const Op& compare, const IndexFloor& floor) {
  if (!compare.results[0]->type.IsScalar() || compare.operands.size() != 2)
    return std::nullopt;
  // The comparison holds, or fails, on every value the floor allows.
  steps_left = kStepBudget;
  Facts facts = FloorFacts(floor);
  if (!Assume(compare.results[0], true, facts, 0)) return false;
  if (!Assume(compare.results[0], false, facts, 0)) return true;
  return std::nullopt;
}

bool IsIndexInRange(const Value* k, const Dim* dim) {
  if (dim->sharded) return false;
  steps_left = kStepBudget;
  Range range = RangeOf(k, Facts(), 0);
  if (!range.lo || *range.lo < 0 || !range.hi) return false;
  if (range.hi->dim == dim) return range.hi->offset <= -1;
  // A constant bound under a constant size.
  return range.hi->dim == nullptr && dim->constant &&
         range.hi->offset < *dim->constant;
}

}  // namespace delta::ir
