// Which ops of a module become GPU kernels for --target=cuda, and what each
// kernel captures from its function (docs/gpu.md).
#pragma once

#include <llvm/ADT/DenseMap.h>

#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace delta::cuda {

enum class KernelKind {
  // One thread per result element (grid-stride): elementwise ops, select,
  // broadcast, iota, maps with scalar bodies.
  Tabulate,
  // sum/prod/max/min over dims: a block per result element (or several,
  // then a second pass) and a tree in shared memory.
  Reduce,
  // reduce.sum [k] { a[i,k] * b[k,j] }: shared-memory tiles.
  Contraction,
};

struct Kernel {
  const ir::Op* op = nullptr;
  const ir::Function* function = nullptr;  // the function that holds op
  KernelKind kind = KernelKind::Tabulate;
  std::string name;  // the PTX entry
  // Values of the enclosing function the kernel reads (arrays, scalars and
  // the sizes of the dims it uses), in parameter order.
  std::vector<const ir::Value*> captured;
  // The sharded dims it uses: after `captured`, each one's extent and
  // offset in this process (two i64 parameters; docs/gpu.md, Note [One GPU
  // per process]).
  std::vector<const ir::Dim*> sharded;
  // Contraction: result[i, j] = sum over k of a[i, k] * b[k, j] (any
  // layout of a and b).
  const ir::Value* a = nullptr;
  const ir::Value* b = nullptr;
  const ir::Dim* i = nullptr;
  const ir::Dim* j = nullptr;
  const ir::Dim* k = nullptr;
  // A Reduce that is a batch of such products over `batch` (the result's
  // outermost dims; a and b have all of them or none): the host tries
  // cuBLAS's strided-batched GEMM first (Note [Contractions through
  // cuBLAS]).
  std::vector<const ir::Dim*> batch;
};

struct KernelPlan {
  std::vector<Kernel> kernels;
  llvm::DenseMap<const ir::Op*, size_t> index;  // op -> its kernel
  const Kernel* Find(const ir::Op& op) const {
    auto it = index.find(&op);
    return it == index.end() ? nullptr : &kernels[it->second];
  }
};

// Picks the kernels of `module`: parallel ops in function bodies and in the
// bodies of loop/while/if (the sequential parts stay on the host). Ops whose
// code a kernel cannot hold (calls, prints, arrays built per element,
// scans) stay on the host. Transcendental math needs libdevice
// (`device_math`); without it, ops that use it stay on the host. Ops whose
// dims all have constant sizes and whose work (result elements times
// reduced elements) is below `min_work` stay on the host too, unless they
// read an array that a kernel made: a launch costs more than the CPU takes
// for them, but less than copying an array back (Note [Small ops on the
// host]).
KernelPlan OutlineKernels(const ir::Module& module, bool device_math,
                          int64_t min_work);

// The default `min_work` (--gpu-min-work).
constexpr int64_t kDefaultGpuMinWork = 16384;

// The values defined outside `op` that it (or its regions) reads, and the
// sizes of the dims it uses, without repeats.
std::vector<const ir::Value*> CapturedValues(const ir::Op& op);

}  // namespace delta::cuda
