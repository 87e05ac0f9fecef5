// index_select, index_add (docs/semantics.md "index_select", "index_add",
// 3.7) and permute on the GPU. Index plans are uploaded once, with the
// schedule index_add needs (index_schedule.h, built from the touched rows
// only): rows with at most 32 sources are summed by one thread per (row,
// column); longer rows are cut into chunks of 32 sources summed in
// parallel, then combined five levels of the pairwise tree per launch,
// without atomics.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "gpu_plugin.h"
#include "index_schedule.h"
#include "tree_device.h"

namespace xhal::gpu {
namespace {

// The device copy of a plan and its index_add schedule (index_schedule.h):
// every array is O(count), none is sized by num_rows.
struct Plan {
  int64_t count = 0, num_rows = 0;
  int64_t* indices = nullptr;      // [count]
  int64_t* row_sources = nullptr;  // [count], grouped by touched row
  DirectRow* direct = nullptr;     // rows with 1..32 sources
  int64_t num_direct = 0;
  int64_t* chunk_begin = nullptr;  // long rows' chunks
  int32_t* chunk_len = nullptr;
  int64_t num_chunks = 0;
  int64_t* long_rows = nullptr;  // [num_long]
  int64_t* long_base = nullptr;  // first partial slot of each long row
  int64_t num_long = 0;
  int64_t* group_triples = nullptr;
  std::vector<int64_t> group_offsets;  // host: round g uses triples [off[g], off[g+1])
};

void free_plan(Plan* p) {
  for (void* q : {static_cast<void*>(p->indices), static_cast<void*>(p->row_sources),
                  static_cast<void*>(p->direct), static_cast<void*>(p->chunk_begin),
                  static_cast<void*>(p->chunk_len), static_cast<void*>(p->long_rows),
                  static_cast<void*>(p->long_base), static_cast<void*>(p->group_triples)})
    if (q) gpuFree(q);
  delete p;
}

template <class T>
xhal_status_t up(Device* d, const std::vector<T>& v, T** out) {
  void* p = nullptr;
  xhal_status_t st = upload(d, v.data(), v.size() * sizeof(T), &p);
  *out = static_cast<T*>(p);
  return st;
}

// ---- index_select ----
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

// ---- index_add ----
// Kernels work on units of V = float4 (4 columns per thread, when the row
// width and the pointers allow) or float; w counts units. Each component is
// its own canonical sum.
__device__ __forceinline__ float vadd(float a, float b) { return xadd(a, b); }
__device__ __forceinline__ float4 vadd(float4 a, float4 b) {
  return make_float4(xadd(a.x, b.x), xadd(a.y, b.y), xadd(a.z, b.z), xadd(a.w, b.w));
}
__device__ __forceinline__ float vaxpy(float d, float alpha, float s) {
  return xadd(d, xmul(alpha, s));
}
__device__ __forceinline__ float4 vaxpy(float4 d, float alpha, float4 s) {
  return make_float4(vaxpy(d.x, alpha, s.x), vaxpy(d.y, alpha, s.y), vaxpy(d.z, alpha, s.z),
                     vaxpy(d.w, alpha, s.w));
}
template <class V>
__device__ __forceinline__ V vzero() {
  if constexpr (sizeof(V) == 16) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  else return 0.0f;
}

template <class V>
__global__ void add_long_apply_kernel(const V* __restrict__ total_buf, V* __restrict__ dst,
                                      const int64_t* __restrict__ rows,
                                      const int64_t* __restrict__ base, int64_t num, int64_t w,
                                      float alpha) {
  const int64_t total = num * w;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    const int64_t k = it / w, j = it - k * w;
    const int64_t r = rows[k];
    dst[r * w + j] = vaxpy(dst[r * w + j], alpha, total_buf[base[k] * w + j]);
  }
}

// ---- index_add schedule ----
// A thread issues a batch of source loads (and its dst load) before it adds
// them in order, so one row costs a few memory latencies instead of one per
// source, and the chunk tree runs five levels per launch.

// it -> (it / w, it % w) in 32 bits when both fit (a 64-bit divide is a
// long sequence on the GPU, paid once per 16 bytes moved).
__device__ __forceinline__ void split_item(int64_t it, int64_t w, int64_t& k, int64_t& j) {
  if ((static_cast<uint64_t>(it) >> 32) == 0 && (static_cast<uint64_t>(w) >> 32) == 0) {
    const uint32_t k32 = static_cast<uint32_t>(it) / static_cast<uint32_t>(w);
    k = k32;
    j = static_cast<uint32_t>(it) - k32 * static_cast<uint32_t>(w);
  } else {
    k = it / w;
    j = it - k * w;
  }
}

// Adds sources [e, end) into s in order, kB loads in flight at a time.
template <int kB, class V>
__device__ __forceinline__ V add_sources(V s, const V* __restrict__ src,
                                         const int64_t* __restrict__ sources, int64_t e,
                                         int64_t end, int64_t w, int64_t j) {
  for (; e < end; e += kB) {
    V t[kB];
#pragma unroll
    for (int q = 0; q < kB; ++q)
      if (e + q < end) t[q] = src[sources[e + q] * w + j];
#pragma unroll
    for (int q = 0; q < kB; ++q)
      if (e + q < end) s = vadd(s, t[q]);
  }
  return s;
}

template <class V>
__global__ void add_direct_rec_kernel(const V* __restrict__ src, V* __restrict__ dst,
                                      const DirectRow* __restrict__ rows,
                                      const int64_t* __restrict__ sources, int64_t num_rows,
                                      int64_t w, float alpha) {
  const int64_t total = num_rows * w;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    int64_t k, j;
    split_item(it, w, k, j);
    const DirectRow d = rows[k];
    const V old = dst[d.r * w + j];
    V s = vadd(vzero<V>(), src[d.first * w + j]);
    s = add_sources<4>(s, src, sources, d.e0 + 1, d.e0 + d.m, w, j);
    dst[d.r * w + j] = vaxpy(old, alpha, s);
  }
}

