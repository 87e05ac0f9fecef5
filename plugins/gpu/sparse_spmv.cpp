// spmv / spmm (docs/semantics.md "Sparse (CSR)", 3.7): rows of at most 32
// entries are one thread per (row, column of X), a plain left-to-right sum
// from +0; longer rows (listed at creation) are one warp per (row, column):
// lane c sums chunk c, then the warp tree. A^T uses the transposed pattern
// and t_perm into A's values.
#include "sparse_matrix.h"
#include "tree_device.h"

namespace xhal::gpu {
namespace {

__device__ __forceinline__ float finish(float alpha, float t, float beta, float y) {
  return beta == 0.0f ? xmul(alpha, t) : xadd(xmul(alpha, t), xmul(beta, y));
}

__global__ void spmm_short_kernel(PatternView a, int64_t rows, Cols x, Cols y, float alpha,
                                  float beta) {
  const int64_t total = rows * y.k;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = it / y.k, c = it - r * y.k;
    const I b = a.row_ptr[r], e = a.row_ptr[r + 1];
    if (e - b > 32) continue;  // the long-row kernel does it
    float s = 0.0f;
#pragma unroll 4
    for (I k = b; k < e; ++k) s = xadd(s, xmul(a.value(k), x.at(a.col[k], c)));
    y.at(r, c) = finish(alpha, s, beta, beta == 0.0f ? 0.0f : y.at(r, c));
  }
}

__global__ void spmm_long_kernel(PatternView a, const I* long_rows, int64_t num, Cols x, Cols y,
                                 float alpha, float beta) {
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  const int64_t total = num * y.k;
  for (int64_t it = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32; it < total;
       it += warps) {
    const int64_t r = long_rows[it / y.k], c = it % y.k;
    const I b = a.row_ptr[r];
    const float s =
        warp_segsum([&](int64_t k) { return xmul(a.value(b + k), x.at(a.col[b + k], c)); },
                    a.row_ptr[r + 1] - b);
    if ((threadIdx.x & 31) == 0)
      y.at(r, c) = finish(alpha, s, beta, beta == 0.0f ? 0.0f : y.at(r, c));
  }
}

}  // namespace

xhal_status_t spmm(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  const Matrix* m = static_cast<const Matrix*>(a);
  const Pattern& p = trans == XHAL_TRANSPOSE ? m->at : m->a;
  Cols xc = cols_of(x), yc = cols_of(y);
  if (p.rows == 0 || yc.k == 0) return XHAL_OK;
  spmm_short_kernel<<<grid_for(p.rows * yc.k, 256), 256, 0, d->stream>>>(view(p, m), p.rows, xc, yc,
                                                                         alpha, beta);
  int launches = 1;
  if (p.num_long) {
    spmm_long_kernel<<<grid_for(p.num_long * yc.k * 32, 256), 256, 0, d->stream>>>(
        view(p, m), p.long_rows, p.num_long, xc, yc, alpha, beta);
    ++launches;
  }
  return check_launch(d, "spmv", launches);
}

xhal_status_t spmv(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  return spmm(device, a, trans, alpha, x, beta, y);
}

}  // namespace xhal::gpu
