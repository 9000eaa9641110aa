// Kernel bodies in LLVM IR for the NVPTX target: the CPU code generator's
// element code (regions, scalar math, index checks) inside GPU loops.
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/kernel_outliner.h"

namespace delta::cuda {

// Threads per block of every kernel (a contraction's 16 × 16 tile too).
inline constexpr int kBlockSize = 256;
inline constexpr int kWarpSize = 32;
inline constexpr int kTile = 16;

// A check that failed on the device, reported by the host as
// `file:line:col: error: message` (runtime/cuda.h, DeltaCudaCheck).
struct DeviceCheck {
  std::string file;
  unsigned line = 0;
  unsigned column = 0;
  std::string message;
  bool formatted = false;
};

// Kernel parameters, in order: the error slot (ptr), the result buffers
// (one per result; a Reduce kernel writes partial results when split),
// for Reduce the split count (i64), then `captured` (arrays as pointers,
// bools as i8). A Reduce kernel also gets a `NAME_combine` entry
// (slot, result, partials, split) for its second pass.
std::unique_ptr<llvm::Module> EmitKernels(const ir::Module& module,
                                          const KernelPlan& plan,
                                          llvm::LLVMContext& context,
                                          std::vector<DeviceCheck>& checks);

}  // namespace delta::cuda