template <class V>
__global__ void add_chunks_batched_kernel(const V* __restrict__ src, V* __restrict__ partial,
                                          const int64_t* __restrict__ chunk_begin,
                                          const int32_t* __restrict__ chunk_len,
                                          const int64_t* __restrict__ sources,
                                          int64_t num_chunks, int64_t w) {
  const int64_t total = num_chunks * w;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    int64_t c, j;
    split_item(it, w, c, j);
    const int64_t b = chunk_begin[c];
    partial[it] = add_sources<16>(vzero<V>(), src, sources, b, b + chunk_len[c], w, j);
  }
}

// Five levels of the pairwise tree at once: a group of up to 32 consecutive
// partials is one aligned subtree; a missing partner leaves the value as is
// (adding the +0 padding of 3.1 would not change it: a chunk sum started
// from +0 is never -0).
template <class V>
__global__ void add_groups_kernel(const V* __restrict__ in, V* __restrict__ out,
                                  const int64_t* __restrict__ triples, int64_t num, int64_t w) {
  const int64_t total = num * w;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    int64_t g, j;
    split_item(it, w, g, j);
    const int64_t first = triples[3 * g], cnt = triples[3 * g + 1], o = triples[3 * g + 2];
    V v[32];
#pragma unroll
    for (int i = 0; i < 32; ++i)
      if (i < cnt) v[i] = in[(first + i) * w + j];
#pragma unroll
    for (int d = 1; d < 32; d *= 2)
#pragma unroll
      for (int i = 0; i + d < 32; i += 2 * d)
        if (i + d < cnt) v[i] = vadd(v[i], v[i + d]);
    out[o * w + j] = v[0];
  }
}

// ---- permute ----
// Generic strided gather into contiguous dst (any rank <= 8).
struct Strided {
  int rank;
  int64_t shape[XHAL_MAX_RANK];
  int64_t strides[XHAL_MAX_RANK];
};

template <class T>
__global__ void permute_generic_kernel(const T* __restrict__ src, T* __restrict__ dst, Strided s,
                                       int64_t total) {
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    int64_t rem = it, off = 0;
    for (int k = s.rank - 1; k >= 0; --k) {
      const int64_t i = rem % s.shape[k];
      rem /= s.shape[k];
      off += i * s.strides[k];
    }
    dst[it] = src[off];
  }
}

