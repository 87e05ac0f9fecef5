// Blocking host <-> device transfers through the device's two staging
// halves, counted as host transfers.
#include <cstring>

#include "vk_plugin.h"

namespace xhal::vk {

// ---- staging transfers --------------------------------------------------------------
xhal_status_t Device::upload(const Mem& dst, uint64_t offset, const void* src, uint64_t size) {
  XHAL_VK_TRY(check_lost());
  const auto* from = static_cast<const uint8_t*>(src);
  uint64_t done = 0;
  for (int k = 0; done < size; ++k) {
    const int half = k & 1;
    const uint64_t chunk = size - done < kStagingHalf ? size - done : kStagingHalf;
    XHAL_VK_TRY(wait(staging_value[half]));
    std::memcpy(static_cast<uint8_t*>(staging.mapped) + half * kStagingHalf, from + done, chunk);
    XHAL_VK_TRY(begin());
    VkBufferCopy region{half * kStagingHalf, offset + done, chunk};
    vk().vkCmdCopyBuffer(recording, staging.buffer, dst.buffer, 1, &region);
    XHAL_VK_TRY(submit());
    staging_value[half] = submitted;
    done += chunk;
  }
  XHAL_VK_TRY(wait(submitted));
  h2d_transfers.fetch_add(1, std::memory_order_relaxed);
  h2d_bytes.fetch_add(size, std::memory_order_relaxed);
  return XHAL_OK;
}

xhal_status_t Device::download(const Mem& src, uint64_t offset, void* dst, uint64_t size) {
  XHAL_VK_TRY(check_lost());
  auto* to = static_cast<uint8_t*>(dst);
  const uint64_t chunks = (size + kStagingHalf - 1) / kStagingHalf;
  uint64_t value[2] = {0, 0};
  auto copy_out = [&](uint64_t k) -> xhal_status_t {
    const int half = static_cast<int>(k & 1);
    XHAL_VK_TRY(wait(value[half]));
    const uint64_t at = k * kStagingHalf;
    const uint64_t chunk = size - at < kStagingHalf ? size - at : kStagingHalf;
    std::memcpy(to + at, static_cast<const uint8_t*>(staging.mapped) + half * kStagingHalf, chunk);
    return XHAL_OK;
  };
  for (uint64_t k = 0; k < chunks; ++k) {
    const int half = static_cast<int>(k & 1);
    if (k >= 2) XHAL_VK_TRY(copy_out(k - 2));  // frees this half
    const uint64_t at = k * kStagingHalf;
    const uint64_t chunk = size - at < kStagingHalf ? size - at : kStagingHalf;
    XHAL_VK_TRY(begin());
    VkBufferCopy region{offset + at, half * kStagingHalf, chunk};
    vk().vkCmdCopyBuffer(recording, src.buffer, staging.buffer, 1, &region);
    auto mb = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vk().vkCmdPipelineBarrier(recording, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                              0, 1, &mb, 0, nullptr, 0, nullptr);
    XHAL_VK_TRY(submit());
    value[half] = submitted;
    staging_value[half] = submitted;
  }
  for (uint64_t k = chunks >= 2 ? chunks - 2 : 0; k < chunks; ++k) XHAL_VK_TRY(copy_out(k));
  d2h_transfers.fetch_add(1, std::memory_order_relaxed);
  d2h_bytes.fetch_add(size, std::memory_order_relaxed);
  return XHAL_OK;
}

}  // namespace xhal::vk
