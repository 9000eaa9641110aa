#!/usr/bin/env bash
# The whole GPU check, in one command, for a machine with an NVIDIA GPU that
# lacks this project's build tools (docs/gpu.md, "Testing on a GPU"). Needs
# .gpu/delta.tar.xz from scripts/gpu_pack.sh. Unpacks dlc, runs the lit
# suite with the `cuda-device` tests enabled, runs every program on the GPU
# against the CPU (scripts/gpu_check.py), the GPU unit tests, and the GPU
# benchmarks (bench/cuda/run.py). Writes summary.txt and log.txt into
# $OUT (or ./gpu-out). Exits non-zero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
source=$PWD
out=${OUT:-$source/gpu-out}
mkdir -p "$out"
summary=$out/summary.txt
log=$out/log.txt
: >"$summary"
: >"$log"
failed=()

step() {
  local name=$1
  shift
  local start=$SECONDS
  echo "==> [$name] $*" | tee -a "$log"
  "$@" >>"$log" 2>&1
  local status=$?
  local verdict=$([ $status -eq 0 ] && echo ok || echo FAILED)
  echo "[$name] $verdict in $((SECONDS - start))s" | tee -a "$summary"
  [ $status -eq 0 ] || failed+=("$name")
  return $status
}

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
} >>"$summary" 2>&1

delta=/tmp/delta
rm -rf "$delta" && tar -C /tmp -xJf .gpu/delta.tar.xz
export LD_LIBRARY_PATH=$delta/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export DELTA_STDLIB_PATH=$source/stdlib
dlc=$delta/bin/dlc
jobs=$(nproc)

# lit over the build folder it expects: a site config naming the unpacked
# tools and this tree. No MPI there: the distributed tests (CPU programs,
# docs/distributed.md) say UNSUPPORTED and run in the CPU suite.
mkdir -p "$delta/build/lang-tests"
sed -e "s|@CMAKE_BINARY_DIR@/bin/dlc|$dlc|" \
    -e "s|@DELTA_LLVM_TOOLS_DIR@|$delta/llvm-tools|" \
    -e "s|@CMAKE_BINARY_DIR@|$delta/build|" \
    -e "s|@PROJECT_SOURCE_DIR@|$source|" \
    -e "s|@DELTA_SANITIZE@|OFF|" \
    -e "s|@DELTA_MPIRUN@|DELTA_MPIRUN-NOTFOUND|" \
    -e "s|@MPI_C_INCLUDE_DIRS@||" -e "s|@MPI_C_LIBRARIES@||" \
    lang-tests/lit.site.cfg.py.in >"$delta/build/lang-tests/lit.site.cfg.py"
lit() { python3 "$delta/lit/lit.py" "$@"; }

step "cuda lit tests" lit -sv -j "$jobs" "$delta/build/lang-tests/cuda"
step "gpu vs cpu, every program" \
  python3 scripts/gpu_check.py --dlc "$dlc" --jobs "$jobs" --summary "$summary"
for test in build/gpu-tests/*; do
  [ -x "$test" ] && step "unit: $(basename "$test")" "$test"
done
[ -n "${GPU_SUITE_QUICK:-}" ] || step "whole lit suite" lit -s -j "$jobs" "$delta/build/lang-tests"
grep -E "^(  Failed|  Unsupported|  Passed)|^Failed Tests|^  Delta ::" "$log" \
  | tail -n 40 >>"$summary"
# The built benchmarks stay in $delta/bench-cuda for scripts/gpu_diagnose.sh.
step "bench/cuda" python3 bench/cuda/run.py --dlc "$dlc" --json "$out/bench_cuda.json" \
  --keep "$delta/bench-cuda"
sed -n '/==> \[bench\/cuda\]/,$p' "$log" | tail -n 20 >>"$summary"

echo "failed: ${failed[*]:-none}" | tee -a "$summary"
[ ${#failed[@]} -eq 0 ]
