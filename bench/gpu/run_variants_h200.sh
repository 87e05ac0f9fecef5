#!/usr/bin/env bash
# Device call that chooses the CUDA plugin's dense-kernel defaults (issue 5):
# the old-against-new prototype, conformance with the non-default variants,
# and xhal-bench once per variant setting. From the repository root on the
# H200 with BUILD_DIR/{bin,lib,extra-lib} carried (extra-lib: Debian's
# libbenchmark, which the device machine lacks):
#   bench/gpu/run_variants_h200.sh [BUILD_DIR]
set -u
B=${1:-build-dev}
OUT=${OUT:-/tmp/xhal-out}
mkdir -p "$OUT"
LOG=$OUT/variants.log
export LD_LIBRARY_PATH=$PWD/$B/lib:$PWD/$B/extra-lib:${LD_LIBRARY_PATH:-}
export XHAL_DEVICE=cuda
step() { echo "===== $* ($(date -u +%H:%M:%S))" >>"$LOG"; }
step "conformance with XHAL_CUDA_NORM_BWD=fused XHAL_CUDA_TRANSPOSE=32v4"
XHAL_CUDA_NORM_BWD=fused XHAL_CUDA_TRANSPOSE=32v4 timeout 60 "$B/bin/xhal-conformance" \
  --device cuda --require-bit-exact --gtest_brief=1 >>"$LOG" 2>&1
echo "exit $?" >>"$LOG"
# The copy_ratio counters compare each op with copies interleaved in the same
# process; only the default run keeps a JSON (the device call returns at
# most 8 files), the variants are read from the log.
bench() {  # name, filter, env...
  local name=$1 filter=$2; shift 2
  step "xhal-bench $name"
  local out=()
  [ "$name" = default ] && out=(--benchmark_out="$OUT/xhal-bench.json" --benchmark_out_format=json)
  env "$@" timeout 90 "$B/bin/xhal-bench" --benchmark_filter="$filter" --benchmark_min_time=0.1 \
    "${out[@]}" >>"$LOG" 2>&1
  echo "exit $?" >>"$LOG"
}
bench default 'BM_Copy/1073741824|BM_Index|BM_Transpose|BM_Permute|BM_Softmax|BM_RmsNorm|BM_LayerNorm'
for t in 32v4 64v2 32; do
  bench "transpose-$t" 'BM_Transpose|BM_Permute' XHAL_CUDA_TRANSPOSE=$t
done
for v in fused_nopf fused_smem fused_smem_nopf separate; do
  bench "normbwd-$v" 'NormBackward' XHAL_CUDA_NORM_BWD=$v
done
step "torch_compare.py"
PYTHONUNBUFFERED=1 timeout 100 python3 bench/gpu/torch_compare.py "$OUT/torch.json" >>"$LOG" 2>&1
echo "exit $?" >>"$LOG"
step "proto_dense"
timeout ${T_PROTO:-150} "$B/bin/proto_dense" >"$OUT/proto_dense.txt" 2>&1
echo "exit $?" >>"$LOG"
step done
