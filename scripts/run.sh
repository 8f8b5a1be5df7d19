#!/usr/bin/env bash
# The README's first command: install what is missing, build the release
# preset, and run the main job (goro-hello) in the foreground on
# 127.0.0.1:8080 with its embedded default configuration. Extra arguments go
# to goro-hello. Ctrl-C (SIGINT) or SIGTERM stops it cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target goro-hello -j"$(nproc)"
exec build/release/bin/goro-hello "$@"
