// Softmax, RMSNorm and LayerNorm forward and backward on the GPU, in the
// canonical orders of docs/semantics.md 3.2-3.6 (see docs/gpu.md for the
// mapping). A row of up to 32 chunks (32768 elements) is held in registers
// by one block of 1, 4 or 32 warps; longer rows are cut into segments of 32
// chunks, one block each, whose partial statistics go through scratch
// memory between launches (one launch per sequential reduction, then one
// that applies).
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "gpu_plugin.h"
#include "tree_device.h"

namespace xhal::gpu {
namespace {

constexpr int kMaxInputs = 2;

struct Sum2 {
  float a, b;
};
struct Sum2Op {
  using T = Sum2;
  __device__ static Sum2 identity() { return {0.0f, 0.0f}; }
  __device__ static Sum2 combine(Sum2 x, Sum2 y) { return {xadd(x.a, y.a), xadd(x.b, y.b)}; }
  __device__ static Sum2 shfl_down(Sum2 v, int d) {
    return {xhal_shfl_down(v.a, d), xhal_shfl_down(v.b, d)};
  }
  __device__ static Sum2 shfl(Sum2 v, int s) { return {xhal_shfl(v.a, s), xhal_shfl(v.b, s)}; }
};

// Registers of one warp's chunk: up to three inputs, 8 float4 each.
struct ChunkRegs {
  float4 in[kMaxInputs][8];
  float chunk_max;  // softmax: m[c], with in[0] replaced by e[i]
};

// rowsum of one chunk from a term function term(t, component, element).
template <class F>
__device__ __forceinline__ float chunk_sum_of(F term) {
  float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int t = 0; t < 8; ++t)
#pragma unroll
    for (int q = 0; q < 4; ++q) a[q] = xadd(a[q], term(t, q));
  return warp_tree_sum(xadd(xadd(a[0], a[1]), xadd(a[2], a[3])));
}

__device__ __forceinline__ float comp(const float4& v, int q) {
  return q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w;
}
__device__ __forceinline__ float& comp(float4& v, int q) {
  return q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w;
}

// A lane's 8 float4 of a 1024-element chunk (the load4 layout) into a row
// of n: vector stores when the row allows, else element by element.
template <bool VEC>
__device__ __forceinline__ void store_chunk(float* orow, int64_t i0, int lane, int64_t n,
                                            const float4 (&out)[8]) {
#pragma unroll
  for (int t = 0; t < 8; ++t) {
    const int64_t i = i0 + t * 128 + 4 * lane;
    if (VEC) {
      if (i < n) *reinterpret_cast<float4*>(orow + i) = out[t];
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (i + q < n) orow[i + q] = comp(out[t], q);
    }
  }
}

// Four consecutive per-column values (gamma, beta) from p[i..i+4), 0 past n;
// these stay in L1/L2, so they are re-read rather than held in registers.
__device__ __forceinline__ float4 col4(const float* p, int64_t i, int64_t n) {
  if (i + 3 < n && (reinterpret_cast<uintptr_t>(p + i) & 15) == 0)
    return *reinterpret_cast<const float4*>(p + i);
  return make_float4(i < n ? p[i] : 0.0f, i + 1 < n ? p[i + 1] : 0.0f, i + 2 < n ? p[i + 2] : 0.0f,
                     i + 3 < n ? p[i + 3] : 0.0f);
}
__device__ __forceinline__ int64_t elem(int64_t i0, int t) {
  return i0 + t * 128 + 4 * (threadIdx.x & 31);
}

// ---- the six row ops as bodies of the generic kernel ----
// Each body: Op (statistic), kPhases (sequential reductions), kInputs,
// pointers of inputs (row-major [rows, n] or [n] when per_column), pads,
// chunk_stat(phase) and apply.

// Softmax forward, 3.3 as amended: one xhal_exp per element. chunk_stat
// turns the chunk's x into e[i] = xhal_exp(x[i] - m[c]) in registers (all +0
// when m[c] = -inf) and keeps m[c]; apply writes y[i] = e[i] * r[c] with
// r[c] = xhal_exp(m[c] - M) * (1 / S).
struct SoftmaxFwd {
  using Op = MaxSumOp;
  static constexpr int kPhases = 1, kInputs = 1;
  static constexpr bool kStatInApply = true;  // split form: the apply pass rebuilds e
  const float* x;
  float* y;
  __device__ const float* input(int) const { return x; }
  __device__ static float pad(int) { return neg_inf(); }
  __device__ MaxSum chunk_stat(int, ChunkRegs& r, const MaxSum*, int64_t, int64_t,
                               int64_t) const {
    float4(&v)[8] = r.in[0];
    // fmaxf drops NaN; a NaN element still turns e and s into NaN through
    // xhal_exp(NaN - m), except when m would be -inf, checked below.
    float m = neg_inf();
#pragma unroll
    for (int t = 0; t < 8; ++t) m = fmaxf(fmaxf(m, fmaxf(v[t].x, v[t].y)), fmaxf(v[t].z, v[t].w));
    m = warp_max(m);
    if (m == neg_inf()) {
      bool nan = false;
#pragma unroll
      for (int t = 0; t < 8; ++t)
        nan |= (v[t].x != v[t].x) | (v[t].y != v[t].y) | (v[t].z != v[t].z) | (v[t].w != v[t].w);
      if (warp_max(nan ? 1.0f : 0.0f) != 0.0f) m = __int_as_float(0x7fffffff);
    }
    r.chunk_max = m;
    const bool all_neg_inf = m == neg_inf();
    float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float e = all_neg_inf ? 0.0f : canonical_exp(xsub(comp(v[t], q), m));
        comp(v[t], q) = e;
        a[q] = xadd(a[q], e);  // padding: e = xhal_exp(-inf) = +0 adds nothing
      }
    return {m, warp_tree_sum(xadd(xadd(a[0], a[1]), xadd(a[2], a[3])))};
  }
  __device__ void apply(ChunkRegs& r, const MaxSum* tot, int64_t, int64_t, int64_t,
                        float4* out) const {
    const float rc = xmul(canonical_exp(xsub(r.chunk_max, tot[0].m)), xdiv(1.0f, tot[0].s));
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int q = 0; q < 4; ++q) comp(out[t], q) = xmul(comp(r.in[0][t], q), rc);
  }
  __device__ float* output() const { return y; }
  __device__ void row_out(int64_t, const MaxSum*, int64_t) const {}
};

