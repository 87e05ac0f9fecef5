#!/usr/bin/env bash
# Installs what xhal needs on a fresh Debian machine (run as root).
# CUDA's nvcc is not a Debian package here: when /usr/local/cuda/bin/nvcc
# exists the CUDA plugin is built, otherwise it is skipped.
set -euo pipefail
# clang, libclang-rt-14-dev (libFuzzer and the sanitizer runtimes),
# libomp-14-dev (clang's OpenMP and its Archer TSan tool), llvm
# (llvm-symbolizer for sanitizer stacks) and ccache serve the clang, tsan and
# fuzz presets (docs/robustness.md); clang-format (14) serves
# scripts/check-format.sh.
pkgs=(cmake ninja-build g++ pkg-config ccache clang-format
      libboost-dev libgtest-dev libgmock-dev libbenchmark-dev
      nlohmann-json3-dev libcli11-dev libeigen3-dev
      clang libclang-rt-14-dev libomp-14-dev llvm
      hipcc libamdhip64-dev abigail-tools
      libvulkan-dev libvulkan-volk-dev glslang-tools spirv-tools
      mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
      python3-numpy python3-pytest    # the Python module's tests (docs/python.md)
      python3-jsonschema)             # ctest sdk.report_schema (docs/vendors.md)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "xhal: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