// Transpose of the last two dims through a shared-memory tile: src has
// stride 1 along dim r-2 and stride `sb` along dim r-1; leading dims are
// batches addressed through `s`.
template <class T>
__global__ void permute_tile_kernel(const T* __restrict__ src, T* __restrict__ dst, Strided s,
                                    int64_t A, int64_t B, int64_t sb, int64_t batches) {
  __shared__ T tile[32][33];
  const int64_t ta = (A + 31) / 32, tb = (B + 31) / 32;
  const int64_t tiles = batches * ta * tb;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t bt = t / (ta * tb), rem = t - bt * ta * tb;
    const int64_t a0 = (rem / tb) * 32, b0 = (rem % tb) * 32;
    int64_t boff = 0, brem = bt;
    for (int k = s.rank - 3; k >= 0; --k) {
      boff += (brem % s.shape[k]) * s.strides[k];
      brem /= s.shape[k];
    }
    // Read: consecutive threads walk a (stride 1 in src).
    for (int k = threadIdx.y; k < 32; k += blockDim.y) {
      const int64_t a = a0 + threadIdx.x, b = b0 + k;
      if (a < A && b < B) tile[k][threadIdx.x] = src[boff + a + b * sb];
    }
    __syncthreads();
    // Write: consecutive threads walk b (contiguous in dst).
    for (int k = threadIdx.y; k < 32; k += blockDim.y) {
      const int64_t a = a0 + k, b = b0 + threadIdx.x;
      if (a < A && b < B) dst[(bt * A + a) * B + b] = tile[threadIdx.x][k];
    }
    __syncthreads();
  }
}

// Tuned transpose of the last two dims: a TILE x TILE tile per block of
// 256 threads, each thread moving TILE*TILE/256 elements in runs of V
// (vector loads and stores of V*sizeof(T) bytes when the extents, strides
// and pointers allow), all of a thread's loads issued before its shared
// stores so many bytes are in flight; the tile row is padded by one 4-byte
// word against bank conflicts. Tiles are walked by a 1-D grid-stride loop
// with 64-bit offsets (no grid.y limit).
template <class T, int V>
struct alignas(sizeof(T) * V) VecOf {
  T v[V];
};

template <class T, int TILE, int V>
__global__ void __launch_bounds__(256)
transpose_tile_kernel(const T* __restrict__ src, T* __restrict__ dst, Strided s, int64_t A,
                      int64_t B, int64_t sb, int64_t batches) {
  constexpr int kPad = sizeof(T) >= 4 ? 1 : 4 / static_cast<int>(sizeof(T));
  constexpr int kTpr = TILE / V;                           // threads per tile row
  constexpr int kRpp = 256 / kTpr;                         // tile rows per pass
  constexpr int kPasses = kRpp >= TILE ? 1 : TILE / kRpp;  // passes over the tile
  static_assert(TILE % V == 0 && 256 % kTpr == 0, "tile shape");
  using Vec = VecOf<T, V>;
  __shared__ T tile[TILE][TILE + kPad];
  const int c = (threadIdx.x % kTpr) * V, r = threadIdx.x / kTpr;
  const int64_t ta = (A + TILE - 1) / TILE, tb = (B + TILE - 1) / TILE;
  const int64_t per_batch = ta * tb, tiles = batches * per_batch;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t bt = t / per_batch, rem = t - bt * per_batch;
    const int64_t a0 = (rem / tb) * TILE, b0 = (rem % tb) * TILE;
    int64_t boff = 0, brem = bt;
    for (int k = s.rank - 3; k >= 0; --k) {
      boff += (brem % s.shape[k]) * s.strides[k];
      brem /= s.shape[k];
    }
    // Read: a run of V consecutive a (stride 1 in src) per thread.
    Vec in[kPasses];
    const int64_t a = a0 + c;
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const int k = r + p * kRpp;
      const int64_t b = b0 + k;
      if (k < TILE && b < B) {
        const T* q = src + boff + a + b * sb;
        if (V > 1) {
          if (a < A) in[p] = *reinterpret_cast<const Vec*>(q);
        } else {
#pragma unroll
          for (int e = 0; e < V; ++e)
            if (a + e < A) in[p].v[e] = q[e];
        }
      }
    }
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const int k = r + p * kRpp;
      if (k < TILE)
