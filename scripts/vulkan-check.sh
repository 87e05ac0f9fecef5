#!/usr/bin/env bash
# The Vulkan plugin on the GPU machine (NVIDIA driver), in one call of the
# device tool, under 10 minutes (docs/vulkan.md, "Checking on the H200").
#
# Here (builds the cuda and vulkan plugins, the suite and the benchmark, and
# packs what the GPU machine needs into .vkcheck/, ignored by git):
#   bash ../shared/device/vulkan-loader.sh        # the Vulkan loader debs into .gl/
#   bash scripts/vulkan-check.sh --build-only      # build-vkcheck/ -> .vkcheck/
# On the GPU machine (carry [".gl", ".vkcheck"]):
#   bash scripts/vulkan-check.sh $OUT
# which writes to OUT (at most 8 files):
#   summary.txt              one line per step and the vulkan/cuda/copy table
#   run.log                  every step's output
#   conformance-vulkan.json  bit-exact conformance on vulkan:0
#   conformance-cuda.json    the same on cuda:0 (same run, same GPU)
#   bench-vulkan.json, bench-cuda.json   xhal-bench (Google Benchmark JSON;
#                            each benchmark warms the GPU for 0.5 s first)
#   samples.txt              each sample's digest on cpu, cuda:0, vulkan:0
# Exit status: 0 when both conformance runs passed on a device, else 1.
set -u
cd "$(dirname "$0")/.."
PACK=.vkcheck

if [ "${1:-}" = --build-only ]; then
  B=${2:-build-vkcheck}
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DXHAL_ENABLE_CUDA=ON \
    -DXHAL_ENABLE_ROCM=OFF -DXHAL_ENABLE_VULKAN=ON -DXHAL_BUILD_TESTS=OFF || exit 1
  cmake --build "$B" -j "${JOBS:-2}" --target xhal xhal-plugin-cuda xhal-plugin-vulkan \
    xhal-plugin-cpu xhal-info xhal-conformance xhal-bench xhal-gnn xhal-river xhal-norm-block || exit 1
  grep -qx "/$PACK/" .git/info/exclude 2>/dev/null || echo "/$PACK/" >>.git/info/exclude
  rm -rf "$PACK" && mkdir -p "$PACK/bin" "$PACK/lib" "$PACK/extra-lib"
  cp "$B"/bin/xhal-info "$B"/bin/xhal-conformance "$B"/bin/xhal-bench "$B"/bin/xhal-gnn \
    "$B"/bin/xhal-river "$B"/bin/xhal-norm-block "$PACK/bin/"
  cp -P "$B"/lib/libxhal.so* "$B"/lib/libxhal-cuda.so "$B"/lib/libxhal-vulkan.so \
    "$B"/lib/libxhal-cpu.so "$PACK/lib/"
  # Distribution libraries a bare GPU image lacks.
  for exe in "$PACK"/bin/*; do ldd "$exe"; done | awk '/=> \// {print $3}' | sort -u |
    grep -E 'lib(benchmark|gtest|gmock)[^/]*$' | while read -r lib; do cp -L "$lib" "$PACK/extra-lib/"; done
  du -sh "$PACK"
  echo "packed $PACK; on the GPU machine, carry .gl and $PACK and run: bash scripts/vulkan-check.sh \$OUT"
  exit 0
fi

OUT=${1:?usage: scripts/vulkan-check.sh OUT_DIR | --build-only [BUILD_DIR]}
mkdir -p "$OUT"
LOG=$OUT/run.log SUMMARY=$OUT/summary.txt
: >"$LOG"
: >"$SUMMARY"
FAILED=0 START=$SECONDS
say() { echo "$*" | tee -a "$SUMMARY"; }
step() {  # name, limit (s), command...: output to run.log; sets RC, SECS
  local name=$1 limit=$2
  shift 2
  printf '\n===== %s (%s): %s\n' "$name" "$(date -u +%H:%M:%S)" "$*" >>"$LOG"
  local t0=$SECONDS
  timeout "$limit" "$@" >>"$LOG" 2>&1
  RC=$? SECS=$((SECONDS - t0))
  echo "exit $RC after ${SECS} s" >>"$LOG"
}
line() { say "$(printf '%-20s %-5s %4s s  %s' "$1" "$2" "$3" "$4")"; }

[ -x "$PACK/bin/xhal-conformance" ] || { say "missing $PACK: run --build-only here first"; exit 1; }
# The Vulkan loader is not installed on the GPU machine: unpack the carried debs.
if ! ldconfig -p 2>/dev/null | grep -q libvulkan.so.1; then
  for f in .gl/*.deb; do [ -e "$f" ] && dpkg -x "$f" /; done
  ldconfig
fi
export LD_LIBRARY_PATH=$PWD/$PACK/lib:$PWD/$PACK/extra-lib:${LD_LIBRARY_PATH:-}
unset XHAL_PLUGIN_PATH XHAL_DEVICE_OPTIONS
export XHAL_DEVICE=vulkan,cuda
ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if ! "$PACK/bin/xhal-info" 2>/dev/null | grep -q '^  #.* vulkan:0' && [ -e "$ICD" ]; then
  export VK_DRIVER_FILES=$ICD  # the loader did not find the driver by itself
fi
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; date -u
  git log -1 --format='tree at %h %s' 2>/dev/null; echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"; } >>"$LOG" 2>&1
step xhal-info 60 "$PACK/bin/xhal-info"
line xhal-info "$([ $RC = 0 ] && echo ok || echo FAIL)" "$SECS" \
  "$(grep -m1 -A1 'vulkan:0' "$LOG" | tr -s ' ' | tr '\n' ' ' | cut -c1-110)"
grep -q 'same device as' "$LOG" && say "                              stable id: vulkan:0 and cuda:0 are one GPU ($(grep -m1 -o 'GPU-[0-9a-f-]*' "$LOG"))"

counts() {  # report: counts; fails unless a test ran on the device and none failed
  python3 - "$1" "$2" <<'EOF' 2>/dev/null
import collections, json, sys
r = json.load(open(sys.argv[1]))
res = r["results"]
c = collections.Counter(x["status"] for x in res)
failed = sum(v for k, v in c.items() if k not in ("pass", "skipped", "unsupported"))
on = sum(1 for x in res if x.get("device", "").startswith(sys.argv[2]))
ops = {o["op"]: o["level"] for o in r["ops"]}
exact = sum(1 for v in ops.values() if v == "bit-exact")
print(f"{c['pass']} passed, {c['skipped']} skipped, {c['unsupported']} unsupported, {failed} failed; "
      f"{exact}/{len(ops)} ops bit-exact")
sys.exit(0 if on and not failed else 1)
EOF
}
# VULKAN_CHECK_QUICK=1: the cuda conformance run is left out (device time).
CONF_DEVS="vulkan cuda"
[ "${VULKAN_CHECK_QUICK:-0}" = 1 ] && CONF_DEVS=vulkan
for dev in $CONF_DEVS; do
  step "conformance $dev" 200 "$PACK/bin/xhal-conformance" --device "$dev:0" --require-bit-exact \
    --gtest_brief=1 --report "$OUT/conformance-$dev.json"
  n=$(counts "$OUT/conformance-$dev.json" "$dev") || { [ "$RC" = 0 ] && RC=1; }
  [ "$RC" = 0 ] || FAILED=1
  line "conformance $dev:0" "$([ "$RC" = 0 ] && echo ok || echo FAIL)" "$SECS" "${n:-no report}"
done

# The samples' digests on cpu (this host), cuda:0 and vulkan:0, at the
# default sizes (also against samples/*/digest.txt) and the large ones.
for size in default --large; do
  step "samples $size" 150 bash samples/run-all.sh $([ $size = --large ] && echo --large) \
    "$PACK/bin" cpu cuda:0 vulkan:0
  [ "$RC" = 0 ] || FAILED=1
  line "samples $size" "$([ "$RC" = 0 ] && echo ok || echo FAIL)" "$SECS" \
    "$(grep -A12 "===== samples $size" "$LOG" | grep -m1 'run-all:' | cut -c1-80)"
