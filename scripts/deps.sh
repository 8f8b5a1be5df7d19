#!/usr/bin/env bash
# Installs the Debian packages goro needs, only those missing; quiet and
# idempotent when everything is present. Sourced or run by run.sh / test.sh.
#   bash scripts/deps.sh           everything: build, tests, lint, load tests
#   bash scripts/deps.sh --build   only what a release build of the libraries
#                                  and apps needs (the Dockerfile's build stage)
#   bash scripts/deps.sh --load    everything, plus the load tests' chart and
#                                  instruction counts (loadtest/run.sh)
set -euo pipefail

GORO_BUILD_PACKAGES=(
  g++ cmake ninja-build pkg-config                # toolchain
  node-llhttp                                     # HTTP/1.1 parser sources, built by our CMake
  libssl-dev                                      # TLS (OpenSSL 3)
  libfmt-dev                                      # formatting and logs
  libcli11-dev libtoml11-dev                      # app configuration: flags and TOML files
  nlohmann-json3-dev                              # JSON responses
)

GORO_PACKAGES=(
  g++ clang cmake ninja-build pkg-config          # toolchain (clang: libFuzzer targets)
  clang-format git                                # scripts/lint.sh: the format check
  clang-tidy-16                                   # scripts/tidy.sh (14 cannot read <source_location>)
  libclang-rt-14-dev                              # clang's sanitizer and fuzzer runtimes
  node-llhttp                                     # HTTP/1.1 parser sources, built by our CMake
  libssl-dev                                      # TLS (OpenSSL 3)
  libfmt-dev                                      # formatting and logs
  libcli11-dev libtoml11-dev                      # app configuration: flags and TOML files
  nlohmann-json3-dev                              # JSON responses
  googletest libgtest-dev libgmock-dev            # tests
  libbenchmark-dev                                # micro-benchmarks
  curl python3 procps                             # test clients and process tools
  golang-go wrk nginx-light                       # load-test peers and client
  slowhttptest                                    # tests/http_server: slow-client attacks
  python3-yaml                                    # tests/deploy: the Kubernetes manifests
)
if [[ $(uname -m) == x86_64 ]]; then
  # The AArch64 context switch, cross-compiled and run under emulation
  # (tests/scheduler: scheduler_context_aarch64_qemu_test).
  GORO_PACKAGES+=(g++-aarch64-linux-gnu qemu-user)
fi

if [[ ${1:-} == --build ]]; then
  GORO_PACKAGES=("${GORO_BUILD_PACKAGES[@]}")
elif [[ ${1:-} == --load ]]; then
  GORO_PACKAGES+=(valgrind python3-matplotlib)
elif [[ $# -gt 0 ]]; then
  echo "usage: bash scripts/deps.sh [--build | --load]" >&2
  exit 2
fi

missing=()
for pkg in "${GORO_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]})); then
  echo "goro: installing missing packages: ${missing[*]}" >&2
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