#pragma unroll
        for (int e = 0; e < V; ++e) tile[k][c + e] = in[p].v[e];
    }
    __syncthreads();
    // Write: a run of V consecutive b (contiguous in dst) per thread.
    const int64_t b = b0 + c;
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const int k = r + p * kRpp;
      const int64_t ad = a0 + k;
      if (k < TILE && ad < A && b < B) {
        Vec o;
#pragma unroll
        for (int e = 0; e < V; ++e) o.v[e] = tile[c + e][k];
        T* q = dst + (bt * A + ad) * B + b;
        if (V > 1) {
          *reinterpret_cast<Vec*>(q) = o;
        } else {
#pragma unroll
          for (int e = 0; e < V; ++e)
            if (b + e < B) q[e] = o.v[e];
        }
      }
    }
    __syncthreads();
  }
}

// Transpose variant (XHAL_CUDA_TRANSPOSE, read once; a prototype that
// compiles this file in may set it directly): "32" is the first 32x32 tile
// kernel; "<tile>v<V>" (tile 32 or 64, V 1, 2 or 4) the tuned one, which
// uses V only when every run of V elements is aligned and inside the tile
// (else V = 1). Default 64v4.
struct TransposeChoice {
  int tile = 64, vec = 4;
  bool old = false;
};
std::atomic<int> g_transpose_choice{-1};  // tile * 16 + vec, or 0 for the old kernel

TransposeChoice transpose_choice() {
  int v = g_transpose_choice.load(std::memory_order_relaxed);
  if (v < 0) {
    v = 64 * 16 + 4;
    if (const char* e = std::getenv("XHAL_CUDA_TRANSPOSE"); e && *e) {
      int tile = 0, vec = 1;
      if (std::strcmp(e, "32") == 0) v = 0;
      else if (std::sscanf(e, "%dv%d", &tile, &vec) >= 1 && (tile == 32 || tile == 64) &&
               (vec == 1 || vec == 2 || vec == 4))
        v = tile * 16 + vec;
    }
    g_transpose_choice.store(v, std::memory_order_relaxed);
  }
  TransposeChoice c;
  c.old = v == 0;
  if (!c.old) {
    c.tile = v / 16;
    c.vec = v % 16;
  }
  return c;
}

template <class T, int TILE, int V>
void launch_transpose(Device* d, const T* src, T* dst, const Strided& s, int64_t A, int64_t B,
                      int64_t sb, int64_t batches) {
  const int64_t tiles = batches * ((A + TILE - 1) / TILE) * ((B + TILE - 1) / TILE);
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(tiles, 1 << 20));
  transpose_tile_kernel<T, TILE, V><<<grid, 256, 0, d->stream>>>(src, dst, s, A, B, sb, batches);
}

// Runs of `vec` elements are aligned and whole when both pointers, the two
// extents and every src stride but the unit one are multiples of vec.
template <class T>
bool transpose_vec_ok(const void* src, const void* dst, const Strided& s, int64_t A, int64_t B,
                      int vec) {
  if (vec <= 1) return true;
  const uintptr_t bytes = sizeof(T) * static_cast<uintptr_t>(vec);
  if (reinterpret_cast<uintptr_t>(src) % bytes || reinterpret_cast<uintptr_t>(dst) % bytes)
    return false;
  if (A % vec || B % vec) return false;
  for (int k = 0; k < s.rank - 2; ++k)
    if (s.strides[k] % vec) return false;
  return s.strides[s.rank - 1] % vec == 0;
}

