// Sync-free triangular solve on CUDA (docs/gpu.md "Triangular solve").
//
// Every solved x[k] is published as one 64-bit word xs[k] = epoch << 32 |
// bits(x[k]); a reader learns "ready" and the value from a single load, so
// no fence separates them. Warps take 32 schedule positions at a time from
// a ticket counter; positions are in level order, so a warp only waits on
// warps holding earlier tickets, which are running or done: the waits end.
// Each level is padded to whole warps, so the rows of one warp never wait on
// each other and a warp can work on one long row together. Every sum is the
// segsum of docs/semantics.md 3.7 in its fixed order: only the scheduling
// differs from the level-batch kernels in ops_sparse.cpp.
//
// The schedule itself is built on the device at creation: a sync-free pass
// in row order computes each row's level (a row waits for its dependencies'
// levels the same way), then a count, a scan and a scatter place rows by
// level. Placement inside a level uses atomics and may differ between runs;
// results do not depend on it.
#include "solve_syncfree.h"

#if !defined(XHAL_GPU_HIP)
#include <algorithm>
#include <cstdlib>

#include <cub/device/device_scan.cuh>

#include "tree_device.h"

namespace xhal::gpu {
namespace {

__device__ __forceinline__ unsigned long long load_word(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ void store_word(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long word(unsigned epoch, unsigned payload) {
  return (static_cast<unsigned long long>(epoch) << 32) | payload;
}

// Loads of one group stay in flight together; only words not yet ready are
// polled again.
constexpr int kGroup = 16;

template <class Use>
__device__ __forceinline__ void await_group(const unsigned long long* xs, const I* j, int n,
                                            unsigned epoch, unsigned sleep_ns, Use use) {
  unsigned long long w[kGroup];
#pragma unroll
  for (int q = 0; q < kGroup; ++q)
    if (q < n) w[q] = load_word(xs + j[q]);
#pragma unroll
  for (int q = 0; q < kGroup; ++q) {
    if (q >= n) break;
    while (static_cast<unsigned>(w[q] >> 32) != epoch) {
      if (sleep_ns) __nanosleep(sleep_ns);
      w[q] = load_word(xs + j[q]);
    }
    use(q, static_cast<unsigned>(w[q]));
  }
}

// ---- analysis: levels, then rows placed by level ----

struct LevelArgs {
  const I* row_ptr;
  const I* col;
  int64_t rows;
  bool ascending;
  unsigned long long* xs;
  unsigned* ticket;
  unsigned ticket_base;
  unsigned tickets;
  unsigned epoch;
  I* level;
  unsigned* flags;  // [0]: highest level, [1]: 1 if an entry is in the wrong triangle
};

// Row order is topological here (lower: ascending), so block tickets in row
// order keep every wait on an earlier ticket; lanes of one warp may wait on
// each other (sm_70+ independent thread scheduling lets the awaited one go).
__global__ void __launch_bounds__(256) level_kernel(LevelArgs s) {
  __shared__ unsigned block_ticket;
  for (;;) {
    if (threadIdx.x == 0) block_ticket = atomicAdd(s.ticket, 1u) - s.ticket_base;
    __syncthreads();
    const unsigned t = block_ticket;
    __syncthreads();
    if (t >= s.tickets) return;
    const int64_t pos = int64_t{t} * blockDim.x + threadIdx.x;
    if (pos >= s.rows) continue;
    const I k = static_cast<I>(s.ascending ? pos : s.rows - 1 - pos);
    I rb = s.row_ptr[k], re = s.row_ptr[k + 1];
    if (s.ascending) {
      if (re > rb && s.col[re - 1] == k) --re;
    } else {
      if (re > rb && s.col[rb] == k) ++rb;
    }
    // Columns are sorted: the far end says whether the row fits the triangle.
    unsigned lv = 0;
    if (re > rb && (s.ascending ? s.col[re - 1] > k : s.col[rb] < k)) {
      atomicOr(s.flags + 1, 1u);
      rb = re;  // publish level 0 so that no waiter hangs
    }
    for (I g = rb; g < re; g += kGroup) {
      I j[kGroup];
      const int n = re - g < kGroup ? re - g : kGroup;
#pragma unroll
      for (int q = 0; q < kGroup; ++q)
        if (q < n) j[q] = s.col[g + q];
      await_group(s.xs, j, n, s.epoch, 0, [&](int, unsigned l) { lv = max(lv, l + 1); });
    }
    s.level[k] = static_cast<I>(lv);
    atomicMax(s.flags, lv);
    store_word(s.xs + k, word(s.epoch, lv));
  }
}

__global__ void count_kernel(const I* level, int64_t rows, unsigned* count) {
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < rows;
       k += int64_t{gridDim.x} * blockDim.x)
    atomicAdd(count + level[k], 1u);
}

__global__ void pad_kernel(unsigned* count, int64_t levels) {
  for (int64_t l = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; l <= levels;
       l += int64_t{gridDim.x} * blockDim.x)
    count[l] = l < levels ? (count[l] + 31u) & ~31u : 0u;
}

__global__ void place_kernel(const I* row_ptr, const I* col, const I* level, int64_t rows,
                             bool ascending, const unsigned* offset, unsigned* fill,
                             RowRec* recs) {
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < rows;
       k += int64_t{gridDim.x} * blockDim.x) {
    const I l = level[k];
    const unsigned p = offset[l] + atomicAdd(fill + l, 1u);
    I rb = row_ptr[k], re = row_ptr[k + 1], diag = -1;
    if (ascending) {
      if (re > rb && col[re - 1] == k) diag = --re;
    } else {
      if (re > rb && col[rb] == k) diag = rb++;
    }
    recs[p] = {static_cast<I>(k), rb, re, diag};
  }
}

// ---- solve ----

struct SolveArgs {
  const RowRec* recs;
  PatternView a;
  Cols b, x;
  unsigned long long* xs;
  unsigned* ticket;
  unsigned ticket_base;
  unsigned tickets;
  unsigned epoch;
  unsigned sleep_ns;
  bool unit;
};

// Sequential sum from +0 of the terms [b, e) (at most one 32-term chunk).
__device__ __forceinline__ float chunk_sum(const SolveArgs& s, int64_t b, int64_t e) {
  float acc = 0.0f;
  for (int64_t g = b; g < e; g += kGroup) {
    I j[kGroup];
    float v[kGroup];
    const int n = static_cast<int>(e - g < kGroup ? e - g : kGroup);
#pragma unroll
    for (int q = 0; q < kGroup; ++q)
      if (q < n) {
        j[q] = s.a.col[g + q];
        v[q] = s.a.value(g + q);
      }
    await_group(s.xs, j, n, s.epoch, s.sleep_ns,
                [&](int q, unsigned bits) { acc = xadd(acc, xmul(v[q], __uint_as_float(bits))); });
  }
  return acc;
}

__device__ __forceinline__ void finish_row(const SolveArgs& s, I k, I diag, float sum) {
  const float t = xsub(s.b.at(k, 0), sum);  // only row k reads b[k] and writes x[k]
  const float dv = s.unit ? 1.0f : (diag >= 0 ? s.a.value(diag) : 0.0f);
  const float xk = s.unit ? t : xdiv(t, dv);
  s.x.at(k, 0) = xk;
  store_word(s.xs + k, word(s.epoch, __float_as_uint(xk)));
}

__global__ void __launch_bounds__(256) solve_kernel(SolveArgs s) {
  const int lane = threadIdx.x & 31;
  for (;;) {
    unsigned t = 0;
    if (lane == 0) t = atomicAdd(s.ticket, 1u) - s.ticket_base;
    t = __shfl_sync(0xffffffffu, t, 0);
    if (t >= s.tickets) return;
    const RowRec r = s.recs[int64_t{t} * 32 + lane];
    const int64_t m = r.k >= 0 ? int64_t{r.re} - r.rb : -1;
    // Rows of more than one chunk: the warp takes them one by one, lane c
    // summing chunk c, the chunk sums combined by the tree (3.7).
    for (unsigned many = __ballot_sync(0xffffffffu, m > 32); many; many &= many - 1) {
      const int src = __ffs(many) - 1;
      const I k = __shfl_sync(0xffffffffu, r.k, src);
      const I rb = __shfl_sync(0xffffffffu, r.rb, src);
      const I re = __shfl_sync(0xffffffffu, r.re, src);
      const float sum = warp_tree_of<SumOp>(
          [&](int64_t c) {
            const int64_t b = rb + c * 32;
            return chunk_sum(s, b, b + 32 < re ? b + 32 : re);
          },
          (int64_t{re} - rb + 31) / 32);
      if (lane == src) finish_row(s, k, r.diag, sum);
    }
    if (m >= 0 && m <= 32) finish_row(s, r.k, r.diag, chunk_sum(s, r.rb, r.re));
  }
}

// Knobs for measurements (bench/gpu/cusparse_compare.cu sweeps them).
int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// A new epoch for a pass; on wrap-around no stale word may carry it.
void next_epoch(Device* d, SyncFreeState* st) {
  if (++st->epoch == 0) {
    gpuMemsetAsync(st->xs, 0, sizeof(unsigned long long) * st->len, d->stream);
    st->epoch = 1;
  }
}

}  // namespace

xhal_status_t syncfree_init(Device* d, int64_t n, SyncFreeState* st,
                            std::vector<void*>* allocations) {
  void* f = nullptr;
  const size_t bytes = sizeof(unsigned long long) * (n + 1);
  gpuError_t e = gpuMalloc(&f, bytes);
  if (e != gpuSuccess) return runtime_error(e, "allocating solve state");
  allocations->push_back(f);
  e = gpuMemsetAsync(f, 0, bytes, d->stream);
  if (e != gpuSuccess) return runtime_error(e, "clearing solve state");
  st->xs = static_cast<unsigned long long*>(f);
  st->len = n;
  st->ticket = reinterpret_cast<unsigned*>(st->xs + n);
  cudaDeviceGetAttribute(&st->sms, cudaDevAttrMultiProcessorCount, d->ordinal);
  return XHAL_OK;
}

xhal_status_t syncfree_analyse(Device* d, SyncFreeState* st, const I* row_ptr, const I* col,
                               int64_t rows, bool ascending, SyncFreeSchedule* out,
                               std::vector<void*>* allocations) {
  if (rows == 0) return XHAL_OK;
  // level[rows], flags[2], count/offset/fill[rows + 1] each.
  const size_t words = rows + 2 + 3 * (rows + 1);
  void* tmp = nullptr;
  gpuError_t e = gpuMalloc(&tmp, words * sizeof(unsigned));
  if (e != gpuSuccess) return runtime_error(e, "allocating solve analysis memory");
  struct Free {
    void* p;
    ~Free() { gpuFree(p); }
  } guard{tmp};
  I* level = static_cast<I*>(tmp);
  unsigned* flags = reinterpret_cast<unsigned*>(level + rows);
  unsigned* count = flags + 2;
  unsigned* offset = count + rows + 1;
  unsigned* fill = offset + rows + 1;
  gpuMemsetAsync(flags, 0, sizeof(unsigned) * (2 + 3 * (rows + 1)), d->stream);

  next_epoch(d, st);
  const int block = 256;
  const unsigned tickets = static_cast<unsigned>((rows + block - 1) / block);
  const unsigned grid =
      static_cast<unsigned>(std::min<int64_t>(tickets, int64_t{8} * st->sms));
  LevelArgs la{row_ptr, col, rows, ascending, st->xs, st->ticket, st->ticket_base, tickets,
               st->epoch, level, flags};
  level_kernel<<<grid, block, 0, d->stream>>>(la);
  st->ticket_base += tickets + grid;
  // The device's stream is non-blocking: a plain cudaMemcpy would not wait
  // for it.
  auto read_back = [&](void* host, const void* dev, size_t bytes) {
    gpuError_t err = gpuMemcpyAsync(host, dev, bytes, gpuMemcpyDeviceToHost, d->stream);
    if (err == gpuSuccess) err = gpuStreamSynchronize(d->stream);
    d->d2h_transfers++;
    d->d2h_bytes += bytes;
    return err;
  };
  unsigned host_flags[2] = {0, 0};
  e = read_back(host_flags, flags, sizeof host_flags);
  if (e != gpuSuccess) return runtime_error(e, "computing solve levels");
  if (host_flags[1]) return XHAL_OK;  // not this triangle: no schedule
  const int64_t levels = int64_t{host_flags[0]} + 1;

  count_kernel<<<grid_for(rows, 256), 256, 0, d->stream>>>(level, rows, count);
  pad_kernel<<<grid_for(levels + 1, 256), 256, 0, d->stream>>>(count, levels);
  size_t scan_bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, count, offset, levels + 1, d->stream);
  void* scan_tmp = nullptr;
  e = gpuMalloc(&scan_tmp, scan_bytes ? scan_bytes : 1);
  if (e != gpuSuccess) return runtime_error(e, "allocating solve analysis memory");
  Free scan_guard{scan_tmp};
  cub::DeviceScan::ExclusiveSum(scan_tmp, scan_bytes, count, offset, levels + 1, d->stream);
  unsigned positions = 0;
  e = read_back(&positions, offset + levels, sizeof positions);
  if (e != gpuSuccess) return runtime_error(e, "ordering solve levels");

