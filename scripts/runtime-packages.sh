#!/usr/bin/env bash
# Prints, one per line, the Debian packages that provide the shared libraries
# the given executables load (from ldd and dpkg -S): what a run image needs
# and nothing else. The Dockerfile's build stage writes this list for the
# run stage to install. Fails naming the library if one is not from a package.
#   bash scripts/runtime-packages.sh build/release/bin/goro-hello
set -euo pipefail
if (($# == 0)); then
  echo "usage: bash scripts/runtime-packages.sh EXECUTABLE..." >&2
  exit 2
fi
libs=()
for exe in "$@"; do
  # "libfmt.so.9 => /lib/x86_64-linux-gnu/libfmt.so.9 (0x...)" and the
  # loader's own line "/lib64/ld-linux-x86-64.so.2 (0x...)"; the vDSO has no file.
  while read -r path; do libs+=("$path"); done < <(
    ldd "$exe" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
done
for lib in "${libs[@]}"; do
  # dpkg knows the path it installed; /lib is a symlink to /usr/lib on
  # merged-/usr systems, so try both spellings.
  real=$(readlink -f "$lib")
  pkg=""
  for candidate in "$lib" "$real" "${lib#/usr}" "/usr$lib" "${real#/usr}" "/usr$real"; do
    if pkg=$(dpkg -S "$candidate" 2>/dev/null | head -n1 | cut -d: -f1) && [[ -n $pkg ]]; then
      break
    fi
  done
  if [[ -z $pkg ]]; then
    echo "runtime-packages: $lib belongs to no Debian package" >&2
    exit 1
  fi
  echo "$pkg"
done | sort -u
