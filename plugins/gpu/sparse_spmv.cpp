// spmv / spmm (docs/semantics.md "Sparse (CSR)", 3.7; f64 matrices 7.3,
// the same kernels in double): rows of at most 32
// entries are one thread per (row, column of X), a plain left-to-right sum
// from +0; longer rows (listed at creation) are one warp per (row, column):
// lane c sums chunk c, then the warp tree. A^T uses the transposed pattern
// and t_perm into A's values.
#include "sparse_matrix.h"
#include "tree_device.h"

namespace xhal::gpu {
namespace {

// T: the matrix's value type (f32, or f64 with alpha and beta widened).
template <class T>
__device__ __forceinline__ T finish(T alpha, T t, T beta, T y) {
  return beta == T(0) ? xmul(alpha, t) : xadd(xmul(alpha, t), xmul(beta, y));
}

template <class T>
__global__ void spmm_short_kernel(PatternViewT<T> a, int64_t rows, ColsT<T> x, ColsT<T> y, T alpha,
                                  T beta) {
  const int64_t total = rows * y.k;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = it / y.k, c = it - r * y.k;
    const I b = a.row_ptr[r], e = a.row_ptr[r + 1];
    if (e - b > 32) continue;  // the long-row kernel does it
    T s = T(0);
#pragma unroll 4
    for (I k = b; k < e; ++k) s = xadd(s, xmul(a.value(k), x.at(a.col[k], c)));
    y.at(r, c) = finish(alpha, s, beta, beta == T(0) ? T(0) : y.at(r, c));
  }
}

template <class T>
__global__ void spmm_long_kernel(PatternViewT<T> a, const I* long_rows, int64_t num, ColsT<T> x,
                                 ColsT<T> y, T alpha, T beta) {
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  const int64_t total = num * y.k;
  for (int64_t it = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32; it < total;
       it += warps) {
    const int64_t r = long_rows[it / y.k], c = it % y.k;
    const I b = a.row_ptr[r];
    const T s =
        warp_segsum<T>([&](int64_t k) { return xmul(a.value(b + k), x.at(a.col[b + k], c)); },
                       a.row_ptr[r + 1] - b);
    if ((threadIdx.x & 31) == 0)
      y.at(r, c) = finish(alpha, s, beta, beta == T(0) ? T(0) : y.at(r, c));
  }
}

template <class T>
xhal_status_t run_spmm(Device* d, const Matrix* m, xhal_transpose_t trans, float alpha,
                       const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  const Pattern& p = trans == XHAL_TRANSPOSE ? m->at : m->a;
  const ColsT<T> xc = cols_of<T>(x), yc = cols_of<T>(y);
  if (p.rows == 0 || yc.k == 0) return XHAL_OK;
  spmm_short_kernel<T><<<grid_for(p.rows * yc.k, 256), 256, 0, d->stream>>>(
      view<T>(p, m), p.rows, xc, yc, T(alpha), T(beta));
  int launches = 1;
  if (p.num_long) {
    spmm_long_kernel<T><<<grid_for(p.num_long * yc.k * 32, 256), 256, 0, d->stream>>>(
        view<T>(p, m), p.long_rows, p.num_long, xc, yc, T(alpha), T(beta));
    ++launches;
  }
  return check_launch(d, "spmv", launches);
}

}  // namespace

xhal_status_t spmm(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  const Matrix* m = static_cast<const Matrix*>(a);
  return with_value_type(m->values_dtype, [&](auto t) {
    return run_spmm<decltype(t)>(d, m, trans, alpha, x, beta, y);
  });
}

xhal_status_t spmv(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  return spmm(device, a, trans, alpha, x, beta, y);
}

}  // namespace xhal::gpu
