#!/usr/bin/env bash
# The README's second command (and .ci/run): install what is missing, then
# build and run the whole suite:
#   lint    : formatting, document references, include layering (scripts/lint.sh)
#   tidy    : clang-tidy on the C++ files the last commit changed (scripts/tidy.sh)
#   release : every test (labels unit, integration, stress) + the consumer check
#   (the labelled presets below build only the executables those tests run)
#   tsan    : labels unit and stress under ThreadSanitizer
#   asan    : labels unit and stress under AddressSanitizer + UBSan, with
#             assertions on and scheduling perturbed (random slow paths,
#             goroutines moved between threads), at -O1
# The debug preset (-O0, assertions, perturbed) is for local work: the asan
# run covers what it checks, and dropping its build keeps the whole command
# near 30 minutes on 2 cores.
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

# The build outputs the tests with these labels run (their executables, by
# path relative to the build tree): a labelled preset builds only those, not
# the apps, the compiled examples or the tests it would not run. The paths
# come from the generated CTestTestfile.cmake files (before a build, ctest
# itself omits a command whose executable does not exist yet).
test_outputs() {  # build dir, label regex
  local dir=$1 labels=$2
  ctest --test-dir "$dir" -N -L "$labels" --show-only=json-v1 |
    python3 -c '
import json, os, re, sys
root = os.path.realpath(sys.argv[1])
names = {t["name"] for t in json.load(sys.stdin)["tests"]}
for base, _, files in os.walk(root):
    if "CTestTestfile.cmake" not in files:
        continue
    for line in open(os.path.join(base, "CTestTestfile.cmake"), encoding="utf-8"):
        m = re.match(r"add_test\(\[=\[(.+?)\]=\] (.*)\)\s*$", line)
        if not m or m.group(1) not in names:
            continue
        for arg in re.findall(r"\"([^\"]*)\"", m.group(2)):
            if arg.startswith(root + "/"):
                print(arg[len(root) + 1:])' "$dir" |
    sort -u | while read -r out; do
      # Only what the build makes (a fuzz corpus directory is an argument too).
      if ninja -C "$dir" -t query "$out" >/dev/null 2>&1; then echo "$out"; fi
    done
}

run_preset() {  # preset, ctest label regex ('' = all)
  local preset=$1 labels=$2
  echo "=== goro: building preset ${preset}" >&2
  cmake --preset "$preset" >/dev/null
  if [[ $preset == release ]]; then
    # clang-tidy over the sources the last commit changed (needs only the
    # configured tree's compile_commands.json).
    echo "=== goro: clang-tidy (scripts/tidy.sh)" >&2
    if bash scripts/tidy.sh "build/${preset}"; then
      summary+=("tidy: clean")
    else
      summary+=("tidy: FAILED")
      status=1
    fi
  fi
  if [[ -n $labels ]]; then
    local outputs
    mapfile -t outputs < <(test_outputs "build/${preset}" "$labels")
    if ((${#outputs[@]} == 0)); then
      echo "goro: no test outputs found for labels ${labels} in build/${preset}" >&2
      exit 1
    fi
    cmake --build --preset "$preset" -j"$jobs" --target "${outputs[@]}"
  else
    cmake --build --preset "$preset" -j"$jobs"
  fi
  # The release run is mostly integration tests that wait on sockets and
  # timeouts (and the consumer check's compile): one test more than there are
  # cores keeps both cores busy. The sanitizer runs are CPU-bound: one per core.
  local ctest_jobs=$jobs
  [[ $preset == release ]] && ctest_jobs=$((jobs + 1))
  local args=(--preset "$preset" -j"$ctest_jobs" --timeout 900)
  [[ -n $labels ]] && args+=(-L "$labels")
  echo "=== goro: testing preset ${preset} ${labels:+(labels: $labels)}" >&2
  local log="build/${preset}/ctest-summary.log"
  if ctest "${args[@]}" | tee "$log"; then :; else status=1; fi
  summary+=("${preset}: $(grep -E 'tests passed|tests failed' "$log" | tail -n1)")
}

run_preset release ""
run_preset tsan 'unit|stress'
run_preset asan 'unit|stress'

echo
echo "=== goro: summary"
for line in "${summary[@]}"; do echo "  $line"; done
exit $status
