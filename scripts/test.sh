#!/usr/bin/env bash
# Builds everything (every plugin whose toolchain is present) and runs the
# whole test suite, then the AddressSanitizer + UBSan build of the core and
# CPU plugin with its tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)
cmake --preset default >/dev/null
cmake --build --preset default -j"$jobs"
ctest --preset default -j"$jobs"
cmake --preset asan >/dev/null
cmake --build --preset asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1 ctest --preset asan -j"$jobs"
