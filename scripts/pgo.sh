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
# Each run starts from an empty profile, so it is idempotent; about five
# minutes on two cores. A service's own build trains on its own traffic
# the same way (the two configure steps and its load in between).
#   bash scripts/pgo.sh [BUILD_DIR]    default build/pgo
set -euo pipefail
cd "$(dirname "$0")/.."
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

configure generate
cmake --build "$build" --target goro-hello >/dev/null
rm -rf "$profile"

train() {  # $@: goro-hello's flags
  local out pid addr
  out=$(mktemp)
  "$build/bin/goro-hello" --addr 127.0.0.1:0 "$@" >"$out" 2>/dev/null &
  pid=$!
  for _ in $(seq 100); do
    addr=$(head -1 "$out")
    [[ -n $addr ]] && break
    sleep 0.1
  done
  rm -f "$out"
  if [[ -z $addr ]]; then
    kill "$pid" 2>/dev/null || true
    echo "pgo.sh: the instrumented goro-hello did not start" >&2
    exit 1
  fi
  wrk -t1 -c64 -d3s "http://$addr/plaintext" >/dev/null
  wrk -t1 -c1000 -d3s "http://$addr/plaintext" >/dev/null
  wrk -t1 -c64 -d3s -s loadtest/http/pipeline.lua "http://$addr/plaintext" -- 16 >/dev/null
  wrk -t1 -c64 -d3s "http://$addr/json" >/dev/null
  wrk -t1 -c64 -d3s -H "Connection: close" "http://$addr/plaintext" >/dev/null
  kill -TERM "$pid"
  wait "$pid"  # the profile is written as it exits
}
if (($(ulimit -n) < 4096)); then ulimit -n 4096; fi  # 1,000 connections
train --maxprocs 1
train
[[ -d $profile ]] || { echo "pgo.sh: the training run wrote no profile" >&2; exit 1; }

configure use
cmake --build "$build" --target goro-hello >/dev/null
echo "$build/bin/goro-hello"
