// spmv / spmm (docs/semantics.md "Sparse (CSR)", 3.7; f64 matrices 7.3,
// the same kernels in double; f16/bf16 matrices 7.2, f32 arithmetic on
// widened loads). Every (row, column of X) is the canonical segment sum:
// rows of at most 32 entries a left-to-right sum from +0 (tiles for f32
// spmv, one thread per row for f64, lane groups for spmm); longer rows by
// pieces of 1024 entries listed at creation (sparse_matrix.cpp), combined
// by the top of the chunk tree. A^T uses the transposed pattern and t_perm
// into A's values.
#include <cstdint>
#include <type_traits>

#include "narrow_device.h"
#include "sparse_matrix.h"
#include "tree_device.h"

namespace xhal::gpu {
namespace {

// S: the matrix's storage type: float; double (alpha and beta widened, every
// operation binary64, 7.3); Bf16 or F16 (7.2: values and x widened on load,
// the products and sums in f32, y widened when beta != 0 and narrowed once).
// A: the arithmetic type, acc_t<S>. P: the matrix's entry-offset type
// (sparse_views.h).
template <class S, class A = acc_t<S>>
__device__ __forceinline__ void finish(S& y, A alpha, A t, A beta) {
  y = to_storage<S>(beta == A(0) ? xmul(alpha, t) : xadd(xmul(alpha, t), xmul(beta, widen(y))));
}

// spmv's rows of at most 32 entries, one thread per row (f64; f32 where
// thread_rows says), a plain left-to-right sum from +0.
template <class S, class P>
__global__ void spmv_row_kernel(PatternViewT<S, P> a, int64_t rows, ColsT<S> x, ColsT<S> y,
                                acc_t<S> alpha, acc_t<S> beta) {
  using A = acc_t<S>;
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows;
       r += int64_t{gridDim.x} * blockDim.x) {
    const P b = a.row_ptr[r], e = a.row_ptr[r + 1];
    if (e - b > 32) continue;  // a piece kernel does it
    A s = A(0);
#pragma unroll 4
    for (P k = b; k < e; ++k) s = xadd(s, xmul(widen(a.value(k)), widen(x.at(a.col[k], 0))));
    finish(y.at(r, 0), alpha, s, beta);
  }
}

// Rows of more than 32 entries, by pieces: a piece is an aligned group of
// 32 chunks (1024 entries) of one row, so its value is a subtree of the
// row's canonical tree over p chunk sums (3.7; p the power of two at or
// above the chunk count). A row of at most 32 chunks is one piece, whose
// value is the row's sum (the tree pads with +0, which does not change the
// bits); a longer row's pieces write their values to scratch and the
// row's last piece to finish (spmv) or spmm_combine_kernel (spmm, or
// spmv.combine=launch) adds them by the top of the same tree.
// Pieces of every long row run side by side, so a hub's critical path is
// one piece, not its whole length.

// The tree of v[0..n) (values published by other blocks, none -0) by one
// warp without a stack: each aligned group of 32 values is a subtree, added
// by warp_tree (+0 past the end, which changes no bits) and written back in
// place over values already read, until one value remains. A stack in
// this kernel (serial_tree's) cost its tiles registers and spills.
template <class A>
__device__ __forceinline__ A warp_tree_in_place(A* v, int64_t n) {
  const int lane = threadIdx.x & 31;
  for (;;) {
    const int64_t groups = (n + 31) / 32;
    A s = A(0);
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t i = g * 32 + lane;
      s = warp_tree<SumOpT<A>>(i < n ? load_coherent(v + i) : A(0));
      xhal_warp_sync();  // every lane has read before v[g] is overwritten
      if (lane == 0 && groups > 1) *reinterpret_cast<volatile A*>(v + g) = s;
      xhal_warp_sync();
    }
    if (groups == 1) return s;
    n = groups;
  }
}

