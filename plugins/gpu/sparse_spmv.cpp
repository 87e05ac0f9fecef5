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

// spmv's hubs (rows of more than kHubTerms entries) of f32/f16/bf16
// matrices: one block of 8 warps per row. The canonical tree over the row's
// p chunk sums (3.7; p the power of two at or above the chunk count, at
// least 256 here) is split into 8 aligned groups of p/8 chunks, one per
// warp. A warp walks its group 32 chunks (1024 entries) at a time: the
// products go to shared memory through coalesced loads, lane j sums chunk j
// left to right from +0, warp_tree gives the 32 chunks' subtree, and lane 0
// merges the subtrees with serial_tree's stack rule. Thread 0 combines the
// 8 group values pairwise: the same tree, so the same bits as one warp per
// row, which walked each lane's chunks with strided loads.
constexpr int kHubWarps = 8;

template <class S>
__global__ void __launch_bounds__(kHubWarps * 32)
    spmv_hub_kernel(PatternViewT<S> a, const I* hubs, ColsT<S> x, ColsT<S> y, float alpha,
                    float beta) {
  __shared__ float prod[kHubWarps][32][33];  // padded: lane j reads row j conflict-free
  __shared__ float group[kHubWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t r = hubs[blockIdx.x];
  const int64_t b = a.row_ptr[r], m = a.row_ptr[r + 1] - b;
  const int64_t chunks = (m + 31) / 32;
  int64_t p = 1;
  while (p < chunks) p <<= 1;
  const int64_t per_warp = p / kHubWarps;  // >= 32: a hub has more than 128 chunks
  float stack[40];
  int top = 0;
  for (int64_t g = 0; g < per_warp / 32; ++g) {
    const int64_t c0 = warp * per_warp + g * 32;  // the piece's first chunk
#pragma unroll 8
    for (int i = 0; i < 32; ++i) {
      const int64_t e = (c0 + i) * 32 + lane;
      if (e < m) prod[warp][i][lane] = xmul(widen(a.value(b + e)), widen(x.at(a.col[b + e], 0)));
    }
    xhal_warp_sync();
    const int64_t left = m - (c0 + lane) * 32;  // terms of chunk c0 + lane
    const int len = left <= 0 ? 0 : left >= 32 ? 32 : static_cast<int>(left);
    float s = 0.0f;
    for (int t = 0; t < len; ++t) s = xadd(s, prod[warp][lane][t]);
    xhal_warp_sync();  // prod is refilled by the next piece
    const float v = warp_tree<SumOp>(s);
    if (lane == 0) {
      stack[top++] = v;
      for (int64_t c = g; c & 1; c >>= 1) {
        stack[top - 2] = xadd(stack[top - 2], stack[top - 1]);
        --top;
      }
    }
  }
  if (lane == 0) group[warp] = stack[0];
  __syncthreads();
  if (threadIdx.x == 0) {
    static_assert(kHubWarps == 8, "the pairwise combine below is written for 8 groups");
    const float t = xadd(xadd(xadd(group[0], group[1]), xadd(group[2], group[3])),
                         xadd(xadd(group[4], group[5]), xadd(group[6], group[7])));
    finish(y.at(r, 0), alpha, t, beta);
  }
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
  // Hubs (the tail of long_rows) get a block each in spmv of 4-byte
  // arithmetic; otherwise one warp per long row takes them too.
  int64_t warp_rows = p.num_long;
  if constexpr (sizeof(A) == 4) {
    if (yc.k == 1 && p.num_hub) {
      warp_rows -= p.num_hub;
      spmv_hub_kernel<S><<<static_cast<unsigned>(p.num_hub), kHubWarps * 32, 0, d->stream>>>(
          view<S>(p, m), p.long_rows + warp_rows, xc, yc, alpha, beta);
      ++launches;
    }
  }
  if (warp_rows) {
    spmm_long_kernel<S><<<grid_for(warp_rows * yc.k * 32, 256), 256, 0, d->stream>>>(
        view<S>(p, m), p.long_rows, warp_rows, xc, yc, A(alpha), A(beta));
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
