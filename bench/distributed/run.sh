#!/usr/bin/env bash
# Data-parallel scaling of mlp_step.dl (docs/distributed.md): the time of
# one gradient step on 1 and 2 processes of one thread each, as the median
# of 5 runs of (50 steps) minus the median of 5 runs of (0 steps), so that
# start-up, MPI_Init and data generation do not count. Needs MPI
# (scripts/setup.sh) and an idle machine.
set -euo pipefail
cd "$(dirname "$0")"
DLC=${DLC:-../../build/release/bin/dlc}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export DELTA_NUM_THREADS=1
program=$(mktemp)
trap 'rm -f "$program"' EXIT
"$DLC" build mlp_step.dl -o "$program"
median() {  # median wall seconds of 5 runs of "$@"
  for _ in 1 2 3 4 5; do
    start=$(date +%s.%N); "$@" > /dev/null; end=$(date +%s.%N)
    echo "$end - $start" | bc -l
  done | sort -n | sed -n 3p
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for processes in 1 2; do
  base=$(median mpirun -np "$processes" "$program" 0)
  full=$(median mpirun -np "$processes" "$program" 50)
  step=$(echo "($full - $base) / 50 * 1000" | bc -l)
  printf "%d process(es): %.1f ms per step\n" "$processes" "$step"
done