struct SoftmaxBwd {
  using Op = SumOp;
  static constexpr int kPhases = 1, kInputs = 2;
  const float* y;
  const float* dy;
  float* dx;
  __device__ const float* input(int i) const { return i == 0 ? y : dy; }
  __device__ static float pad(int) { return 0.0f; }
  __device__ float chunk_stat(int, const ChunkRegs& r, const float*, int64_t, int64_t,
                              int64_t) const {
    return chunk_sum_of([&](int t, int q) { return xmul(comp(r.in[0][t], q), comp(r.in[1][t], q)); });
  }
  __device__ void apply(ChunkRegs& r, const float* tot, int64_t, int64_t, int64_t i0, float4* out) const {
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int q = 0; q < 4; ++q)
        comp(out[t], q) = xmul(comp(r.in[0][t], q), xsub(comp(r.in[1][t], q), tot[0]));
  }
  __device__ float* output() const { return dx; }
  __device__ void row_out(int64_t, const float*, int64_t) const {}
};

struct RmsFwd {
  using Op = SumOp;
  static constexpr int kPhases = 1, kInputs = 1;
  const float* x;
  const float* gamma;
  float eps;
  float* y;
  float* rstd;
  __device__ const float* input(int) const { return x; }
  __device__ static float pad(int) { return 0.0f; }
  __device__ float chunk_stat(int, const ChunkRegs& r, const float*, int64_t, int64_t,
                              int64_t) const {
    return chunk_sum_of([&](int t, int q) { return xmul(comp(r.in[0][t], q), comp(r.in[0][t], q)); });
  }
  __device__ float rs(const float* tot, int64_t n) const {
    return xdiv(1.0f, xsqrt(xadd(xdiv(tot[0], static_cast<float>(n)), eps)));
  }
  __device__ void apply(ChunkRegs& r, const float* tot, int64_t, int64_t n, int64_t i0, float4* out) const {
    const float s = rs(tot, n);
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const float4 g = col4(gamma, elem(i0, t), n);
#pragma unroll
      for (int q = 0; q < 4; ++q) comp(out[t], q) = xmul(xmul(comp(r.in[0][t], q), s), comp(g, q));
    }
  }
  __device__ float* output() const { return y; }
  __device__ void row_out(int64_t row, const float* tot, int64_t n) const { rstd[row] = rs(tot, n); }
};

struct RmsBwd {
  using Op = SumOp;
  static constexpr int kPhases = 1, kInputs = 2;
  const float* x;
  const float* dy;
  const float* gamma;
  const float* rstd;
  float* dx;
  __device__ const float* input(int i) const { return i == 0 ? x : dy; }
  __device__ static float pad(int) { return 0.0f; }
  __device__ float chunk_stat(int, const ChunkRegs& r, const float*, int64_t row, int64_t n,
                              int64_t i0) const {
    const float s = rstd[row];
    float4 gm[8];
#pragma unroll
    for (int t = 0; t < 8; ++t) gm[t] = col4(gamma, elem(i0, t), n);
    return chunk_sum_of([&](int t, int q) {
      const float xh = xmul(comp(r.in[0][t], q), s);
      const float g = xmul(comp(r.in[1][t], q), comp(gm[t], q));
      return xmul(g, xh);
    });
  }
  __device__ void apply(ChunkRegs& r, const float* tot, int64_t row, int64_t n, int64_t i0, float4* out) const {
    const float s = rstd[row];
    const float c = xdiv(tot[0], static_cast<float>(n));
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const float4 gm = col4(gamma, elem(i0, t), n);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float xh = xmul(comp(r.in[0][t], q), s);
        const float g = xmul(comp(r.in[1][t], q), comp(gm, q));
        comp(out[t], q) = xmul(xsub(g, xmul(xh, c)), s);
      }
    }
  }
  // colsum stage 1 terms of step t (3.4, 3.5): dgamma += dy * xh.
  static constexpr int kCols = 1;
  __device__ void col_terms(const ChunkRegs& r, int64_t row, int t, float4& pg, float4&) const {
    const float s = rstd[row];
#pragma unroll
    for (int q = 0; q < 4; ++q)
      comp(pg, q) = xadd(comp(pg, q), xmul(comp(r.in[1][t], q), xmul(comp(r.in[0][t], q), s)));
  }
  __device__ float* output() const { return dx; }
  __device__ void row_out(int64_t, const float*, int64_t) const {}
};

