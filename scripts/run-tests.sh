#!/usr/bin/env bash
# Runs every test under ctest, then says why tests were skipped (a missing
# GPU, ptxas or libdevice: never silently), and ends on one line of counts.
# Usage: run-tests.sh BUILD_DIR JOBS [CTEST_ARGS...] (e.g. -E REGEX)
set -uo pipefail
build="${1:-build}"
jobs="${2:-2}"
shift $(( $# < 2 ? $# : 2 ))
out="$build/ctest-output.txt"
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@" 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
scripts/skip-summary.sh "$build"
# Which CUDA runs were emulated: the tests labelled emulated-cuda ran on the
# stand-in driver (the PTX emulator, docs/emulator.md), not a GPU.
emulated=$(sed -n 's/^emulated-cuda *= *\([0-9.]*\) sec\*proc (\([0-9]*\) tests)/\2 tests, \1 s/p' "$out" | tail -1)
if [[ -n "$emulated" ]]; then
  echo "CUDA on the PTX emulator (label emulated-cuda): $emulated"
fi
total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$out" | tail -1)
failed=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of.*/\1/p' "$out" | tail -1)
skipped=$(grep -c '(Skipped)$' "$out" || true)
if [[ -n "$total" && -n "$failed" ]]; then
  echo "tests: $((total - failed - skipped)) passed, $failed failed, $skipped skipped"
fi
exit "$status"