// spmv's piece q by one warp. Products go to the warp's padded [C][33]
// staging area C chunks at a time by coalesced loads of values and columns
// (row i of the area is chunk i), lane j sums chunk j left to right from
// +0, warp_tree gives the piece's subtree.
// With `done` (counters indexed by a row's first piece, zero between
// calls) the last piece of a row to finish adds the row's piece values by
// the top of its tree, as spmm_combine_kernel would, without that launch:
// each piece publishes its value, fences, and counts; the warp that counts
// last reads them all back and clears the counter for the next call.
template <int C, class S, class P, class A = acc_t<S>>
__device__ __forceinline__ void spmv_piece(const PatternViewT<S, P>& a, const PieceView& pieces,
                                           int64_t q, const ColsT<S>& x, const ColsT<S>& y, A alpha,
                                           A beta, A* partial, unsigned* done, A (*stage)[33]) {
  const int lane = threadIdx.x & 31;
  const int64_t r = pieces.row[q];
  const int64_t b = a.row_ptr[r], m = a.row_ptr[r + 1] - b;
  const int64_t c0 = int64_t{pieces.g[q]} * 32;  // the piece's first chunk
  const int64_t left = m - c0 * 32;              // entries from the piece's start
  const int n = left >= 1024 ? 32 : static_cast<int>((left + 31) / 32);  // chunks present
  const int64_t mine = left - int64_t{lane} * 32;                        // terms of chunk c0 + lane
  const int len = mine <= 0 ? 0 : mine >= 32 ? 32 : static_cast<int>(mine);
  A s = A(0);
  for (int base = 0; base < n; base += C) {  // the same for the whole warp
    const int cnt = n - base < C ? n - base : C;
#pragma unroll 4
    for (int i = 0; i < cnt; ++i) {
      const int64_t e = (c0 + base + i) * 32 + lane;
      if (e < m) stage[i][lane] = xmul(widen(a.value(b + e)), widen(x.at(a.col[b + e], 0)));
    }
    xhal_warp_sync();
    if (lane >= base && lane < base + C)
      for (int t = 0; t < len; ++t) s = xadd(s, stage[lane - base][t]);
    xhal_warp_sync();  // the area is refilled by the next round
  }
  const A v = warp_tree<SumOpT<A>>(s);
  if (m <= 1024) {
    if (lane == 0) finish(y.at(r, 0), alpha, v, beta);
    return;
  }
  if (lane == 0) partial[q] = v;
  if (!done) return;  // spmm_combine_kernel adds them
  const int64_t first = q - pieces.g[q], row_pieces = (m + 1023) / 1024;
  int last = 0;
  if (lane == 0) {
    __threadfence();
    last = atomicAdd(done + first, 1u) == static_cast<unsigned>(row_pieces - 1);
  }
  if (!xhal_shfl(last, 0)) return;
  __threadfence();
  const A t = warp_tree_in_place(partial + first, row_pieces);
  if (lane == 0) {
    finish(y.at(r, 0), alpha, t, beta);
    done[first] = 0;
  }
}

// f64 spmv's pieces: one warp each, 4 warps a block (33.8 KB of staging).
template <class S, class P>
__global__ void __launch_bounds__(128)
    spmv_piece_kernel(PatternViewT<S, P> a, PieceView pieces, ColsT<S> x, ColsT<S> y,
                      acc_t<S> alpha, acc_t<S> beta, acc_t<S>* partial, unsigned* done) {
  using A = acc_t<S>;
  __shared__ A stage[4][32][33];
  const int warp = threadIdx.x >> 5;
  const int64_t q = int64_t{blockIdx.x} * 4 + warp;
  if (q >= pieces.num) return;  // whole warps only: no block-wide barrier
  spmv_piece<32>(a, pieces, q, x, y, alpha, beta, partial, done, stage[warp]);
}

// spmv of f32/f16/bf16 matrices in one launch: the first piece_blocks
// blocks take 8 pieces each (above, 16 chunks a round), the others a tile
// of kTileRows consecutive rows of at most 32 entries, so the long rows
// run beside the short ones. A tile's entries are one contiguous run,
// walked in windows of kTileEntries: the block forms a window's products in
// shared memory with coalesced loads, then each thread adds its row's
// products in the window left to right (a row spans at most two windows,
// taken in order: the canonical order, 3.7). Windows that hold no entry of
// a short row of the tile (inside a long row) are not loaded, nor are the
// entries of a tile's long rows (up to kSkipRows of them; a tile with more
// loads them and leaves their products unread): pieces sum those.
constexpr int kTileRows = 256;
constexpr int kTileEntries = 4096;
constexpr int kSkipRows = 4;