struct LnFwd {
  using Op = SumOp;
  static constexpr int kPhases = 2, kInputs = 1;
  const float* x;
  const float* gamma;
  const float* beta;
  float eps;
  float* y;
  float* mean;
  float* rstd;
  __device__ const float* input(int) const { return x; }
  __device__ static float pad(int) { return 0.0f; }
  __device__ float chunk_stat(int phase, const ChunkRegs& r, const float* tot, int64_t, int64_t n,
                              int64_t i0) const {
    if (phase == 0) return chunk_sum_of([&](int t, int q) { return comp(r.in[0][t], q); });
    const float mu = xdiv(tot[0], static_cast<float>(n));
    return chunk_sum_of([&](int t, int q) {
      const float d = xsub(comp(r.in[0][t], q), mu);
      return elem(i0, t) + q < n ? xmul(d, d) : 0.0f;
    });
  }
  __device__ float rs(const float* tot, int64_t n) const {
    return xdiv(1.0f, xsqrt(xadd(xdiv(tot[1], static_cast<float>(n)), eps)));
  }
  __device__ void apply(ChunkRegs& r, const float* tot, int64_t, int64_t n, int64_t i0, float4* out) const {
    const float mu = xdiv(tot[0], static_cast<float>(n));
    const float s = rs(tot, n);
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const float4 g = col4(gamma, elem(i0, t), n), b = col4(beta, elem(i0, t), n);
#pragma unroll
      for (int q = 0; q < 4; ++q)
        comp(out[t], q) = xadd(xmul(xmul(xsub(comp(r.in[0][t], q), mu), s), comp(g, q)), comp(b, q));
    }
  }
  __device__ float* output() const { return y; }
  __device__ void row_out(int64_t row, const float* tot, int64_t n) const {
    mean[row] = xdiv(tot[0], static_cast<float>(n));
    rstd[row] = rs(tot, n);
  }
};

struct LnBwd {
  using Op = Sum2Op;
  static constexpr int kPhases = 1, kInputs = 2;
  const float* x;
  const float* dy;
  const float* gamma;
  const float* mean;
  const float* rstd;
  float* dx;
  __device__ const float* input(int i) const { return i == 0 ? x : dy; }
  __device__ static float pad(int) { return 0.0f; }
  __device__ Sum2 chunk_stat(int, const ChunkRegs& r, const Sum2*, int64_t row, int64_t n,
                             int64_t i0) const {
    const float mu = mean[row], s = rstd[row];
    float4 gm[8];
#pragma unroll
    for (int t = 0; t < 8; ++t) gm[t] = col4(gamma, elem(i0, t), n);
    const float a =
        chunk_sum_of([&](int t, int q) { return xmul(comp(r.in[1][t], q), comp(gm[t], q)); });
    const float b = chunk_sum_of([&](int t, int q) {
      const float xh = xmul(xsub(comp(r.in[0][t], q), mu), s);
      const float g = xmul(comp(r.in[1][t], q), comp(gm[t], q));
      return elem(i0, t) + q < n ? xmul(g, xh) : 0.0f;
    });
    return {a, b};
  }
  __device__ void apply(ChunkRegs& r, const Sum2* tot, int64_t row, int64_t n, int64_t i0, float4* out) const {
    const float mu = mean[row], s = rstd[row];
    const float a = xdiv(tot[0].a, static_cast<float>(n));
    const float b = xdiv(tot[0].b, static_cast<float>(n));
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const float4 gm = col4(gamma, elem(i0, t), n);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float xh = xmul(xsub(comp(r.in[0][t], q), mu), s);
        const float g = xmul(comp(r.in[1][t], q), comp(gm, q));
        comp(out[t], q) = xmul(xsub(xsub(g, a), xmul(xh, b)), s);
      }
    }
  }
  // colsum stage 1 terms of step t (3.5, 3.6): dgamma += dy * xh, dbeta += dy.
  static constexpr int kCols = 2;
  __device__ void col_terms(const ChunkRegs& r, int64_t row, int t, float4& pg, float4& pb) const {
    const float mu = mean[row], s = rstd[row];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float dyv = comp(r.in[1][t], q);
      comp(pg, q) = xadd(comp(pg, q), xmul(dyv, xmul(xsub(comp(r.in[0][t], q), mu), s)));
      comp(pb, q) = xadd(comp(pb, q), dyv);
    }
  }
  __device__ float* output() const { return dx; }
  __device__ void row_out(int64_t, const Sum2*, int64_t) const {}
};

