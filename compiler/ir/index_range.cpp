// Interval analysis of index arithmetic (index_range.h).
//
// Note [Index ranges]
// A shifted read, `if i == 0 { 1.0 } else { y[n: i - 1] }`, becomes after
// batching `to_index [n] select(i != 0, i - 1, 0)`, and its range check
// sits in the loop that reads y. A check is a branch out of the loop, so
// LLVM does not vectorize the loop, and an op with effects stays where it
// is (no hoisting or dead-code removal). The check cannot fail: i is an
// index of n, so i - 1 lies in [0, size(n) - 1) where i != 0. This
// analysis follows such values back through constants, sizes, conversions
// of indices, adding or subtracting a constant, and selects, each arm
// under the select's condition (comparisons with a constant or a size,
// `not`, `and`; an arm that the condition contradicts is never taken). A
// bound is a constant or size(d) plus a constant; where a bound in size(d)
// holds, an index of d exists, so size(d) >= 1. Anything else is unknown,
// and the check stays.
#include "compiler/ir/index_range.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallPtrSet.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace delta::ir {
namespace {

// size(dim) + offset, or the constant `offset` when dim is null.
struct Bound {
  const Dim* dim = nullptr;
  int64_t offset = 0;

  Bound Plus(int64_t by) const { return {dim, offset + by}; }
  bool operator==(const Bound& other) const {
    return dim == other.dim && offset == other.offset;
  }
};

// Inclusive bounds; a missing one is unknown.
struct Range {
  std::optional<Bound> lo;
  std::optional<Bound> hi;
};

// The dims that an index of lives in the value being analysed: at that
// point size(d) >= 1 (an empty dim has no index). Cleared per query.
thread_local llvm::SmallPtrSet<const Dim*, 4> live_dims;

bool IsLive(const Dim* dim) {
  return dim != nullptr && live_dims.contains(dim);
}

// Whether a <= b wherever both hold.
bool KnownLe(const Bound& a, const Bound& b) {
  if (a.dim == b.dim) return a.offset <= b.offset;
  // c <= size(d) + o when c <= 1 + o, as size(d) >= 1.
  return a.dim == nullptr && IsLive(b.dim) && a.offset <= b.offset + 1;
}

// The union's bounds (the larger hi, the smaller lo), or unknown. A
// constant c against size(d) + o, size(d) >= 1: max(c, size(d) + o) <=
// size(d) + max(o, c - 1), and min(c, size(d) + o) >= min(c, 1 + o).
std::optional<Bound> Larger(std::optional<Bound> a, std::optional<Bound> b) {
  if (!a || !b) return std::nullopt;
  if (KnownLe(*a, *b)) return b;
  if (KnownLe(*b, *a)) return a;
  if (a->dim == nullptr) std::swap(a, b);
  if (b->dim == nullptr && IsLive(a->dim))
    return Bound{a->dim, std::max(a->offset, b->offset - 1)};
  return std::nullopt;
}
std::optional<Bound> Smaller(std::optional<Bound> a, std::optional<Bound> b) {
  if (!a || !b) return std::nullopt;
  if (KnownLe(*a, *b)) return a;
  if (KnownLe(*b, *a)) return b;
  if (a->dim == nullptr) std::swap(a, b);
  if (b->dim == nullptr && IsLive(a->dim))
    return Bound{nullptr, std::min(b->offset, a->offset + 1)};
  return std::nullopt;
}

// The intersection's bounds: the tighter one, or either.
std::optional<Bound> Tighter(std::optional<Bound> a, std::optional<Bound> b,
                             bool upper) {
  if (!a) return b;
  if (!b) return a;
  // When they do not compare, the one in a size: the other end of an
  // index's range is one too, so that is the one that can empty it.
  std::optional<Bound> either = a->dim ? a : b;
  if (upper) return KnownLe(*a, *b) ? a : KnownLe(*b, *a) ? b : either;
  return KnownLe(*a, *b) ? b : KnownLe(*b, *a) ? a : either;
}

std::optional<Bound> Shift(std::optional<Bound> bound, int64_t by) {
  if (!bound) return std::nullopt;
  return bound->Plus(by);
}

bool IsEmpty(const Range& range) {
  return range.lo && range.hi && KnownLe(range.hi->Plus(1), *range.lo);
}

std::optional<int64_t> ConstantOf(const Value* value) {
  const Op* def = value->def;
  if (def && def->kind == OpKind::Const && IsInteger(value->type.elem))
    return def->int_value;
  return std::nullopt;
}

// A constant, a size or either plus or minus a constant, as a bound.
std::optional<Bound> BoundOf(const Value* value, int depth = 0) {
  if (std::optional<int64_t> c = ConstantOf(value)) return Bound{nullptr, *c};
  const Op* def = value->def;
  if (!def || depth > 4) return std::nullopt;
  if (def->kind == OpKind::Size && !def->dims[0]->sharded)
    return Bound{def->dims[0], 0};
  if (def->kind == OpKind::Add || def->kind == OpKind::Sub) {
    std::optional<int64_t> c = ConstantOf(def->operands[1]);
    std::optional<Bound> base = BoundOf(def->operands[0], depth + 1);
    if (c && base) return base->Plus(def->kind == OpKind::Add ? *c : -*c);
  }
  return std::nullopt;
}

bool IsIntegral(const Value* value) {
  return value->type.IsScalar() &&
         (IsInteger(value->type.elem) || value->type.elem == ElemKind::Index);
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

// The comparison `kind` with its operands swapped (b < a for a > b).
OpKind Swapped(OpKind kind) {
  switch (kind) {
    case OpKind::Lt:
      return OpKind::Gt;
    case OpKind::Le:
      return OpKind::Ge;
    case OpKind::Gt:
      return OpKind::Lt;
    case OpKind::Ge:
      return OpKind::Le;
    default:
      return kind;
  }
}

std::optional<OpKind> Negated(OpKind kind) {
  switch (kind) {
    case OpKind::Eq:
      return OpKind::Ne;
    case OpKind::Ne:
      return OpKind::Eq;
    case OpKind::Lt:
      return OpKind::Ge;
    case OpKind::Le:
      return OpKind::Gt;
    case OpKind::Gt:
      return OpKind::Le;
    case OpKind::Ge:
      return OpKind::Lt;
    default:
      return std::nullopt;
  }
}

// `facts` with what `cond` (or its negation) says of the values it
// compares with a bound; nullopt if that contradicts them (the arm of a
// select that is never taken).
std::optional<Facts> Assume(const Value* cond, bool holds, Facts facts,
                            int depth) {
  const Op* def = cond->def;
  if (!def || depth > kMaxDepth) return facts;
  if (def->kind == OpKind::Not)
    return Assume(def->operands[0], !holds, std::move(facts), depth + 1);
  // a and b, or not (a or b): both; otherwise one of two, which is known
  // only to be impossible when both are.
  bool conjunction = (def->kind == OpKind::And && holds) ||
                     (def->kind == OpKind::Or && !holds);
  if (conjunction) {
    std::optional<Facts> first =
        Assume(def->operands[0], holds, std::move(facts), depth + 1);
    if (!first) return std::nullopt;
    return Assume(def->operands[1], holds, std::move(*first), depth + 1);
  }
  if (def->kind == OpKind::And || def->kind == OpKind::Or) {
    if (!Assume(def->operands[0], holds, facts, depth + 1) &&
        !Assume(def->operands[1], holds, facts, depth + 1))
      return std::nullopt;
    return facts;
  }
  if (!HasFlag(def->kind, kCompare) || def->operands.size() != 2) return facts;
  const Value* x = def->operands[0];
  std::optional<Bound> bound = BoundOf(def->operands[1]);
  OpKind kind = def->kind;
  if (!bound || !IsIntegral(x)) {  // perhaps `bound op x`
    x = def->operands[1];
    bound = BoundOf(def->operands[0]);
    kind = Swapped(kind);
    if (!bound || !IsIntegral(x)) return facts;
  }
  if (!holds) {
    std::optional<OpKind> negated = Negated(kind);
    if (!negated) return facts;
    kind = *negated;
  }
  Range range = RangeOf(x, facts, depth + 1);
  switch (kind) {
    case OpKind::Eq:
      range.lo = Tighter(range.lo, bound, false);
      range.hi = Tighter(range.hi, bound, true);
      if (range.lo && !KnownLe(*range.lo, *bound) &&
          KnownLe(bound->Plus(1), *range.lo))
        return std::nullopt;
      if (range.hi && KnownLe(range.hi->Plus(1), *bound)) return std::nullopt;
      break;
    case OpKind::Ne:  // excludes an end of the range
      if (range.lo && *range.lo == *bound) range.lo = bound->Plus(1);
      if (range.hi && *range.hi == *bound) range.hi = bound->Plus(-1);
      break;
    case OpKind::Ge:
      range.lo = Tighter(range.lo, bound, false);
      break;
    case OpKind::Gt:
      range.lo = Tighter(range.lo, bound->Plus(1), false);
      break;
    case OpKind::Le:
      range.hi = Tighter(range.hi, bound, true);
      break;
    case OpKind::Lt:
      range.hi = Tighter(range.hi, bound->Plus(-1), true);
      break;
    default:
      return facts;
  }
  if (IsEmpty(range)) return std::nullopt;
  facts[x] = range;
  return facts;
}

Range ComputeRange(const Value* value, const Facts& facts, int depth);

// A fingerprint of `facts`, independent of their order.
uint64_t Fingerprint(const Facts& facts) {
  uint64_t print = facts.size();
  auto mix = [](uint64_t h, uint64_t v) {
    return (h ^ v) * 0x9E3779B97F4A7C15ull;
  };
  auto bound = [&](const std::optional<Bound>& b) {
    return b ? mix(reinterpret_cast<uintptr_t>(b->dim),
                   static_cast<uint64_t>(b->offset))
             : 1;
  };
  for (const auto& [value, range] : facts)
    print += mix(mix(reinterpret_cast<uintptr_t>(value), bound(range.lo)),
                 bound(range.hi));
  return print;
}

bool SameBound(const std::optional<Bound>& a, const std::optional<Bound>& b) {
  return a.has_value() == b.has_value() && (!a || *a == *b);
}

bool SameFacts(const Facts& a, const Facts& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [value, range] : a) {
    auto it = b.find(value);
    if (it == b.end() || !SameBound(range.lo, it->second.lo) ||
        !SameBound(range.hi, it->second.hi))
      return false;
  }
  return true;
}

// The ranges found so far in this query, by value and fingerprint of the
// facts: the two arms of a select and its condition meet the same values
// under the same facts, which would otherwise cost exponential time.
struct Memo {
  Facts facts;
  Range range;
};
thread_local std::map<std::pair<const Value*, uint64_t>, std::vector<Memo>>
    memo;

Range RangeOf(const Value* value, const Facts& facts, int depth) {
  if (auto it = facts.find(value); it != facts.end()) return it->second;
  const std::pair<const Value*, uint64_t> key{value, Fingerprint(facts)};
  for (const Memo& entry : memo[key])
    if (SameFacts(entry.facts, facts)) return entry.range;
  Range range = ComputeRange(value, facts, depth);
  memo[key].push_back({facts, range});  // the recursion may have grown it
  return range;
}

Range ComputeRange(const Value* value, const Facts& facts, int depth) {
  if (--steps_left < 0 || depth > kMaxDepth) return {};
  const Op* def = value->def;
  if (value->type.elem == ElemKind::Index && value->type.index_dim &&
      !value->type.index_dim->sharded) {
    // An index of d lies in [0, size(d) - 1], and where it is a checked
    // position, in that position's range too.
    live_dims.insert(value->type.index_dim);
    Range range{Bound{nullptr, 0}, Bound{value->type.index_dim, -1}};
    if (def && def->kind == OpKind::ToIndex && value->type.IsScalar()) {
      Range position = RangeOf(def->operands[0], facts, depth + 1);
      range.lo = Tighter(range.lo, position.lo, false);
      range.hi = Tighter(range.hi, position.hi, true);
    }
    return range;
  }
  if (!IsIntegral(value)) return {};
  if (std::optional<Bound> bound = BoundOf(value)) return {bound, bound};
  if (!def) return {};
  switch (def->kind) {
    case OpKind::Convert:
      if (!IsIntegral(def->operands[0])) return {};
      return RangeOf(def->operands[0], facts, depth + 1);
    case OpKind::Add:
    case OpKind::Sub: {
      std::optional<int64_t> c = ConstantOf(def->operands[1]);
      if (!c) return {};
      int64_t by = def->kind == OpKind::Add ? *c : -*c;
      Range range = RangeOf(def->operands[0], facts, depth + 1);
      return {Shift(range.lo, by), Shift(range.hi, by)};
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
      return {Smaller(a.lo, b.lo), Larger(a.hi, b.hi)};
    }
    default:
      return {};
  }
}

}  // namespace

