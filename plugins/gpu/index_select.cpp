// index_select (docs/semantics.md "index_select"): out[i] = src[indices[i]]
// row by row, moved in the widest unit (16, 8, 4, 2 or 1 bytes) that the
// pointers and the row width allow. Any dtype: rows are copied as bytes.
#include "grid_items.h"
#include "index_plan.h"

namespace xhal::gpu {
namespace {

// A thread moves kU units of one row, units / kU apart (units % kU == 0):
// with one unit a thread the gather waits on its index load for every 16
// bytes; two keep twice the bytes in flight per index load (H200: 0.86 of
// copy with one unit and a 64-bit item split, 0.97 with two and a 32-bit
// split; docs/performance.md "index_select").
template <class U, int kU>
__global__ void gather_kernel(const U* __restrict__ src, U* __restrict__ out,
                              const int64_t* __restrict__ idx, int64_t count, int64_t units) {
  const int64_t h = units / kU;
  const int64_t total = count * h;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    int64_t i, u;
    split_item(it, h, i, u);
    const int64_t r = idx[i];
    U t[kU];
#pragma unroll
    for (int q = 0; q < kU; ++q) t[q] = src[r * units + u + q * h];
#pragma unroll
    for (int q = 0; q < kU; ++q) out[i * units + u + q * h] = t[q];
  }
}

template <class U>
void launch_gather(Device* d, const void* src, void* out, const int64_t* idx, int64_t count,
                   int64_t row_bytes) {
  const int64_t units = row_bytes / static_cast<int64_t>(sizeof(U));
  const U* s = static_cast<const U*>(src);
  U* o = static_cast<U*>(out);
  if (units % 2 == 0)
    gather_kernel<U, 2>
        <<<grid_for(count * units / 2, 256), 256, 0, d->stream>>>(s, o, idx, count, units);
  else
    gather_kernel<U, 1>
        <<<grid_for(count * units, 256), 256, 0, d->stream>>>(s, o, idx, count, units);
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
