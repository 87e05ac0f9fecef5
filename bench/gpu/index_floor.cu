// xhal's index_select and index_add on xhal-bench's inputs (10^6 indices
// into 10^6 rows of 256 f32, the same random indices: bench/dense_index.cpp)
// beside kernels that move the very same bytes in the same access pattern
// with no index loads at all (row numbers from a hash): the floor that this
// GPU's memory puts under the pattern, whatever a schedule does about its
// dependent loads; then kernels with the loads an index op must make (the
// index list, index_add's row records), and the plugin's own kernels
// rebuilt step by step, to show which trait costs. Everything as a fraction
// of the copy bandwidth measured in the same process (issues 5 and 14:
// index ops at least 0.9 of copy; docs/performance.md "index_add").
// Usage: xhal-index-floor   (XHAL_DEVICE picks the xhal device)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "check.h"
#include "timing.h"

namespace {

constexpr int64_t kRows = 1000000, kWidth = 256, kUnits = kWidth / 4;  // float4 units a row

using xhal_gpu_bench::time_ms;

// xhal-bench's index lists (make_indices): random, or with half of the
// indices on row 0 (a hub).
std::vector<int64_t> bench_indices(bool hub = false) {
  std::vector<int64_t> idx(kRows);
  uint64_t state = 12345;
  for (int64_t i = 0; i < kRows; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    idx[i] = static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(kRows));
    if (hub && i % 2 == 0) idx[i] = 0;
  }
  return idx;
}

// A row number in [0, rows) from v, with no memory access.
__device__ __forceinline__ int64_t hashed_row(uint64_t v, int64_t rows) {
  v ^= v >> 33;
  v *= 0xff51afd7ed558ccdull;
  v ^= v >> 33;
  v *= 0xc4ceb9fe1a85ec53ull;
  v ^= v >> 33;
  return static_cast<int64_t>(__umul64hi(v, static_cast<uint64_t>(rows)));
}

__device__ __forceinline__ float4 add4(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}
__device__ __forceinline__ float4 axpy4(float4 d, float a, float4 s) {
  return make_float4(d.x + a * s.x, d.y + a * s.y, d.z + a * s.z, d.w + a * s.w);
}

// index_select's bytes: each output row reads one source row at random.
// A thread owns kU units of its row, kUnits / kU apart.
template <int kU>
__global__ void select_floor_kernel(const float4* __restrict__ src, float4* __restrict__ out) {
  constexpr int64_t h = kUnits / kU;
  const int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (it >= kRows * h) return;
  const int64_t i = it / h, j = it % h;
  const int64_t r = hashed_row(i, kRows);
  float4 t[kU];
#pragma unroll
  for (int u = 0; u < kU; ++u) t[u] = src[r * kUnits + j + u * h];
#pragma unroll
  for (int u = 0; u < kU; ++u) out[i * kUnits + j + u * h] = t[u];
}

// index_add's bytes: `touched` destination rows spread in ascending order
// over the table, each read and written once; `sources` source rows read at
// random, one or two per destination row (the first sources - touched rows
// take two), all loads of a row issued together.
template <int kU>
__global__ void add_floor_kernel(const float4* __restrict__ src, float4* __restrict__ dst,
                                 int64_t touched, int64_t sources) {
  constexpr int64_t h = kUnits / kU;
  const int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (it >= touched * h) return;
  const int64_t v = it / h, j = it % h;
  const int64_t r = v * kRows / touched;
  const bool two = v < sources - touched;
  const int64_t s0 = hashed_row(v, kRows), s1 = hashed_row(v + kRows, kRows);
  float4 d[kU], a[kU], b[kU];
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    d[u] = dst[r * kUnits + j + u * h];
    a[u] = src[s0 * kUnits + j + u * h];
    if (two) b[u] = src[s1 * kUnits + j + u * h];
  }
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    if (two) a[u] = add4(a[u], b[u]);
    dst[r * kUnits + j + u * h] = axpy4(d[u], 0.5f, a[u]);
  }
}

