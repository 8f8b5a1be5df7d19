#!/usr/bin/env bash
# Lint checks run by the test command (scripts/test.sh) before any build:
#   format   : every C/C++ file git tracks is formatted by the pinned
#              .clang-format (fix with: clang-format -i FILE)
#   doc refs : no comment or doc cites a file (or a docs/DESIGN.md section)
#              that is not in the repository (scripts/check-doc-refs.sh)
#   layers   : includes follow the layering (scripts/check-layers.sh)
# Runs every check; exits non-zero if any failed, naming the files.
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
mapfile -t sources < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.c' 2>/dev/null || true)
if ((${#sources[@]} == 0)); then
  # Not a git checkout (a source tarball): lint what is on disk.
  mapfile -t sources < <(find . -path ./build -prune -o \( -name '*.cpp' -o -name '*.hpp' \
    -o -name '*.h' -o -name '*.c' \) -print | sed 's|^\./||')
fi
# One clang-format for all files; each offence is reported as FILE:LINE:COL: error.
mapfile -t unformatted < <(printf '%s\0' "${sources[@]}" |
  xargs -0 clang-format --dry-run --Werror 2>&1 >/dev/null | grep -E '^[^ ]+:[0-9]+:[0-9]+: error' |
  cut -d: -f1 | sort -u || true)
if ((${#unformatted[@]} > 0)); then
  echo "lint: not formatted by .clang-format (clang-format -i to fix):" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  status=1
fi

bash scripts/check-doc-refs.sh || status=1
bash scripts/check-layers.sh || status=1
exit $status
