// Buffer slots. Writes and reads are blocking and go through the device's
// staging memory (and move the host-transfer counters); copies and fills
// are queued like ops.
#include <cstring>
#include <new>

#include "vk_plugin.h"

namespace xhal::vk {
namespace {
Device* dev(void* d) { return static_cast<Device*>(d); }
Buffer* buf(void* b) { return static_cast<Buffer*>(b); }

struct CopyPush {
  uint64_t src, dst, count;
};
struct FillPush {
  uint64_t dst, bytes, pattern;
};
static_assert(fits_push<CopyPush>() && fits_push<FillPush>());
}  // namespace

xhal_status_t buffer_allocate(void* device, uint64_t size, void** out_buffer) {
  Device* d = dev(device);
  std::lock_guard lock(d->mutex);
  auto* b = new (std::nothrow) Buffer;
  if (!b) return fail(XHAL_OUT_OF_MEMORY, "host allocation failed");
  const xhal_status_t s = mem_create(*d->gpu, size, false, &b->mem);
  if (s != XHAL_OK) {
    delete b;
    return s;
  }
  b->size = size;
  *out_buffer = b;
  return XHAL_OK;
}

void buffer_free(void* device, void* buffer) {
  if (!buffer) return;
  Device* d = dev(device);
  std::lock_guard lock(d->mutex);
  // Queued work may still use it.
  d->wait_idle();
  mem_destroy(*d->gpu, buf(buffer)->mem);
  delete buf(buffer);
}

xhal_status_t buffer_write(void* device, void* dst, uint64_t offset, const void* src,
                           uint64_t size) {
  Device* d = dev(device);
  std::lock_guard lock(d->mutex);
  return d->upload(buf(dst)->mem, offset, src, size);
}

xhal_status_t buffer_read(void* device, void* src, uint64_t offset, void* dst, uint64_t size) {
  Device* d = dev(device);
  std::lock_guard lock(d->mutex);
  return d->download(buf(src)->mem, offset, dst, size);
}

void Device::record_copy(const Mem& src, uint64_t src_offset, const Mem& dst, uint64_t dst_offset,
                         uint64_t size, VkPipeline u8, VkPipeline u32, VkPipeline u128) {
  if (size == 0) return;
  if (!compute_copy) {
    VkBufferCopy region{src_offset, dst_offset, size};
    vk().vkCmdCopyBuffer(recording, src.buffer, dst.buffer, 1, &region);
    launches.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Bytes up to a common alignment, then the widest unit both sides allow.
  const uint64_t s = src.address + src_offset, t = dst.address + dst_offset;
  uint32_t unit = (s % 16 == t % 16) ? 16 : (s % 4 == t % 4) ? 4 : 1;
  uint64_t head = unit == 1 ? 0 : (unit - s % unit) % unit;
  if (head > size) head = size;
  const uint64_t body = (size - head) / unit;
  const uint64_t tail = size - head - body * unit;
  auto run = [&](VkPipeline p, uint64_t from, uint64_t to, uint64_t count) {
    if (!count) return;
    const CopyPush push{from, to, count};
    dispatch2d(p, &push, sizeof push, (count + 1023) / 1024);
  };
  run(u8, s, t, head);
  run(unit == 16 ? u128 : unit == 4 ? u32 : u8, s + head, t + head, body);
  run(u8, s + head + body * unit, t + head + body * unit, tail);
}

xhal_status_t buffer_copy(void* device, void* src, uint64_t src_offset, void* dst,
                          uint64_t dst_offset, uint64_t size) {
  Device* d = dev(device);
  std::lock_guard lock(d->mutex);
  VkPipeline p[3] = {};
  if (d->compute_copy)
    XHAL_VK_TRY(
        pipelines(d, {xhal_spirv::copy_u8, xhal_spirv::copy_u32, xhal_spirv::copy_u128}, p));
  XHAL_VK_TRY(d->begin());
  d->record_copy(buf(src)->mem, src_offset, buf(dst)->mem, dst_offset, size, p[0], p[1], p[2]);
  return d->submit();
}

xhal_status_t buffer_fill(void* device, void* dst, uint64_t offset, uint64_t size,
                          const void* pattern, uint32_t pattern_size) {
  Device* d = dev(device);
  std::lock_guard lock(d->mutex);
  VkPipeline p[1] = {};
  XHAL_VK_TRY(pipelines(d, {xhal_spirv::fill}, p));
  // The pattern repeated to 8 bytes, byte k for addresses = k (mod 8): the
  // offset is a multiple of pattern_size and buffers are 64-byte aligned.
  uint8_t bytes[8];
  const auto* pat = static_cast<const uint8_t*>(pattern);
  for (int k = 0; k < 8; ++k) bytes[k] = pat[k % pattern_size];
  uint64_t rep = 0;
  std::memcpy(&rep, bytes, 8);
  const FillPush push{buf(dst)->mem.address + offset, size, rep};
  XHAL_VK_TRY(d->begin());
  d->dispatch2d(p[0], &push, sizeof push, (size / 4 + 8 + 1023) / 1024);
  return d->submit();
}

}  // namespace xhal::vk
