// spmv / spmm (docs/semantics.md "Sparse (CSR)", 3.7; f64 matrices 7.3,
// the same kernels in double; f16/bf16 matrices 7.2, f32 arithmetic on
// widened loads). Every (row, column of X) is the canonical segment sum:
// rows of at most 32 entries a left-to-right sum from +0 (tiles for f32
// spmv, one thread per row for f64, lane groups for spmm); longer rows by
// pieces of 1024 entries listed at creation (sparse_matrix.cpp), combined
// by the top of the chunk tree. A^T uses the transposed pattern and t_perm
// into A's values.
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

// f64 spmv's rows of at most 32 entries: one thread per row, a plain
// left-to-right sum from +0.
template <class S>
__global__ void spmv_row_kernel(PatternViewT<S> a, int64_t rows, ColsT<S> x, ColsT<S> y,
                                acc_t<S> alpha, acc_t<S> beta) {
  using A = acc_t<S>;
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows;
       r += int64_t{gridDim.x} * blockDim.x) {
    const I b = a.row_ptr[r], e = a.row_ptr[r + 1];
    if (e - b > 32) continue;  // a piece kernel does it
    A s = A(0);
#pragma unroll 4
    for (I k = b; k < e; ++k) s = xadd(s, xmul(widen(a.value(k)), widen(x.at(a.col[k], 0))));
    finish(y.at(r, 0), alpha, s, beta);
  }
}

// spmv's rows of at most 32 entries, by tiles of kTileRows consecutive rows,
// whose entries are one contiguous run. When the run fits in shared memory
// the block first forms every product with coalesced loads of values and
// columns, then each thread sums its row's products left to right from +0:
// the canonical order (3.7), the loads of the one-thread-per-row form
// without its strided reads. A run that does not fit (a long row inside)
// is summed from memory as spmv_row_kernel does.
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
  if (e - b > 32) return;  // a piece kernel does it
  A s = A(0);
  if (staged) {
    for (I k = b - start; k < e - start; ++k) s = xadd(s, prod[k]);
  } else {
#pragma unroll 4
    for (I k = b; k < e; ++k) s = xadd(s, xmul(widen(a.value(k)), widen(x.at(a.col[k], 0))));
  }
  finish(y.at(r, 0), alpha, s, beta);
}

// Rows of more than 32 entries, by pieces: a piece is an aligned group of
// 32 chunks (1024 entries) of one row, so its value is a subtree of the
// row's canonical tree over p chunk sums (3.7; p the power of two at or
// above the chunk count). A row of at most 32 chunks is one piece, whose
// value is the row's sum (the tree pads with +0, which does not change the
// bits); a longer row's pieces write their values to scratch and
// spmm_combine_kernel adds them by the top of the same tree.
// Pieces of every long row run side by side, so a hub's critical path is
// one piece, not its whole length.

// spmv (k = 1): one warp per piece. Products go to a padded 32 x 33 shared
// tile by coalesced loads of values and columns (row i of the tile is
// chunk i), lane j sums chunk j left to right from +0, warp_tree gives the
// piece's subtree. W warps a block: 33.8 KB of shared memory for f32 (8) and
// f64 (4).
template <class A>
constexpr int kPieceWarps = sizeof(A) == 4 ? 8 : 4;

template <class S>
__global__ void __launch_bounds__(kPieceWarps<acc_t<S>> * 32)
    spmv_piece_kernel(PatternViewT<S> a, PieceView pieces, ColsT<S> x, ColsT<S> y, acc_t<S> alpha,
                      acc_t<S> beta, acc_t<S>* partial) {
  using A = acc_t<S>;
  constexpr int W = kPieceWarps<A>;
  __shared__ A prod[W][32][33];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t q = int64_t{blockIdx.x} * W + warp;
  if (q >= pieces.num) return;  // whole warps only: no block-wide barrier below
  const int64_t r = pieces.row[q];
  const int64_t b = a.row_ptr[r], m = a.row_ptr[r + 1] - b;
  const int64_t c0 = int64_t{pieces.g[q]} * 32;  // the piece's first chunk
  const int64_t left = m - c0 * 32;              // entries from the piece's start
  const int n = left >= 1024 ? 32 : static_cast<int>((left + 31) / 32);  // chunks present
#pragma unroll 4
  for (int i = 0; i < n; ++i) {
    const int64_t e = (c0 + i) * 32 + lane;
    if (e < m) prod[warp][i][lane] = xmul(widen(a.value(b + e)), widen(x.at(a.col[b + e], 0)));
  }
  xhal_warp_sync();
  const int64_t mine = left - int64_t{lane} * 32;  // terms of chunk c0 + lane
  const int len = mine <= 0 ? 0 : mine >= 32 ? 32 : static_cast<int>(mine);
  A s = A(0);
  for (int t = 0; t < len; ++t) s = xadd(s, prod[warp][lane][t]);
  const A v = warp_tree<SumOpT<A>>(s);
  if (lane == 0) {
    if (m <= 1024) finish(y.at(r, 0), alpha, v, beta);
    else partial[q] = v;
  }
}

