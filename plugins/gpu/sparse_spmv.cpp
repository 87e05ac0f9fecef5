// spmv / spmm (docs/semantics.md "Sparse (CSR)", 3.7; f64 matrices 7.3,
// the same kernels in double; f16/bf16 matrices 7.2, f32 arithmetic on
// widened loads): rows of at most 32
// entries are one thread per (row, column of X), a plain left-to-right sum
// from +0; longer rows (listed at creation) are one warp per (row, column):
// lane c sums chunk c, then the warp tree. A^T uses the transposed pattern
// and t_perm into A's values.
#include "narrow_device.h"
#include "sparse_matrix.h"
#include "tree_device.h"

namespace xhal::gpu {
namespace {

// S: the matrix's storage type: float; double (alpha and beta widened, every
// operation binary64, 7.3); Bf16 or F16 (7.2: values and x widened on load,
// the products and sums in f32, y widened when beta != 0 and narrowed once).
// A: the arithmetic type, acc_t<S>.
template <class S, class A = acc_t<S>>
__device__ __forceinline__ void finish(S& y, A alpha, A t, A beta) {
  y = to_storage<S>(beta == A(0) ? xmul(alpha, t) : xadd(xmul(alpha, t), xmul(beta, widen(y))));
}

template <class S>
__global__ void spmm_short_kernel(PatternViewT<S> a, int64_t rows, ColsT<S> x, ColsT<S> y,
                                  acc_t<S> alpha, acc_t<S> beta) {
  using A = acc_t<S>;
  const int64_t total = rows * y.k;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = it / y.k, c = it - r * y.k;
    const I b = a.row_ptr[r], e = a.row_ptr[r + 1];
    if (e - b > 32) continue;  // the long-row kernel does it
    A s = A(0);
#pragma unroll 4
    for (I k = b; k < e; ++k) s = xadd(s, xmul(widen(a.value(k)), widen(x.at(a.col[k], c))));
    finish(y.at(r, c), alpha, s, beta);
  }
}

// spmv's rows of at most 32 entries, by tiles of kTileRows consecutive rows,
// whose entries are one contiguous run. When the run fits in shared memory
// the block first forms every product with coalesced loads of values and
// columns, then each thread sums its row's products left to right from +0:
// the canonical order (3.7), the loads of the one-thread-per-row form
// without its strided reads. A run that does not fit (a long row inside)
// is summed from memory as spmm_short_kernel does.
constexpr int kTileRows = 256;
constexpr int kTileEntries = 4096;

template <class S>
__global__ void __launch_bounds__(kTileRows)
    spmv_tiled_kernel(PatternViewT<S> a, int64_t rows, ColsT<S> x, ColsT<S> y, acc_t<S> alpha,
                      acc_t<S> beta) {
  using A = acc_t<S>;
  __shared__ A prod[kTileEntries];
  const int64_t r0 = blockIdx.x * int64_t{kTileRows}, r = r0 + threadIdx.x;
  const int64_t last = r0 + kTileRows < rows ? r0 + kTileRows : rows;
  const I start = a.row_ptr[r0], run = a.row_ptr[last] - start;
  const bool staged = run <= kTileEntries;  // the same for the whole block
  if (staged)
    for (I e = threadIdx.x; e < run; e += kTileRows)
      prod[e] = xmul(widen(a.value(start + e)), widen(x.at(a.col[start + e], 0)));
  __syncthreads();
  if (r >= rows) return;
  const I b = a.row_ptr[r], e = a.row_ptr[r + 1];
  if (e - b > 32) return;  // the long-row kernel does it
  A s = A(0);
  if (staged) {
    for (I k = b - start; k < e - start; ++k) s = xadd(s, prod[k]);
  } else {
#pragma unroll 4
    for (I k = b; k < e; ++k) s = xadd(s, xmul(widen(a.value(k)), widen(x.at(a.col[k], 0))));
  }
  finish(y.at(r, 0), alpha, s, beta);
}

template <class S>
__global__ void spmm_long_kernel(PatternViewT<S> a, const I* long_rows, int64_t num, ColsT<S> x,
                                 ColsT<S> y, acc_t<S> alpha, acc_t<S> beta) {
  using A = acc_t<S>;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  const int64_t total = num * y.k;
  for (int64_t it = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32; it < total;
       it += warps) {
    const int64_t r = long_rows[it / y.k], c = it % y.k;
    const I b = a.row_ptr[r];
    const A s = warp_segsum<A>(
        [&](int64_t k) { return xmul(widen(a.value(b + k)), widen(x.at(a.col[b + k], c))); },
        a.row_ptr[r + 1] - b);
    if ((threadIdx.x & 31) == 0) finish(y.at(r, c), alpha, s, beta);
  }
}

template <class S>
xhal_status_t run_spmm(Device* d, const Matrix* m, xhal_transpose_t trans, float alpha,
                       const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  using A = acc_t<S>;
  const Pattern& p = trans == XHAL_TRANSPOSE ? m->at : m->a;
  const ColsT<S> xc = cols_of<S>(x), yc = cols_of<S>(y);
  if (p.rows == 0 || yc.k == 0) return XHAL_OK;
  // f64 stays on the one-thread-per-row form: tiled it was slower on the
  // H200 (uniform random 0.145 against 0.113 ms, docs/performance.md).
  bool tiled = false;
  if constexpr (sizeof(A) == 4) {
    if (yc.k == 1) {
      spmv_tiled_kernel<S><<<static_cast<unsigned>((p.rows + kTileRows - 1) / kTileRows), kTileRows,
                             0, d->stream>>>(view<S>(p, m), p.rows, xc, yc, A(alpha), A(beta));
      tiled = true;
    }
  }
  if (!tiled)
    spmm_short_kernel<S><<<grid_for(p.rows * yc.k, 256), 256, 0, d->stream>>>(
        view<S>(p, m), p.rows, xc, yc, A(alpha), A(beta));
  int launches = 1;
  if (p.num_long) {
    spmm_long_kernel<S><<<grid_for(p.num_long * yc.k * 32, 256), 256, 0, d->stream>>>(
        view<S>(p, m), p.long_rows, p.num_long, xc, yc, A(alpha), A(beta));
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
  if (m->values_dtype == XHAL_DTYPE_BF16) return run_spmm<Bf16>(d, m, trans, alpha, x, beta, y);
  if (m->values_dtype == XHAL_DTYPE_F16) return run_spmm<F16>(d, m, trans, alpha, x, beta, y);
  return with_value_type(m->values_dtype, [&](auto t) {
    return run_spmm<decltype(t)>(d, m, trans, alpha, x, beta, y);
  });
}

xhal_status_t spmv(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  return spmm(device, a, trans, alpha, x, beta, y);
}

}  // namespace xhal::gpu
