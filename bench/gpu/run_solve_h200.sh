#!/usr/bin/env bash
# Device call for the triangular-solve work of issue 5 (run from the
# repository root on the H200 with BUILD_DIR carried):
#   bench/gpu/run_solve_h200.sh [BUILD_DIR]
# Writes under $OUT: run.log (xhal-info, conformance with both solve
# schedules, sanitizers), conformance-cuda.json, cusparse.log, cusparse.json.
set -u
B=${1:-build-cuda}
OUT=${OUT:-/tmp/xhal-out}
mkdir -p "$OUT"
LOG=$OUT/run.log
export LD_LIBRARY_PATH=$PWD/$B/lib:${LD_LIBRARY_PATH:-}
export XHAL_DEVICE=cuda
step() { echo "===== $* ($(date -u +%H:%M:%S))" >>"$LOG"; }
step machine
nvidia-smi --query-gpu=name,driver_version --format=csv >>"$LOG" 2>&1
"$B/bin/xhal-info" >>"$LOG" 2>&1
step "conformance (default schedule)"
timeout ${T_CONF:-150} "$B/bin/xhal-conformance" --device cuda --require-bit-exact \
  --report "$OUT/conformance-cuda.json" --gtest_brief=1 >>"$LOG" 2>&1
echo "exit $?" >>"$LOG"
step "conformance, sparse, XHAL_CUDA_SOLVE=levels"
XHAL_CUDA_SOLVE=levels timeout 90 "$B/bin/xhal-conformance" --device cuda --require-bit-exact \
  --gtest_brief=1 --gtest_filter='*Sparse*' >>"$LOG" 2>&1
echo "exit $?" >>"$LOG"
step "cusparse_compare"
XHAL_CUDA_TRACE=1 timeout ${T_SPARSE:-200} "$B/bin/cusparse_compare" "$OUT/cusparse.json" \
  >"$OUT/cusparse.log" 2>&1
echo "exit $?" >>"$LOG"
step "memcheck, sparse"
timeout ${T_SAN:-90} compute-sanitizer --tool memcheck --error-exitcode 17 "$B/bin/xhal-conformance" \
  --device cuda --gtest_brief=1 --gtest_filter='*Sparse*' >>"$LOG" 2>&1
echo "exit $?" >>"$LOG"
step "racecheck, solves"
timeout ${T_SAN:-90} compute-sanitizer --tool racecheck --error-exitcode 17 "$B/bin/xhal-conformance" \
  --device cuda --gtest_brief=1 --gtest_filter='*SparseSolve*' >>"$LOG" 2>&1
echo "exit $?" >>"$LOG"
step done
