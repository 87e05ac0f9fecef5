#!/usr/bin/env bash
# The GPU checks of the cuda plugin in one call, on a machine with an NVIDIA
# GPU (docs/gpu.md, "Checking on a GPU"). Writes under OUT_DIR at most 8
# files and prints a short summary (also OUT_DIR/summary.txt):
#   summary.txt           one line per step, the op table, before/after
#   run.log               every step's output
#   conformance-cuda.json the report of the bit-exact conformance run
#   xhal-bench.json       xhal-bench on cuda (Google Benchmark JSON)
#   xhal-bench-baseline.json  the same with the --baseline plugin
#   torch.json            bench/gpu/torch_compare.py (when torch imports)
#   cusparse.json         bench/gpu/cusparse_compare (when built)
#   call-overhead.json    xhal-call-overhead (when built)
# (xhal-index-floor, when built, writes its figures into run.log.)
#
# Usage:
#   scripts/gpu-check.sh [--prebuilt DIR] [--baseline PLUGIN.so] [--sanitize] OUT_DIR
#   scripts/gpu-check.sh --build-only [BUILD_DIR]
# Without --prebuilt it builds the cuda preset (cmake --preset cuda, binary
# folder build-cuda) first. --prebuilt DIR uses DIR/{bin,lib} built on
# another machine and carried; DIR/extra-lib, when present, holds shared
# libraries the GPU machine lacks. --build-only builds here and fills
# BUILD_DIR/extra-lib for that (BUILD_DIR other than build-cuda: a plain
# configure with the preset's settings). --baseline runs the benchmarks a
# second time with that libxhal-cuda.so (a build of the commit to compare
# against) and adds the before/after table. --sanitize adds
# compute-sanitizer memcheck and racecheck over a subset (slow).
# Exit status: 0 when every check that ran passed (benchmarks only need to
# run), 1 otherwise, 2 on bad usage.
set -u
cd "$(dirname "$0")/.."

PREBUILT="" BASELINE="" SANITIZE=0 BUILD_ONLY=0 OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prebuilt) PREBUILT=${2:?--prebuilt needs a folder}; shift 2 ;;
    --baseline) BASELINE=${2:?--baseline needs a plugin file}; shift 2 ;;
    --sanitize) SANITIZE=1; shift ;;
    --build-only) BUILD_ONLY=1; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
    *) OUT=$1; shift ;;
  esac
done

TARGETS="xhal xhal-plugin-cpu xhal-plugin-cuda xhal-info xhal-conformance xhal-bench
         cusparse_compare xhal-call-overhead xhal-index-floor"

build() {  # build folder: configure and build what the checks run
  local dir=$1
  if [ "$dir" = build-cuda ]; then
    cmake --preset cuda || return 1
  else
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXHAL_ENABLE_CUDA=ON \
      -DXHAL_ENABLE_ROCM=OFF -DXHAL_ENABLE_VULKAN=OFF || return 1
  fi
  # shellcheck disable=SC2086
  cmake --build "$dir" --target $TARGETS || return 1
}