done
{ grep -A12 '===== samples default' "$LOG"; grep -A12 '===== samples --large' "$LOG"; } \
  | grep -E '^(sample|gnn|river|norm-block|run-all)' >"$OUT/samples.txt"

FILTER=${VULKAN_CHECK_BENCH_FILTER:-'BM_Copy/1073741824|BM_Index(Select|Add)/1000000|BM_Transpose2D|BM_PermuteLastTwo|BM_Softmax|BM_RmsNorm|BM_LayerNorm|BM_SparseSpmv|BM_SparseSolve'}
for dev in ${VULKAN_CHECK_BENCH_DEVICES:-vulkan cuda}; do
  XHAL_DEVICE=$dev:0 step "xhal-bench $dev" 240 "$PACK/bin/xhal-bench" --benchmark_filter="$FILTER" \
    --benchmark_min_time=0.05 --benchmark_out_format=json --benchmark_out="$OUT/bench-$dev.json"
  line "xhal-bench $dev:0" "$([ $RC = 0 ] && echo ok || echo FAIL)" "$SECS" "bench-$dev.json"
done

# Vulkan against cuda per benchmark (real time), and each against the copy
# bandwidth of its own plugin in this run.
python3 - "$OUT/bench-vulkan.json" "$OUT/bench-cuda.json" <<'EOF' 2>&1 | tee -a "$SUMMARY"
import json, sys
def load(p):
    try:
        return {b["name"]: b for b in json.load(open(p))["benchmarks"] if b.get("run_type") != "aggregate"}
    except Exception:
        return {}
v, c = load(sys.argv[1]), load(sys.argv[2])
def gbs(b):
    return b.get("bytes_per_second", 0) / 1e9
copy_v = next((gbs(b) for n, b in v.items() if n.startswith("BM_Copy")), 0)
copy_c = next((gbs(b) for n, b in c.items() if n.startswith("BM_Copy")), 0)
print(f"\n{'benchmark':46} {'vulkan ms':>10} {'cuda ms':>9} {'cuda/vk':>8} {'vk/copy':>8}")
for name, b in v.items():
    ms = b["real_time"] * {"ms": 1, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b.get("time_unit", "ms")]
    o = c.get(name)
    cms = o["real_time"] * {"ms": 1, "us": 1e-3, "ns": 1e-6, "s": 1e3}[o.get("time_unit", "ms")] if o else float("nan")
    frac = gbs(b) / copy_v if copy_v and gbs(b) else float("nan")
    print(f"{name[:46]:46} {ms:10.3f} {cms:9.3f} {cms / ms:8.2f} {frac:8.2f}")
print(f"copy bandwidth: vulkan {copy_v:.0f} GB/s, cuda {copy_c:.0f} GB/s")
EOF
say ""
say "vulkan-check: $([ "$FAILED" = 0 ] && echo PASS || echo FAIL) in $((SECONDS - START)) s; files in $OUT"
exit "$FAILED"