template <class B, class = void>
constexpr bool kStatInApply = false;
template <class B>
constexpr bool kStatInApply<B, std::void_t<decltype(B::kStatInApply)>> = B::kStatInApply;

// The generic row kernel. split == 0: one block per row (W * 1024 >= n).
// split > 0: `split` blocks per row; phase p < kPhases writes partials of
// reduction p into ws[p], phase kPhases applies.
template <class B, int W, bool VEC>
__global__ void __launch_bounds__(W * 32)
row_kernel(B body, int64_t rows, int64_t n, int split, int phase, typename B::Op::T* ws) {
  using Op = typename B::Op;
  using T = typename Op::T;
  __shared__ T sh[W + 2];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int per_row = split ? split : 1;
  const int seg = static_cast<int>(blockIdx.x % per_row);
  const int64_t step = gridDim.x / per_row;
  for (int64_t row = blockIdx.x / per_row; row < rows; row += step) {
    const int64_t chunk = static_cast<int64_t>(seg) * W + warp;
    const int64_t i0 = chunk * kChunk;
    ChunkRegs r;
#pragma unroll
    for (int k = 0; k < B::kInputs; ++k) {
      const float* base = body.input(k) + row * n;
#pragma unroll
      for (int t = 0; t < 8; ++t) r.in[k][t] = load4<VEC>(base, i0 + t * 128 + 4 * lane, n, B::pad(k));
    }
    T tot[B::kPhases];
    if (!split) {
#pragma unroll
      for (int p = 0; p < B::kPhases; ++p)
        tot[p] = block_tree<Op, W, 1>(body.chunk_stat(p, r, tot, row, n, i0), sh);
    } else {
      for (int p = 0; p < phase && p < B::kPhases; ++p) {
        const T* part = ws + (p * rows + row) * split;
        tot[p] = warp_tree_of<Op>([&](int64_t i) { return part[i]; }, split);
      }
      if (phase < B::kPhases) {
        const T c = block_tree<Op, W, 1>(body.chunk_stat(phase, r, tot, row, n, i0), sh);
        if (threadIdx.x == 0) ws[(phase * rows + row) * split + seg] = c;
        continue;
      }
      if constexpr (kStatInApply<B>) body.chunk_stat(0, r, tot, row, n, i0);
    }
    float4 out[8];
    body.apply(r, tot, row, n, i0, out);
    store_chunk<VEC>(body.output() + row * n, i0, lane, n, out);
    if (seg == 0 && threadIdx.x == 0) body.row_out(row, tot, n);
  }
}

template <class B, int W, bool VEC>
void launch_rows(Device* d, const B& body, int64_t rows, int64_t n, int split, int phase,
                 typename B::Op::T* ws) {
  const int64_t per_row = split ? split : 1;
  int64_t grid_rows = rows < (int64_t{1} << 20) / per_row ? rows : (int64_t{1} << 20) / per_row;
  if (grid_rows < 1) grid_rows = 1;
  row_kernel<B, W, VEC><<<static_cast<unsigned>(grid_rows * per_row), W * 32, 0, d->stream>>>(
      body, rows, n, split, phase, ws);
}

// Widest block: one input row in registers allows 1024 threads (32 floats
// each); two inputs need 64 floats per thread, so blocks of 256.
template <class B>
constexpr int kBigW = B::kInputs >= 2 ? 8 : 32;

