#!/usr/bin/env bash
# Data-parallel scaling (docs/distributed.md) of mlp_step.dl (an MLP
# training step) and gmm_step.dl (a GMM gradient): the time of one step on
# 1 and 2 processes of one thread each, as the median of 5 runs of (50
# steps) minus the median of 5 runs of (0 steps), so that start-up,
# MPI_Init and data generation do not count; then the time inside MPI per
# step on 2 processes (DELTA_SHARD_STATS=1, the same difference, each
# process's median). PROGRAMS="gmm_step" runs one. Needs MPI
# (scripts/setup.sh) and an idle machine.
set -euo pipefail
cd "$(dirname "$0")"
DLC=${DLC:-../../build/release/bin/dlc}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export DELTA_NUM_THREADS=1
STEPS=${STEPS:-50}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
median() {  # median of the numbers on standard input
  sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
wall() {  # median wall seconds of 5 runs of "$@"
  for _ in 1 2 3 4 5; do
    start=$(date +%s.%N); "$@" > /dev/null < /dev/null; end=$(date +%s.%N)
    echo "$end - $start" | bc -l
  done | median
}
in_mpi() {  # median seconds inside MPI of process $1 over 5 runs of the rest
  local process=$1; shift
  for _ in 1 2 3 4 5; do
    DELTA_SHARD_STATS=1 "$@" 2>&1 > /dev/null < /dev/null |
      awk -v p="$process" '$5 == p { print $8 }'
  done | median
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for name in ${PROGRAMS:-mlp_step gmm_step}; do
  "$DLC" build "$name.dl" -o "$work/$name"
  for processes in 1 2; do
    base=$(wall mpirun -np "$processes" "$work/$name" 0)
    full=$(wall mpirun -np "$processes" "$work/$name" "$STEPS")
    step=$(echo "($full - $base) / $STEPS * 1000" | bc -l)
    printf "%s, %d process(es): %.1f ms per step\n" "$name" "$processes" "$step"
  done
  for process in 0 1; do
    base=$(in_mpi "$process" mpirun -np 2 "$work/$name" 0)
    full=$(in_mpi "$process" mpirun -np 2 "$work/$name" "$STEPS")
    printf "%s, 2 processes, process %d: %.2f ms per step inside MPI\n" \
      "$name" "$process" "$(echo "($full - $base) / $STEPS * 1000" | bc -l)"
  done
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