// At least 5 blocks an SM: ptxas then keeps the kernel at 48 registers,
// without spills for 32-bit entry offsets (left alone it chose 40 and
// spilled); the 64-bit-offset instances spill 40-52 bytes at that cap.
template <class S, class P>
__global__ void __launch_bounds__(kTileRows, 5)
    spmv_fused_kernel(PatternViewT<S, P> a, PieceView pieces, int64_t piece_blocks, int64_t rows,
                      ColsT<S> x, ColsT<S> y, float alpha, float beta, float* partial,
                      unsigned* done) {
  static_assert(kTileRows == 8 * 32, "a piece block is 8 warps");
  __shared__ float prod[8 * 16 * 33];  // >= kTileEntries
  __shared__ P long_b[kSkipRows], long_e[kSkipRows];
  __shared__ int num_long;
  if (blockIdx.x < piece_blocks) {
    const int warp = threadIdx.x >> 5;
    const int64_t q = int64_t{blockIdx.x} * 8 + warp;
    if (q < pieces.num)
      spmv_piece<16>(a, pieces, q, x, y, alpha, beta, partial, done,
                     reinterpret_cast<float(*)[33]>(prod + warp * 16 * 33));
    return;
  }
  // A pattern without long rows (pieces.num == 0) needs no list.
  const bool any_long = pieces.num != 0;
  if (any_long) {
    if (threadIdx.x == 0) num_long = 0;
    __syncthreads();
  }
  const int64_t r0 = (blockIdx.x - piece_blocks) * int64_t{kTileRows}, r = r0 + threadIdx.x;
  const int64_t last = r0 + kTileRows < rows ? r0 + kTileRows : rows;
  const P start = a.row_ptr[r0], run = a.row_ptr[last] - start;
  P b = 0, e = 0;
  if (r < rows) {
    b = a.row_ptr[r] - start;
    e = a.row_ptr[r + 1] - start;
  }
  const bool short_row = r < rows && e - b <= 32;  // a piece does the others
  if (any_long && r < rows && !short_row) {
    const int i = atomicAdd(&num_long, 1);
    if (i < kSkipRows) {
      long_b[i] = b;
      long_e[i] = e;
    }
  }
  float s = 0.0f;
  int skip_rows = -1;  // read after the first window's barrier
  for (P w0 = 0; w0 < run; w0 += kTileEntries) {
    const P w1 = run - w0 < kTileEntries ? run : w0 + kTileEntries;
    const bool use = short_row && b < w1 && e > w0;
    // A barrier too: the window before this one has been read by all.
    if (!__syncthreads_or(use)) continue;
    if (skip_rows < 0) skip_rows = !any_long || num_long > kSkipRows ? 0 : num_long;
    // Four slots a thread at a time: their column and value loads are all
    // issued before the first gather of x waits (one dependent pair at a
    // time left the loads latency bound; 16 slots took 76 registers and
    // made the river 2.4x slower, docs/performance.md).
    const int cnt = static_cast<int>(w1 - w0);
    for (int h = 0; h < cnt; h += 4 * kTileRows) {
      I col_of[4];
      S val_of[4];
      unsigned wanted = 0;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int t = h + threadIdx.x + j * kTileRows;
        bool skip = t >= cnt;
        for (int i = 0; i < skip_rows; ++i) skip |= w0 + t >= long_b[i] && w0 + t < long_e[i];
        if (!skip) {
          wanted |= 1u << j;
          col_of[j] = a.col[start + w0 + t];
          val_of[j] = a.value(start + w0 + t);
        }
      }
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (wanted >> j & 1u)
          prod[h + threadIdx.x + j * kTileRows] = xmul(widen(val_of[j]), widen(x.at(col_of[j], 0)));
    }
    __syncthreads();
    if (use)
      for (P k = b > w0 ? b : w0; k < (e < w1 ? e : w1); ++k) s = xadd(s, prod[k - w0]);
  }
  if (short_row) finish(y.at(r, 0), alpha, s, beta);
}