if [ "$BUILD_ONLY" = 1 ]; then
  B=${OUT:-build-cuda}
  build "$B" || { echo "gpu-check: build failed" >&2; exit 1; }
  # Shared libraries from the distribution that a bare GPU image lacks
  # (Google Benchmark, GoogleTest): carried in B/extra-lib.
  mkdir -p "$B/extra-lib"
  for exe in "$B"/bin/*; do
    [ -x "$exe" ] && ldd "$exe" 2>/dev/null
  done | awk '/=> \// {print $3}' | sort -u | grep -E 'lib(benchmark|gtest|gmock)[^/]*$' |
    while read -r lib; do cp -L "$lib" "$B/extra-lib/"; done
  echo "built $B; carry $B/bin, $B/lib and $B/extra-lib, then run:"
  echo "  bash scripts/gpu-check.sh --prebuilt $B \$OUT"
  exit 0
fi

[ -n "$OUT" ] || { echo "usage: scripts/gpu-check.sh [--prebuilt DIR] [--baseline PLUGIN.so] [--sanitize] OUT_DIR" >&2; exit 2; }
mkdir -p "$OUT"
LOG=$OUT/run.log
SUMMARY=$OUT/summary.txt
: >"$LOG"
: >"$SUMMARY"
FAILED=0
START=$SECONDS
say() { echo "$*" | tee -a "$SUMMARY"; }
section() { printf '\n===== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)" >>"$LOG"; }
# One step: name, time limit in seconds, command; output to run.log.
# Sets RC and SECS.
run_step() {
  local name=$1 limit=$2; shift 2
  section "$name: $*"
  local t0=$SECONDS
  timeout "$limit" "$@" >>"$LOG" 2>&1
  RC=$?
  SECS=$((SECONDS - t0))
  [ "$RC" = 124 ] && echo "(stopped by its ${limit} s limit)" >>"$LOG"
  echo "exit $RC after ${SECS} s" >>"$LOG"
}
verdict() {  # name, rc, seconds, text: a summary line; a failure counts
  local status=ok
  if [ "$2" != 0 ]; then status=FAIL; FAILED=1; fi
  [ "$2" = 124 ] && status="FAIL (time limit)"
  say "$(printf '%-22s %-6s %4s s  %s' "$1" "$status" "$3" "$4")"
}

# ---- build ----
if [ -n "$PREBUILT" ]; then
  B=$PREBUILT
  say "$(printf '%-22s %-6s %4s s  %s' build skip 0 "prebuilt $B")"
else
  B=build-cuda
  section "build (cmake --preset cuda)"
  t0=$SECONDS
  build "$B" >>"$LOG" 2>&1
  rc=$?
  verdict build "$rc" $((SECONDS - t0)) "cmake --preset cuda, $B (log: run.log)"
  if [ "$rc" != 0 ]; then
    say "build failed: build elsewhere with 'scripts/gpu-check.sh --build-only' and pass --prebuilt"
    exit 1
  fi
fi
for f in "$B/bin/xhal-conformance" "$B/bin/xhal-info" "$B/lib/libxhal-cuda.so"; do
  [ -e "$f" ] || { say "missing $f"; exit 1; }
done
export LD_LIBRARY_PATH=$PWD/$B/lib:$PWD/$B/extra-lib:${LD_LIBRARY_PATH:-}
export XHAL_DEVICE=cuda
unset XHAL_DEVICE_OPTIONS XHAL_PLUGIN_PATH

# ---- the machine and the device ----
section machine
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
  date -u; git log -1 --format='tree at %h %s' 2>/dev/null; } >>"$LOG" 2>&1
run_step xhal-info 60 "$B/bin/xhal-info"
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
verdict xhal-info "$RC" "$SECS" "$(grep -m1 -o 'cuda:0.*' "$LOG" | cut -c1-80)"

# ---- conformance, bit-exact, with the report ----
CONF="$B/bin/xhal-conformance --device cuda --require-bit-exact --gtest_brief=1"
# Counts of a conformance report; fails unless some test ran on a cuda
# device and none failed (xhal-conformance exits 0 when it finds no device).
conf_counts() {
  python3 - "$1" <<'EOF' 2>/dev/null
import collections, json, sys
r = json.load(open(sys.argv[1]))["results"]
c = collections.Counter(x["status"] for x in r)
failed = sum(v for k, v in c.items() if k not in ("pass", "skipped"))
on_cuda = sum(1 for x in r if x.get("device", "").startswith("cuda"))
exact = sum(1 for x in r if x.get("level") == "bit-exact")
print(f"{c['pass']} passed, {c['skipped']} skipped, {failed} failed, {on_cuda} on cuda; "
      f"{exact} op results bit-exact")
sys.exit(0 if on_cuda and not failed else 1)
EOF
}
run_step conformance 240 $CONF --report "$OUT/conformance-cuda.json"
counts=$(conf_counts "$OUT/conformance-cuda.json") || [ "$RC" != 0 ] || RC=1
verdict conformance "$RC" "$SECS" "${counts:-no report} (conformance-cuda.json)"

# ---- device options: in force, set, refused (public API, bench/gpu/options_check.py) ----
run_step options 60 python3 bench/gpu/options_check.py "$B"
verdict "device options" "$RC" "$SECS" "$(grep -m1 'defaults in force' "$LOG" | cut -c1-60)..."

# ---- the paths the defaults do not take, forced through device options ----
# Every form must give the same bits (--require-bit-exact). The filters
# match the suite's test names old and new (SparseSolve / CsrSolveTest).
SPARSE='*Sparse*:*Csr*:*Spmv*:*Spmm*:*Spgemm*'
SOLVES='*SparseSolve*:*CsrSolve*'
TMPD=$(mktemp -d)
variant() {  # name, options, gtest filter
  XHAL_DEVICE_OPTIONS="cuda:$2" run_step "conformance $1" 120 $CONF --gtest_filter="$3" \
    --report "$TMPD/$1.json"
  local n
  n=$(conf_counts "$TMPD/$1.json") || [ "$RC" != 0 ] || RC=1
  verdict "conf $1" "$RC" "$SECS" "${n%%;*} with $2"
}
variant fused-norm "norm_backward.fused_from_rows=0" '*RmsNorm*:*LayerNorm*'
variant separate-norm "norm_backward.fused_from_rows=1099511627776" '*RmsNorm*:*LayerNorm*'
variant levels "solve.schedule=levels" "$SPARSE"
variant syncfree-alt "solve.poll=lanes,solve.poll_terms=32,solve.blocks_per_sm=2,solve.block_threads=64,solve.sleep_ns=100" "$SOLVES"
rm -rf "$TMPD"

# ---- benchmarks ----
FILTER=${GPU_CHECK_BENCH_FILTER:-'BM_Copy/1073741824|BM_Index(Select|Add)/1000000|BM_IndexAddFewRows|BM_Transpose2D|BM_PermuteLastTwo|BM_Softmax|BM_RmsNorm|BM_LayerNorm|BM_Sparse'}
if [ -x "$B/bin/xhal-bench" ]; then
  BENCH=("$B/bin/xhal-bench" --benchmark_filter="$FILTER" --benchmark_min_time=0.1
         --benchmark_out_format=json)
  run_step xhal-bench 250 "${BENCH[@]}" --benchmark_out="$OUT/xhal-bench.json"
  n=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['benchmarks']))" "$OUT/xhal-bench.json" 2>/dev/null)
  verdict xhal-bench "$RC" "$SECS" "${n:-no} benchmarks (xhal-bench.json)"
  if [ -n "$BASELINE" ]; then
    # The baseline plugin comes first in the search path, so it serves cuda.
    XHAL_PLUGIN_PATH=$(realpath "$BASELINE") run_step "xhal-bench baseline" 250 "${BENCH[@]}" \
      --benchmark_out="$OUT/xhal-bench-baseline.json"
    verdict "xhal-bench baseline" "$RC" "$SECS" "$BASELINE (xhal-bench-baseline.json)"
  fi
else
  say "xhal-bench             skip          not built"
fi

if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  PYTHONUNBUFFERED=1 run_step torch_compare 150 python3 bench/gpu/torch_compare.py "$OUT/torch.json"
  verdict torch_compare "$RC" "$SECS" "PyTorch $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null) (torch.json)"
else
  say "torch_compare          skip          torch with CUDA not importable"
fi

if [ -x "$B/bin/cusparse_compare" ]; then
  XHAL_DEVICE_OPTIONS=cuda:trace=1 run_step cusparse_compare 200 "$B/bin/cusparse_compare" "$OUT/cusparse.json"
  d=$(grep -c "ELEMENTS DIFFER" "$LOG")
  verdict cusparse_compare "$RC" "$SECS" "every solve schedule against the host solve: $d differing (cusparse.json)"
else
  say "cusparse_compare       skip          not built (no cuSPARSE)"
fi

if [ -x "$B/bin/xhal-call-overhead" ]; then
  run_step call-overhead 60 "$B/bin/xhal-call-overhead" "$OUT/call-overhead.json"
  verdict call-overhead "$RC" "$SECS" "$(grep -m1 -i 'op - bare' "$LOG" | tr -s ' ' | cut -c1-70)"
fi

if [ -x "$B/bin/xhal-index-floor" ]; then
  # index_select / index_add beside kernels moving the same bytes with no
  # index loads (docs/performance.md "index_add"); its figures go to run.log.
  run_step index-floor 60 env XHAL_DEVICE=cuda:0 "$B/bin/xhal-index-floor"
  verdict index-floor "$RC" "$SECS" "$(grep 'xhal index_add  ' "$LOG" | tail -1 | tr -s ' ' | cut -c1-70)"
fi

if [ "$SANITIZE" = 1 ] && command -v compute-sanitizer >/dev/null; then
  # memcheck: every op family but softmax; racecheck (shared-memory hazards,
  # much slower): the kernels that share memory within a block.
  for tool in memcheck racecheck; do
    if [ "$tool" = memcheck ]; then
      subset='*Buffer*:*Gather*:*IndexSelect*:*ScatterAdd*:*IndexAdd*:*Permute*:*RmsNorm*:*LayerNorm*:*Spmv*:*SparseSolve.*:*CsrSolveTest.*'
    else
      subset='*Permute*:*RmsNorm*:*LayerNorm*'
    fi
    XHAL_DEVICE_OPTIONS=cuda:norm_backward.fused_from_rows=0 run_step "$tool" 120 \
      compute-sanitizer --tool "$tool" --error-exitcode 17 "$B/bin/xhal-conformance" --device cuda \
      --no-isolate --gtest_brief=1 --gtest_filter="$subset"
    verdict "$tool" "$RC" "$SECS" "$subset, fused norm backward forced"
  done
fi

# ---- tables ----
if [ -f "$OUT/xhal-bench.json" ] && [ -f "$OUT/torch.json" ]; then
  { echo; echo "op table (bench/gpu/make_table.py):"; python3 bench/gpu/make_table.py "$OUT" --no-notes 2>&1; } | tee -a "$SUMMARY"
fi
if [ -f "$OUT/xhal-bench.json" ] && [ -f "$OUT/xhal-bench-baseline.json" ]; then
  { echo; echo "before (--baseline) / after (this tree), bench/gpu/compare_bench.py:"
    python3 bench/gpu/compare_bench.py "$OUT/xhal-bench.json" "$OUT/xhal-bench-baseline.json" 2>&1; } | tee -a "$SUMMARY"
fi
say ""
say "gpu-check: $([ "$FAILED" = 0 ] && echo PASS || echo FAIL) in $((SECONDS - START)) s; files in $OUT"
exit "$FAILED"
