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

// A map's index argument known to be at least `lo` (a loop that starts
// there).
struct IndexFloor {
  const Value* index = nullptr;
  int64_t lo = 0;
};

// Whether the integer comparison `compare` (eq, ne, lt, le, gt, ge of a
// value and a constant) holds, or fails, wherever `floor` does; nullopt if
// that depends. Note [Boundary peeling] in codegen's map_op.cpp.
std::optional<bool> DecideCompare(const Op& compare, const IndexFloor& floor);

}  // namespace delta::ir
