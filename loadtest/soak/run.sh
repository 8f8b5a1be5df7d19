#!/usr/bin/env bash
# The soak (not in CI): builds goro-hello (release), installs what the soak
# needs (wrk, slowhttptest, Debian's python3-matplotlib for the plot), and
# runs loadtest/soak/soak.py for 10 minutes (or $1 seconds). Writes a
# summary, a CSV and a plot named soak-YYYY-MM-DD under loadtest/results/;
# exits 1 if the server died, a good
# request failed, or RSS, descriptors, goroutines or threads trended upward.
# Run as root for the live maxprocs change (a cgroup v1 cpu controller).
#
#   bash loadtest/soak/run.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/deps.sh
if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    python3-matplotlib >/dev/null
fi
cmake --preset release >/dev/null
cmake --build --preset release --target goro-hello -j"$(nproc)"
# Debian's interpreter: the one python3-matplotlib is installed for.
exec /usr/bin/python3 loadtest/soak/soak.py --hello build/release/bin/goro-hello \
  --seconds "${1:-600}"
