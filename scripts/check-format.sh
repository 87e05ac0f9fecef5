#!/usr/bin/env bash
# Checks that every tracked C and C++ file is formatted as .clang-format
# says (clang-format 14). Names the files that differ and fails if any does;
# `clang-format -i <file>...` fixes them. CLANG_FORMAT picks another binary.
set -euo pipefail
cd "$(dirname "$0")/.."
cf=${CLANG_FORMAT:-}
if [[ -z $cf ]]; then
  cf=clang-format-14
  command -v "$cf" >/dev/null || cf=clang-format
fi
command -v "$cf" >/dev/null || { echo "check-format: $cf not found" >&2; exit 2; }
files=()
while IFS= read -r -d '' f; do
  [[ -f $f ]] && files+=("$f")  # skips files deleted in the working tree
done < <(git ls-files -z -- '*.c' '*.h' '*.cc' '*.cpp' '*.hpp' '*.cu' '*.cuh')
rc=0
out=$(printf '%s\0' "${files[@]}" |
  xargs -0 "$cf" --style=file --dry-run -Werror --ferror-limit=1 2>&1 >/dev/null) || rc=$?
mapfile -t differ < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' \
  <<<"$out" | sort -u)
if ((${#differ[@]})); then
  echo "check-format: ${#differ[@]} of ${#files[@]} files differ from $cf's format:" >&2
  printf '  %s\n' "${differ[@]}" >&2
  echo "check-format: fix with: $cf -i <file>..." >&2
  exit 1
elif ((rc)); then
  echo "$out" >&2
  echo "check-format: $cf failed" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files clean"