std::optional<bool> DecideCompare(const Op& compare, const IndexBounds& at) {
  if (!HasFlag(compare.kind, kCompare) ||
      !compare.results[0]->type.IsScalar() ||
      (at.index != nullptr && at.index->type.index_dim->sharded))
    return std::nullopt;
  steps_left = kStepBudget;
  live_dims.clear();
  memo.clear();
  Facts facts;
  if (at.index != nullptr) live_dims.insert(at.index->type.index_dim);
  if (at.index != nullptr)
    facts[at.index] = {Bound{nullptr, at.lo},
                       Bound{at.index->type.index_dim, -1 - at.from_end}};
  // The comparison holds, or fails, on every value the bounds allow.
  if (!Assume(compare.results[0], true, facts, 0)) return false;
  if (!Assume(compare.results[0], false, facts, 0)) return true;
  return std::nullopt;
}

bool IsIndexInRange(const Value* k, const Dim* dim) {
  if (dim->sharded || !IsIntegral(k)) return false;
  steps_left = kStepBudget;
  live_dims.clear();
  memo.clear();
  Range range = RangeOf(k, Facts(), 0);
  return range.lo && range.hi && KnownLe(Bound{nullptr, 0}, *range.lo) &&
         KnownLe(*range.hi, Bound{dim, -1});
}

}  // namespace delta::ir
