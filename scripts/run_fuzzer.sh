#!/usr/bin/env bash
# Runs a libFuzzer target for a bounded time on a copy of its seed corpus;
# exits non-zero if it finds a crash, hang, leak, OOM or sanitizer report.
# Usage: scripts/run_fuzzer.sh FUZZER SEED_DIR WORK_DIR
# DELTA_FUZZ_SECONDS (default 60) bounds the run.
set -euo pipefail

fuzzer=$1
seeds=$2
work=$3
seconds=${DELTA_FUZZ_SECONDS:-60}
dict="$(dirname "$seeds")/delta.dict"

# libFuzzer adds what it finds to the first corpus folder: keep the seeds in
# the repository untouched and grow a working copy instead.
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
cp -r "$seeds"/. "$work/corpus/"

args=(-max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048
      -print_final_stats=1 -artifact_prefix="$work/artifacts/")
[ -f "$dict" ] && args+=(-dict="$dict")

echo "fuzzing $(basename "$fuzzer") for ${seconds}s on $(ls "$seeds" | wc -l) seeds"
if ! "$fuzzer" "${args[@]}" "$work/corpus"; then
  echo "FUZZER FOUND A PROBLEM; reproducer(s):" >&2
  ls -1 "$work/artifacts" >&2
  echo "rerun with: $fuzzer $work/artifacts/<file>" >&2
  exit 1
fi
if [ -n "$(ls -A "$work/artifacts")" ]; then
  echo "fuzzer left artifacts in $work/artifacts" >&2
  exit 1
fi
