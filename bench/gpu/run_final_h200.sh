#!/usr/bin/env bash
# The closing device call of the session (issue 5): bit-exact conformance
# with its report, the row-op benchmarks, PyTorch, cuSPARSE (with the
# creation trace), the per-call cost and the sanitizers, on the carried
# BUILD_DIR/{bin,lib,extra-lib}:   bench/gpu/run_final_h200.sh [BUILD_DIR]
set -u
B=${1:-build-dev}
OUT=${OUT:-/tmp/xhal-out}
mkdir -p "$OUT"
LOG=$OUT/run.log
export LD_LIBRARY_PATH=$PWD/$B/lib:$PWD/$B/extra-lib:${LD_LIBRARY_PATH:-}
export XHAL_DEVICE=cuda
step() { echo "===== $* ($(date -u +%H:%M:%S))" >>"$LOG"; }
step machine
{ nvidia-smi --query-gpu=name,driver_version --format=csv; date -u; "$B/bin/xhal-info"; } >>"$LOG" 2>&1
step "conformance --require-bit-exact"
timeout 100 "$B/bin/xhal-conformance" --device cuda --require-bit-exact \
  --report "$OUT/conformance-cuda.json" --gtest_brief=1 >>"$LOG" 2>&1
echo "exit $?" >>"$LOG"
step "xhal-bench row ops"
timeout 150 "$B/bin/xhal-bench" --benchmark_filter='BM_Softmax|BM_RmsNorm|BM_LayerNorm' \
  --benchmark_min_time=0.1 --benchmark_out="$OUT/xhal-bench.json" --benchmark_out_format=json \
  >>"$LOG" 2>&1
echo "exit $?" >>"$LOG"
step "torch_compare.py"
PYTHONUNBUFFERED=1 timeout 60 python3 bench/gpu/torch_compare.py "$OUT/torch.json" >>"$LOG" 2>&1
echo "exit $?" >>"$LOG"
step "cusparse_compare"
XHAL_CUDA_TRACE=1 timeout 120 "$B/bin/cusparse_compare" "$OUT/cusparse.json" >"$OUT/cusparse.log" 2>&1
echo "exit $?" >>"$LOG"
step "xhal-call-overhead"
timeout 30 "$B/bin/xhal-call-overhead" >>"$LOG" 2>&1
echo "exit $?" >>"$LOG"
# The fused norm backward only runs at >= 4,096 rows by default: force it so
# the sanitizers see it on the suite's small shapes.
SUBSET='*Buffer*:*Gather*:*ScatterAdd*:*Permute*:*Softmax*:*RmsNorm*:*LayerNorm*:*Sparse*'
for tool in memcheck racecheck; do
  step "compute-sanitizer $tool"
  XHAL_CUDA_NORM_BWD=fused timeout ${T_SAN:-100} compute-sanitizer --tool $tool --error-exitcode 17 \
    "$B/bin/xhal-conformance" --device cuda --gtest_brief=1 --gtest_filter="$SUBSET" \
    >"$OUT/$tool.log" 2>&1
  echo "exit $?" >>"$LOG"
done
step done
