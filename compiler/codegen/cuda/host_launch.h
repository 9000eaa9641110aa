// --target=cuda: compiles a module's kernels to PTX and supplies the host
// code's share (HostHooks): kernel launches, and arrays moved between host
// and device only when the other side reads them.
#pragma once

#include <memory>
#include <string>

#include "compiler/codegen/cuda/kernel_outliner.h"
#include "compiler/codegen/llvm/emitter.h"
#include "compiler/ir/ir.h"

namespace delta::cuda {

struct CudaOptions {
  std::string gpu_arch = "sm_90";
  int opt_level = 2;
  // Ops known to do less work stay on the host (OutlineKernels).
  int64_t min_work = kDefaultGpuMinWork;
};

// The compiled kernels and the host code's hooks (host_launch.cpp).
class CudaCompilation : public codegen::HostHooks {
 public:
  virtual const std::string& ptx() const = 0;
};

// Outlines and compiles the kernels of `module` (which must outlive the
// result). Null with `error` set on failure.
std::unique_ptr<CudaCompilation> CompileKernels(const ir::Module& module,
                                                const CudaOptions& options,
                                                std::string& error);

// The PTX of a compilation (every kernel of the module).
const std::string& Ptx(const CudaCompilation& compilation);
// The hooks to pass as CodegenOptions::hooks so that EmitLLVM and RunMain
// write host code that launches the kernels.
codegen::HostHooks& Hooks(CudaCompilation& compilation);

}  // namespace delta::cuda
