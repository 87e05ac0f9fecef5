// The generic row kernel of the dense row ops (docs/semantics.md 3.2-3.6;
// docs/gpu.md, "Row ops"): softmax.cpp, rms_norm.cpp and layer_norm.cpp
// each define bodies (the statistic, its chunk terms and the apply step)
// and run them through run_rows. A row of up to 32 chunks (32768 elements)
// is held in registers by one block of 1, 4 or W warps; longer rows are cut
// into segments, one block each, whose partial statistics go through
// scratch memory between launches (one launch per sequential reduction,
// then one that applies).
//
// A body provides: A (its compute type, acc_t of its storage: float, or
// double for f64, docs/semantics.md 7.3), Op (the statistic), kPhases
// (sequential reductions),
// kInputs, input(k) (row-major [rows, n]), pad(k), chunk_stat(phase, ...),
// apply(...), output() and row_out(...); the norm backwards also
// col_terms(...) for the fused dgamma/dbeta (norm_backward.h).
#pragma once

#include <cstdint>
#include <type_traits>

#include "gpu_plugin.h"
#include "tree_device.h"

namespace xhal::gpu {
namespace {

constexpr int kMaxInputs = 2;

// Registers of one warp's chunk: up to kMaxInputs inputs, 8 units of four
// values of the compute type A each.
template <class A>
struct ChunkRegs {
  vec4_t<A> in[kMaxInputs][8];
  A chunk_max;  // softmax: m[c], with in[0] replaced by e[i]
};

// rowsum of one chunk from a term function term(t, component), in the
// term's type.
template <class F>
__device__ __forceinline__ auto chunk_sum_of(F term) {
  using A = decltype(term(0, 0));
  A a[4] = {A(0), A(0), A(0), A(0)};
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
__device__ __forceinline__ double comp(const Dbl4& v, int q) {
  return q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w;
}
__device__ __forceinline__ double& comp(Dbl4& v, int q) {
  return q == 0 ? v.x : q == 1 ? v.y : q == 2 ? v.z : v.w;
}

// A warp's chunk at i0 of row `row` of every input, in the load4 layout
// (pad past n); the inverse of store_chunk.
template <bool VEC, class B>
__device__ __forceinline__ void load_chunk(const B& body, ChunkRegs<typename B::A>& r, int64_t row,
                                           int64_t n, int64_t i0) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int k = 0; k < B::kInputs; ++k) {
    const auto* base = body.input(k) + row * n;
#pragma unroll
    for (int t = 0; t < 8; ++t)
      r.in[k][t] = load4<VEC>(base, i0 + t * 128 + 4 * lane, n, B::pad(k));
  }
}

// A lane's 8 units of a 1024-element chunk (the load4 layout) into a row
// of n, narrowed to S (7.1): unit stores when the row allows, else element
// by element.
template <bool VEC, class S>
__device__ __forceinline__ void store_chunk(S* orow, int64_t i0, int lane, int64_t n,
                                            const vec4_t<acc_t<S>> (&out)[8]) {
#pragma unroll
  for (int t = 0; t < 8; ++t) {
    const int64_t i = i0 + t * 128 + 4 * lane;
    if (VEC) {
      if (i < n) *reinterpret_cast<unit4_t<S>*>(orow + i) = to_unit4<S>(out[t]);
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (i + q < n) orow[i + q] = to_storage<S>(comp(out[t], q));
    }
  }
}

// Four consecutive per-column values (gamma, beta) from p[i..i+4), widened,
// 0 past n; these stay in L1/L2, so they are re-read rather than held in
// registers.
template <class G>
__device__ __forceinline__ vec4_t<acc_t<G>> col4_of(const G* p, int64_t i, int64_t n) {
  using A = acc_t<G>;
  if (i + 3 < n && (reinterpret_cast<uintptr_t>(p + i) % (4 * sizeof(G))) == 0)
    return widen(*reinterpret_cast<const unit4_t<G>*>(p + i));
  return make4(i < n ? widen(p[i]) : A(0), i + 1 < n ? widen(p[i + 1]) : A(0),
               i + 2 < n ? widen(p[i + 2]) : A(0), i + 3 < n ? widen(p[i + 3]) : A(0));
}

// gamma or beta of a norm on x stored as S: in S or in f32 (7.2), decided
// at run time (one branch, the same for the whole grid) rather than by a
// second template parameter, which would double the kernels built. f64 x
// takes f64 gamma/beta only (7.3).
template <class S>
struct ColVals {
  const void* p;
  bool narrow;  // in S (only meaningful when S is bf16 or f16)
};
template <class S>
__device__ __forceinline__ vec4_t<acc_t<S>> col4(ColVals<S> c, int64_t i, int64_t n) {
  if constexpr (std::is_same_v<S, double>) {
    return col4_of(static_cast<const double*>(c.p), i, n);
  } else {
    if constexpr (is_narrow<S>)
      if (c.narrow) return col4_of(static_cast<const S*>(c.p), i, n);
    return col4_of(static_cast<const float*>(c.p), i, n);
  }
}
template <class S>
ColVals<S> col_vals(const xhal_plugin_tensor_t* t) {
  return {tensor_ptr(t), t->dtype != XHAL_DTYPE_F32};
}
__device__ __forceinline__ int64_t elem(int64_t i0, int t) {
  return i0 + t * 128 + 4 * (threadIdx.x & 31);
}

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
    ChunkRegs<typename B::A> r;
    load_chunk<VEC>(body, r, row, n, i0);
    T tot[B::kPhases];
    if (!split) {
#pragma unroll
      for (int p = 0; p < B::kPhases; ++p)
        tot[p] = block_tree<Op, W>(body.chunk_stat(p, r, tot, row, n, i0), sh);
    } else {
      for (int p = 0; p < phase && p < B::kPhases; ++p) {
        const T* part = ws + (p * rows + row) * split;
        tot[p] = warp_tree_of<Op>([&](int64_t i) { return part[i]; }, split);
      }
      if (phase < B::kPhases) {
        const T c = block_tree<Op, W>(body.chunk_stat(phase, r, tot, row, n, i0), sh);
        if (threadIdx.x == 0) ws[(phase * rows + row) * split + seg] = c;
        continue;
      }
      if constexpr (kStatInApply<B>) body.chunk_stat(0, r, tot, row, n, i0);
    }
    vec4_t<typename B::A> out[8];
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
// each); two inputs need 64 floats per thread, so blocks of 256. f64 rows
// take twice the registers per element, so half the warps (the block size
// only picks which aligned subtrees a block computes, never the bits).
template <class B>
constexpr int kBigW = (B::kInputs >= 2 ? 8 : 32) / (sizeof(typename B::A) / sizeof(float));

// Segments of a row of n elements cut into blocks of w warps; the launch
// and resident forms must cut a row alike.
inline int64_t row_segments(int64_t n, int w) {
  const int64_t seg_elems = int64_t{w} * kChunk;
  return (n + seg_elems - 1) / seg_elems;
}

template <class B, bool VEC>
void launch_rows_w(Device* d, const B& body, int64_t rows, int64_t n, int split, int phase,
                   typename B::Op::T* ws) {
  if (split) launch_rows<B, kBigW<B>, VEC>(d, body, rows, n, split, phase, ws);
  else if (n <= kChunk) launch_rows<B, 1, VEC>(d, body, rows, n, 0, 0, ws);
  else if (n <= 4 * kChunk) launch_rows<B, 4, VEC>(d, body, rows, n, 0, 0, ws);
  else launch_rows<B, kBigW<B>, VEC>(d, body, rows, n, 0, 0, ws);
}

#if !defined(XHAL_GPU_HIP)
// The resident form of a split row (CUDA; docs/gpu.md, "Row ops"): one
// launch instead of kPhases + 1. A block takes (row, segment) items from a
// ticket counter (sync[0]) in row order, keeps its segment in registers,
// publishes each reduction's partial, arrives on the row's counter
// (sync[2 + row]) and waits until all `split` segments of the row have
// arrived; then it trees the partials exactly as the launch form does and
// applies. Tickets are taken in order, so a waiting block only waits on
// items already taken by running blocks, or on items no block can take
// before them: the host only chooses this form when `split` blocks fit on
// the device at once, so the waits end (partials read by load_coherent).

// sync[0]: the ticket counter, sync[1]: blocks done, sync[2 + row]: the
// row's arrivals. The last block to finish clears the `words` counters, so
// the next launch finds them zero without a memset.
__device__ __forceinline__ void finish_waiting_launch(unsigned* sync, int64_t words) {
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(sync + 1, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int64_t i = threadIdx.x; i < words; i += blockDim.x) sync[i] = 0;
}

// A block's turn: the next item from the ticket counter (every thread gets it).
__device__ __forceinline__ int64_t take_item(unsigned* sync) {
  __shared__ unsigned ticket;
  if (threadIdx.x == 0) ticket = atomicAdd(sync, 1u);
  __syncthreads();
  const int64_t item = ticket;
  __syncthreads();  // ticket is rewritten by the next turn
  return item;
}

// Publishes a block's partial of a row and waits until `want` partials of
// the row have arrived (thread 0 waits; the block follows it).
template <class T>
__device__ __forceinline__ void arrive_and_wait(T* part, T c, unsigned* arrivals, unsigned want) {
  if (threadIdx.x == 0) {
    *part = c;
    __threadfence();
    atomicAdd(arrivals, 1u);
    const volatile unsigned* seen = arrivals;
    while (*seen < want) __nanosleep(32);
    __threadfence();
  }
  __syncthreads();
}

template <class B, int W, bool VEC>
__device__ __forceinline__ void resident_rows(B body, int64_t rows, int64_t n, int split,
                                              typename B::Op::T* ws, unsigned* sync) {
  using Op = typename B::Op;
  using T = typename Op::T;
  __shared__ T sh[W + 2];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t items = rows * split;
  for (;;) {
    const int64_t item = take_item(sync);
    if (item >= items) break;
    const int64_t row = item / split;
    const int seg = static_cast<int>(item % split);
    const int64_t i0 = (static_cast<int64_t>(seg) * W + warp) * kChunk;
    ChunkRegs<typename B::A> r;
    load_chunk<VEC>(body, r, row, n, i0);
    T tot[B::kPhases];
#pragma unroll
    for (int p = 0; p < B::kPhases; ++p) {
      const T c = block_tree<Op, W>(body.chunk_stat(p, r, tot, row, n, i0), sh);
      T* part = ws + (p * rows + row) * split;
      arrive_and_wait(part + seg, c, sync + 2 + row, static_cast<unsigned>(split) * (p + 1));
      tot[p] = warp_tree_of<Op>([&](int64_t i) { return load_coherent(part + i); }, split);
    }
    vec4_t<typename B::A> out[8];
    body.apply(r, tot, row, n, i0, out);
    store_chunk<VEC>(body.output() + row * n, i0, lane, n, out);
    if (seg == 0 && threadIdx.x == 0) body.row_out(row, tot, n);
  }
  finish_waiting_launch(sync, 2 + rows);
}

template <class B, int W, bool VEC>
__global__ void __launch_bounds__(W * 32)
    row_resident_kernel(B body, int64_t rows, int64_t n, int split, typename B::Op::T* ws,
                        unsigned* sync) {
  resident_rows<B, W, VEC>(body, rows, n, split, ws, sync);
}

// Blocks an SM a body asks the resident kernel to fit (its launch bounds):
// the segments in flight are what the registers hold, and a cap that costs
// no spills that matter buys more of them (docs/performance.md, "Rows
// longer than one block"). 0: no cap (a cap of 1 is not the same: it
// changes ptxas's choices, and gave the norm backwards more registers).
template <class B, class = void>
constexpr int kResidentBlocksOf = 0;
template <class B>
constexpr int kResidentBlocksOf<B, std::void_t<decltype(B::kResidentBlocks)>> = B::kResidentBlocks;

template <class B, int W, bool VEC>
__global__ void __launch_bounds__(W * 32, kResidentBlocksOf<B>)
    row_resident_capped_kernel(B body, int64_t rows, int64_t n, int split, typename B::Op::T* ws,
                               unsigned* sync) {
  resident_rows<B, W, VEC>(body, rows, n, split, ws, sync);
}

template <class B, int W, bool VEC>
constexpr auto resident_kernel() {
  constexpr bool kCapped = kResidentBlocksOf<B> != 0;
  if constexpr (kCapped) return row_resident_capped_kernel<B, W, VEC>;
  else return row_resident_kernel<B, W, VEC>;
}

// Warps per block of the resident form: at most 8, so that several blocks
// share a multiprocessor and one block's wait overlaps another's loads.
template <class B>
constexpr int kResidentW = kBigW<B> < 8 ? kBigW<B> : 8;

// Blocks of a waiting kernel the device holds at once (0: the runtime cannot
// say). Cached per device and kernel, as neither the occupancy nor the SM
// count changes while a device is open; slots hold the device's mutex.
template <class K>
int64_t resident_blocks(Device* d, K* kernel, int threads) {
  const void* key = reinterpret_cast<const void*>(kernel);
  const auto it = d->resident_blocks.find(key);
  if (it != d->resident_blocks.end()) return it->second;
  int per_sm = 0, sms = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d->ordinal) != cudaSuccess) {
    gpuGetLastError();
    return 0;  // not cached: a later call asks again
  }
  return d->resident_blocks[key] = int64_t{per_sm} * sms;
}