template <class B, bool VEC>
void launch_rows_w(Device* d, const B& body, int64_t rows, int64_t n, int split, int phase,
                   typename B::Op::T* ws) {
  if (split)
    launch_rows<B, kBigW<B>, VEC>(d, body, rows, n, split, phase, ws);
  else if (n <= kChunk)
    launch_rows<B, 1, VEC>(d, body, rows, n, 0, 0, ws);
  else if (n <= 4 * kChunk)
    launch_rows<B, 4, VEC>(d, body, rows, n, 0, 0, ws);
  else
    launch_rows<B, kBigW<B>, VEC>(d, body, rows, n, 0, 0, ws);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <class B>
xhal_status_t run_rows(Device* d, const B& body, int64_t rows, int64_t n, bool vec,
                       const char* op) {
  if (rows == 0 || n == 0) return XHAL_OK;
  vec = vec && n % 4 == 0;
  using T = typename B::Op::T;
  const int64_t seg_elems = int64_t{kBigW<B>} * kChunk;
  if (n <= seg_elems) {
    if (vec) launch_rows_w<B, true>(d, body, rows, n, 0, 0, nullptr);
    else launch_rows_w<B, false>(d, body, rows, n, 0, 0, nullptr);
    return check_launch(d, op);
  }
  const int64_t split64 = (n + seg_elems - 1) / seg_elems;
  if (split64 > (1 << 20)) return fail(XHAL_UNSUPPORTED, "%s plugin: %s: rows of %lld elements are too long", XHAL_GPU_BACKEND_NAME, op, static_cast<long long>(n));
  const int split = static_cast<int>(split64);
  void* ws = nullptr;
  xhal_status_t st = scratch(d, sizeof(T) * B::kPhases * rows * split, &ws);
  if (st != XHAL_OK) return st;
  for (int p = 0; p <= B::kPhases; ++p) {
    if (vec) launch_rows_w<B, true>(d, body, rows, n, split, p, static_cast<T*>(ws));
    else launch_rows_w<B, false>(d, body, rows, n, split, p, static_cast<T*>(ws));
  }
  return check_launch(d, op, B::kPhases + 1);
}

// ---- colsum (3.5): dgamma / dbeta ----
// Stage 1: p[b][j] over rows 32b..32b+31 in order; stage 2: tree over b.
template <bool kLayerNorm>
__global__ void colsum_stage1(const float* x, const float* dy, const float* mean,
                              const float* rstd, int64_t rows, int64_t n, int64_t nb, float* pg,
                              float* pb) {
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < nb * n;
       it += int64_t{gridDim.x} * blockDim.x) {
    const int64_t b = it / n, j = it % n;
    float sg = 0.0f, sb = 0.0f;
    const int64_t end = (b + 1) * 32 < rows ? (b + 1) * 32 : rows;
#pragma unroll 8
    for (int64_t r = b * 32; r < end; ++r) {
      const float xv = x[r * n + j], g = dy[r * n + j];
      const float xh = kLayerNorm ? xmul(xsub(xv, mean[r]), rstd[r]) : xmul(xv, rstd[r]);
      sg = xadd(sg, xmul(g, xh));
      if (kLayerNorm) sb = xadd(sb, g);
    }
    pg[it] = sg;
    if (kLayerNorm) pb[it] = sb;
  }
}

// One warp per column: lanes tree aligned runs of block partials, then the
// warp tree (3.1); 32 times the parallelism of a thread per column.
__global__ void colsum_stage2(const float* p, int64_t nb, int64_t n, float* out) {
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  for (int64_t j = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32; j < n; j += warps) {
    const float v = warp_tree_of<SumOp>([&](int64_t b) { return p[b * n + j]; }, nb);
    if ((threadIdx.x & 31) == 0) out[j] = v;
  }
}

xhal_status_t colsums(Device* d, bool layer_norm, const float* x, const float* dy,
                      const float* mean, const float* rstd, int64_t rows, int64_t n, float* dgamma,
                      float* dbeta) {
  if (n == 0) return XHAL_OK;
  if (rows == 0) {  // empty sums are +0
    gpuMemsetAsync(dgamma, 0, n * 4, d->stream);
    if (dbeta) gpuMemsetAsync(dbeta, 0, n * 4, d->stream);
    return check_launch(d, "colsum", 0);
  }
  const int64_t nb = (rows + 31) / 32;
  void* ws = nullptr;
  xhal_status_t st = scratch(d, sizeof(float) * nb * n * (layer_norm ? 2 : 1), &ws);
  if (st != XHAL_OK) return st;
  float* pg = static_cast<float*>(ws);
  float* pb = pg + nb * n;
  if (layer_norm)
    colsum_stage1<true><<<grid_for(nb * n, 256), 256, 0, d->stream>>>(x, dy, mean, rstd, rows, n,
                                                                     nb, pg, pb);
  else
    colsum_stage1<false><<<grid_for(nb * n, 256), 256, 0, d->stream>>>(x, dy, mean, rstd, rows, n,
                                                                      nb, pg, pb);
  colsum_stage2<<<grid_for(n * 32, 256), 256, 0, d->stream>>>(pg, nb, n, dgamma);
  int launches = 2;
  if (layer_norm && dbeta) {
    colsum_stage2<<<grid_for(n * 32, 256), 256, 0, d->stream>>>(pb, nb, n, dbeta);
    ++launches;
  }
  return check_launch(d, "colsum", launches);
}

// ---- norm backward with colsum stage 1 fused in (3.5) ----
// A group of W warps walks the R = 32 consecutive rows of one colsum block
// in ascending order: per row it computes dx exactly as row_kernel does
// (same chunk statistics, same block tree, same apply), and each thread adds
// its own columns' terms into its partials (the same thread owns the same
// columns on every row), so x and dy are read once. The partials live in
// registers, or with PS in shared memory (one float4 per thread and step,
// fewer registers, more blocks per SM). With PF the next row's loads are
// issued before the current row is reduced. W == 1 blocks hold RB
// independent warps (RB colsum blocks); W > 1 needs RB == 1.
template <class B, int W>
constexpr bool kPartialsFitShared = B::kCols * W * 8 * 32 * sizeof(float4) <= 48 * 1024;

