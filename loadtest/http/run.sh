#!/bin/sh
# Side-by-side plaintext throughput: goro-hello vs Go net/http (gohello).
# Each server is pinned to core 0 with one P / GOMAXPROCS=1, wrk to core 1;
# rounds alternate between the servers and the median per server is printed.
#
#   loadtest/http/run.sh [build-dir] [rounds] [seconds] [connections]
set -eu
BUILD=${1:-build/release}
ROUNDS=${2:-3}
SECS=${3:-5}
CONNS=${4:-64}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HELLO="$ROOT/$BUILD/bin/goro-hello"
[ -x "$HELLO" ] || HELLO="$BUILD/bin/goro-hello"
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
(cd "$ROOT/loadtest/peers/gohello" && GOFLAGS=-mod=mod GOPROXY=off go build -o "$TMP/gohello" .)

wait_addr() {
  for _ in $(seq 50); do [ -s "$TMP/out" ] && break; sleep 0.1; done
  head -1 "$TMP/out"
}

for r in $(seq "$ROUNDS"); do
  for s in goro go; do
    : > "$TMP/out"
    if [ $s = goro ]; then
      taskset -c 0 "$HELLO" --addr 127.0.0.1:0 --maxprocs 1 > "$TMP/out" 2>/dev/null &
    else
      GOMAXPROCS=1 taskset -c 0 "$TMP/gohello" -addr 127.0.0.1:0 > "$TMP/out" 2>/dev/null &
    fi
    pid=$!
    addr=$(wait_addr)
    rps=$(taskset -c 1 wrk -t1 -c"$CONNS" -d"${SECS}s" "http://$addr/plaintext" | awk '/Requests\/sec/ {print $2}')
    kill $pid; wait $pid 2>/dev/null || true
    echo "$s $rps" >> "$TMP/results"
    echo "round $r $s: $rps req/s"
  done
done
med() { grep "^$1 " "$TMP/results" | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
g=$(med goro); o=$(med go)
echo "median plaintext req/s (1 core each, wrk -t1 -c$CONNS -d${SECS}s): goro $g, go $o, goro/go $(echo "$g $o" | awk '{printf "%.2f", $1/$2}')"
