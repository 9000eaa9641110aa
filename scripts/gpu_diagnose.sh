#!/usr/bin/env bash
# After scripts/gpu_suite.sh, on the same GPU machine: the runtime's view of
# the benchmarks that miss their targets (docs/gpu.md, "Benchmarks"): which
# cuBLAS libraries there, the kernel profile of the large MLP step and what its
# last call copies between host and device, and the profile and a timed
# trace of library calls of the chain and its sum. Writes diagnose.txt into
# $OUT (or ./gpu-out).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-out}
delta=/tmp/delta
work=$delta/bench-cuda
export LD_LIBRARY_PATH=$delta/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
toolkit=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")}
export BENCH_MIN_TIME=0 BENCH_MAX_TIME=0 BENCH_MIN_REPS=3
section() { echo; echo "== $*"; }
{
  section "cuBLAS and driver libraries the loader knows"
  ldconfig -p | grep -E "libcublas|libcuda\.so"
  find / -xdev -name "libcublas.so*" 2>/dev/null | head -n 20
  section "toolkit: $toolkit"
  "$toolkit/bin/nvcc" --version | tail -n 2

  mlp=$work/mlp_1024_4096_1000_1024
  if [ -x "$mlp/mlp_bench" ]; then
    section "large MLP: profile"
    DELTA_CUDA_PROFILE=1 timeout 120 "$mlp/mlp_bench" 2>&1 |
      sed -n '/^cuda profile/,+12p'
    section "large MLP: what its last call copies, and its cuBLAS calls"
    DELTA_CUDA_TRACE=1 timeout 120 "$mlp/mlp_bench" 2>&1 |
      awk '/call starts/ {n = NR; delete lines} {lines[NR] = $0}
           END {for (i = n; i <= NR; i++) if (lines[i] ~ /to host|to device|cuBLAS/) print lines[i]}'
  fi
  chain=$work/chain/chain_bench
  if [ -x "$chain" ]; then
    for n in 16777216; do
      section "chain n=$n: profile"
      DELTA_CUDA_PROFILE=1 timeout 60 "$chain" $n 2>&1 | tail -n 12
      section "chain n=$n: trace of the last calls"
      DELTA_CUDA_TRACE=1 timeout 60 "$chain" $n 2>&1 | grep "^cuda:" | tail -n 40
    done
  fi
  # Sharded programs under mpirun on the GPU need an MPI there that can
  # start the carried dlc (Debian's OpenMPI 4.1 libmpi.so.40): what is there?
  section "MPI on this machine"
  command -v mpirun orterun mpiexec 2>&1
  mpirun --version 2>&1 | head -n 2
  python3 -m pip list 2>/dev/null | grep -iE "mpi|nccl"
  find / -xdev -name "libmpi.so*" 2>/dev/null | head -n 10
  section "nvidia-smi"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
} >"$out/diagnose.txt" 2>&1
echo "wrote $out/diagnose.txt"
