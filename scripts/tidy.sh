#!/usr/bin/env bash
# clang-tidy (.clang-tidy's checks, every warning an error) over the C++
# sources changed since BASE (default: the parent commit; "all" for the whole
# tree), using a configured build tree's compile_commands.json:
#   scripts/tidy.sh BUILD_DIR [BASE|all]
# clang-tidy-16 from Debian: clang-tidy 14 cannot parse libstdc++ 12's
# <source_location> (it lacks __builtin_source_location). Headers are checked
# through the sources that include them (.clang-tidy HeaderFilterRegex).
# Prints the findings; exits non-zero if there are any.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1
base=${2:-HEAD~1}
tidy=clang-tidy-16
command -v "$tidy" >/dev/null || { echo "tidy: $tidy is not installed (scripts/deps.sh)" >&2; exit 1; }
[[ -f $build/compile_commands.json ]] || { echo "tidy: no $build/compile_commands.json" >&2; exit 1; }

if [[ $base == all ]]; then
  mapfile -t files < <(git ls-files '*.cpp')
elif git rev-parse -q --verify "$base^{commit}" >/dev/null; then
  mapfile -t files < <(git diff --name-only --diff-filter=AMR "$base" -- '*.cpp')
else
  files=()  # a clone without history: nothing to compare with
fi
# Only what the build compiles (generated examples and peers in Go are not).
checked=()
for f in "${files[@]}"; do
  grep -q "\"file\": \"$PWD/$f\"" "$build/compile_commands.json" && checked+=("$f")
done
echo "tidy: ${#checked[@]} file(s) changed since ${base}" >&2
((${#checked[@]} == 0)) && exit 0
# The release tree compiles goro's libraries as GCC fat LTO objects
# (cmake/GoroLto.cmake), a flag clang does not know; it changes no code.
printf '%s\0' "${checked[@]}" |
  xargs -0 -P "$(nproc)" -n 4 "$tidy" -p "$build" --quiet --warnings-as-errors='*' \
    --extra-arg=-Wno-ignored-optimization-argument 2>/dev/null
