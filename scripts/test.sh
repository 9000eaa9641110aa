#!/usr/bin/env bash
# The second of the README's two commands (and CI's): set up, then build and
# test the release preset, the sanitizer preset, and run the fuzzer for a
# bounded time. Exits non-zero if any step fails.
set -uo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc 2>/dev/null || echo 2)
logs=build/test-logs
failed=()
summaries=()

step() {
  local name=$1
  shift
  echo
  echo "==> [$name] $*"
  local start=$SECONDS
  "$@"
  local status=$?
  echo "==> [$name] $([ $status -eq 0 ] && echo ok || echo FAILED) in $((SECONDS - start))s"
  return $status
}

# ctest with its output kept, so that the summaries can close the report.
# Tests run one per core: most are one process (the fuzzers, ptx_all),
# and lang_tests, which lit runs on every core, reserves them all.
run_ctest() {
  local preset=$1
  mkdir -p "$logs"
  ctest --preset "$preset" -j "$jobs" --output-on-failure 2>&1 |
    tee "$logs/ctest-$preset.log"
  local status=${PIPESTATUS[0]}
  summaries+=("[$preset] $(grep -E 'tests passed|tests failed' "$logs/ctest-$preset.log" | tail -n 1)")
  return $status
}

# Configure, build, and test one preset; a failed build skips its tests.
preset() {
  local name=$1
  if step "$name: configure" cmake --preset "$name" &&
     step "$name: build" cmake --build --preset "$name" -j "$jobs"; then
    step "$name: test" run_ctest "$name" || failed+=("$name tests")
  else
    failed+=("$name build")
  fi
}

step "setup" scripts/setup.sh || failed+=("setup")
if [ ${#failed[@]} -eq 0 ]; then
  preset release
  preset asan
  preset fuzz
fi

echo
echo "==> summary"
for line in "${summaries[@]}"; do echo "$line"; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all steps passed"
