// The textual form of the IR (`dlc build --emit=ir`, FileCheck tests).
#pragma once

#include <llvm/Support/raw_ostream.h>

#include "compiler/ir/ir.h"

namespace delta::ir {

void PrintModule(const Module& module, llvm::raw_ostream& out);
void PrintFunction(const Function& function, llvm::raw_ostream& out);

}  // namespace delta::ir