// One dependent level, as index_select must have: each row's source row
// is read from the index list. kDiv: the item split by a 64-bit divide with
// the row width known only at run time (as xhal's gather_kernel), 32-bit
// (as index_add's split_item), or by the compile-time width.
enum Split { kDiv64, kDiv32, kConst };
template <Split kSplit>
__global__ void select_idx_kernel(const float4* __restrict__ src, float4* __restrict__ out,
                                  const int64_t* __restrict__ idx, int64_t units) {
  const int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (it >= kRows * units) return;
  int64_t i, j;
  if constexpr (kSplit == kDiv64) {
    i = it / units;
    j = it - i * units;
  } else if constexpr (kSplit == kDiv32) {
    const uint32_t i32 = static_cast<uint32_t>(it) / static_cast<uint32_t>(units);
    i = i32;
    j = static_cast<uint32_t>(it) - i32 * static_cast<uint32_t>(units);
  } else {
    i = it / kUnits;
    j = it % kUnits;
  }
  out[it] = src[idx[i] * kUnits + j];
}

// index_add with one dependent level: a record per touched row (row, first
// two sources, where the rest start, how many), then dst and the first two
// sources load together; a third source onwards is read from the list,
// kB at a time (kB = 0: rows of more than two sources add only two, the
// floor of the record alone). A thread owns kU units.
struct Rec {
  int64_t r, first, second, e0m;
};
template <int kU, int kB>
__global__ void add_rec_kernel(const float4* __restrict__ src, float4* __restrict__ dst,
                               const Rec* __restrict__ recs, const int64_t* __restrict__ list,
                               int64_t touched) {
  constexpr int64_t h = kUnits / kU;
  const int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (it >= touched * h) return;
  const int64_t v = it / h, j = it % h;
  const Rec d = recs[v];
  float4 o[kU], a[kU], b[kU];
#pragma unroll
  for (int u = 0; u < kU; ++u) {
    o[u] = dst[d.r * kUnits + j + u * h];
    a[u] = src[d.first * kUnits + j + u * h];
    if (d.second >= 0) b[u] = src[d.second * kUnits + j + u * h];
  }
  if (d.second >= 0)
#pragma unroll
    for (int u = 0; u < kU; ++u) a[u] = add4(a[u], b[u]);
  if constexpr (kB > 0) {
    const int64_t e0 = d.e0m >> 6, end = e0 + (d.e0m & 63);
    for (int64_t e = e0 + 2; e < end; e += kB) {
      float4 t[kB][kU];
#pragma unroll
      for (int q = 0; q < kB; ++q)
        if (e + q < end) {
          const int64_t row = list[e + q];
#pragma unroll
          for (int u = 0; u < kU; ++u) t[q][u] = src[row * kUnits + j + u * h];
        }
#pragma unroll
      for (int q = 0; q < kB; ++q)
        if (e + q < end)
#pragma unroll
          for (int u = 0; u < kU; ++u) a[u] = add4(a[u], t[q][u]);
    }
  }
#pragma unroll
  for (int u = 0; u < kU; ++u) dst[d.r * kUnits + j + u * h] = axpy4(o[u], 0.5f, a[u]);
}

// The plugin's direct-row kernel in steps (which of its traits cost):
// kLoop, a grid-stride loop; kChecks, a bounds check per unit (w not a
// multiple of kU); kRuntimeH, the width known only at run time.
template <int kU, int kB, bool kLoop, bool kChecks, bool kRuntimeH>
__global__ void add_steps_kernel(const float4* __restrict__ src, float4* __restrict__ dst,
                                 const Rec* __restrict__ recs, const int64_t* __restrict__ list,
                                 int64_t touched, int64_t w) {
  const int64_t h = kRuntimeH ? (w + kU - 1) / kU : kUnits / kU;
  const int64_t total = touched * h;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    int64_t v, j;
    if (kRuntimeH) {
      const uint32_t v32 = static_cast<uint32_t>(it) / static_cast<uint32_t>(h);
      v = v32;
      j = static_cast<uint32_t>(it) - v32 * static_cast<uint32_t>(h);
    } else {
      v = it / h;
      j = it % h;
    }
    const Rec d = recs[v];
    const int64_t e0 = d.e0m >> 6, end = e0 + (d.e0m & 63);
    float4 o[kU], a[kU], b[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (!kChecks || j + u * h < w) {
        o[u] = dst[d.r * w + j + u * h];
        a[u] = add4(make_float4(0.0f, 0.0f, 0.0f, 0.0f), src[d.first * w + j + u * h]);
        if (d.second >= 0) b[u] = src[d.second * w + j + u * h];
      }
    if (d.second >= 0)
#pragma unroll
      for (int u = 0; u < kU; ++u)
        if (!kChecks || j + u * h < w) a[u] = add4(a[u], b[u]);
    for (int64_t e = e0 + 2; e < end; e += kB) {
      float4 t[kB][kU];
#pragma unroll
      for (int q = 0; q < kB; ++q)
        if (e + q < end) {
          const int64_t row = list[e + q];
#pragma unroll
          for (int u = 0; u < kU; ++u)
            if (!kChecks || j + u * h < w) t[q][u] = src[row * w + j + u * h];
        }
#pragma unroll
      for (int q = 0; q < kB; ++q)
        if (e + q < end)
#pragma unroll
          for (int u = 0; u < kU; ++u)
            if (!kChecks || j + u * h < w) a[u] = add4(a[u], t[q][u]);
    }
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (!kChecks || j + u * h < w) dst[d.r * w + j + u * h] = axpy4(o[u], 0.5f, a[u]);
    if (!kLoop) return;
  }
}