template <class T>
void launch_permute(Device* d, const void* src, void* dst, const Strided& s, int64_t total) {
  const int r = s.rank;
  if (r >= 2 && s.strides[r - 2] == 1 && s.strides[r - 1] != 1 && s.shape[r - 1] > 1 &&
      s.shape[r - 2] > 1) {
    const int64_t A = s.shape[r - 2], B = s.shape[r - 1];
    const int64_t batches = total / (A * B);
    const int64_t sb = s.strides[r - 1];
    const T* sp = static_cast<const T*>(src);
    T* dp = static_cast<T*>(dst);
    const TransposeChoice c = transpose_choice();
    if (c.old) {
      const int64_t tiles = batches * ((A + 31) / 32) * ((B + 31) / 32);
      const unsigned grid = static_cast<unsigned>(std::min<int64_t>(tiles, 1 << 20));
      permute_tile_kernel<T><<<grid, dim3(32, 8), 0, d->stream>>>(sp, dp, s, A, B, sb, batches);
      return;
    }
    // Vector runs of at most 16 bytes.
    int vec = c.vec;
    while (vec > 1 && (sizeof(T) * vec > 16 || !transpose_vec_ok<T>(src, dst, s, A, B, vec)))
      vec /= 2;
    if constexpr (sizeof(T) == 4) {
      if (vec == 4)
        return c.tile == 32 ? launch_transpose<T, 32, 4>(d, sp, dp, s, A, B, sb, batches)
                            : launch_transpose<T, 64, 4>(d, sp, dp, s, A, B, sb, batches);
    }
    if constexpr (sizeof(T) >= 4) {
      if (vec >= 2)
        return c.tile == 32 ? launch_transpose<T, 32, 2>(d, sp, dp, s, A, B, sb, batches)
                            : launch_transpose<T, 64, 2>(d, sp, dp, s, A, B, sb, batches);
    }
    return c.tile == 32 ? launch_transpose<T, 32, 1>(d, sp, dp, s, A, B, sb, batches)
                        : launch_transpose<T, 64, 1>(d, sp, dp, s, A, B, sb, batches);
  } else {
    permute_generic_kernel<T><<<grid_for(total, 256), 256, 0, d->stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), s, total);
  }
}

template <class V>
xhal_status_t run_index_add(Device* d, const Plan* p, float alpha, const V* s, V* o, int64_t w,
                            int* launches) {
  if (p->num_direct) {
    add_direct_rec_kernel<V><<<grid_for(p->num_direct * w, 256), 256, 0, d->stream>>>(
        s, o, p->direct, p->row_sources, p->num_direct, w, alpha);
    ++*launches;
  }
  if (p->num_long) {
    void* ws = nullptr;
    xhal_status_t st = scratch(d, sizeof(V) * 2 * p->num_chunks * w, &ws);
    if (st != XHAL_OK) return st;
    V* buf[2] = {static_cast<V*>(ws), static_cast<V*>(ws) + p->num_chunks * w};
    add_chunks_batched_kernel<V><<<grid_for(p->num_chunks * w, 256), 256, 0, d->stream>>>(
        s, buf[0], p->chunk_begin, p->chunk_len, p->row_sources, p->num_chunks, w);
    ++*launches;
    int cur = 0;
    for (size_t g = 0; g + 1 < p->group_offsets.size(); ++g) {
      const int64_t b = p->group_offsets[g], num = p->group_offsets[g + 1] - b;
      add_groups_kernel<V><<<grid_for(num * w, 256), 256, 0, d->stream>>>(
          buf[cur], buf[1 - cur], p->group_triples + 3 * b, num, w);
      cur = 1 - cur;
      ++*launches;
    }
    add_long_apply_kernel<V><<<grid_for(p->num_long * w, 256), 256, 0, d->stream>>>(
        buf[cur], o, p->long_rows, p->long_base, p->num_long, w, alpha);
    ++*launches;
  }
  return XHAL_OK;
}

Device* begin(void* device) {
  auto* d = static_cast<Device*>(device);
  use_device(d->ordinal);
  return d;
}

}  // namespace

