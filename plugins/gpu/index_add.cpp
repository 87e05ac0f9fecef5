// index_add (docs/semantics.md "index_add", 3.7) through the plan's
// schedule (index_schedule.h): rows with at most 32 sources are summed by
// one thread per (row, column group); longer rows are cut into chunks of 32
// sources summed in parallel, then combined five levels of the pairwise
// tree per launch, and a last launch adds alpha * total into dst. No
// atomics: every sum is in the canonical order.
#include "grid_items.h"
#include "index_plan.h"
#include "narrow_device.h"

namespace xhal::gpu {
namespace {

// Kernels work on storage units U of 4 columns per thread (float4, or a
// Quad of bf16/f16, when the row width and the pointers allow) or of one
// column; w counts units. Sums are in V = value_t<U> (float4 or float):
// sources are widened on load and dst is narrowed once at the end (7.2).
// f64 (7.3) runs with U = V = double, one column per thread: a unit of
// four doubles would double the registers of the 32-partial tree kernel.
// Each component is its own canonical sum.
__device__ __forceinline__ float vadd(float a, float b) { return xadd(a, b); }
__device__ __forceinline__ double vadd(double a, double b) { return xadd(a, b); }
__device__ __forceinline__ float4 vadd(float4 a, float4 b) {
  return make_float4(xadd(a.x, b.x), xadd(a.y, b.y), xadd(a.z, b.z), xadd(a.w, b.w));
}
__device__ __forceinline__ float vaxpy(float d, float alpha, float s) {
  return xadd(d, xmul(alpha, s));
}
// f64: alpha (the call's float) widened exactly (7.3).
__device__ __forceinline__ double vaxpy(double d, float alpha, double s) {
  return xadd(d, xmul(static_cast<double>(alpha), s));
}
__device__ __forceinline__ float4 vaxpy(float4 d, float alpha, float4 s) {
  return make_float4(vaxpy(d.x, alpha, s.x), vaxpy(d.y, alpha, s.y), vaxpy(d.z, alpha, s.z),
                     vaxpy(d.w, alpha, s.w));
}
template <class V>
__device__ __forceinline__ V vzero() {
  if constexpr (std::is_same_v<V, float4>) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  else return V(0);
}

template <class U, class V = value_t<U>>
__global__ void add_long_apply_kernel(const V* __restrict__ total_buf, U* __restrict__ dst,
                                      const int64_t* __restrict__ rows,
                                      const int64_t* __restrict__ base, int64_t num, int64_t w,
                                      float alpha) {
  const int64_t total = num * w;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    const int64_t k = it / w, j = it - k * w;
    const int64_t r = rows[k];
    dst[r * w + j] = to_unit<U>(vaxpy(widen(dst[r * w + j]), alpha, total_buf[base[k] * w + j]));
  }
}

// ---- index_add schedule ----
// A thread issues a batch of source loads (and its dst load) before it adds
// them in order, so one row costs a few memory latencies instead of one per
// source, and the chunk tree runs five levels per launch.

// A thread owns kU units of one row, w/kU apart, so each batch keeps kU
// times the bytes in flight (the row's loads are latency bound at one unit
// per thread). Each unit's sum is its own, in the same order. The record
// names the first two sources, so dst and those two rows load together once
// the record is in; a third source onwards waits for the list, kB at a
// time. kExact (w a multiple of kU) drops the per-unit bounds checks: with
// them the loads issue one by one (H200: 0.79 against 0.97 of copy,
// docs/performance.md "index_add"). Two units and kB = 2 keep the kernel
// under 64 registers.
template <int kU, int kB, bool kExact, class U, class V = value_t<U>>
__global__ void add_direct_rec_kernel(const U* __restrict__ src, U* __restrict__ dst,
                                      const DirectRow* __restrict__ rows,
                                      const int64_t* __restrict__ sources, int64_t num_rows,
                                      int64_t w, float alpha) {
  const int64_t h = (w + kU - 1) / kU;
  const int64_t total = num_rows * h;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    int64_t k, j;
    split_item(it, h, k, j);
    const auto in_row = [&](int u) { return kExact || j + u * h < w; };
    const DirectRow d = rows[k];
    const int64_t e0 = d.e0m >> kDirectCountBits;
    const int64_t end = e0 + (d.e0m & kDirectCountMask);
    V old[kU], s[kU];
    U t2[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (in_row(u)) {
        old[u] = widen(dst[d.r * w + j + u * h]);
        s[u] = vadd(vzero<V>(), widen(src[d.first * w + j + u * h]));
        if (d.second >= 0) t2[u] = src[d.second * w + j + u * h];
      }
    if (d.second >= 0)
#pragma unroll
      for (int u = 0; u < kU; ++u)
        if (in_row(u)) s[u] = vadd(s[u], widen(t2[u]));
    for (int64_t e = e0 + 2; e < end; e += kB) {
      U t[kB][kU];
#pragma unroll
      for (int q = 0; q < kB; ++q)
        if (e + q < end) {
          const int64_t row = sources[e + q];
#pragma unroll
          for (int u = 0; u < kU; ++u)
            if (in_row(u)) t[q][u] = src[row * w + j + u * h];
        }
#pragma unroll
      for (int q = 0; q < kB; ++q)
        if (e + q < end)
#pragma unroll
          for (int u = 0; u < kU; ++u)
            if (in_row(u)) s[u] = vadd(s[u], widen(t[q][u]));
    }
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (in_row(u)) dst[d.r * w + j + u * h] = to_unit<U>(vaxpy(old[u], alpha, s[u]));
  }
}

// One thread per (chunk, kU units w/kU apart; w % kU == 0) sums the chunk's
// sources in order from +0, kB source rows in flight at a time.
template <int kU, int kB, class U, class V = value_t<U>>
__global__ void add_chunks_batched_kernel(const U* __restrict__ src, V* __restrict__ partial,
                                          const int64_t* __restrict__ chunk_begin,
                                          const int32_t* __restrict__ chunk_len,
                                          const int64_t* __restrict__ sources, int64_t num_chunks,
                                          int64_t w) {
  const int64_t h = w / kU;
  const int64_t total = num_chunks * h;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    int64_t c, j;
    split_item(it, h, c, j);
    const int64_t b = chunk_begin[c], end = b + chunk_len[c];
    V s[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) s[u] = vzero<V>();
    for (int64_t e = b; e < end; e += kB) {
      U t[kB][kU];
#pragma unroll
      for (int q = 0; q < kB; ++q)
        if (e + q < end) {
          const int64_t row = sources[e + q];
#pragma unroll
          for (int u = 0; u < kU; ++u) t[q][u] = src[row * w + j + u * h];
        }
#pragma unroll
      for (int q = 0; q < kB; ++q)
        if (e + q < end)
#pragma unroll
          for (int u = 0; u < kU; ++u) s[u] = vadd(s[u], widen(t[q][u]));
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) partial[c * w + j + u * h] = s[u];
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

template <class U>
xhal_status_t run_index_add(Device* d, const Plan* p, float alpha, const U* s, U* o, int64_t w,
                            int* launches) {
  using V = value_t<U>;
  if (p->num_direct) {
    constexpr int kU = 2, kB = 2;
    const unsigned grid = grid_for(p->num_direct * ((w + kU - 1) / kU), 256);
    if (w % kU == 0)
      add_direct_rec_kernel<kU, kB, true, U>
          <<<grid, 256, 0, d->stream>>>(s, o, p->direct, p->row_sources, p->num_direct, w, alpha);
    else
      add_direct_rec_kernel<kU, kB, false, U>
          <<<grid, 256, 0, d->stream>>>(s, o, p->direct, p->row_sources, p->num_direct, w, alpha);
    ++*launches;
  }
  if (p->num_long) {
    void* ws = nullptr;
    xhal_status_t st = scratch(d, sizeof(V) * 2 * p->num_chunks * w, &ws);
    if (st != XHAL_OK) return st;
    V* buf[2] = {static_cast<V*>(ws), static_cast<V*>(ws) + p->num_chunks * w};
    // Two units a thread, four source rows in flight: the hub of xhal-bench
    // (500,000 sources on one row) ran at 0.86 of copy as one unit and 16
    // rows, 0.90 so (H200, docs/performance.md "index_add").
    constexpr int kChunkU = 2, kChunkB = 4;
    if (w % kChunkU == 0)
      add_chunks_batched_kernel<kChunkU, kChunkB, U>
          <<<grid_for(p->num_chunks * w / kChunkU, 256), 256, 0, d->stream>>>(
              s, buf[0], p->chunk_begin, p->chunk_len, p->row_sources, p->num_chunks, w);
    else
      add_chunks_batched_kernel<1, 16, U><<<grid_for(p->num_chunks * w, 256), 256, 0, d->stream>>>(
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
    add_long_apply_kernel<U><<<grid_for(p->num_long * w, 256), 256, 0, d->stream>>>(
        buf[cur], o, p->long_rows, p->long_base, p->num_long, w, alpha);
    ++*launches;
  }
  return XHAL_OK;
}

}  // namespace

xhal_status_t index_add(void* device, void* plan, float alpha, const xhal_plugin_tensor_t* src,
                        const xhal_plugin_tensor_t* dst) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  const Plan* p = static_cast<const Plan*>(plan);
  int64_t w = 1;
  for (uint32_t i = 1; i < dst->rank; ++i) w *= dst->shape[i];
  if (p->count == 0 || w == 0) return XHAL_OK;
  int launches = 0;
  xhal_status_t st;
  const auto run = [&](auto unit) {
    using S = decltype(unit);  // element storage: float, Bf16, F16, double
    const S* s = tensor_as<S>(src);
    S* o = tensor_as<S>(dst);
    if constexpr (!std::is_same_v<S, double>)
      if (w % 4 == 0 && unit_aligned(s) && unit_aligned(o))
        return run_index_add(d, p, alpha, reinterpret_cast<const unit4_t<S>*>(s),
                             reinterpret_cast<unit4_t<S>*>(o), w / 4, &launches);
    return run_index_add(d, p, alpha, s, o, w, &launches);
  };
  switch (dst->dtype) {
    case XHAL_DTYPE_F64:
      st = run(double{});
      break;
    case XHAL_DTYPE_BF16:
      st = run(Bf16{});
      break;
    case XHAL_DTYPE_F16:
      st = run(F16{});
      break;
    default:
      st = run(float{});
      break;
  }
  if (st != XHAL_OK) return st;
  return check_launch(d, "index_add", launches);
}

}  // namespace xhal::gpu
