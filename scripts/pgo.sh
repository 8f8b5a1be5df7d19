#!/usr/bin/env bash
# A profile-guided build of goro-hello (docs/DESIGN.md "Profile-guided
# optimization", cmake/GoroPgo.cmake), in one build tree:
#   1. a release build with GORO_PGO=generate: goro-hello counting its
#      branches and calls;
#   2. the training run: that goro-hello on a loopback port under wrk,
#      3 s of each load the harness measures (loadtest/http/bench.py:
#      keep-alive plaintext with 64 and 1,000 connections, pipelined x16,
#      JSON, a connection per request), once with one P (the harness's
#      setting) and once with one P per core; SIGTERM ends each run and
#      goro-hello writes its counts into BUILD_DIR/pgo-profile as it exits;
#   3. the same tree rebuilt with GORO_PGO=use: BUILD_DIR/bin/goro-hello.
# Each run starts from an empty profile, so it is idempotent; about four
# minutes on two cores. A failed run removes the instrumented goro-hello,
# so no later step mistakes it for the optimized one.
#   bash scripts/pgo.sh [BUILD_DIR]    default build/pgo (a relative
#                                      BUILD_DIR is under the repository)
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ${1:-} == -* || $# -gt 1 ]]; then
  echo "usage: bash scripts/pgo.sh [BUILD_DIR]   (default build/pgo, relative to the repository)" >&2
  exit 2
fi
bash scripts/deps.sh
build=${1:-build/pgo}
profile=$PWD/$build/pgo-profile
[[ $build == /* ]] && profile=$build/pgo-profile
mkdir -p "$build"
exec 9>"$build/.pgo.lock"
flock 9  # one pgo.sh per tree: the steps reconfigure it

configure() {
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGORO_WERROR=ON \
    -DGORO_BUILD_TESTS=OFF -DGORO_BUILD_BENCHMARKS=OFF \
    -DGORO_PGO="$1" -DGORO_PGO_DIR="$profile" >/dev/null
}

bin=$build/bin/goro-hello
server=
instrumented=0
cleanup() {
  if [[ -n $server ]]; then kill -KILL "$server" 2>/dev/null || true; fi
  # From the generate build until the use build has replaced it,
  # bin/goro-hello is the instrumented one (and the harness would measure it
  # as the optimized build). Before that, it is the last run's good one.
  if ((instrumented == 1)); then rm -f "$bin"; fi
}
trap cleanup EXIT

configure generate
instrumented=1
cmake --build "$build" --target goro-hello >/dev/null
rm -rf "$profile"

load() {  # $1: a label; the rest: wrk's arguments
  local label=$1 out
  shift
  out=$(wrk -t1 -d3s "$@") || {
    echo "pgo.sh: the training load $label: wrk failed (its message above)" >&2
    exit 1
  }
  # A load that failed trains nothing (or the error paths): stop.
  if ! grep -q '^Requests/sec:' <<<"$out" || grep -q '^Requests/sec: *0\.00' <<<"$out" ||
    grep -q 'Non-2xx' <<<"$out"; then
    printf 'pgo.sh: the training load %s failed:\n%s\n' "$label" "$out" >&2
    exit 1
  fi
  if grep -q 'Socket errors' <<<"$out"; then
    echo "pgo.sh: the training load $label: $(grep 'Socket errors' <<<"$out")" >&2
  fi
}

train() {  # $@: goro-hello's flags
  local out addr
  out=$(mktemp)
  # 9>&-: the server must not hold the tree's lock after the script ends.
  "$bin" --addr 127.0.0.1:0 "$@" >"$out" 2>/dev/null 9>&- &
  server=$!
  for _ in $(seq 100); do
    addr=$(head -1 "$out")
    [[ -n $addr ]] && break
    sleep 0.1
  done
  rm -f "$out"
  if [[ -z $addr ]]; then
    echo "pgo.sh: the instrumented goro-hello did not start" >&2
    exit 1
  fi
  load "keep-alive 64" -c64 "http://$addr/plaintext"
  load "keep-alive 1000" -c1000 "http://$addr/plaintext"
  load "pipelined x16" -c64 -s loadtest/http/pipeline.lua "http://$addr/plaintext" -- 16
  load "json" -c64 "http://$addr/json"
  load "connection: close" -c64 -H "Connection: close" "http://$addr/plaintext"
  kill -TERM "$server"
  # The profile is written as it exits: after its graceful shutdown, which
  # may take its whole shutdown_timeout (30 s by default) and then some.
  local waited=0
  while kill -0 "$server" 2>/dev/null; do
    if ((waited >= 450)); then
      echo "pgo.sh: the instrumented goro-hello did not exit within 45 s of SIGTERM" >&2
      exit 1
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  local rc=0
  wait "$server" || rc=$?
  server=
  if ((rc != 0)); then
    echo "pgo.sh: the instrumented goro-hello exited with status $rc" >&2
    exit 1
  fi
}
# 1,000 connections: the soft fd limit up to the hard one (as
# loadtest/http/ab.sh does).
ulimit -Sn "$(ulimit -Hn)"
if [[ $(ulimit -Sn) != unlimited ]] && (($(ulimit -Sn) < 4096)); then
  echo "pgo.sh: the fd limit is $(ulimit -Sn): the 1,000-connection load may fail" >&2
fi
train --maxprocs 1
train
[[ -d $profile ]] || { echo "pgo.sh: the training run wrote no profile" >&2; exit 1; }

configure use
cmake --build "$build" --target goro-hello >/dev/null
instrumented=0
echo "$bin"
