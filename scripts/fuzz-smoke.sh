#!/usr/bin/env bash
# Fuzzes each libFuzzer harness of tests/fuzz for a bounded time, starting
# from a copy of its committed seed corpus (the tree is never written), and
# fails on any finding: a crash, a sanitizer report, a leak, a timeout or
# running out of memory. Needs the fuzz preset built:
#   cmake --preset fuzz && cmake --build --preset fuzz
#
# Usage: scripts/fuzz-smoke.sh [SECONDS_PER_HARNESS [HARNESS...]]
#   default: 45 seconds each, every harness (selector sparse dense plugin_table)
# Environment: XHAL_FUZZ_BUILD   build folder (default build-fuzz)
#              XHAL_FUZZ_OUT     where logs and crash files go (default: a new
#                                folder under /tmp, kept only when something failed)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-45}
shift || true
harnesses=("$@")
((${#harnesses[@]})) || harnesses=(selector sparse dense plugin_table)
build=${XHAL_FUZZ_BUILD:-build-fuzz}
out=${XHAL_FUZZ_OUT:-$(mktemp -d /tmp/xhal-fuzz-smoke.XXXXXX)}
mkdir -p "$out"

failed=()
for h in "${harnesses[@]}"; do
  bin=$build/bin/xhal-fuzz-$h
  if [[ ! -x $bin ]]; then
    echo "fuzz-smoke: $bin is missing (cmake --preset fuzz && cmake --build --preset fuzz)" >&2
    exit 2
  fi
  work=$out/$h
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp tests/fuzz/corpus/"$h"/* "$work/corpus/"
  start=$(date +%s)
  # -timeout: one input may take at most 10 s (a hang is a finding);
  # -rss_limit_mb: so does growing past 2 GB.
  if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/log" 2>&1; then
    result=ok
  else
    result=FAILED
    failed+=("$h")
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
  echo "fuzz-smoke: $h: $result, ${runs:-?} executions in $(( $(date +%s) - start )) s"
  if [[ $result == FAILED ]]; then
    grep -E -m1 -A40 'ERROR: |runtime error|broken promise|deadly signal|Timeout|out-of-memory' "$work/log" >&2 || tail -40 "$work/log" >&2
    ls "$work/artifacts" >&2 || true
  fi
done

if ((${#failed[@]})); then
  echo "fuzz-smoke: findings in ${failed[*]}; logs and reproducers under $out" >&2
  exit 1
fi
[[ -n ${XHAL_FUZZ_OUT:-} ]] || rm -rf "$out"
echo "fuzz-smoke: no findings"