template <class B, int W, int RB, bool VEC, bool PF, bool PS>
__global__ void __launch_bounds__(W * RB * 32)
norm_bwd_fused_kernel(B body, int64_t rows, int64_t n, float* pg, float* pb) {
  static_assert(W == 1 || RB == 1, "one block tree per block");
  static_assert(!PS || kPartialsFitShared<B, W * RB>, "partials in static shared memory");
  using Op = typename B::Op;
  using T = typename Op::T;
  __shared__ T sh[W + 2];
  // [column set][step][thread]: each thread touches only its own float4s.
  __shared__ float4 sp[PS ? B::kCols * 8 * W * RB * 32 : 1];
  const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) % W, grp = (threadIdx.x >> 5) / W;
  const int64_t i0 = int64_t{warp} * kChunk;
  const int64_t nb = (rows + 31) / 32;
  auto sp_at = [&](int c, int t) -> float4& {
    return sp[(c * 8 + t) * (W * RB * 32) + threadIdx.x];
  };
  // With RB > 1 (W == 1) the warps never synchronise, so each runs its own
  // loop; with W > 1 every warp of the block has the same blk.
  for (int64_t blk = int64_t{blockIdx.x} * RB + grp; blk < nb; blk += int64_t{gridDim.x} * RB) {
    const int64_t r0 = blk * 32, r1 = r0 + 32 < rows ? r0 + 32 : rows;
    float4 ag[PS ? 1 : 8], ab[PS ? 1 : 8];
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      if constexpr (PS) {
#pragma unroll
        for (int c = 0; c < B::kCols; ++c) sp_at(c, t) = zero;
      } else {
        ag[t] = ab[t] = zero;
      }
    }
    auto load = [&](ChunkRegs& r, int64_t row) {
#pragma unroll
      for (int k = 0; k < B::kInputs; ++k) {
        const float* base = body.input(k) + row * n;
#pragma unroll
        for (int t = 0; t < 8; ++t)
          r.in[k][t] = load4<VEC>(base, i0 + t * 128 + 4 * lane, n, B::pad(k));
      }
    };
    ChunkRegs cur, nxt;
    load(cur, r0);
    for (int64_t row = r0; row < r1; ++row) {
      if (PF && row + 1 < r1) load(nxt, row + 1);
      const T tot = block_tree<Op, W, 1>(body.chunk_stat(0, cur, nullptr, row, n, i0), sh);
      float4 out[8];
      body.apply(cur, &tot, row, n, i0, out);
#pragma unroll
      for (int t = 0; t < 8; ++t) {
        if constexpr (PS) {
          float4 g = sp_at(0, t), b = B::kCols > 1 ? sp_at(B::kCols - 1, t) : zero;
          body.col_terms(cur, row, t, g, b);
          sp_at(0, t) = g;
          if (B::kCols > 1) sp_at(B::kCols - 1, t) = b;
        } else {
          body.col_terms(cur, row, t, ag[t], ab[t]);
        }
      }
      store_chunk<VEC>(body.output() + row * n, i0, lane, n, out);
      if (row + 1 < r1) {
        if (PF) cur = nxt;
        else load(cur, row + 1);
      }
    }
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const int64_t i = i0 + t * 128 + 4 * lane;
      float4 g, b;
      if constexpr (PS) {
        g = sp_at(0, t);
        b = B::kCols > 1 ? sp_at(B::kCols - 1, t) : zero;
      } else {
        g = ag[t];
        b = ab[t];
      }
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (i + q < n) {
          if (pg) pg[blk * n + i + q] = comp(g, q);
          if (pb) pb[blk * n + i + q] = comp(b, q);
        }
    }
  }
}

// Norm backward schedule (XHAL_CUDA_NORM_BWD, read once; a prototype that
// compiles this file in may set it): "separate" (the colsum in its own
// kernels, x and dy read twice), "fused" / "fused_nopf" (always fused where
// a row fits one block, partials in registers, with / without the next-row
// prefetch), "fused_smem" / "fused_smem_nopf" (partials in shared memory
// where they fit in 48 KB), default "auto": as "fused" when there are at
// least XHAL_CUDA_NORM_BWD_MIN_BLOCKS (default 128) colsum blocks of 32
// rows, so that the 32-row walks still fill the GPU, else "separate". On
// the H200 fused with prefetch was the fastest form at 4,096 rows and more
// (docs/performance.md); fewer rows were not measured.
enum NormBwdMode {
  kNormSeparate = 0,
  kNormFused = 1,
  kNormFusedNoPf = 2,
  kNormAuto = 3,
  kNormFusedSmem = 4,
  kNormFusedSmemNoPf = 5
};
std::atomic<int> g_norm_bwd_mode{-1};
std::atomic<int64_t> g_norm_bwd_min_blocks{128};

NormBwdMode norm_bwd_mode() {
  int v = g_norm_bwd_mode.load(std::memory_order_relaxed);
  if (v < 0) {
    v = kNormAuto;
    if (const char* e = std::getenv("XHAL_CUDA_NORM_BWD"); e && *e) {
      if (std::strcmp(e, "separate") == 0) v = kNormSeparate;
      else if (std::strcmp(e, "fused") == 0) v = kNormFused;
      else if (std::strcmp(e, "fused_nopf") == 0) v = kNormFusedNoPf;
      else if (std::strcmp(e, "fused_smem") == 0) v = kNormFusedSmem;
      else if (std::strcmp(e, "fused_smem_nopf") == 0) v = kNormFusedSmemNoPf;
    }
    if (const char* e = std::getenv("XHAL_CUDA_NORM_BWD_MIN_BLOCKS"); e && *e)
      g_norm_bwd_min_blocks.store(std::atoll(e), std::memory_order_relaxed);
    g_norm_bwd_mode.store(v, std::memory_order_relaxed);
  }
  return static_cast<NormBwdMode>(v);
}

