// Buffers of the GPU plugin: allocation, the blocking host transfers (the
// only ones besides plan and pattern uploads, counted), copies and fills
// queued on the device's stream.
#include <cstring>
#include <memory>

#include "gpu_plugin.h"

namespace xhal::gpu {
namespace {

__global__ void fill_kernel(unsigned char* dst, uint64_t size, uint64_t pattern,
                            uint32_t pattern_size) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < size;
       i += uint64_t{gridDim.x} * blockDim.x)
    dst[i] = static_cast<unsigned char>(pattern >> (8 * (i % pattern_size)));
}

__global__ void fill4_kernel(uint32_t* dst, uint64_t words, uint32_t pattern) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < words;
       i += uint64_t{gridDim.x} * blockDim.x)
    dst[i] = pattern;
}
}  // namespace

xhal_status_t buffer_allocate(void* device, uint64_t size, void** out) {
  auto* d = static_cast<Device*>(device);
  use_device(d->ordinal);
  auto b = std::make_unique<Buffer>();
  b->size = size;
  if (size) {
    b->stream_ordered = d->stream_ordered_alloc;
    gpuError_t e =
        b->stream_ordered ? gpuMallocAsync(&b->ptr, size, d->stream) : gpuMalloc(&b->ptr, size);
    if (e != gpuSuccess) {
      gpuGetLastError();
      if (e == gpuErrorMemoryAllocation)
        return fail(XHAL_OUT_OF_MEMORY, "%s plugin: out of device memory allocating %llu bytes",
                    XHAL_GPU_BACKEND_NAME, static_cast<unsigned long long>(size));
      return runtime_error(e, "allocating a buffer");
    }
  }
  *out = b.release();
  return XHAL_OK;
}

void buffer_free(void* device, void* buffer) {
  auto* d = static_cast<Device*>(device);
  auto* b = static_cast<Buffer*>(buffer);
  use_device(d->ordinal);
  if (b->ptr && b->owned) {  // imported memory: the core synchronised, the app frees it
    if (b->stream_ordered) {
      // Freed in stream order, after the work queued on the device: no wait.
      if (gpuFreeAsync(b->ptr, d->stream) != gpuSuccess) (void)gpuGetLastError();
    } else {
      gpuStreamSynchronize(d->stream);  // queued work may still use it
      gpuFree(b->ptr);
    }
  }
  delete b;
}

xhal_status_t buffer_write(void* device, void* dst, uint64_t offset, const void* src,
                           uint64_t size) {
  auto* d = static_cast<Device*>(device);
  if (!size) return XHAL_OK;
  use_device(d->ordinal);
  static_cast<Buffer*>(dst)->version++;
  gpuError_t e = gpuMemcpyAsync(static_cast<char*>(static_cast<Buffer*>(dst)->ptr) + offset, src,
                                size, gpuMemcpyHostToDevice, d->stream);
  if (e == gpuSuccess) e = gpuStreamSynchronize(d->stream);
  d->h2d_transfers++;
  d->h2d_bytes += size;
  return e == gpuSuccess ? XHAL_OK : runtime_error(e, "buffer_write");
}

xhal_status_t buffer_read(void* device, void* src, uint64_t offset, void* dst, uint64_t size) {
  auto* d = static_cast<Device*>(device);
  if (!size) return XHAL_OK;
  use_device(d->ordinal);
  gpuError_t e =
      gpuMemcpyAsync(dst, static_cast<const char*>(static_cast<Buffer*>(src)->ptr) + offset, size,
                     gpuMemcpyDeviceToHost, d->stream);
  if (e == gpuSuccess) e = gpuStreamSynchronize(d->stream);
  d->d2h_transfers++;
  d->d2h_bytes += size;
  return e == gpuSuccess ? XHAL_OK : runtime_error(e, "buffer_read");
}

xhal_status_t buffer_copy(void* device, void* src, uint64_t src_offset, void* dst,
                          uint64_t dst_offset, uint64_t size) {
  auto* d = static_cast<Device*>(device);
  if (!size) return XHAL_OK;
  use_device(d->ordinal);
  static_cast<Buffer*>(dst)->version++;
  gpuError_t e =
      gpuMemcpyAsync(static_cast<char*>(static_cast<Buffer*>(dst)->ptr) + dst_offset,
                     static_cast<const char*>(static_cast<Buffer*>(src)->ptr) + src_offset, size,
                     gpuMemcpyDeviceToDevice, d->stream);
  return e == gpuSuccess ? XHAL_OK : runtime_error(e, "buffer_copy");
}

xhal_status_t buffer_fill(void* device, void* dst, uint64_t offset, uint64_t size,
                          const void* pattern, uint32_t pattern_size) {
  auto* d = static_cast<Device*>(device);
  if (!size) return XHAL_OK;
  use_device(d->ordinal);
  static_cast<Buffer*>(dst)->version++;
  uint64_t p = 0;
  std::memcpy(&p, pattern, pattern_size);  // little endian: byte i of the pattern
  unsigned char* base = static_cast<unsigned char*>(static_cast<Buffer*>(dst)->ptr) + offset;
  if (pattern_size == 1) {
    gpuError_t e = gpuMemsetAsync(base, static_cast<int>(p & 0xff), size, d->stream);
    return e == gpuSuccess ? XHAL_OK : runtime_error(e, "buffer_fill");
  }
  if (pattern_size <= 4 && 4 % pattern_size == 0 && offset % 4 == 0 && size % 4 == 0 &&
      reinterpret_cast<uintptr_t>(base) % 4 == 0) {
    uint32_t w = 0;
    for (int i = 0; i < 4; ++i)
      w |= static_cast<uint32_t>((p >> (8 * (i % pattern_size))) & 0xff) << (8 * i);
    fill4_kernel<<<grid_for(size / 4, 256), 256, 0, d->stream>>>(reinterpret_cast<uint32_t*>(base),
                                                                 size / 4, w);
  } else {
    fill_kernel<<<grid_for(size, 256), 256, 0, d->stream>>>(base, size, p, pattern_size);
  }
  return check_launch(d, "buffer_fill");
}

}  // namespace xhal::gpu
