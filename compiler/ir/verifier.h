// Checks the invariants of the IR; the pass manager runs it after every pass
// in debug builds and tests, so a broken pass is caught where it breaks.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace delta::ir {

// Returns the violated invariants, empty if the module is well formed.
std::vector<std::string> Verify(const Module& module);

}  // namespace delta::ir