// Launches the resident form when the device holds `split` of its blocks at
// once (and more, to keep the memory busy); returns false (nothing
// launched) otherwise.
template <class B, bool VEC>
bool launch_resident(Device* d, const B& body, int64_t rows, int64_t n, const char* op,
                     xhal_status_t* st) {
  constexpr int W = kResidentW<B>;
  using T = typename B::Op::T;
  const int64_t split = row_segments(n, W);
  const int64_t items = rows * split;
  if (!d->options.rows_resident || items >= (int64_t{1} << 31)) return false;
  constexpr auto kernel = resident_kernel<B, W, VEC>();
  const int64_t resident = resident_blocks(d, kernel, W * 32);
  if (resident < split) return false;
  void* ws = nullptr;
  unsigned* sync = nullptr;
  *st = sync_counters(d, static_cast<size_t>(2 + rows), &sync);
  if (*st == XHAL_OK) *st = scratch(d, sizeof(T) * B::kPhases * items, &ws);
  if (*st != XHAL_OK) return true;
  const int64_t grid = items < resident ? items : resident;
  kernel<<<static_cast<unsigned>(grid), W * 32, 0, d->stream>>>(
      body, rows, n, static_cast<int>(split), static_cast<T*>(ws), sync);
  *st = check_launch(d, op);
  return true;
}
#endif