// spmm (k > 1): one warp per (piece, block of C columns of X), C = k
// rounded up to a power of two, at most 32: lane l takes column l % C and
// the (l / C)-th of 32 / C equal aligned runs of the piece's first p chunks
// (p: the piece's chunk count rounded up to a power of two; a run is at
// least one chunk, and lanes past p add nothing). Each lane sums its chunks
// left to right and merges them with serial_tree's stack rule, an aligned
// subtree of the piece's tree; the runs are merged pairwise by shuffles,
// the rest of the same tree (runs of +0 past the row's end change no bits).
// One run a column (8 of 32 lanes busy for k = 8) took 164 us of the
// power-law matrix's 0.265 ms at k = 8 (H200, ncu); splitting the runs over
// 4 warps as well was 3-9% faster on A but 1.5-2x slower on A^T, whose many
// short pieces left most of the warps idle.
template <class S, class P, int C>
__global__ void spmm_piece_kernel(PatternViewT<S, P> a, PieceView pieces, ColsT<S> x, ColsT<S> y,
                                  acc_t<S> alpha, acc_t<S> beta, acc_t<S>* partial) {
  using A = acc_t<S>;
  constexpr int H = 32 / C;  // runs a piece
  const int lane = threadIdx.x & 31;
  const int cl = lane % C, h = lane / C;
  const int64_t blocks = (y.k + C - 1) / C;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  for (int64_t w = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32; w < pieces.num * blocks;
       w += warps) {
    const int64_t q = w / blocks;
    const int64_t c = (w - q * blocks) * C + cl;
    const int64_t r = pieces.row[q];
    const int64_t b = a.row_ptr[r], m = a.row_ptr[r + 1] - b;
    const int64_t chunks = (m + 31) / 32, first = int64_t{pieces.g[q]} * 32;
    const int64_t n = chunks - first < 32 ? chunks - first : 32;
    int64_t p = 1;
    while (p < n) p <<= 1;
    const int64_t run = p > H ? p / H : 1;
    A v = A(0);
    if (c < y.k && h * run < p)
      v = serial_tree<SumOpT<A>>(
          [&](int64_t chunk) {
            A s = A(0);
            const int64_t end = chunk * 32 + 32 < m ? chunk * 32 + 32 : m;
#pragma unroll 8
            for (int64_t k = chunk * 32; k < end; ++k)
              s = xadd(s, xmul(widen(a.value(b + k)), widen(x.at(a.col[b + k], c))));
            return s;
          },
          first + h * run, run, chunks);
#pragma unroll
    for (int d = 1; d < H; d <<= 1) {
      const A o = xhal_shfl_down(v, d * C);
      if (h % (2 * d) == 0) v = xadd(v, o);
    }
    if (h == 0 && c < y.k) {
      if (m <= 1024) finish(y.at(r, c), alpha, v, beta);
      else partial[q * y.k + c] = v;
    }
  }
}

// Rows of more than 1024 entries: one warp per (row, column) adds the
// row's n piece values by the top of its tree (warp_tree_of: the lanes
// load them side by side, where one thread would wait for each in turn).
template <class S, class P>
__global__ void spmm_combine_kernel(PatternViewT<S, P> a, PieceView pieces, ColsT<S> y,
                                    acc_t<S> alpha, acc_t<S> beta, const acc_t<S>* partial) {
  using A = acc_t<S>;
  const int64_t total = pieces.num_multi * y.k;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  for (int64_t it = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32; it < total;
       it += warps) {
    const int64_t i = it / y.k, c = it - i * y.k;
    const int64_t r = pieces.multi_row[i], first = pieces.multi_first[i];
    const int64_t n = (a.row_ptr[r + 1] - a.row_ptr[r] + 1023) / 1024;
    const A v =
        warp_tree_of<SumOpT<A>>([&](int64_t j) { return partial[(first + j) * y.k + c]; }, n);
    if ((threadIdx.x & 31) == 0) finish(y.at(r, c), alpha, v, beta);
  }
}

