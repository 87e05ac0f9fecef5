// Adds float-control execution modes to a compiled module at pipeline
// creation:
// - DenormPreserve for 32-bit floats, on devices that report
//   shaderDenormPreserveFloat32. It cannot be compiled in: a device that
//   does not report it (lavapipe, NVIDIA 580) must not see it, and one module
//   per variant would double the embedded SPIR-V.
// - RoundingModeRTE and SignedZeroInfNanPreserve for 64-bit floats, in every
//   module that declares the Float64 capability (the F64 kernels). glslang
//   keeps one spirv_execution_mode per mode, so common.glsl can declare
//   these modes for width 32 only; the plugin builds F64 pipelines only on
//   devices that report both for width 64.
#include <vector>

#include "vk_plugin.h"

namespace xhal::vk {
namespace {
constexpr uint32_t kOpCapability = 17;
constexpr uint32_t kOpExecutionMode = 16;
constexpr uint32_t kCapFloat64 = 10;
constexpr uint32_t kCapDenormPreserve = 4464;
constexpr uint32_t kModeDenormPreserve = 4459;
constexpr uint32_t kModeSignedZeroInfNanPreserve = 4461;
constexpr uint32_t kModeRoundingModeRTE = 4462;
constexpr size_t kHeaderWords = 5;
}  // namespace

bool uses_float64(const uint32_t* words, size_t count) {
  for (size_t i = kHeaderWords; i < count;) {
    const uint32_t op = words[i] & 0xffffu, len = words[i] >> 16;
    if (len == 0 || i + len > count) return false;
    if (op == kOpCapability && len == 2 && words[i + 1] == kCapFloat64) return true;
    i += len;
  }
  return false;
}

bool patch_float_modes(const uint32_t* words, size_t count, bool denorm32,
                       std::vector<uint32_t>* out) {
  if (count < kHeaderWords) return false;
  // Find the first OpCapability and the RoundingModeRTE execution mode.
  size_t first_cap_end = 0, rte_end = 0;
  uint32_t entry = 0;
  for (size_t i = kHeaderWords; i < count;) {
    const uint32_t op = words[i] & 0xffffu, len = words[i] >> 16;
    if (len == 0 || i + len > count) return false;
    if (op == kOpCapability && first_cap_end == 0) first_cap_end = i + len;
    if (op == kOpExecutionMode && len >= 4 && words[i + 2] == kModeRoundingModeRTE) {
      entry = words[i + 1];
      rte_end = i + len;
      break;
    }
    i += len;
  }
  if (first_cap_end == 0 || rte_end == 0) return false;
  const bool f64 = uses_float64(words, count);
  out->clear();
  out->reserve(count + 14);
  out->insert(out->end(), words, words + first_cap_end);
  if (denorm32) {
    out->push_back((2u << 16) | kOpCapability);
    out->push_back(kCapDenormPreserve);
  }
  out->insert(out->end(), words + first_cap_end, words + rte_end);
  auto mode = [&](uint32_t m, uint32_t width) {
    out->push_back((4u << 16) | kOpExecutionMode);
    out->push_back(entry);
    out->push_back(m);
    out->push_back(width);
  };
  if (denorm32) mode(kModeDenormPreserve, 32);
  if (f64) {
    mode(kModeRoundingModeRTE, 64);
    mode(kModeSignedZeroInfNanPreserve, 64);
  }
  out->insert(out->end(), words + rte_end, words + count);
  return true;
}

}  // namespace xhal::vk