xhal_status_t index_plan_create(void* device, const xhal_plugin_index_plan_desc_t* desc,
                                void** out_plan) {
  Device* d = begin(device);
  auto* p = new Plan;
  p->count = static_cast<int64_t>(desc->count);
  p->num_rows = static_cast<int64_t>(desc->num_rows);
  const int64_t n = p->count;
  xhal_status_t st = XHAL_OK;
  try {
    const int64_t* touched_rows = desc->touched_rows;
    const int64_t* touched_ptr = desc->touched_ptr;
    uint64_t touched_count = 0;
    std::vector<int64_t> rows_from_full, ptr_from_full;
    if (desc->row_ptr == nullptr) {
      touched_count = desc->touched_count;  // the compact form of a 1.1 core
    } else {
      // A 1.0 core passes only row_ptr over every row (its desc has no
      // touched_* fields): list the touched rows from it.
      touched_from_row_ptr(desc->row_ptr, desc->num_rows, &rows_from_full, &ptr_from_full);
      touched_rows = rows_from_full.data();
      touched_ptr = ptr_from_full.data();
      touched_count = rows_from_full.size();
    }
    const IndexAddSchedule sch =
        build_index_add_schedule(touched_rows, touched_ptr, touched_count, desc->row_sources);
    p->group_offsets = sch.group_offsets;
    p->num_direct = static_cast<int64_t>(sch.direct.size());
    p->num_chunks = static_cast<int64_t>(sch.chunk_begin.size());
    p->num_long = static_cast<int64_t>(sch.long_rows.size());
    const std::vector<int64_t> idx(desc->indices, desc->indices + n);
    const std::vector<int64_t> srcs(desc->row_sources, desc->row_sources + n);
    if (st == XHAL_OK) st = up(d, idx, &p->indices);
    if (st == XHAL_OK) st = up(d, srcs, &p->row_sources);
    if (st == XHAL_OK) st = up(d, sch.direct, &p->direct);
    if (st == XHAL_OK) st = up(d, sch.chunk_begin, &p->chunk_begin);
    if (st == XHAL_OK) st = up(d, sch.chunk_len, &p->chunk_len);
    if (st == XHAL_OK) st = up(d, sch.long_rows, &p->long_rows);
    if (st == XHAL_OK) st = up(d, sch.long_base, &p->long_base);
    if (st == XHAL_OK) st = up(d, sch.group_triples, &p->group_triples);
  } catch (const std::bad_alloc&) {
    st = fail(XHAL_OUT_OF_MEMORY, "out of host memory building the index plan");
  }
  if (st != XHAL_OK) {
    free_plan(p);
    return st;
  }
  *out_plan = p;
  return XHAL_OK;
}

void index_plan_destroy(void* device, void* plan) {
  Device* d = begin(device);
  gpuStreamSynchronize(d->stream);
  free_plan(static_cast<Plan*>(plan));
}

xhal_status_t index_select(void* device, void* plan, const xhal_plugin_tensor_t* src,
                           const xhal_plugin_tensor_t* out) {
  Device* d = begin(device);
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

xhal_status_t index_add(void* device, void* plan, float alpha, const xhal_plugin_tensor_t* src,
                        const xhal_plugin_tensor_t* dst) {
  Device* d = begin(device);
  std::lock_guard lock(d->mutex);
  const Plan* p = static_cast<const Plan*>(plan);
  int64_t w = 1;
  for (uint32_t i = 1; i < dst->rank; ++i) w *= dst->shape[i];
  if (p->count == 0 || w == 0) return XHAL_OK;
  const float* s = tensor_f32(src);
  float* o = tensor_f32(dst);
  int launches = 0;
  xhal_status_t st;
  if (w % 4 == 0 && reinterpret_cast<uintptr_t>(s) % 16 == 0 &&
      reinterpret_cast<uintptr_t>(o) % 16 == 0)
    st = run_index_add<float4>(d, p, alpha, reinterpret_cast<const float4*>(s),
                               reinterpret_cast<float4*>(o), w / 4, &launches);
  else
    st = run_index_add<float>(d, p, alpha, s, o, w, &launches);
  if (st != XHAL_OK) return st;
  return check_launch(d, "index_add", launches);
}

xhal_status_t permute(void* device, const xhal_plugin_tensor_t* src,
                      const xhal_plugin_tensor_t* dst) {
  Device* d = begin(device);
  std::lock_guard lock(d->mutex);
  const int64_t total = tensor_elems(dst);
  if (total == 0) return XHAL_OK;
  Strided s{};
  s.rank = static_cast<int>(src->rank);
  for (int k = 0; k < s.rank; ++k) {
    s.shape[k] = src->shape[k];
    s.strides[k] = src->strides[k];
  }
  if (s.rank == 0) {
    s.rank = 1;
    s.shape[0] = 1;
    s.strides[0] = 0;
  }
  const void* sp = tensor_ptr(src);
  void* dp = tensor_ptr(dst);
  switch (dtype_size(src->dtype)) {
    case 1: launch_permute<unsigned char>(d, sp, dp, s, total); break;
    case 2: launch_permute<uint16_t>(d, sp, dp, s, total); break;
    case 8: launch_permute<uint64_t>(d, sp, dp, s, total); break;
    default: launch_permute<uint32_t>(d, sp, dp, s, total); break;
  }
  return check_launch(d, "permute");
}

}  // namespace xhal::gpu