// xhal's gather_kernel (plugins/gpu/index_select.cpp) in steps: kLoop, the
// grid-stride loop; kSplit32, the item split by a 32-bit divide; kU units a
// thread, units / kU apart.
template <bool kLoop, bool kSplit32, int kU>
__global__ void gather_steps_kernel(const uint4* __restrict__ src, uint4* __restrict__ out,
                                    const int64_t* __restrict__ idx, int64_t count, int64_t units) {
  const int64_t h = units / kU;
  const int64_t total = count * h;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    int64_t i, u;
    if (kSplit32) {
      const uint32_t i32 = static_cast<uint32_t>(it) / static_cast<uint32_t>(h);
      i = i32;
      u = static_cast<uint32_t>(it) - i32 * static_cast<uint32_t>(h);
    } else {
      i = it / h;
      u = it - i * h;
    }
    const int64_t r = idx[i];
    uint4 t[kU];
#pragma unroll
    for (int q = 0; q < kU; ++q) t[q] = src[r * units + u + q * h];
#pragma unroll
    for (int q = 0; q < kU; ++q) out[i * units + u + q * h] = t[q];
    if (!kLoop) return;
  }
}

unsigned blocks(int64_t threads) { return static_cast<unsigned>((threads + 255) / 256); }

}  // namespace

