// Adds the DenormPreserve execution mode to a compiled module, for devices
// that report shaderDenormPreserveFloat32. It cannot be compiled in: a
// device that does not report it (lavapipe, NVIDIA 580) must not see it,
// and one module per variant would double the embedded SPIR-V.
#include <vector>

#include "vk_plugin.h"

namespace xhal::vk {
namespace {
constexpr uint32_t kOpCapability = 17;
constexpr uint32_t kOpExecutionMode = 16;
constexpr uint32_t kCapDenormPreserve = 4464;
constexpr uint32_t kModeDenormPreserve = 4459;
constexpr uint32_t kModeRoundingModeRTE = 4462;
constexpr size_t kHeaderWords = 5;
}  // namespace

bool add_denorm_preserve(const uint32_t* words, size_t count, std::vector<uint32_t>* out) {
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
  out->clear();
  out->reserve(count + 6);
  out->insert(out->end(), words, words + first_cap_end);
  out->push_back((2u << 16) | kOpCapability);
  out->push_back(kCapDenormPreserve);
  out->insert(out->end(), words + first_cap_end, words + rte_end);
  out->push_back((4u << 16) | kOpExecutionMode);
  out->push_back(entry);
  out->push_back(kModeDenormPreserve);
  out->push_back(32);
  out->insert(out->end(), words + rte_end, words + count);
  return true;
}

}  // namespace xhal::vk
