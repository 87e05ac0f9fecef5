#!/usr/bin/env bash
# The main job: install, build, list plugins and devices, run the conformance
# suite on every device found, then the hello sample on the default device.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default -j"$(nproc)"
build/bin/xhal-info
build/bin/xhal-conformance --report build/conformance-report.json
build/bin/xhal-hello
