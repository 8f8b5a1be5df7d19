#!/usr/bin/env bash
# The long fuzz run (tests/fuzz/README.md): builds the release preset's fuzz
# targets, runs each for SECONDS over its checked-in seeds and dictionary,
# and prints what each did.
#
#   scripts/fuzz.sh [-j JOBS] [-l LOGDIR] [SECONDS] [TARGET...]
#
#   SECONDS  per target, default 1800
#   TARGET   names as in tests/fuzz/<name>_fuzzer.cpp (default: all of them)
#   -j JOBS  targets run at once, default 1 (each libFuzzer uses one core)
#   -l DIR   logs and crash inputs, default build/release/tests/fuzz/logs
#
# New inputs go to the build tree's work corpus (corpus_<name>/ beside the
# binaries), never into tests/fuzz/corpus/. Per target it prints the
# executions, executions per second, corpus units and coverage (cov: edges,
# ft: features) when the seeds were loaded (libFuzzer's INITED line) and at
# the end (DONE, or the last status line before a crash), and the input a
# crash left. Exits non-zero if any target crashed, timed out or ran out of
# memory. Run it under `nice` on a shared machine; the figures are then a
# lower bound.
set -euo pipefail
cd "$(dirname "$0")/.."

parallel=1
logdir=build/release/tests/fuzz/logs
while getopts "j:l:h" opt; do
  case $opt in
    j) parallel=$OPTARG ;;
    l) logdir=$OPTARG ;;
    *) sed -n '2,20p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
seconds=${1:-1800}
shift $(($# > 0 ? 1 : 0))
targets=("$@")
if ((${#targets[@]} == 0)); then
  for src in tests/fuzz/*_fuzzer.cpp; do
    name=${src##*/}
    targets+=("${name%_fuzzer.cpp}")
  done
fi

echo "=== fuzz: building ${targets[*]} (release preset)" >&2
cmake --preset release >/dev/null
cmake --build --preset release --target "${targets[@]/#/goro_fuzz_}"

fuzz_dir=build/release/tests/fuzz
mkdir -p "$logdir"

run_one() {  # target
  local t=$1 dict=()
  [[ -f tests/fuzz/$t.dict ]] && dict=(-dict="tests/fuzz/$t.dict")
  mkdir -p "$fuzz_dir/corpus_$t"
  local rc=0
  "$fuzz_dir/${t}_fuzzer" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$logdir/$t-" "${dict[@]}" \
    "$fuzz_dir/corpus_$t" "tests/fuzz/corpus/$t" >"$logdir/$t.log" 2>&1 || rc=$?
  echo "$rc" >"$logdir/$t.rc"
}

echo "=== fuzz: ${seconds}s per target, ${parallel} at a time; logs in ${logdir}" >&2
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
  echo "--- fuzz: $t started $(date +%T)" >&2
  run_one "$t" &
done
wait

# "cov: 814 ft: 1495 corp: 11/394b" -> "814 1495 11"
figures() { sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+)\/.*/\1 \2 \3/'; }
final_stat() { grep -m1 "^stat::$2:" "$1" | awk '{print $2}' || true; }

status=0
printf '%-14s %-8s %12s %8s %15s %15s %17s\n' target result executions exec/s \
  "corpus" "cov" "ft"
for t in "${targets[@]}"; do
  log=$logdir/$t.log
  rc=$(cat "$logdir/$t.rc")
  cov0='?' ft0='?' corp0='?' cov1='?' ft1='?' corp1='?'
  read -r cov0 ft0 corp0 < <(grep -m1 -E '[[:space:]]INITED[[:space:]]' "$log" | figures) || true
  read -r cov1 ft1 corp1 < <(grep -E '^#[0-9]+[[:space:]]+(INITED|NEW|REDUCE|pulse|DONE)' "$log" |
    tail -n1 | figures) || true
  result=clean
  if ((rc != 0)); then
    result="FAILED($rc)"
    status=1
  fi
  printf '%-14s %-8s %12s %8s %15s %15s %17s\n' "$t" "$result" \
    "$(final_stat "$log" number_of_executed_units)" "$(final_stat "$log" average_exec_per_sec)" \
    "$corp0 -> $corp1" "$cov0 -> $cov1" "$ft0 -> $ft1"
  if ((rc != 0)); then
    grep -E 'ERROR:|oracle failed|Test unit written to' "$log" | sed 's/^/    /' || true
  fi
done
exit $status
