#!/usr/bin/env bash
# Builds tests/consumer against goro both ways and runs it:
#   check.sh SOURCE_DIR BUILD_DIR    (BUILD_DIR: goro's configured build tree)
set -euo pipefail
src="$(cd "$1" && pwd)"
build=$2
work="$(cd "$build" && pwd)/consumer-check"
rm -rf "$work"
mkdir -p "$work"
# The service serves HTTPS: a self-signed certificate for localhost.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=localhost -addext subjectAltName=DNS:localhost \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
tls=(--cert "$work/cert.pem" --key "$work/key.pem")

# 1. add_subdirectory. This compiles goro's libraries once more, inside the
# consumer's tree: at -O0 without debug info, the quickest build that still
# proves the project works as a subproject (the package check below links
# the release build itself).
cmake -S "$src/tests/consumer" -B "$work/subdir" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DCMAKE_C_FLAGS_DEBUG=-O0 \
  -DGORO_CONSUME=subdir -DGORO_SOURCE_DIR="$src" >/dev/null
cmake --build "$work/subdir" >/dev/null
"$work/subdir/consumer" "${tls[@]}" | grep -qx "consumer sum=385"
echo "consumer: add_subdirectory OK"

# 2. find_package after cmake --install
cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/lib/cmake/goro/goroConfig.cmake"
test -f "$work/prefix/include/goro/goro.hpp"
cmake -S "$src/tests/consumer" -B "$work/package" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DGORO_CONSUME=package -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/package" >/dev/null
"$work/package/consumer" "${tls[@]}" | grep -qx "consumer sum=385"
echo "consumer: find_package OK"