int main() {
  xhal_device_t dev = open_device_and_say_which();
  const int64_t row_bytes = kWidth * 4, table_bytes = kRows * row_bytes;
  const std::vector<int64_t> idx = bench_indices();
  std::vector<char> seen(kRows, 0);
  int64_t touched = 0;
  for (int64_t i : idx) touched += seen[i] ? 0 : (seen[i] = 1);
  const double select_bytes = 2.0 * table_bytes;
  const double add_bytes = static_cast<double>(table_bytes) + 2.0 * touched * row_bytes;
  std::printf("10^6 indices into 10^6 rows x 256 f32: %lld touched rows; index_add moves %.3f GB\n",
              static_cast<long long>(touched), add_bytes / 1e9);

  // Touched rows ascending, each row's sources ascending (the canonical order).
  std::vector<int64_t> ptr(kRows + 1, 0), list(kRows);
  for (int64_t i : idx) ++ptr[i + 1];
  for (int64_t r = 0; r < kRows; ++r) ptr[r + 1] += ptr[r];
  {
    std::vector<int64_t> at(ptr.begin(), ptr.end() - 1);
    for (int64_t i = 0; i < kRows; ++i) list[at[idx[i]]++] = i;
  }
  std::vector<Rec> recs;
  for (int64_t r = 0; r < kRows; ++r) {
    const int64_t m = ptr[r + 1] - ptr[r];
    if (m == 0) continue;
    if (m > 32) return 1;  // no row that long in this list
    recs.push_back({r, list[ptr[r]], m > 1 ? list[ptr[r] + 1] : -1, (ptr[r] << 6) | m});
  }
  // The bytes of the kernels that stop at two sources a row.
  double two_bytes = 2.0 * touched * row_bytes;
  for (const Rec& rc : recs) two_bytes += static_cast<double>(rc.second >= 0 ? 2 : 1) * row_bytes;
  Rec* drecs;
  int64_t *dlist, *didx;
  CK(cudaMalloc(&drecs, recs.size() * sizeof(Rec)));
  CK(cudaMalloc(&dlist, kRows * 8));
  CK(cudaMalloc(&didx, kRows * 8));
  CK(cudaMemcpy(drecs, recs.data(), recs.size() * sizeof(Rec), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dlist, list.data(), kRows * 8, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(didx, idx.data(), kRows * 8, cudaMemcpyHostToDevice));

  float4 *a, *b;
  CK(cudaMalloc(&a, table_bytes));
  CK(cudaMalloc(&b, table_bytes));
  CK(cudaMemset(a, 0, table_bytes));
  CK(cudaMemset(b, 0, table_bytes));
  const auto drain_c = [] { CK(cudaDeviceSynchronize()); };

  xhal_buffer_t bs, bd;
  XK(xhal_buffer_allocate(dev, table_bytes, &bs));
  XK(xhal_buffer_allocate(dev, table_bytes, &bd));
  {
    std::vector<float> host(kRows * kWidth);
    for (size_t i = 0; i < host.size(); ++i) host[i] = 0.5f + static_cast<float>(i % 977) / 977.0f;
    XK(xhal_buffer_write(bs, 0, host.data(), table_bytes));
    XK(xhal_buffer_write(bd, 0, host.data(), table_bytes));
  }
  xhal_index_plan_t plan;
  XK(xhal_index_plan_create(dev, idx.data(), XHAL_DTYPE_I64, kRows, kRows, &plan));
  const int64_t shape[2] = {kRows, kWidth};
  xhal_tensor_t ts, td;
  XK(xhal_tensor_init(bs, 0, XHAL_DTYPE_F32, 2, shape, &ts));
  XK(xhal_tensor_init(bd, 0, XHAL_DTYPE_F32, 2, shape, &td));
  const auto drain_x = [&] { XK(xhal_device_synchronize(dev)); };
  // The hub list: its plan and the bytes its index_add moves.
  const std::vector<int64_t> hub_idx = bench_indices(true);
  std::fill(seen.begin(), seen.end(), 0);
  int64_t hub_touched = 0;
  for (int64_t i : hub_idx) hub_touched += seen[i] ? 0 : (seen[i] = 1);
  const double hub_bytes = static_cast<double>(table_bytes) + 2.0 * hub_touched * row_bytes;
  xhal_index_plan_t hub_plan;
  XK(xhal_index_plan_create(dev, hub_idx.data(), XHAL_DTYPE_I64, kRows, kRows, &hub_plan));

  for (int pass = 1; pass <= 2; ++pass) {
    const double copy_ms =
        time_ms([&] { CK(cudaMemcpyAsync(b, a, table_bytes, cudaMemcpyDeviceToDevice)); }, drain_c);
    const double copy_bps = select_bytes / (copy_ms * 1e-3);
    std::printf("pass %d: copy (cudaMemcpy, 1 GiB, read + write) %.4f ms, %.0f GB/s\n", pass,
                copy_ms, copy_bps / 1e9);
    const auto say = [&](const char* what, double bytes, double ms) {
      std::printf("  %-44s %8.4f ms  %.3f of copy\n", what, ms, bytes / (ms * 1e-3) / copy_bps);
    };
    say("xhal index_select", select_bytes,
        time_ms([&] { XK(xhal_index_select(dev, plan, &ts, &td)); }, drain_x));
    say("floor of index_select, one unit a thread", select_bytes,
        time_ms([&] { select_floor_kernel<1><<<blocks(kRows * kUnits), 256>>>(a, b); }, drain_c));
    say("floor of index_select, two units a thread", select_bytes,
        time_ms([&] { select_floor_kernel<2><<<blocks(kRows * kUnits / 2), 256>>>(a, b); },
                drain_c));
    say("gather by index, 64-bit divide", select_bytes,
        time_ms(
            [&] { select_idx_kernel<kDiv64><<<blocks(kRows * kUnits), 256>>>(a, b, didx, kUnits); },
            drain_c));
    say("gather by index, 32-bit divide", select_bytes,
        time_ms(
            [&] { select_idx_kernel<kDiv32><<<blocks(kRows * kUnits), 256>>>(a, b, didx, kUnits); },
            drain_c));
    say("gather by index, width known", select_bytes,
        time_ms(
            [&] { select_idx_kernel<kConst><<<blocks(kRows * kUnits), 256>>>(a, b, didx, kUnits); },
            drain_c));
    const auto gsteps = [&](const char* what, auto kernel, int ku) {
      const int64_t threads = kRows * kUnits / ku;
      const unsigned g = static_cast<unsigned>(std::min<int64_t>((threads + 255) / 256, 1 << 20));
      say(what, select_bytes,
          time_ms(
              [&] {
                kernel<<<g, 256>>>(reinterpret_cast<const uint4*>(a), reinterpret_cast<uint4*>(b),
                                   didx, kRows, kUnits);
              },
              drain_c));
    };
    gsteps("gather steps: as the plugin", gather_steps_kernel<true, false, 1>, 1);
    gsteps("gather steps: no loop", gather_steps_kernel<false, false, 1>, 1);
    gsteps("gather steps: 32-bit split", gather_steps_kernel<true, true, 1>, 1);
    gsteps("gather steps: 32-bit split, 2 units", gather_steps_kernel<true, true, 2>, 2);
    gsteps("gather steps: 32-bit split, 4 units", gather_steps_kernel<true, true, 4>, 4);
    say("xhal index_add", add_bytes,
        time_ms([&] { XK(xhal_index_add(dev, plan, 0.5f, &ts, &td)); }, drain_x));
    say("xhal index_add, half on row 0", hub_bytes,
        time_ms([&] { XK(xhal_index_add(dev, hub_plan, 0.5f, &ts, &td)); }, drain_x));
    say("floor of index_add, one unit a thread", add_bytes,
        time_ms(
            [&] { add_floor_kernel<1><<<blocks(touched * kUnits), 256>>>(a, b, touched, kRows); },
            drain_c));
    say("floor of index_add, two units a thread", add_bytes,
        time_ms(
            [&] {
              add_floor_kernel<2><<<blocks(touched * kUnits / 2), 256>>>(a, b, touched, kRows);
            },
            drain_c));
    const int64_t n = static_cast<int64_t>(recs.size());
    say("records, two sources a row only (1 unit)", two_bytes,
        time_ms([&] { add_rec_kernel<1, 0><<<blocks(n * kUnits), 256>>>(a, b, drecs, dlist, n); },
                drain_c));
    say("records, two sources a row only (2 units)", two_bytes,
        time_ms(
            [&] { add_rec_kernel<2, 0><<<blocks(n * kUnits / 2), 256>>>(a, b, drecs, dlist, n); },
            drain_c));
    say("records and list, kB 4 (1 unit)", add_bytes,
        time_ms([&] { add_rec_kernel<1, 4><<<blocks(n * kUnits), 256>>>(a, b, drecs, dlist, n); },
                drain_c));
    say("records and list, kB 2 (2 units)", add_bytes,
        time_ms(
            [&] { add_rec_kernel<2, 2><<<blocks(n * kUnits / 2), 256>>>(a, b, drecs, dlist, n); },
            drain_c));
    say("records and list, kB 4 (2 units)", add_bytes,
        time_ms(
            [&] { add_rec_kernel<2, 4><<<blocks(n * kUnits / 2), 256>>>(a, b, drecs, dlist, n); },
            drain_c));
    say("records and list, kB 1 (1 unit)", add_bytes,
        time_ms([&] { add_rec_kernel<1, 1><<<blocks(n * kUnits), 256>>>(a, b, drecs, dlist, n); },
                drain_c));
    const auto steps = [&](const char* what, auto kernel, int ku) {
      say(what, add_bytes,
          time_ms([&] { kernel<<<blocks(n * kUnits / ku), 256>>>(a, b, drecs, dlist, n, kUnits); },
                  drain_c));
    };
    steps("steps: plugin-like, kU 2 kB 4", add_steps_kernel<2, 4, true, true, true>, 2);
    steps("steps: plugin-like, kU 2 kB 2", add_steps_kernel<2, 2, true, true, true>, 2);
    steps("steps: kU 2 kB 2, no checks", add_steps_kernel<2, 2, true, false, true>, 2);
    steps("steps: kU 2 kB 2, no checks, no loop", add_steps_kernel<2, 2, false, false, true>, 2);
    steps("steps: kU 2 kB 2, width known", add_steps_kernel<2, 2, false, false, false>, 2);
    steps("steps: kU 1 kB 1, plugin-like", add_steps_kernel<1, 1, true, true, true>, 1);
    steps("steps: kU 1 kB 2, plugin-like", add_steps_kernel<1, 2, true, true, true>, 1);
    CK(cudaGetLastError());
  }
  XK(xhal_index_plan_release(plan));
  XK(xhal_index_plan_release(hub_plan));
  XK(xhal_buffer_release(bs));
  XK(xhal_buffer_release(bd));
  CK(cudaFree(drecs));
  CK(cudaFree(dlist));
  CK(cudaFree(didx));
  CK(cudaFree(a));
  CK(cudaFree(b));
  XK(xhal_device_release(dev));
  return 0;
}
