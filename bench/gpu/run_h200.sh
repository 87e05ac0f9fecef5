#!/usr/bin/env bash
# The whole H200 device call of issue 5, run from the repository root on the
# device machine with the build folder carried (cmake --preset cuda, or a
# lean configure: -DXHAL_ENABLE_CUDA=ON -DXHAL_BUILD_TESTS=OFF):
#   bench/gpu/run_h200.sh [BUILD_DIR] [quick]
# Writes under $OUT (at most 8 files): run.log (xhal-info, conformance and
# sanitizer output), conformance-cuda.json, xhal-bench.json, torch.json,
# cusparse.json, call-overhead.json. "quick" runs only xhal-info, the
# conformance suite and the sanitizers. The sanitizers run last (they are the slowest part).
set -u
B=${1:-build-cuda}
MODE=${2:-full}
OUT=${OUT:-/tmp/xhal-out}
mkdir -p "$OUT"
LOG=$OUT/run.log
export LD_LIBRARY_PATH=$PWD/$B/lib:$PWD/$B/extra-lib:${LD_LIBRARY_PATH:-}
export XHAL_DEVICE=cuda
section() { echo; echo "===== $* ($(date -u +%H:%M:%S))"; } >>"$LOG"

section "machine"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  date -u; uname -r; } >>"$LOG" 2>&1

section "xhal-info"
"$B/bin/xhal-info" >>"$LOG" 2>&1

section "xhal-conformance --device cuda --report conformance-cuda.json"
timeout ${T_CONF:-200} "$B/bin/xhal-conformance" --device cuda --require-bit-exact --report "$OUT/conformance-cuda.json" \
  --gtest_brief=1 >>"$LOG" 2>&1
echo "conformance exit code $?" >>"$LOG"

sanitizers() {
# A representative subset under the sanitizers (they slow kernels ~100x).
SUBSET='*Buffer*:*Gather*:*ScatterAdd*:*Permute*:*Softmax*:*RmsNorm*:*LayerNorm*:*Sparse*'
if [ -z "${SKIP_SANITIZERS:-}" ]; then
section "compute-sanitizer memcheck (subset)"
timeout ${T_SAN:-120} compute-sanitizer --tool memcheck --error-exitcode 17 \
  "$B/bin/xhal-conformance" --device cuda --gtest_brief=1 --gtest_filter="$SUBSET" \
  >>"$LOG" 2>&1
echo "memcheck exit code $?" >>"$LOG"
section "compute-sanitizer racecheck (subset)"
timeout ${T_SAN:-120} compute-sanitizer --tool racecheck --error-exitcode 17 \
  "$B/bin/xhal-conformance" --device cuda --gtest_brief=1 --gtest_filter="$SUBSET" \
  >>"$LOG" 2>&1
echo "racecheck exit code $?" >>"$LOG"
fi
}
[ "$MODE" = quick ] && { sanitizers; exit 0; }

section "xhal-bench (XHAL_DEVICE=cuda)"
if [ -x "$B/bin/xhal-bench" ]; then
  timeout ${T_BENCH:-180} "$B/bin/xhal-bench" --benchmark_out="$OUT/xhal-bench.json" --benchmark_out_format=json \
    --benchmark_min_time=0.2 --benchmark_filter="${BENCH_FILTER:-.}" >>"$LOG" 2>&1
  echo "xhal-bench exit code $?" >>"$LOG"
else
  echo "no xhal-bench in $B/bin" >>"$LOG"
fi

if [ -z "${SKIP_TORCH:-}" ]; then
section "torch_compare.py"
PYTHONUNBUFFERED=1 timeout ${T_TORCH:-150} python3 bench/gpu/torch_compare.py "$OUT/torch.json" >>"$LOG" 2>&1
echo "torch_compare exit code $?" >>"$LOG"
fi

section "xhal-call-overhead (per-call cost: host / queued / sync, docs/overhead.md)"
if [ -x "$B/bin/xhal-call-overhead" ]; then
  timeout ${T_CALL:-60} "$B/bin/xhal-call-overhead" "$OUT/call-overhead.json" >>"$LOG" 2>&1
  echo "xhal-call-overhead exit code $?" >>"$LOG"
else
  echo "no xhal-call-overhead in $B/bin" >>"$LOG"
fi

section "cusparse_compare"
CC=$B/bin/cusparse_compare
if [ ! -x "$CC" ]; then
  nvcc -std=c++17 -O2 -arch=sm_90 -Ihal/include bench/gpu/cusparse_compare.cu -o /tmp/cusparse_compare \
    -L"$B/lib" -lxhal -lcusparse >>"$LOG" 2>&1 && CC=/tmp/cusparse_compare
fi
XHAL_CUDA_TRACE=1 timeout ${T_SPARSE:-150} "$CC" "$OUT/cusparse.json" >>"$LOG" 2>&1
echo "cusparse_compare exit code $?" >>"$LOG"
sanitizers
section "done"
