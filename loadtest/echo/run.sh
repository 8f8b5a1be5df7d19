#!/usr/bin/env bash
# Echo benchmark: goro-echo vs a Go echo server (loadtest/peers/goecho) vs a
# minimal single-threaded C epoll loop (floor.c). Each server runs pinned to
# one core with one P (GOMAXPROCS=1), the load client pinned to the other;
# servers alternate within each of R rounds. Per server and round:
#   - 100 connections, closed loop, 64-byte messages, D seconds: throughput
#     and server CPU per echoed message (utime+stime from /proc/PID/stat);
#   - 1 connection: mean and p50 round trip.
# Prints the median over rounds and the ratios goro/Go and goro/floor.
#   loadtest/echo/run.sh [ROUNDS=5] [SECONDS=3]      (env BUILD=build/release)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-5}
SECS=${2:-3}
BUILD=${BUILD:-build/release}
SERVER_CPU=${SERVER_CPU:-1}
CLIENT_CPU=${CLIENT_CPU:-0}

if [[ ! -d $BUILD ]]; then cmake --preset release >/dev/null; fi
cmake --build "$BUILD" --target goro-echo goro-echo-floor goro-echo-client >/dev/null
mkdir -p "$BUILD/go"
(cd loadtest/peers/goecho && GOCACHE="$PWD/../../../$BUILD/go-cache" go build -o "../../../$BUILD/go/goecho" .)

declare -A CMD=(
  [goro]="$BUILD/bin/goro-echo --addr 127.0.0.1:0"
  [go]="$BUILD/go/goecho -addr 127.0.0.1:0"
  [floor]="$BUILD/bin/goro-echo-floor 0"
)
CLIENT="$BUILD/bin/goro-echo-client"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

run_one() {  # server round
  local name=$1 round=$2 out="$TMP/$1.addr"
  : >"$out"  # exists before the wait loop reads it
  GOMAXPROCS=1 taskset -c "$SERVER_CPU" ${CMD[$name]} >"$out" 2>/dev/null &
  local pid=$!
  until [[ $(wc -l <"$out") -ge 1 ]]; do sleep 0.05; done
  local addr
  addr=$(head -1 "$out")
  taskset -c "$CLIENT_CPU" "$CLIENT" "$addr" 100 0.5 >/dev/null  # warm-up
  local t0 t1
  t0=$(cpu_ticks "$pid")
  read -r trips tput _ _ _ < <(taskset -c "$CLIENT_CPU" "$CLIENT" "$addr" 100 "$SECS")
  t1=$(cpu_ticks "$pid")
  local hz
  hz=$(getconf CLK_TCK)
  local us_per_msg
  us_per_msg=$(awk -v d=$((t1 - t0)) -v hz="$hz" -v n="$trips" 'BEGIN{printf "%.3f", d / hz * 1e6 / n}')
  read -r _ _ mean p50 _ < <(taskset -c "$CLIENT_CPU" "$CLIENT" "$addr" 1 "$SECS")
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  echo "$name $round $tput $us_per_msg $mean $p50" >>"$TMP/results"
}

for ((r = 1; r <= ROUNDS; r++)); do
  for s in goro go floor; do run_one "$s" "$r"; done
done

median() { sort -g | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
col() { awk -v s="$1" -v c="$2" '$1==s {print $c}' "$TMP/results" | median; }

printf '%-6s %14s %16s %14s %14s\n' server "msgs/s(100c)" "cpu us/msg" "rtt mean us" "rtt p50 us"
for s in goro go floor; do
  printf '%-6s %14.0f %16.3f %14.2f %14.2f\n' "$s" "$(col "$s" 3)" "$(col "$s" 4)" "$(col "$s" 5)" "$(col "$s" 6)"
done
ratio() { awk -v a="$(col "$1" "$3")" -v b="$(col "$2" "$3")" 'BEGIN{printf "%.3f", a / b}'; }
echo
echo "goro/go:    throughput $(ratio goro go 3)  cpu/msg $(ratio goro go 4)  rtt $(ratio goro go 5)"
echo "goro/floor: throughput $(ratio goro floor 3)  cpu/msg $(ratio goro floor 4)  rtt $(ratio goro floor 5)"
echo "($ROUNDS rounds x ${SECS}s; server on CPU $SERVER_CPU with GOMAXPROCS=1, client on CPU $CLIENT_CPU)"
