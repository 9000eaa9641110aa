// The pass manager: the registry generated from passes.def, the pipeline of
// each optimization level, and the debugging aids around it (printing the
// IR after a pass, timing passes, verifying after each).
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace delta::transforms {

struct PassInfo {
  llvm::StringRef name;
  llvm::StringRef cli_name;
  llvm::StringRef description;
  // Returns whether the module changed.
  bool (*run)(ir::Module& module);
};

// Every pass of passes.def, in its order.
llvm::ArrayRef<PassInfo> AllPasses();
// The pass called `cli_name` on the command line, or null.
const PassInfo* FindPass(llvm::StringRef cli_name);
// The passes that -O`opt_level` runs, in order.
std::vector<const PassInfo*> PipelineFor(int opt_level);

struct PipelineOptions {
  int opt_level = 2;
  // Command-line names of passes after which the IR is printed; "all" for
  // every pass.
  std::vector<std::string> print_after;
  bool time_passes = false;
#ifdef NDEBUG
  bool verify_each = false;
#else
  bool verify_each = true;
#endif
};

// Runs the passes of `options.opt_level` on `module`. IR printed after a
// pass goes to `out`; timings and verifier failures go to `err`. Returns
// false when the verifier rejected the IR after some pass (a compiler bug,
// reported with the pass's name).
bool RunPipeline(ir::Module& module, const PipelineOptions& options,
                 llvm::raw_ostream& out = llvm::errs(),
                 llvm::raw_ostream& err = llvm::errs());

// Writes docs/passes.md from passes.def (a test keeps the file fresh).
void WritePassesDoc(llvm::raw_ostream& out);

}  // namespace delta::transforms
