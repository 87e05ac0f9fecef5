// index_select, index_add (docs/semantics.md "index_select", "index_add",
// 3.7) and permute on the GPU. Index plans are uploaded once, with the
// schedule index_add needs: rows with at most 32 sources are summed by one
// thread per (row, column); longer rows are cut into chunks of 32 sources
// summed in parallel, then combined level by level of the pairwise tree,
// without atomics.
#include <algorithm>
#include <vector>

#include "gpu_plugin.h"
#include "tree_device.h"

namespace xhal::gpu {
namespace {

struct Plan {
  int64_t count = 0, num_rows = 0;
  int64_t* indices = nullptr;      // [count]
  int64_t* row_ptr = nullptr;      // [num_rows + 1]
  int64_t* row_sources = nullptr;  // [count]
  int64_t* direct_rows = nullptr;  // rows with 1..32 sources
  int64_t num_direct = 0;
  // Long rows: chunk c covers row_sources[chunk_begin[c] .. +chunk_len[c]).
  int64_t* chunk_begin = nullptr;
  int32_t* chunk_len = nullptr;
  int64_t num_chunks = 0;
  int64_t* long_rows = nullptr;  // [num_long]
  int64_t* long_base = nullptr;  // first partial slot of each long row
  int64_t num_long = 0;
  // Tree levels over the partial slots: triples (a, b or -1, out).
  int64_t* level_pairs = nullptr;
  std::vector<int64_t> level_offsets;  // host: level l uses triples [off[l], off[l+1])
};

void free_plan(Plan* p) {
  for (void* q : {static_cast<void*>(p->indices), static_cast<void*>(p->row_ptr),
                  static_cast<void*>(p->row_sources), static_cast<void*>(p->direct_rows),
                  static_cast<void*>(p->chunk_begin), static_cast<void*>(p->chunk_len),
                  static_cast<void*>(p->long_rows), static_cast<void*>(p->long_base),
                  static_cast<void*>(p->level_pairs)})
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

// Rows with 1..32 sources: item = (direct row, unit).
template <class V>
__global__ void add_direct_kernel(const V* __restrict__ src, V* __restrict__ dst,
                                  const int64_t* __restrict__ rows,
                                  const int64_t* __restrict__ row_ptr,
                                  const int64_t* __restrict__ sources, int64_t num_rows,
                                  int64_t w, float alpha) {
  const int64_t total = num_rows * w;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    const int64_t k = it / w, j = it - k * w;
    const int64_t r = rows[k];
    const int64_t e0 = row_ptr[r], e1 = row_ptr[r + 1];
    V s = vzero<V>();
    for (int64_t e = e0; e < e1; ++e) s = vadd(s, src[sources[e] * w + j]);
    dst[r * w + j] = vaxpy(dst[r * w + j], alpha, s);
  }
}

// Chunk sums of long rows: item = (chunk, unit) -> partial[chunk * w + j].
template <class V>
__global__ void add_chunks_kernel(const V* __restrict__ src, V* __restrict__ partial,
                                  const int64_t* __restrict__ chunk_begin,
                                  const int32_t* __restrict__ chunk_len,
                                  const int64_t* __restrict__ sources, int64_t num_chunks,
                                  int64_t w) {
  const int64_t total = num_chunks * w;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = it / w, j = it - c * w;
    const int64_t b = chunk_begin[c];
    const int len = chunk_len[c];
    V s = vzero<V>();
    for (int k = 0; k < len; ++k) s = vadd(s, src[sources[b + k] * w + j]);
    partial[it] = s;
  }
}

// One level of the pairwise tree: out = a + b, or a where b is padding
// (+0 added to a chunk sum, which is never -0, leaves it unchanged).
template <class V>
__global__ void add_level_kernel(const V* __restrict__ in, V* __restrict__ out,
                                 const int64_t* __restrict__ triples, int64_t num, int64_t w) {
  const int64_t total = num * w;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    const int64_t k = it / w, j = it - k * w;
    const int64_t a = triples[3 * k], b = triples[3 * k + 1], o = triples[3 * k + 2];
    out[o * w + j] = b >= 0 ? vadd(in[a * w + j], in[b * w + j]) : in[a * w + j];
  }
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

template <class T>
void launch_permute(Device* d, const void* src, void* dst, const Strided& s, int64_t total) {
  const int r = s.rank;
  if (r >= 2 && s.strides[r - 2] == 1 && s.strides[r - 1] != 1 && s.shape[r - 1] > 1 &&
      s.shape[r - 2] > 1) {
    const int64_t A = s.shape[r - 2], B = s.shape[r - 1];
    const int64_t batches = total / (A * B);
    const int64_t tiles = batches * ((A + 31) / 32) * ((B + 31) / 32);
    const unsigned grid = static_cast<unsigned>(std::min<int64_t>(tiles, 1 << 20));
    permute_tile_kernel<T><<<grid, dim3(32, 8), 0, d->stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), s, A, B, s.strides[r - 1], batches);
  } else {
    permute_generic_kernel<T><<<grid_for(total, 256), 256, 0, d->stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), s, total);
  }
}

