#!/usr/bin/env bash
# Micro-benchmarks, goro vs Go side by side (docs/benchmarks.md).
#
# Builds goro-microbench (release preset) and the Go peer gomicro
# (loadtest/peers/gomicro, standard library only, never downloads), then runs
# loadtest/micro/compare.py: every benchmark R rounds, goro and Go alternating,
# medians, a table of goro | Go | goro/Go | target | PASS/FAIL.
#
#   scripts/bench-micro.sh [--no-deps] [--no-build] [--build-dir DIR] [compare.py flags...]
#     --build-dir DIR   build a Release tree in DIR instead of the release
#                       preset's build/release (e.g. to stay out of a tree
#                       someone else is building)
#     --rounds R        alternating rounds per benchmark (default 5)
#     --only a,b        run only these benchmarks (yield,spawn,skynet,fanout,
#                       parkmem,pingpong,bufchan,mutex,select2,getppid)
#     --n BENCH=N       override an iteration count (both sides)
#     --json PATH       also write JSON ('-' prints JSON instead of the table)
#     --no-pin          do not pin with taskset (default: a procs=N run is
#                       pinned to the first N CPUs this shell may use)
#     --verbose         echo every command and result line
#
# If goro-microbench does not build (the runtime is young), the Go column is
# still measured and the goro column reads "not built". Exit status: 1 if a
# row FAILs its target, else 0.
set -euo pipefail
cd "$(dirname "$0")/.."

deps=1
build=1
build_dir=""
args=()
while (($#)); do
  case "$1" in
    --no-deps) deps=0 ;;
    --no-build) build=0 ;;
    --build-dir)
      build_dir="${2:?--build-dir needs a directory}"
      shift
      ;;
    *) args+=("$1") ;;
  esac
  shift
done

preset=release
root="$PWD"
if [[ -z "${build_dir}" ]]; then build_dir="build/${preset}"; fi
build_dir="$(realpath -m "${build_dir}")"
bindir="${build_dir}/bin"
goro_bin="${bindir}/goro-microbench"
go_bin="${bindir}/gomicro"

if ((deps)); then bash scripts/deps.sh; fi

if ((build)); then
  if [[ "${build_dir}" == "${root}/build/${preset}" ]]; then
    configure_cmd=(cmake --preset "${preset}")
    build_cmd=(cmake --build --preset "${preset}" --target goro-microbench)
  else
    configure_cmd=(cmake -S . -B "${build_dir}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGORO_WERROR=ON)
    build_cmd=(cmake --build "${build_dir}" --target goro-microbench)
  fi
  if ! "${configure_cmd[@]}" >/dev/null || ! "${build_cmd[@]}"; then
    echo "bench-micro: goro-microbench did not build; measuring the Go side only" >&2
    rm -f "${goro_bin}"
  fi
  mkdir -p "${bindir}"
  # Offline, reproducible Go build: no module downloads, no toolchain
  # switching, a build cache inside build/ so no writable $HOME is needed.
  (cd loadtest/peers/gomicro &&
    GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local GO111MODULE=on \
      GOCACHE="${GOCACHE:-${build_dir}/go-cache}" \
      go build -o "${go_bin}" .)
fi

goro_args=()
if [[ -x "${goro_bin}" ]]; then goro_args=(--goro "${goro_bin}"); fi
exec python3 loadtest/micro/compare.py "${goro_args[@]}" --go "${go_bin}" "${args[@]}"
