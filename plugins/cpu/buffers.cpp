// Buffers live in host memory, 64-byte aligned. Writes and reads count as
// host<->device transfers so apps see the same counters as on a GPU; copy and
// fill are device-side work.
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "dense_ops.h"

namespace xhal::cpu {
namespace {
constexpr uint64_t kAlignment = 64;
// Large buffers sit on 2 MiB pages where the kernel allows it: gathers,
// transposes and strided views then stay within the TLB, and first touch
// takes 512 times fewer page faults.
constexpr uint64_t kHugePage = 2u << 20;
constexpr uint64_t kHugeFrom = 4u << 20;
CpuDevice* dev(void* device) { return static_cast<CpuDevice*>(device); }
CpuBuffer* buf(void* buffer) { return static_cast<CpuBuffer*>(buffer); }
}  // namespace

xhal_status_t buffer_allocate(void*, uint64_t size, void** out_buffer) {
  // Size 0 is valid; it still gets a real (tiny) allocation so data is never null.
  const uint64_t align = size >= kHugeFrom ? kHugePage : kAlignment;
  const uint64_t rounded = size == 0 ? align : (size + align - 1) / align * align;
  if (rounded < size) {
    set_error("cpu plugin: buffer size overflows when rounded to its alignment");
    return XHAL_OUT_OF_MEMORY;
  }
  void* data = std::aligned_alloc(align, rounded);
#ifdef MADV_HUGEPAGE
  if (data != nullptr && align == kHugePage) madvise(data, rounded, MADV_HUGEPAGE);  // a hint
#endif
  if (data == nullptr) {
    set_error("cpu plugin: host allocation failed");
    return XHAL_OUT_OF_MEMORY;
  }
  auto* b = new (std::nothrow) CpuBuffer{static_cast<std::byte*>(data), size, true};
  if (b == nullptr) {
    std::free(data);
    set_error("cpu plugin: host allocation failed");
    return XHAL_OUT_OF_MEMORY;
  }
  *out_buffer = b;
  return XHAL_OK;
}

void buffer_free(void*, void* buffer) {
  if (buffer == nullptr) return;
  if (buf(buffer)->owned) std::free(buf(buffer)->data);
  delete buf(buffer);
}

xhal_status_t buffer_write(void* device, void* dst, uint64_t offset, const void* src,
                           uint64_t size) {
  if (size != 0) std::memcpy(buf(dst)->data + offset, src, size);
  mark_written(buf(dst));
  dev(device)->h2d_transfers.fetch_add(1, std::memory_order_relaxed);
  dev(device)->h2d_bytes.fetch_add(size, std::memory_order_relaxed);
  return XHAL_OK;
}

xhal_status_t buffer_read(void* device, void* src, uint64_t offset, void* dst, uint64_t size) {
  if (size != 0) std::memcpy(dst, buf(src)->data + offset, size);
  dev(device)->d2h_transfers.fetch_add(1, std::memory_order_relaxed);
  dev(device)->d2h_bytes.fetch_add(size, std::memory_order_relaxed);
  return XHAL_OK;
}

xhal_status_t buffer_copy(void* device, void* src, uint64_t src_offset, void* dst,
                          uint64_t dst_offset, uint64_t size) {
  count_launch(device);
  if (size == 0) return XHAL_OK;
  mark_written(buf(dst));
  // memmove: the core may allow overlapping ranges within one buffer.
  std::byte* d = buf(dst)->data + dst_offset;
  const std::byte* s = buf(src)->data + src_offset;
  const bool overlap = d < s + size && s < d + size;
  if (overlap || size < (1u << 20)) {
    std::memmove(d, s, size);
    return XHAL_OK;
  }
  // Large disjoint copies: one slice per thread (the copy benchmark's baseline).
  const int64_t slices = 64;
  const uint64_t step = (size + slices - 1) / slices;
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < slices; ++k) {
    const uint64_t begin = static_cast<uint64_t>(k) * step;
    if (begin >= size) continue;
    const uint64_t len = begin + step > size ? size - begin : step;
    std::memcpy(d + begin, s + begin, len);
  }
  return XHAL_OK;
}

xhal_status_t buffer_fill(void* device, void* dst, uint64_t offset, uint64_t size,
                          const void* pattern, uint32_t pattern_size) {
  count_launch(device);
  if (size == 0) return XHAL_OK;
  mark_written(buf(dst));
  std::byte* d = buf(dst)->data + offset;
  const auto* p = static_cast<const std::byte*>(pattern);
  if (pattern_size == 1) {
    std::memset(d, static_cast<int>(p[0]), size);
    return XHAL_OK;
  }
  // Seed one pattern, then double the filled prefix (size is a multiple of
  // pattern_size: the core checks it; a ragged tail still gets a prefix).
  const uint64_t first = pattern_size < size ? pattern_size : size;
  std::memcpy(d, p, first);
  uint64_t filled = first;
  while (filled < size) {
    const uint64_t n = filled < size - filled ? filled : size - filled;
    std::memcpy(d + filled, d, n);
    filled += n;
  }
  return XHAL_OK;
}

}  // namespace xhal::cpu