// spmm (k > 1): one warp per (piece, block of 32 columns of X), lane c for
// column c: the warp shares each entry's value and column (one load for 32
// columns), X's rows are read whole, and each lane sums its 32 chunks left
// to right and merges them with serial_tree's stack rule.
template <class S>
__global__ void spmm_piece_kernel(PatternViewT<S> a, PieceView pieces, ColsT<S> x, ColsT<S> y,
                                  acc_t<S> alpha, acc_t<S> beta, acc_t<S>* partial) {
  using A = acc_t<S>;
  const int64_t blocks = (y.k + 31) / 32;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  for (int64_t w = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32; w < pieces.num * blocks;
       w += warps) {
    const int64_t q = w / blocks;
    const int64_t c = (w - q * blocks) * 32 + (threadIdx.x & 31);
    if (c >= y.k) continue;
    const int64_t r = pieces.row[q];
    const int64_t b = a.row_ptr[r], m = a.row_ptr[r + 1] - b;
    const A v = serial_tree<SumOpT<A>>(
        [&](int64_t chunk) {
          A s = A(0);
          const int64_t end = chunk * 32 + 32 < m ? chunk * 32 + 32 : m;
#pragma unroll 8
          for (int64_t k = chunk * 32; k < end; ++k)
            s = xadd(s, xmul(widen(a.value(b + k)), widen(x.at(a.col[b + k], c))));
          return s;
        },
        int64_t{pieces.g[q]} * 32, 32, (m + 31) / 32);
    if (m <= 1024) finish(y.at(r, c), alpha, v, beta);
    else partial[q * y.k + c] = v;
  }
}

// Rows of more than 1024 entries: one thread per (row, column) adds the
// row's piece values by the top of its tree (p/32 leaves, the real pieces
// then +0).
template <class S>
__global__ void spmm_combine_kernel(PatternViewT<S> a, PieceView pieces, ColsT<S> y, acc_t<S> alpha,
                                    acc_t<S> beta, const acc_t<S>* partial) {
  using A = acc_t<S>;
  const int64_t total = pieces.num_multi * y.k;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = it / y.k, c = it - i * y.k;
    const int64_t r = pieces.multi_row[i], first = pieces.multi_first[i];
    const int64_t n = (a.row_ptr[r + 1] - a.row_ptr[r] + 1023) / 1024;
    int64_t p = 1;
    while (p < n) p <<= 1;
    const A v =
        serial_tree<SumOpT<A>>([&](int64_t j) { return partial[(first + j) * y.k + c]; }, 0, p, n);
    finish(y.at(r, c), alpha, v, beta);
  }
}