// Whether every pointer allows unit (four-element) loads and stores.
template <class... P>
inline bool units_aligned(const P*... p) {
  return (unit_aligned(p) && ...);
}

template <class B>
xhal_status_t run_rows(Device* d, const B& body, int64_t rows, int64_t n, bool vec,
                       const char* op) {
  if (rows == 0 || n == 0) return XHAL_OK;
  vec = vec && n % 4 == 0;
  using T = typename B::Op::T;
  const int64_t split64 = row_segments(n, kBigW<B>);
  if (split64 == 1) {
    if (vec) launch_rows_w<B, true>(d, body, rows, n, 0, 0, nullptr);
    else launch_rows_w<B, false>(d, body, rows, n, 0, 0, nullptr);
    return check_launch(d, op);
  }
#if !defined(XHAL_GPU_HIP)
  {
    xhal_status_t st = XHAL_OK;
    const bool done = vec ? launch_resident<B, true>(d, body, rows, n, op, &st)
                          : launch_resident<B, false>(d, body, rows, n, op, &st);
    if (done) return st;
  }
#endif
  if (split64 > (1 << 20))
    return fail(XHAL_UNSUPPORTED, "%s plugin: %s: rows of %lld elements are too long",
                XHAL_GPU_BACKEND_NAME, op, static_cast<long long>(n));
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

// Calls f(S{}) with x's element storage: float, Bf16, F16 or double.
template <class F>
xhal_status_t with_storage(const xhal_plugin_tensor_t* x, F&& f) {
  switch (x->dtype) {
    case XHAL_DTYPE_F64:
      return f(double{});
    case XHAL_DTYPE_BF16:
      return f(Bf16{});
    case XHAL_DTYPE_F16:
      return f(F16{});
    default:
      return f(float{});
  }
}

struct RowShape {
  int64_t rows, n;
};
inline RowShape shape_of(const xhal_plugin_tensor_t* x) {
  if (x->rank == 0) return {1, 1};
  int64_t n = x->shape[x->rank - 1], rows = 1;
  for (uint32_t i = 0; i + 1 < x->rank; ++i) rows *= x->shape[i];
  return {rows, n};
}

}  // namespace
}  // namespace xhal::gpu
