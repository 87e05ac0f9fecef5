// index_select (docs/semantics.md "index_select"): out[i] = src[indices[i]]
// row by row, moved in the widest unit (16, 8, 4, 2 or 1 bytes) that the
// pointers and the row width allow. Any dtype: rows are copied as bytes.
#include "index_plan.h"

namespace xhal::gpu {
namespace {

template <class U>
__global__ void gather_kernel(const U* __restrict__ src, U* __restrict__ out,
                              const int64_t* __restrict__ idx, int64_t count, int64_t units) {
  const int64_t total = count * units;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = it / units, u = it - i * units;
    out[it] = src[idx[i] * units + u];
  }
}

template <class U>
void launch_gather(Device* d, const void* src, void* out, const int64_t* idx, int64_t count,
                   int64_t row_bytes) {
  const int64_t units = row_bytes / static_cast<int64_t>(sizeof(U));
  gather_kernel<U><<<grid_for(count * units, 256), 256, 0, d->stream>>>(
      static_cast<const U*>(src), static_cast<U*>(out), idx, count, units);
}

}  // namespace

xhal_status_t index_select(void* device, void* plan, const xhal_plugin_tensor_t* src,
                           const xhal_plugin_tensor_t* out) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  const Plan* p = static_cast<const Plan*>(plan);
  const int64_t es = static_cast<int64_t>(dtype_size(src->dtype));
  int64_t w = 1;
  for (uint32_t i = 1; i < src->rank; ++i) w *= src->shape[i];
  const int64_t row_bytes = w * es;
  if (p->count == 0 || row_bytes == 0) return XHAL_OK;
  const void* s = tensor_ptr(src);
  void* o = tensor_ptr(out);
  const uintptr_t al = reinterpret_cast<uintptr_t>(s) | reinterpret_cast<uintptr_t>(o) |
                       static_cast<uintptr_t>(row_bytes);
  if (al % 16 == 0) launch_gather<uint4>(d, s, o, p->indices, p->count, row_bytes);
  else if (al % 8 == 0) launch_gather<uint2>(d, s, o, p->indices, p->count, row_bytes);
  else if (al % 4 == 0) launch_gather<uint32_t>(d, s, o, p->indices, p->count, row_bytes);
  else if (al % 2 == 0) launch_gather<uint16_t>(d, s, o, p->indices, p->count, row_bytes);
  else launch_gather<unsigned char>(d, s, o, p->indices, p->count, row_bytes);
  return check_launch(d, "index_select");
}

}  // namespace xhal::gpu