template <class V>
xhal_status_t run_index_add(Device* d, const Plan* p, float alpha, const V* s, V* o, int64_t w,
                            int* launches) {
  if (p->num_direct) {
    add_direct_kernel<V><<<grid_for(p->num_direct * w, 256), 256, 0, d->stream>>>(
        s, o, p->direct_rows, p->row_ptr, p->row_sources, p->num_direct, w, alpha);
    ++*launches;
  }
  if (p->num_long) {
    void* ws = nullptr;
    xhal_status_t st = scratch(d, sizeof(V) * 2 * p->num_chunks * w, &ws);
    if (st != XHAL_OK) return st;
    V* buf[2] = {static_cast<V*>(ws), static_cast<V*>(ws) + p->num_chunks * w};
    add_chunks_kernel<V><<<grid_for(p->num_chunks * w, 256), 256, 0, d->stream>>>(
        s, buf[0], p->chunk_begin, p->chunk_len, p->row_sources, p->num_chunks, w);
    ++*launches;
    int cur = 0;
    for (size_t l = 0; l + 1 < p->level_offsets.size(); ++l) {
      const int64_t b = p->level_offsets[l], num = p->level_offsets[l + 1] - b;
      add_level_kernel<V><<<grid_for(num * w, 256), 256, 0, d->stream>>>(
          buf[cur], buf[1 - cur], p->level_pairs + 3 * b, num, w);
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
  const int64_t n = p->count, rows = p->num_rows;
  std::vector<int64_t> idx(desc->indices, desc->indices + n);
  std::vector<int64_t> rp(desc->row_ptr, desc->row_ptr + rows + 1);
  std::vector<int64_t> srcs(desc->row_sources, desc->row_sources + n);
  std::vector<int64_t> direct, chunk_begin, long_rows, long_base;
  std::vector<int32_t> chunk_len;
  std::vector<int64_t> counts;  // chunks per long row
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t m = rp[r + 1] - rp[r];
    if (m == 0) continue;
    if (m <= 32) {
      direct.push_back(r);
      continue;
    }
    long_rows.push_back(r);
    long_base.push_back(static_cast<int64_t>(chunk_begin.size()));
    counts.push_back((m + 31) / 32);
    for (int64_t b = rp[r]; b < rp[r + 1]; b += 32) {
      chunk_begin.push_back(b);
      chunk_len.push_back(static_cast<int32_t>(std::min<int64_t>(32, rp[r + 1] - b)));
    }
  }
  std::vector<int64_t> triples;
  p->level_offsets.push_back(0);
  for (bool more = true; more;) {
    more = false;
    for (int64_t c : counts) more = more || c > 1;
    if (!more) break;
    for (size_t k = 0; k < counts.size(); ++k) {
      const int64_t base = long_base[k], c = counts[k];
      for (int64_t i = 0; i < (c + 1) / 2; ++i)
        triples.insert(triples.end(),
                       {base + 2 * i, 2 * i + 1 < c ? base + 2 * i + 1 : -1, base + i});
      counts[k] = (c + 1) / 2;
    }
    p->level_offsets.push_back(static_cast<int64_t>(triples.size() / 3));
  }
  p->num_direct = static_cast<int64_t>(direct.size());
  p->num_chunks = static_cast<int64_t>(chunk_begin.size());
  p->num_long = static_cast<int64_t>(long_rows.size());
  xhal_status_t st = XHAL_OK;
  if (st == XHAL_OK) st = up(d, idx, &p->indices);
  if (st == XHAL_OK) st = up(d, rp, &p->row_ptr);
  if (st == XHAL_OK) st = up(d, srcs, &p->row_sources);
  if (st == XHAL_OK) st = up(d, direct, &p->direct_rows);
  if (st == XHAL_OK) st = up(d, chunk_begin, &p->chunk_begin);
  if (st == XHAL_OK) st = up(d, chunk_len, &p->chunk_len);
  if (st == XHAL_OK) st = up(d, long_rows, &p->long_rows);
  if (st == XHAL_OK) st = up(d, long_base, &p->long_base);
  if (st == XHAL_OK) st = up(d, triples, &p->level_pairs);
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
