#!/usr/bin/env bash
# The load tests in one command: installs what is missing, builds goro-hello
# and the floor (release preset), goro-hello again with profile-guided
# optimization (scripts/pgo.sh, build/pgo), Go net/http's peer (loadtest/peers/gohello),
# the wrk TLS shim (loadtest/http/wrk_tls.c), then runs loadtest/http/bench.py:
# goro-hello, Go, nginx (Debian's nginx-light, its own config from
# loadtest/peers/nginx, started on a loopback port without touching the
# system's) and the floor, one core each, wrk on the other, alternating
# rounds. Writes into loadtest/results/ http-DATE .md, .json and .png. Extra
# arguments go to bench.py (--rounds, --seconds, --scenarios
# plaintext,pipelined16,json,c1000,close,https,https-handshake, --servers,
# --idle, --idle-tls, --callgrind; --help lists them). Exits non-zero if a
# run had errors.
#   bash loadtest/run.sh [bench.py arguments]
# With --idle-policy first, runs loadtest/http/idle_policy.py instead (root,
# a KVM guest with cpuidle-haltpoll): keep-alive plaintext under each
# guest_halt_poll_ns window, the machine's own restored at the end.
#   bash loadtest/run.sh --idle-policy [idle_policy.py arguments]
# Builds in build/release hold /tmp/goro-build-release.lock (flock), the lock
# every build in that tree takes, and configure only a tree not configured
# yet (Ninja re-runs CMake itself when a CMakeLists.txt changed).
set -euo pipefail
cd "$(dirname "$0")/.."
for arg in "$@"; do  # help without building anything
  if [[ $arg == -h || $arg == --help ]]; then
    script=bench.py
    [[ ${1:-} == --idle-policy ]] && script=idle_policy.py
    exec /usr/bin/python3 "loadtest/http/$script" --help
  fi
done
# goro-pgo (in bench.py's servers unless --servers leaves it out): goro-hello
# built with profile-guided optimization in build/pgo, or --pgo-build's tree
# (scripts/pgo.sh, about four minutes: it trains on the plain-HTTP loads
# bench.py measures). bench.py's options are not abbreviated
# (allow_abbrev=False), so these two are seen here as bench.py sees them.
servers=goro-pgo
pgo_build=build/pgo
for ((i = 1; i <= $#; i++)); do
  j=$((i + 1))
  case ${!i} in
    --servers=*) servers=${!i#--servers=} ;;
    --servers) servers=${!j:-} ;;
    --pgo-build=*) pgo_build=${!i#--pgo-build=} ;;
    --pgo-build) pgo_build=${!j:-} ;;
  esac
done
if [[ -z $pgo_build || $pgo_build == -* ]]; then
  echo "run.sh: --pgo-build needs a directory" >&2
  exit 2
fi
bash scripts/deps.sh --load
if ! command -v openssl >/dev/null; then  # the HTTPS scenarios' certificate
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends openssl >/dev/null
fi
lock=/tmp/goro-build-release.lock
[[ -f build/release/build.ninja ]] || flock "$lock" cmake --preset release >/dev/null
flock "$lock" cmake --build --preset release --target goro-hello goro-http-floor >/dev/null
bin=build/release/loadtest-bin
mkdir -p "$bin"
cc -O2 -Wall -Wextra -shared -fPIC -o "$bin/wrk_tls.so" loadtest/http/wrk_tls.c -lssl -ldl
(cd loadtest/peers/gohello && GOFLAGS=-mod=mod GOPROXY=off GOCACHE="$PWD/../../../build/release/go-cache" \
  go build -o "../../../$bin/gohello" .)
ln -sf ../bin/goro-http-floor "$bin/floor"
if [[ ${1:-} != --idle-policy && ,$servers, == *,goro-pgo,* ]]; then
  bash scripts/pgo.sh "$pgo_build" >/dev/null
fi
# Both run on Debian's python3: the one python3-matplotlib is installed for.
if [[ ${1:-} == --idle-policy ]]; then  # the diagnostic: loadtest/http/idle_policy.py
  shift
  exec /usr/bin/python3 loadtest/http/idle_policy.py --build build/release --bin-dir "$bin" "$@"
fi
exec /usr/bin/python3 loadtest/http/bench.py --build build/release --bin-dir "$bin" \
  --pgo-build "$pgo_build" "$@"
