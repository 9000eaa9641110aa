// Cycles in a module's call graph: the language has no recursion, but a
// @vjp rule that differentiates the function it serves calls itself once
// AD has built the derivative functions.
#pragma once

#include <vector>

#include "compiler/ir/ir.h"

namespace delta::ir {

// The call ops along one cycle of calls (each op's callee holds the next
// op), starting with a call in the function the search met first; empty
// when calls never cycle. Iterative: call chains may be long.
std::vector<const Op*> FindCallCycle(const Module& module);

}  // namespace delta::ir
