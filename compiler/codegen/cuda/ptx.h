// PTX text from a kernel module through LLVM's NVPTX target, with the
// device math of libdevice linked in when the CUDA toolkit has it.
#pragma once

#include <llvm/IR/Module.h>

#include <string>

namespace delta::cuda {

// The path of libdevice (libdevice.10.bc): $DELTA_LIBDEVICE, else the CUDA
// toolkit's ($CUDA_HOME, /usr/local/cuda); empty if there is none.
std::string FindLibdevice();

// Whether `arch` is a GPU architecture the backend emits for (sm_80, sm_90,
// …: sm_XY with XY >= 60).
bool IsSupportedArch(const std::string& arch);

// Links libdevice into `module` (only what it calls), optimizes it at
// -O`opt_level` (at least 1: libdevice needs NVVMReflect) for `arch`, and
// writes PTX into `ptx`. False with `error` set on failure.
bool EmitPtx(llvm::Module& module, const std::string& arch, int opt_level,
             std::string& ptx, std::string& error);

}  // namespace delta::cuda