// spmm's rows of at most 32 entries: G lanes per row (G = k rounded up to
// a power of two, at most 32), lane l for columns l, l + G, ...: a row's
// values and columns are shared by its lanes and consecutive columns of a
// row-major X are read together. The index arithmetic is shifts, not the
// 64-bit division of one thread per (row, column).
template <class S, int G>
__global__ void spmm_group_kernel(PatternViewT<S> a, int64_t rows, ColsT<S> x, ColsT<S> y,
                                  acc_t<S> alpha, acc_t<S> beta) {
  using A = acc_t<S>;
  const int l = threadIdx.x & (G - 1);
  const int64_t step = int64_t{gridDim.x} * (blockDim.x / G);
  for (int64_t r = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / G; r < rows; r += step) {
    const I b = a.row_ptr[r], e = a.row_ptr[r + 1];
    if (e - b > 32) continue;  // a piece kernel does it
    for (int64_t c = l; c < y.k; c += 2 * G) {
      // Two columns at once: their loads of X overlap.
      const bool two = c + G < y.k;
      A s0 = A(0), s1 = A(0);
#pragma unroll 4
      for (I k = b; k < e; ++k) {
        const A v = widen(a.value(k));
        const I j = a.col[k];
        s0 = xadd(s0, xmul(v, widen(x.at(j, c))));
        if (two) s1 = xadd(s1, xmul(v, widen(x.at(j, c + G))));
      }
      finish(y.at(r, c), alpha, s0, beta);
      if (two) finish(y.at(r, c + G), alpha, s1, beta);
    }
  }
}

template <class S>
void launch_group(Device* d, PatternViewT<S> v, int64_t rows, ColsT<S> x, ColsT<S> y,
                  acc_t<S> alpha, acc_t<S> beta) {
#define XHAL_GROUP(G) \
  spmm_group_kernel<S, G><<<grid_for(rows* G, 256), 256, 0, d->stream>>>(v, rows, x, y, alpha, beta)
  if (y.k > 16) XHAL_GROUP(32);
  else if (y.k > 8) XHAL_GROUP(16);
  else if (y.k > 4) XHAL_GROUP(8);
  else if (y.k > 2) XHAL_GROUP(4);
  else XHAL_GROUP(2);
#undef XHAL_GROUP
}

template <class S>
xhal_status_t run_spmm(Device* d, const Matrix* m, xhal_transpose_t trans, float alpha,
                       const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  using A = acc_t<S>;
  const Pattern& p = trans == XHAL_TRANSPOSE ? m->at : m->a;
  const ColsT<S> xc = cols_of<S>(x), yc = cols_of<S>(y);
  if (p.rows == 0 || yc.k == 0) return XHAL_OK;
  const PatternViewT<S> v = view<S>(p, m);
  int launches = 0;
  // The long rows' pieces first: their partial sums are read by the
  // combine launch after the short rows.
  A* partial = nullptr;
  if (p.pieces.num) {
    if (p.pieces.num_multi) {
      void* ws = nullptr;
      xhal_status_t st = scratch(d, sizeof(A) * p.pieces.num * yc.k, &ws);
      if (st != XHAL_OK) return st;
      partial = static_cast<A*>(ws);
    }
    if (yc.k == 1) {
      constexpr int W = kPieceWarps<A>;
      spmv_piece_kernel<S>
          <<<static_cast<unsigned>((p.pieces.num + W - 1) / W), W * 32, 0, d->stream>>>(
              v, p.pieces, xc, yc, A(alpha), A(beta), partial);
    } else {
      spmm_piece_kernel<S>
          <<<grid_for(p.pieces.num * ((yc.k + 31) / 32) * 32, 256), 256, 0, d->stream>>>(
              v, p.pieces, xc, yc, A(alpha), A(beta), partial);
    }
    ++launches;
  }
  if (yc.k > 1) {
    launch_group<S>(d, v, p.rows, xc, yc, A(alpha), A(beta));
  } else if constexpr (sizeof(A) == 4) {
    spmv_tiled_kernel<S>
        <<<static_cast<unsigned>((p.rows + kTileRows - 1) / kTileRows), kTileRows, 0, d->stream>>>(
            v, p.rows, xc, yc, A(alpha), A(beta));
  } else {
    // f64 stays on one thread per row: tiled it was slower on the H200
    // (uniform random 0.145 against 0.113 ms, docs/performance.md).
    spmv_row_kernel<S>
        <<<grid_for(p.rows, 256), 256, 0, d->stream>>>(v, p.rows, xc, yc, A(alpha), A(beta));
  }
  ++launches;
  if (p.pieces.num_multi) {
    spmm_combine_kernel<S><<<grid_for(p.pieces.num_multi * yc.k, 256), 256, 0, d->stream>>>(
        v, p.pieces, yc, A(alpha), A(beta), partial);
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
