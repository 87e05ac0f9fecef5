#!/usr/bin/env bash
# The long fuzz runs of docs/robustness.md ("Long fuzz runs"): every harness
# at once, each with several libFuzzer workers sharing one corpus, until the
# harness has run EXECS executions or the time limit is reached. Prints one
# line per harness (executions, seconds, findings) and writes them to
# OUT/summary.txt; the grown corpora go to OUT/corpus.tar.gz so that a later
# run can go on from them (--resume).
#
# Usage: scripts/fuzz-long.sh [options] OUT_DIR
#   --execs N       executions per harness (default 10000000)
#   --workers N     libFuzzer workers per harness (default 3)
#   --workers-for NAME=N  another number for one harness (repeatable)
#   --seconds N     time limit per harness (default 28800)
#   --resume FILE   start from the corpora of an earlier run's corpus.tar.gz
#   --harness NAME  only this harness (repeatable; default: all four)
# Environment: XHAL_FUZZ_BUILD  build folder of the fuzz preset (default build-fuzz)
# Exit status: 0 when no harness found anything, 1 otherwise, 2 on bad usage.
set -u
cd "$(dirname "$0")/.."
repo=$PWD
execs=10000000 workers=3 seconds=28800 resume="" out="" harnesses=()
while [ $# -gt 0 ]; do
  case "$1" in
    --execs) execs=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --workers-for) declare "w_${2%%=*}=${2#*=}"; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --resume) resume=$(realpath "$2"); shift 2 ;;
    --harness) harnesses+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz-long: unknown option $1" >&2; exit 2 ;;
    *) out=$1; shift ;;
  esac
done
[ -n "$out" ] || { echo "usage: scripts/fuzz-long.sh [options] OUT_DIR" >&2; exit 2; }
((${#harnesses[@]})) || harnesses=(selector sparse dense plugin_table)
build=${XHAL_FUZZ_BUILD:-build-fuzz}
mkdir -p "$out"
out=$(realpath "$out")
work=$(mktemp -d /tmp/xhal-fuzz-long.XXXXXX)
[ -z "$resume" ] || tar -xzf "$resume" -C "$work"

# Each job of -jobs runs -runs executions; W jobs on W workers share the corpus.
workers_of() { local v="w_$1"; echo "${!v:-$workers}"; }
start=$(date +%s)
for h in "${harnesses[@]}"; do
  nw=$(workers_of "$h")
  per_job=$(((execs + nw - 1) / nw))
  case $build in /*) bin=$build/bin/xhal-fuzz-$h ;; *) bin=$repo/$build/bin/xhal-fuzz-$h ;; esac
  [ -x "$bin" ] || { echo "fuzz-long: $bin is missing (cmake --preset fuzz && cmake --build --preset fuzz)" >&2; exit 2; }
  mkdir -p "$work/$h/corpus" "$work/$h/artifacts" "$work/$h/logs"
  cp -n "$repo"/tests/fuzz/corpus/"$h"/* "$work/$h/corpus/"
  # -timeout: one input may take at most 10 s (a hang is a finding);
  # -rss_limit_mb: so does growing past 2 GB.
  (cd "$work/$h/logs" && "$bin" -jobs="$nw" -workers="$nw" -runs="$per_job" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/$h/artifacts/" "$work/$h/corpus" >parent.log 2>&1) &
done
wait
elapsed=$(($(date +%s) - start))

failed=0
: >"$out/summary.txt"
for h in "${harnesses[@]}"; do
  n=$(cat "$work/$h"/logs/fuzz-*.log 2>/dev/null |
    sed -n 's/^stat::number_of_executed_units: *//p' | awk '{s += $1} END {print s + 0}')
  found=$(find "$work/$h/artifacts" -type f | wc -l)
  errors=$(cat "$work/$h"/logs/fuzz-*.log 2>/dev/null |
    grep -c -E '^==[0-9]+==ERROR|runtime error:|deadly signal|ALARM: working on the last Unit|out-of-memory \(')
  files=$(find "$work/$h/corpus" -type f | wc -l)
  [ "$found" = 0 ] && [ "$errors" = 0 ] || failed=1
  printf '%-13s %11s executions %6s s %3s workers  findings %s (reports %s)  corpus %s files\n' \
    "$h" "$n" "$elapsed" "$(workers_of "$h")" "$found" "$errors" "$files" | tee -a "$out/summary.txt"
  if [ "$found" != 0 ] || [ "$errors" != 0 ]; then
    grep -h -E -m1 -A30 '^==[0-9]+==ERROR|runtime error:|deadly signal|ALARM' \
      "$work/$h"/logs/fuzz-*.log >>"$out/findings-$h.txt" 2>/dev/null
    tar -czf "$out/artifacts-$h.tar.gz" -C "$work/$h" artifacts logs
  fi
done
tar -czf "$out/corpus.tar.gz" -C "$work" $(for h in "${harnesses[@]}"; do echo "$h/corpus"; done)
echo "fuzz-long: $([ $failed = 0 ] && echo 'no findings' || echo FINDINGS) in $elapsed s;" \
  "corpora in $out/corpus.tar.gz" | tee -a "$out/summary.txt"
[ -n "${XHAL_FUZZ_KEEP:-}" ] && echo "fuzz-long: work folder kept: $work" || rm -rf "$work"
exit $failed
