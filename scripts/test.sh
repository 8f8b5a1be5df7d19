#!/usr/bin/env bash
# The README's second command (and .ci/run): install what is missing, then
# build and run the whole suite:
#   lint    : formatting and document references (scripts/lint.sh)
#   release : every test (labels unit, integration, stress) + the consumer check
#   tsan    : labels unit and stress under ThreadSanitizer
#   asan    : labels unit and stress under AddressSanitizer + UBSan
#   debug   : labels unit and stress with assertions on and scheduling
#             perturbed (random slow paths, goroutines moved between threads)
# Prints ctest's summary lines; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh

jobs=$(nproc)
status=0
summary=()

echo "=== goro: lint (scripts/lint.sh)" >&2
if bash scripts/lint.sh; then
  summary+=("lint: clean")
else
  summary+=("lint: FAILED")
  status=1
fi

run_preset() {  # preset, ctest label regex ('' = all)
  local preset=$1 labels=$2
  echo "=== goro: building preset ${preset}" >&2
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j"$jobs"
  local args=(--preset "$preset" -j"$jobs" --timeout 900)
  [[ -n $labels ]] && args+=(-L "$labels")
  echo "=== goro: testing preset ${preset} ${labels:+(labels: $labels)}" >&2
  local log="build/${preset}/ctest-summary.log"
  if ctest "${args[@]}" | tee "$log"; then :; else status=1; fi
  summary+=("${preset}: $(grep -E 'tests passed|tests failed' "$log" | tail -n1)")
}

run_preset release ""
run_preset tsan 'unit|stress'
run_preset asan 'unit|stress'
run_preset debug 'unit|stress'

echo
echo "=== goro: summary"
for line in "${summary[@]}"; do echo "  $line"; done
exit $status
