#!/usr/bin/env bash
# Compares libxhal's app ABI with the committed baseline abi/<SONAME>.abi
# (docs/abi.md, "ABI baseline").
#
#   scripts/check-abi.sh [LIBXHAL]                   check
#   scripts/check-abi.sh --update [--accept] [LIBXHAL]
#                                                    rewrite the baseline
#
# LIBXHAL is a libxhal.so built with -g (CI passes build-asan/lib/libxhal.so,
# which test.sh has just built). Without it the script builds target xhal
# in build-abi/ (Debug, nothing else).
#
# Check: exit 1 when anything but added functions or variables changed
# (removed or retyped functions, struct layouts, enum values...), or when
# the SONAME has no baseline yet (the version changed: refresh it).
# Additions (and appended enumerators, which abidiff deems harmless) pass;
# added functions are printed as a reminder to refresh the baseline.
#
# --update writes the baseline, but refuses a change the check fails under
# the same SONAME: raise the minor of VERSION (while 0.x) first. --accept
# overrides that, for a reviewed change abidiff cannot judge (a field
# appended to a struct_size struct) or a series not released yet.
set -euo pipefail
cd "$(dirname "$0")/.."
update=0 accept=0 lib=
for a in "$@"; do
  case $a in
    --update) update=1 ;;
    --accept) accept=1 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check-abi: unknown option $a" >&2; exit 2 ;;
    *) lib=$a ;;
  esac
done
if ((accept && !update)); then
  echo "check-abi: --accept only goes with --update" >&2; exit 2
fi
for t in abidw abidiff readelf; do
  command -v $t >/dev/null || {
    echo "check-abi: $t not found (Debian: abigail-tools, binutils; see scripts/install-deps.sh)" >&2
    exit 2; }
done

if [[ -z $lib ]]; then
  # Debug: -g at the lowest compile cost. Only the library is built.
  if [[ ! -f build-abi/CMakeCache.txt ]]; then
    cmake -S . -B build-abi -G Ninja -DCMAKE_BUILD_TYPE=Debug \
      -DXHAL_ENABLE_CUDA=OFF -DXHAL_ENABLE_ROCM=OFF -DXHAL_ENABLE_VULKAN=OFF \
      -DXHAL_BUILD_TESTS=OFF -DXHAL_BUILD_CONFORMANCE=OFF \
      -DXHAL_BUILD_BENCH=OFF -DXHAL_BUILD_SAMPLES=OFF >/dev/null
  fi
  cmake --build build-abi --target xhal -j"${JOBS:-2}" >/dev/null
  lib=build-abi/lib/libxhal.so
fi
[[ -f $lib ]] || { echo "check-abi: $lib does not exist" >&2; exit 2; }
# Without DWARF abidw sees symbols only, and struct layouts would go unchecked.
if ! readelf -S --wide "$lib" | grep -q '\.debug_info'; then
  echo "check-abi: $lib has no debug info; pass a -g build (build-asan, Debug or RelWithDebInfo)" >&2
  exit 2
fi
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
[[ -n $soname ]] || { echo "check-abi: $lib has no SONAME" >&2; exit 2; }
baseline=abi/$soname.abi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Only what the public headers define counts: the opaque handles' private
# structs become declarations, libstdc++ internals are left out, and no
# path or line number goes in (they would churn the baseline for nothing).
abidw --exported-interfaces-only --headers-dir hal/include/xhal --drop-private-types \
      --no-corpus-path --no-comp-dir-path --no-show-locs --type-id-style hash \
      --drop-undefined-syms --no-elf-needed --out-file "$tmp/current.abi" "$lib"

write_baseline() {
  mkdir -p abi
  cp "$tmp/current.abi" "$baseline"
  echo "check-abi: wrote $baseline"
  for old in abi/libxhal.so.*.abi; do
    if [[ $old != "$baseline" && -f $old ]]; then
      rm "$old"; echo "check-abi: removed $old (an older SONAME; git history keeps it)"
    fi
  done
}

# The abixml records the architecture; another one would differ everywhere.
arch() { sed -n "1s/.*architecture='\([^']*\)'.*/\1/p" "$1"; }
if [[ -f $baseline && $(arch "$baseline") != "$(arch "$tmp/current.abi")" ]]; then
  echo "check-abi: skipped: $baseline is for $(arch "$baseline"), $lib is $(arch "$tmp/current.abi")"
  exit 0
fi

if [[ ! -f $baseline ]]; then
  if ((update)); then write_baseline; exit 0; fi
  others=$(ls abi/libxhal.so.*.abi 2>/dev/null | tr '\n' ' ' || true)
  echo "check-abi: FAIL: no baseline for $soname (abi/ has: ${others:-nothing})."
  echo "  The version (SONAME) changed without the baseline: run scripts/check-abi.sh --update"
  echo "  and commit the new abi/$soname.abi with the version change."
  exit 1
fi

# abidiff exit status: bit 1 tool error, 2 usage error, 4 ABI change, 8
# incompatible change. libabigail 2.2 sets bit 8 only for removed symbols; a
# reordered struct is bit 4 alone. So: run once hiding added symbols, where
# any change at all is a break, then once in full for the report.
run_abidiff() {  # extra args...; sets rc, output in $tmp/report
  set +e
  abidiff "$@" "$baseline" "$tmp/current.abi" >"$tmp/report" 2>&1
  rc=$?
  set -e
  if ((rc & 3)); then
    cat "$tmp/report" >&2; echo "check-abi: abidiff failed (exit $rc)" >&2; exit 2
  fi
}
run_abidiff --no-added-syms
breaking=$rc
cp "$tmp/report" "$tmp/breaks"
run_abidiff

if ((breaking)); then
  echo "check-abi: INCOMPATIBLE change against $baseline (abidiff exit $breaking):"
  sed 's/^/  /' "$tmp/breaks"
  if ((update && accept)); then
    echo "check-abi: --accept: taking it into the baseline under the same SONAME"
    write_baseline; exit 0
  fi
  echo "check-abi: FAIL. If the change is intended, raise the minor of VERSION in"
  echo "  CMakeLists.txt (new SONAME), rename the node in hal/src/exports.map to match,"
  echo "  run scripts/check-abi.sh --update and commit all three together. For a field"
  echo "  appended to a struct_size struct, or while this series is unreleased, review"
  echo "  it and run scripts/check-abi.sh --update --accept instead (docs/abi.md)."
  exit 1
fi
if ((rc)); then
  echo "check-abi: compatible additions since $baseline:"
  sed 's/^/  /' "$tmp/report"
  if ((update)); then write_baseline; exit 0; fi
  echo "check-abi: OK (additions only). Refresh the baseline before the release:"
  echo "  scripts/check-abi.sh --update"
  exit 0
fi
if ((update)) && ! cmp -s "$tmp/current.abi" "$baseline"; then
  write_baseline   # same ABI, other representation (e.g. a newer abidw)
  exit 0
fi
echo "check-abi: OK: $soname matches $baseline"