// spmm's rows of at most 32 entries: G lanes per row (G = k rounded up to
// a power of two, at most 32; 16 for k > 32, so that a warp has two rows in
// flight, spmm_group16x4_kernel), lane l for columns l, l + G, ... two at
// a time (four for k > 32): a row's values
// and columns are shared by its lanes and consecutive columns of a
// row-major X are read together. The index arithmetic is shifts, not the
// 64-bit division of one thread per (row, column).
template <class S, class P, int G>
__global__ void spmm_group_kernel(PatternViewT<S, P> a, int64_t rows, ColsT<S> x, ColsT<S> y,
                                  acc_t<S> alpha, acc_t<S> beta) {
  using A = acc_t<S>;
  const int l = threadIdx.x & (G - 1);
  const int64_t step = int64_t{gridDim.x} * (blockDim.x / G);
  for (int64_t r = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / G; r < rows; r += step) {
    const P b = a.row_ptr[r], e = a.row_ptr[r + 1];
    if (e - b > 32) continue;  // a piece kernel does it
    for (int64_t c = l; c < y.k; c += 2 * G) {
      const bool two = c + G < y.k;
      A s0 = A(0), s1 = A(0);
#pragma unroll 4
      for (P k = b; k < e; ++k) {
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

// k > 32: 16 lanes a row (two rows a warp), 4 columns a lane at once.
template <class S, class P>
__global__ void spmm_group16x4_kernel(PatternViewT<S, P> a, int64_t rows, ColsT<S> x, ColsT<S> y,
                                      acc_t<S> alpha, acc_t<S> beta) {
  using A = acc_t<S>;
  constexpr int G = 16;
  const int l = threadIdx.x & (G - 1);
  const int64_t step = int64_t{gridDim.x} * (blockDim.x / G);
  for (int64_t r = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / G; r < rows; r += step) {
    const P b = a.row_ptr[r], e = a.row_ptr[r + 1];
    if (e - b > 32) continue;  // a piece kernel does it
    for (int64_t c = l; c < y.k; c += 4 * G) {
      A s[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) s[q] = A(0);
#pragma unroll 2
      for (P k = b; k < e; ++k) {
        const A v = widen(a.value(k));
        const I j = a.col[k];
#pragma unroll
        for (int q = 0; q < 4; ++q)
          if (c + q * G < y.k) s[q] = xadd(s[q], xmul(v, widen(x.at(j, c + q * G))));
      }
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (c + q * G < y.k) finish(y.at(r, c + q * G), alpha, s[q], beta);
    }
  }
}

template <class S, class P>
void launch_pieces(Device* d, PatternViewT<S, P> v, const PieceView& pieces, ColsT<S> x, ColsT<S> y,
                   acc_t<S> alpha, acc_t<S> beta, acc_t<S>* partial) {
#define XHAL_PIECES(C)                                                             \
  spmm_piece_kernel<S, P, C>                                                       \
      <<<grid_for(pieces.num*((y.k + C - 1) / C) * 32, 256), 256, 0, d->stream>>>( \
          v, pieces, x, y, alpha, beta, partial)
  if (y.k > 16) XHAL_PIECES(32);
  else if (y.k > 8) XHAL_PIECES(16);
  else if (y.k > 4) XHAL_PIECES(8);
  else if (y.k > 2) XHAL_PIECES(4);
  else XHAL_PIECES(2);
#undef XHAL_PIECES
}

// f32 spmm whose X and Y rows are runs of float4s (k % 4 == 0, unit column
// stride, row strides of a multiple of 4, 16-byte aligned bases,
// vec4_ok): L lanes a row, lane l for float4 columns l, l + L, ..., V of
// them in one pass over the row's entries: one 16-byte load of X per entry
// and float4 where a lane group loads one float, so for k = 8 a warp has 16
// rows in flight instead of 4. Each of the sums is the same left-to-right
// sum from +0 as spmm_group_kernel's.
template <class P, int L, int V>
__global__ void spmm_vec4_kernel(PatternViewT<float, P> a, int64_t rows, Cols x, Cols y,
                                 float alpha, float beta) {
  const int l = threadIdx.x & (L - 1);
  const int64_t k4 = y.k / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x.p);
  float4* y4 = reinterpret_cast<float4*>(y.p);
  const int64_t xrs4 = x.rs / 4, yrs4 = y.rs / 4;
  const int64_t step = int64_t{gridDim.x} * (blockDim.x / L);
  for (int64_t r = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / L; r < rows; r += step) {
    const P b = a.row_ptr[r], e = a.row_ptr[r + 1];
    if (e - b > 32) continue;  // a piece kernel does it
    for (int64_t c = l; c < k4; c += L * V) {
      float4 s[V];
#pragma unroll
      for (int q = 0; q < V; ++q) s[q] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 4
      for (P k = b; k < e; ++k) {
        const float v = a.value(k);
        const float4* xr = x4 + a.col[k] * xrs4 + c;
#pragma unroll
        for (int q = 0; q < V; ++q) {
          if (q > 0 && c + q * L >= k4) break;
          const float4 t = xr[q * L];
          s[q].x = xadd(s[q].x, xmul(v, t.x));
          s[q].y = xadd(s[q].y, xmul(v, t.y));
          s[q].z = xadd(s[q].z, xmul(v, t.z));
          s[q].w = xadd(s[q].w, xmul(v, t.w));
        }
      }
#pragma unroll
      for (int q = 0; q < V; ++q) {
        if (q > 0 && c + q * L >= k4) break;
        float4& out = y4[r * yrs4 + c + q * L];
        const float4 t = s[q];
        if (beta == 0.0f) {
          out = make_float4(xmul(alpha, t.x), xmul(alpha, t.y), xmul(alpha, t.z), xmul(alpha, t.w));
        } else {
          const float4 o = out;
          out = make_float4(
              xadd(xmul(alpha, t.x), xmul(beta, o.x)), xadd(xmul(alpha, t.y), xmul(beta, o.y)),
              xadd(xmul(alpha, t.z), xmul(beta, o.z)), xadd(xmul(alpha, t.w), xmul(beta, o.w)));
        }
      }
    }
  }
}

inline bool vec4_ok(const Cols& c) {
  return c.k % 4 == 0 && c.cs == 1 && c.rs % 4 == 0 &&
         reinterpret_cast<uintptr_t>(c.p) % alignof(float4) == 0;
}

template <class S, class P>
void launch_group(Device* d, PatternViewT<S, P> v, int64_t rows, bool two_per_lane, ColsT<S> x,
                  ColsT<S> y, acc_t<S> alpha, acc_t<S> beta) {
  if constexpr (std::is_same_v<S, float>) {
    if (vec4_ok(x) && vec4_ok(y)) {
#define XHAL_VEC4(L, V)     \
  spmm_vec4_kernel<P, L, V> \
      <<<grid_for(rows* L, 256), 256, 0, d->stream>>>(v, rows, x, y, alpha, beta)
      // Measured on the H200 (docs/performance.md, "SpMV and SpMM"): two
      // float4s a lane won on the river (about 2 entries a row; k = 64
      // 0.183 -> 0.166 ms) and lost 3-20% on the random matrices (about 10).
      const int64_t k4 = y.k / 4;
      if (two_per_lane) {
        if (k4 > 16) XHAL_VEC4(16, 2);
        else if (k4 > 8) XHAL_VEC4(8, 2);
        else if (k4 > 4) XHAL_VEC4(4, 2);
        else if (k4 > 2) XHAL_VEC4(2, 2);
        else XHAL_VEC4(1, 2);
      } else {
        if (k4 > 8) XHAL_VEC4(16, 1);
        else if (k4 > 4) XHAL_VEC4(8, 1);
        else if (k4 > 2) XHAL_VEC4(4, 1);
        else if (k4 > 1) XHAL_VEC4(2, 1);
        else XHAL_VEC4(1, 1);
      }
#undef XHAL_VEC4
      return;
    }
  }
#define XHAL_GROUP(G)        \
  spmm_group_kernel<S, P, G> \
      <<<grid_for(rows* G, 256), 256, 0, d->stream>>>(v, rows, x, y, alpha, beta)
  // Measured on the H200 (docs/performance.md, "SpMV and SpMM"): 16 lanes of
  // 4 columns took k = 64 from 0.37 to 0.21 ms on the river matrix, but the
  // same kernel made k = 8 slower than 8 lanes of 2.
  if (y.k > 32)
    spmm_group16x4_kernel<S, P>
        <<<grid_for(rows * 16, 256), 256, 0, d->stream>>>(v, rows, x, y, alpha, beta);
  else if (y.k > 16) XHAL_GROUP(32);
  else if (y.k > 8) XHAL_GROUP(16);
  else if (y.k > 4) XHAL_GROUP(8);
  else if (y.k > 2) XHAL_GROUP(4);
  else XHAL_GROUP(2);
#undef XHAL_GROUP
}

// spmv.short_rows (device_options.h). auto: one thread a row where no row
// holds more than 4 entries, so no warp waits long on its longest row
// (H200: river A 0.0124 -> 0.0084 ms; river A^T, rows of up to about 10
// entries, went from 0.0144 to 0.0165; docs/performance.md).
inline bool thread_rows(SpmvShortRows o, const Pattern& p) {
  return o == SpmvShortRows::kRows || (o == SpmvShortRows::kAuto && p.max_row_len <= 4);
}

template <class S, class P>
xhal_status_t run_spmm(Device* d, const Matrix* m, xhal_transpose_t trans, float alpha,
                       const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  using A = acc_t<S>;
  const Pattern& p = trans == XHAL_TRANSPOSE ? m->at : m->a;
  const ColsT<S> xc = cols_of<S>(x), yc = cols_of<S>(y);
  if (p.rows == 0 || yc.k == 0) return XHAL_OK;
  PatternViewT<S, P> v;
  if (const xhal_status_t st = ordered_view<S, P>(d, m, p, &v); st != XHAL_OK) return st;
  int launches = 1;
  // Rows of several pieces leave their piece values in scratch for the
  // combine launch at the end.
  A* partial = nullptr;
  unsigned* done = nullptr;  // spmv: the combine inside the piece launch
  if (p.pieces.num_multi) {
    void* ws = nullptr;
    xhal_status_t st = scratch(d, sizeof(A) * p.pieces.num * yc.k, &ws);
    if (st != XHAL_OK) return st;
    partial = static_cast<A*>(ws);
    if (yc.k == 1 && d->options.spmv_fused_combine) {
      st = sync_counters(d, static_cast<size_t>(p.pieces.num), &done);
      if (st != XHAL_OK) return st;
    }
  }
  if (yc.k > 1) {
    if (p.pieces.num) {
      launch_pieces<S, P>(d, v, p.pieces, xc, yc, A(alpha), A(beta), partial);
      ++launches;
    }
    // Two float4s a lane where rows hold fewer than 4 entries on average
    // (the mean, not spmv.short_rows' longest row: measured so on the H200).
    const bool two_per_lane = m->nnz < 4 * p.rows;
    launch_group<S, P>(d, v, p.rows, two_per_lane, xc, yc, A(alpha), A(beta));
  } else if (sizeof(A) == 4 && !thread_rows(d->options.spmv_short_rows, p)) {
    if constexpr (sizeof(A) == 4) {
      const int64_t piece_blocks = (p.pieces.num + 7) / 8;
      spmv_fused_kernel<S, P>
          <<<static_cast<unsigned>(piece_blocks + (p.rows + kTileRows - 1) / kTileRows), kTileRows,
             0, d->stream>>>(v, p.pieces, piece_blocks, p.rows, xc, yc, alpha, beta, partial, done);
    }
  } else {
    // f64 stays on one thread per row: tiled it was slower on the H200
    // (uniform random 0.145 against 0.113 ms, docs/performance.md); so
    // does f32 where thread_rows says.
    if (p.pieces.num) {
      spmv_piece_kernel<S, P><<<static_cast<unsigned>((p.pieces.num + 3) / 4), 128, 0, d->stream>>>(
          v, p.pieces, xc, yc, A(alpha), A(beta), partial, done);
      ++launches;
    }
    spmv_row_kernel<S, P>
        <<<grid_for(p.rows, 256), 256, 0, d->stream>>>(v, p.rows, xc, yc, A(alpha), A(beta));
  }
  if (p.pieces.num_multi && !done) {
    spmm_combine_kernel<S, P><<<grid_for(p.pieces.num_multi * yc.k * 32, 256), 256, 0, d->stream>>>(
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
  return with_offsets(m, [&](auto offset) {
    using P = decltype(offset);
    if (m->values_dtype == XHAL_DTYPE_BF16)
      return run_spmm<Bf16, P>(d, m, trans, alpha, x, beta, y);
    if (m->values_dtype == XHAL_DTYPE_F16) return run_spmm<F16, P>(d, m, trans, alpha, x, beta, y);
    return with_value_type(m->values_dtype, [&](auto t) {
      return run_spmm<decltype(t), P>(d, m, trans, alpha, x, beta, y);
    });
  });
}

xhal_status_t spmv(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  return spmm(device, a, trans, alpha, x, beta, y);
}

}  // namespace xhal::gpu