template <class B, int W, int RB, bool VEC, bool PF, bool PS>
void launch_fused(Device* d, const B& body, int64_t rows, int64_t n, float* pg, float* pb) {
  const int64_t nb = (rows + 31) / 32, groups = (nb + RB - 1) / RB;
  const unsigned grid = static_cast<unsigned>(groups < (int64_t{1} << 20) ? groups : int64_t{1} << 20);
  constexpr bool kPS = PS && kPartialsFitShared<B, W * RB>;
  norm_bwd_fused_kernel<B, W, RB, VEC, PF, kPS><<<grid, W * RB * 32, 0, d->stream>>>(body, rows, n, pg, pb);
}

template <class B, bool VEC, bool PF, bool PS>
void launch_fused_w(Device* d, const B& body, int64_t rows, int64_t n, float* pg, float* pb) {
  // One warp per row already has four blocks' worth of warps in flight,
  // and its prefetch form spills (ptxas), so it never prefetches.
  if (n <= kChunk) launch_fused<B, 1, 4, VEC, false, PS>(d, body, rows, n, pg, pb);
  else if (n <= 4 * kChunk) launch_fused<B, 4, 1, VEC, PF, PS>(d, body, rows, n, pg, pb);
  else launch_fused<B, kBigW<B>, 1, VEC, PF, PS>(d, body, rows, n, pg, pb);
}

template <class B, bool VEC>
void launch_fused_mode(Device* d, const B& body, int64_t rows, int64_t n, float* pg, float* pb,
                       NormBwdMode mode) {
  switch (mode) {
    case kNormFusedNoPf: return launch_fused_w<B, VEC, false, false>(d, body, rows, n, pg, pb);
    case kNormFusedSmem: return launch_fused_w<B, VEC, true, true>(d, body, rows, n, pg, pb);
    case kNormFusedSmemNoPf: return launch_fused_w<B, VEC, false, true>(d, body, rows, n, pg, pb);
    default: return launch_fused_w<B, VEC, true, false>(d, body, rows, n, pg, pb);
  }
}

// dx and the colsum partials in one pass, then stage 2 per output. Returns
// false (nothing launched) when the schedule says not to fuse.
template <class B>
bool try_fused_norm_bwd(Device* d, const B& body, int64_t rows, int64_t n, bool vec,
                        float* dgamma, float* dbeta, xhal_status_t* st) {
  const NormBwdMode mode = norm_bwd_mode();
  const int64_t nb = (rows + 31) / 32;
  if (mode == kNormSeparate || rows == 0 || n == 0 || n > int64_t{kBigW<B>} * kChunk) return false;
  if (mode == kNormAuto && nb < g_norm_bwd_min_blocks.load(std::memory_order_relaxed)) return false;
  vec = vec && n % 4 == 0;
  void* ws = nullptr;
  *st = scratch(d, sizeof(float) * nb * n * ((dgamma ? 1 : 0) + (dbeta ? 1 : 0)), &ws);
  if (*st != XHAL_OK) return true;
  float* pg = dgamma ? static_cast<float*>(ws) : nullptr;
  float* pb = dbeta ? static_cast<float*>(ws) + (dgamma ? nb * n : 0) : nullptr;
  if (vec) launch_fused_mode<B, true>(d, body, rows, n, pg, pb, mode);
  else launch_fused_mode<B, false>(d, body, rows, n, pg, pb, mode);
  int launches = 1;
  if (pg) {
    colsum_stage2<<<grid_for(n * 32, 256), 256, 0, d->stream>>>(pg, nb, n, dgamma);
    ++launches;
  }
  if (pb) {
    colsum_stage2<<<grid_for(n * 32, 256), 256, 0, d->stream>>>(pb, nb, n, dbeta);
    ++launches;
  }
  *st = check_launch(d, "norm backward (fused colsum)", launches);
  return true;
}

struct RowShape {
  int64_t rows, n;
};
RowShape shape_of(const xhal_plugin_tensor_t* x) {
  if (x->rank == 0) return {1, 1};
  int64_t n = x->shape[x->rank - 1], rows = 1;
  for (uint32_t i = 0; i + 1 < x->rank; ++i) rows *= x->shape[i];
  return {rows, n};
}

// Not "begin": bench/gpu/proto_dense.cu compiles this file together with
// ops_gather.cpp.
Device* enter(void* device) {
  auto* d = static_cast<Device*>(device);
  use_device(d->ordinal);
  return d;
}

}  // namespace

