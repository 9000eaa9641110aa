// Which integers an index computation can take: enough to show that a
// `to_index` cannot fail, so that it needs no run-time check.
#pragma once

#include <optional>

#include "compiler/ir/ir.h"

namespace delta::ir {

// Whether the integer `k` lies in [0, size(dim)) on every path that uses
// it: `i - 1` under `if i >= 1`, `select(i != 0, i - 1, 0)` (the guarded
// lane of a batched `if`, Note [Guarded lanes]), a conversion of an index
// of `dim`. See Note [Index ranges] in the .cpp.
bool IsIndexInRange(const Value* k, const Dim* dim);

// A map's index argument known to lie in [lo, size(d) - 1 - from_end] (a
// loop that covers part of its dim).
struct IndexBounds {
  const Value* index = nullptr;
  int64_t lo = 0;
  int64_t from_end = 0;
};

// Whether the integer comparison `compare` (eq, ne, lt, le, gt, ge of a
// value and a constant or a size) holds, or fails, wherever `at` does;
// nullopt if that depends. Note [Boundary peeling] in codegen's
// map_op.cpp.
std::optional<bool> DecideCompare(const Op& compare, const IndexBounds& at);

}  // namespace delta::ir
