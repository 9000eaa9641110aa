// `dlc test`'s gradient checks of compiled code: the derivative evaluations
// that the interpreter's checks recorded, run again as native code.
#pragma once

#include <llvm/Support/Error.h>

#include <vector>

#include "compiler/driver/gradcheck.h"
#include "compiler/ir/ir.h"

namespace delta::driver {

// Replaces the results of every derivative call recorded in `checks` by
// what compiled code computes for the same inputs (optimized at
// `opt_level`, as `dlc run` compiles), in a child process. Fails with the
// child's message when compiling or running fails. See Note [Compiled
// gradient checks].
llvm::Error RecomputeDerivativesCompiled(ir::Module& module,
                                         std::vector<GradcheckCalls>& checks,
                                         int opt_level);

}  // namespace delta::driver