xhal_status_t softmax_forward(void* device, const xhal_plugin_tensor_t* x,
                              const xhal_plugin_tensor_t* y) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  auto [rows, n] = shape_of(x);
  SoftmaxFwd b{tensor_f32(x), tensor_f32(y)};
  return run_rows(d, b, rows, n, aligned16(b.x) && aligned16(b.y), "softmax_forward");
}

xhal_status_t softmax_backward(void* device, const xhal_plugin_tensor_t* y,
                               const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  auto [rows, n] = shape_of(y);
  SoftmaxBwd b{tensor_f32(y), tensor_f32(dy), tensor_f32(dx)};
  return run_rows(d, b, rows, n, aligned16(b.y) && aligned16(b.dy) && aligned16(b.dx),
                  "softmax_backward");
}

xhal_status_t rms_norm_forward(void* device, const xhal_plugin_tensor_t* x,
                               const xhal_plugin_tensor_t* gamma, float eps,
                               const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* rstd) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  auto [rows, n] = shape_of(x);
  RmsFwd b{tensor_f32(x), tensor_f32(gamma), eps, tensor_f32(y), tensor_f32(rstd)};
  return run_rows(d, b, rows, n, aligned16(b.x) && aligned16(b.gamma) && aligned16(b.y),
                  "rms_norm_forward");
}

xhal_status_t rms_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                const xhal_plugin_tensor_t* gamma, const xhal_plugin_tensor_t* rstd,
                                const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx,
                                const xhal_plugin_tensor_t* dgamma) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  auto [rows, n] = shape_of(x);
  RmsBwd b{tensor_f32(x), tensor_f32(dy), tensor_f32(gamma), tensor_f32(rstd), tensor_f32(dx)};
  const bool vec = aligned16(b.x) && aligned16(b.dy) && aligned16(b.gamma) && aligned16(b.dx);
  // Fused: a row's dy is in registers before its dx is written (dx == dy).
  xhal_status_t fst;
  if (dgamma && try_fused_norm_bwd(d, b, rows, n, vec, tensor_f32(dgamma), nullptr, &fst))
    return fst;
  // dgamma reads dy, so it runs before dx may overwrite dy (dx == dy allowed).
  if (dgamma) {
    xhal_status_t st = colsums(d, false, tensor_f32(x), tensor_f32(dy), nullptr, tensor_f32(rstd),
                               rows, n, tensor_f32(dgamma), nullptr);
    if (st != XHAL_OK) return st;
  }
  return run_rows(d, b, rows, n, vec, "rms_norm_backward");
}

xhal_status_t layer_norm_forward(void* device, const xhal_plugin_tensor_t* x,
                                 const xhal_plugin_tensor_t* gamma,
                                 const xhal_plugin_tensor_t* beta, float eps,
                                 const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* mean,
                                 const xhal_plugin_tensor_t* rstd) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  auto [rows, n] = shape_of(x);
  LnFwd b{tensor_f32(x), tensor_f32(gamma), tensor_f32(beta), eps, tensor_f32(y),
          tensor_f32(mean), tensor_f32(rstd)};
  return run_rows(d, b, rows, n, aligned16(b.x) && aligned16(b.y), "layer_norm_forward");
}

xhal_status_t layer_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                  const xhal_plugin_tensor_t* gamma,
                                  const xhal_plugin_tensor_t* mean,
                                  const xhal_plugin_tensor_t* rstd, const xhal_plugin_tensor_t* dy,
                                  const xhal_plugin_tensor_t* dx,
                                  const xhal_plugin_tensor_t* dgamma,
                                  const xhal_plugin_tensor_t* dbeta) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  auto [rows, n] = shape_of(x);
  LnBwd b{tensor_f32(x), tensor_f32(dy), tensor_f32(gamma), tensor_f32(mean), tensor_f32(rstd),
          tensor_f32(dx)};
  const bool vec = aligned16(b.x) && aligned16(b.dy) && aligned16(b.gamma) && aligned16(b.dx);
  xhal_status_t fst;
  if ((dgamma || dbeta) &&
      try_fused_norm_bwd(d, b, rows, n, vec, dgamma ? tensor_f32(dgamma) : nullptr,
                         dbeta ? tensor_f32(dbeta) : nullptr, &fst))
    return fst;
  if (dgamma || dbeta) {
    // dbeta alone still needs a dgamma destination for stage 1: use scratch
    // ordering by running stage 2 only where asked.
    float* dg = dgamma ? tensor_f32(dgamma) : nullptr;
    float* db = dbeta ? tensor_f32(dbeta) : nullptr;
    xhal_status_t st;
    if (dg) {
      st = colsums(d, true, tensor_f32(x), tensor_f32(dy), tensor_f32(mean), tensor_f32(rstd),
                   rows, n, dg, db);
    } else {
      // Only dbeta: write dgamma's tree into dbeta first, then overwrite.
      st = colsums(d, true, tensor_f32(x), tensor_f32(dy), tensor_f32(mean), tensor_f32(rstd),
                   rows, n, db, db);
    }
    if (st != XHAL_OK) return st;
  }
  return run_rows(d, b, rows, n, vec, "layer_norm_backward");
}

}  // namespace xhal::gpu
