#!/bin/bash
# Two builds side by side, for a change's before and after (loadtest/README.md
# "Two builds side by side"): alternating rounds, each server pinned to one
# core with one P, wrk -t1 pinned to the other, 1 s of warm-up, then a 5 s
# run of which 4 s are measured. Per round and server it prints the CPU
# per request from /proc/PID/task/*/schedstat (every thread's run time)
# and, where perf works, the user and kernel shares of it from a 10 kHz
# cpu-clock sample (user time is what a change to goro's own code moves;
# the kernel's swings with the machine). Then the medians. Copy the build
# before aside first:
#   cp build/release/bin/goro-hello /tmp/goro-hello-before
#   (change, rebuild)
#   bash loadtest/http/ab.sh 8 1000 /tmp/goro-hello-before build/release/bin/goro-hello
# Use an even number of rounds: the order rotates each round, so each build
# is first as often as second.
# usage: loadtest/http/ab.sh ROUNDS CONNS BIN... ("floor" names
#        build/release/bin/goro-http-floor; env PATH_=/json, SERVER_CORE, WRK_CORE)
set -euo pipefail
if [[ $# -lt 3 ]]; then
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
rounds=$1
conns=$2
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
path=${PATH_:-/plaintext}
score=${SERVER_CORE:-0}
wcore=${WRK_CORE:-1}
command -v wrk >/dev/null || { echo "ab.sh: wrk is missing (bash scripts/deps.sh --load)" >&2; exit 1; }
use_perf=1
perf stat -e cpu-clock -- true >/dev/null 2>&1 || use_perf=0
ulimit -n "$(ulimit -Hn)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%.0f", s}'; }

bins=("$@")
for ((r = 1; r <= rounds; r++)); do
  # The order rotates each round (as bench.py's): in a fixed order the
  # second of two copies of one binary ran 9% cheaper at 1,000 connections
  # (medians of 8 rounds, 5 of 8 rounds cheaper; 17 of 24 over three runs).
  for ((i = 0; i < ${#bins[@]}; i++)); do
    bin=${bins[$(((i + r - 1) % ${#bins[@]}))]}
    if [[ $bin == floor ]]; then
      cmd=("$root/build/release/bin/goro-http-floor" plain keep)
    else
      cmd=("$bin" --addr 127.0.0.1:0 --maxprocs 1)
    fi
    taskset -c "$score" "${cmd[@]}" >"$tmp/addr" 2>/dev/null &
    pid=$!
    addr=""
    for _ in $(seq 50); do
      addr=$(head -1 "$tmp/addr" 2>/dev/null || true)
      [[ -n $addr ]] && break
      sleep 0.1
    done
    [[ -n $addr ]] || { echo "ab.sh: $bin printed no address" >&2; kill "$pid"; exit 1; }
    taskset -c "$wcore" wrk -t1 -c"$conns" -d1s "http://$addr$path" >/dev/null 2>&1
    taskset -c "$wcore" wrk -t1 -c"$conns" -d5s "http://$addr$path" >"$tmp/wrk" 2>&1 &
    wpid=$!
    sleep 0.5
    t0=$(run_ns "$pid")
    if ((use_perf)); then
      perf record -q -F 10000 -e cpu-clock -p "$pid" -o "$tmp/perf" -- sleep 4 >/dev/null 2>&1
    else
      sleep 4
    fi
    t1=$(run_ns "$pid")
    wait "$wpid"
    kill -INT "$pid"
    wait "$pid" 2>/dev/null || true
    rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/wrk")
    split="user - kernel -"
    if ((use_perf)); then
      # Samples at 10 kHz: each stands for 100 us of the server's CPU.
      split=$(perf script -i "$tmp/perf" -F ip 2>/dev/null |
        awk -v rps="$rps" '{ if ($1 ~ /^ffff/) k++; else u++ }
          END { printf "user %.3f kernel %.3f", u * 100 / (rps * 4), k * 100 / (rps * 4) }')
    fi
    awk -v r="$r" -v b="$(basename "$bin")" -v t0="$t0" -v t1="$t1" -v rps="$rps" -v s="$split" \
      'BEGIN { printf "r%d %-24s cpu %.3f us/req  %s  rps %.0f\n", r, b, (t1 - t0) / 1e3 / (rps * 4), s, rps }'
  done
done | tee "$tmp/rounds"
echo "medians (us/req):"
awk '{ n[$2]++; c[$2, n[$2]] = $4; u[$2, n[$2]] = $7 }
  END { for (b in n) { m = n[b]
    for (i = 1; i <= m; i++) { cc[i] = c[b, i]; uu[i] = u[b, i] }
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) {
      if (cc[j] < cc[i]) { t = cc[i]; cc[i] = cc[j]; cc[j] = t }
      if (uu[j] < uu[i]) { t = uu[i]; uu[i] = uu[j]; uu[j] = t } }
    mc = (m % 2) ? cc[(m + 1) / 2] : (cc[m / 2] + cc[m / 2 + 1]) / 2
    mu = (m % 2) ? uu[(m + 1) / 2] : (uu[m / 2] + uu[m / 2 + 1]) / 2
    printf "  %-24s cpu %.3f  user %s\n", b, mc, (uu[1] == "-") ? "-" : sprintf("%.3f", mu) } }' \
  "$tmp/rounds"
