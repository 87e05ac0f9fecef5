// Device helper of the grid-stride kernels that map a flat item number to
// (row, unit): index_select and index_add (docs/gpu.md).
#pragma once

#include <cstdint>

#include "gpu_port.h"

namespace xhal::gpu {

// it -> (it / w, it % w) in 32 bits when both fit (a 64-bit divide is a
// long sequence on the GPU, paid once per 16 bytes moved).
__device__ __forceinline__ void split_item(int64_t it, int64_t w, int64_t& k, int64_t& j) {
  if ((static_cast<uint64_t>(it) >> 32) == 0 && (static_cast<uint64_t>(w) >> 32) == 0) {
    const uint32_t k32 = static_cast<uint32_t>(it) / static_cast<uint32_t>(w);
    k = k32;
    j = static_cast<uint32_t>(it) - k32 * static_cast<uint32_t>(w);
  } else {
    k = it / w;
    j = it - k * w;
  }
}

}  // namespace xhal::gpu
