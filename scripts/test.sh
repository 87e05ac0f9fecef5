#!/usr/bin/env bash
# Builds everything (every plugin whose toolchain is present) and runs the
# whole test suite, then the AddressSanitizer + UBSan build of the core and
# CPU plugin with its tests.
#
# Then the app ABI check against abi/ (scripts/check-abi.sh) and the
# robustness checks of docs/robustness.md: the clang build with its tests,
# the ThreadSanitizer stress test and the fuzz smoke run. Each of those three
# runs even if an earlier one failed, and the script fails if any did;
# XHAL_CI_EXTRA=0 leaves them out (a quicker local run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/check-format.sh
jobs=$(nproc)
cmake --preset default -DXHAL_WERROR=ON >/dev/null
cmake --build --preset default -j"$jobs"
ctest --preset default -j"$jobs"
cmake --preset asan >/dev/null
cmake --build --preset asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1 ctest --preset asan -j"$jobs"
# The app ABI against the committed baseline (the asan build has -g).
bash scripts/check-abi.sh build-asan/lib/libxhal.so

if [[ ${XHAL_CI_EXTRA:-1} == 1 ]]; then
  failed=()
  # Runs one named step, timing it; a failure is recorded, not fatal.
  step() {
    local name=$1 start=$SECONDS
    shift
    echo "xhal: == $name"
    if "$@"; then
      echo "xhal: == $name: ok in $((SECONDS - start)) s"
    else
      echo "xhal: == $name: FAILED after $((SECONDS - start)) s"
      failed+=("$name")
    fi
  }
  clang_tests() {
    cmake --preset clang -DXHAL_WERROR=ON >/dev/null &&
      cmake --build --preset clang -j"$jobs" &&
      ctest --preset clang -j"$jobs"
  }
  tsan_stress() {
    cmake --preset tsan >/dev/null &&
      cmake --build --preset tsan -j"$jobs" &&
      ctest --preset tsan
  }
  fuzz_smoke() {
    cmake --preset fuzz >/dev/null &&
      cmake --build --preset fuzz -j"$jobs" &&
      ctest --preset fuzz &&
      bash scripts/fuzz-smoke.sh "${XHAL_FUZZ_SECONDS:-45}"
  }
  step "clang build and tests" clang_tests
  step "ThreadSanitizer stress test" tsan_stress
  step "fuzz smoke" fuzz_smoke
  if ((${#failed[@]})); then
    echo "xhal: failed: ${failed[*]}" >&2
    exit 1
  fi
fi