  void* recs = nullptr;
  e = gpuMalloc(&recs, sizeof(RowRec) * positions);
  if (e != gpuSuccess) return runtime_error(e, "allocating the solve schedule");
  allocations->push_back(recs);
  gpuMemsetAsync(recs, 0xff, sizeof(RowRec) * positions, d->stream);  // k = -1: padding
  place_kernel<<<grid_for(rows, 256), 256, 0, d->stream>>>(
      row_ptr, col, level, rows, ascending, offset, fill, static_cast<RowRec*>(recs));
  e = gpuStreamSynchronize(d->stream);  // before the guards free the scratch
  if (e != gpuSuccess) return runtime_error(e, "placing solve rows");
  d->launches += 5;
  out->built = true;
  out->recs = static_cast<RowRec*>(recs);
  out->tickets = positions / 32;
  out->levels = levels;
  return XHAL_OK;
}

xhal_status_t syncfree_solve(Device* d, SyncFreeState* st, const SyncFreeSchedule& sc,
                             const PatternView& a, Cols b, Cols x, bool unit, int* launches) {
  const int block = std::clamp(env_int("XHAL_CUDA_SOLVE_BLOCK", 128), 32, 256) & ~31;
  const int per_sm = std::max(1, env_int("XHAL_CUDA_SOLVE_BLOCKS_PER_SM", 2));
  const unsigned sleep_ns =
      static_cast<unsigned>(std::max(0, env_int("XHAL_CUDA_SOLVE_SLEEP", 0)));
  const unsigned warps_per_block = static_cast<unsigned>(block / 32);
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(
      (sc.tickets + warps_per_block - 1) / warps_per_block, int64_t{per_sm} * st->sms));
  if (sc.tickets == 0) return XHAL_OK;
  for (int64_t c = 0; c < x.k; ++c) {
    next_epoch(d, st);
    Cols bc = b, xc = x;
    bc.p += c * b.cs;
    xc.p += c * x.cs;
    bc.k = xc.k = 1;
    SolveArgs s{sc.recs, a, bc, xc, st->xs, st->ticket, st->ticket_base, sc.tickets,
                st->epoch, sleep_ns, unit};
    solve_kernel<<<grid, block, 0, d->stream>>>(s);
    st->ticket_base += sc.tickets + grid * warps_per_block;  // one ticket past the end per warp
    ++*launches;
  }
  return XHAL_OK;
}

}  // namespace xhal::gpu
#endif
