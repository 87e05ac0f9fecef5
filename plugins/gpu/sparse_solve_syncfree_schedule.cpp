// The sync-free solve's schedule, built on the device in csr_create with no
// transfer back to the host (xhal_spgemm creates its result inside an op):
// a sync-free pass in row order computes each row's level the same way the
// solve waits, then per-level counts, one thread laying out the levels (a
// long row starts at a multiple of 32) and a scatter that places the rows.
// Placement inside a level uses atomics and may differ between runs;
// results do not (only which warp computes a row changes, never how).
#include "syncfree_device.h"
#include "trace_laps.h"

#if !defined(XHAL_GPU_HIP)
#include <algorithm>

namespace xhal::gpu {
namespace {

// P: the matrix's entry-offset type.
template <class P>
struct LevelArgs {
  const P* row_ptr;
  const I* col;
  int64_t rows;
  bool ascending;
  unsigned long long* xs;
  Tickets tickets;
  unsigned epoch;
  I* level;
  unsigned* highest;
};

// Row order is topological here (lower: ascending), so warp tickets in row
// order keep every wait on an earlier position.
template <class P>
struct LevelTerms {
  using Value = float;  // unused: the words carry levels
  const LevelArgs<P>* s;
  I k;
  unsigned lv = 0;
  __device__ I col(int64_t e) const { return s->col[e]; }
  __device__ float value(int64_t) const { return 0.0f; }
  __device__ void add(float, unsigned l) { lv = max(lv, l + 1); }
  __device__ void done() const {
    if (k < 0) return;
    s->level[k] = static_cast<I>(lv);
    atomicMax(s->highest, lv);
    store_word(s->xs + k, word(s->epoch, lv));
  }
};

// Row k's off-diagonal range [*rb, *re) in the triangle's direction.
template <class P>
__device__ __forceinline__ void off_diagonal(const LevelArgs<P>& s, I k, P* rb, P* re) {
  *rb = s.row_ptr[k];
  *re = s.row_ptr[k + 1];
  if (s.ascending) {
    if (*re > *rb && s.col[*re - 1] == k) --*re;
  } else {
    if (*re > *rb && s.col[*rb] == k) ++*rb;
  }
  // The host checked the triangle; a row outside it would wait forever.
  if (*re > *rb && (s.ascending ? s.col[*re - 1] > k : s.col[*rb] < k)) *rb = *re;
}

// Lone: every row has at most one off-diagonal entry (chains), and each
// lane spins on its one word alone, as the solve does for such patterns
// (docs/gpu.md); otherwise the warp polls together.
template <class P, bool Lone>
__global__ void __launch_bounds__(256) level_kernel(LevelArgs<P> s) {
  const int lane = threadIdx.x & 31;
  for (;;) {
    unsigned t = 0;
    if (lane == 0) t = s.tickets.take();
    t = __shfl_sync(0xffffffffu, t, 0);
    if (int64_t{t} * 32 >= s.rows) {
      if (lane == 0) s.tickets.leave();
      return;
    }
    const int64_t pos = int64_t{t} * 32 + lane;
    I k = -1;
    P rb = 0, re = 0;
    if (pos < s.rows) {
      k = static_cast<I>(s.ascending ? pos : s.rows - 1 - pos);
      off_diagonal(s, k, &rb, &re);
    }
    LevelTerms<P> terms{&s, k};
    if constexpr (Lone) {
      if (re > rb) {
        const I j = s.col[rb];
        unsigned long long w = load_word(s.xs + j);
        while (!OneWord::ready(w, s.epoch)) w = load_word(s.xs + j);
        terms.add(0.0f, OneWord::payload(w));
      }
      terms.done();
      __syncwarp();
    } else {
      converged_walk(s.xs, s.epoch, 0, rb, re, terms);
    }
  }
}

template <class P>
__device__ __forceinline__ bool is_long(const P* row_ptr, const I* col, int64_t k, bool ascending) {
  const P rb = row_ptr[k], re = row_ptr[k + 1];
  const bool diag = re > rb && col[ascending ? re - 1 : rb] == k;
  return re - rb - (diag ? 1 : 0) > 32;
}

// Lanes of one slot add through their lowest lane (neighbouring rows often
// share a level, and a million atomics on a few hundred counters queue).
// Returns the lane's place among the slot's lanes, from `base` on.
__device__ __forceinline__ unsigned add_by_slot(unsigned* counter, unsigned long long slot) {
  const unsigned peers = __match_any_sync(__activemask(), slot);
  const int lane = threadIdx.x & 31;
  const int leader = __ffs(peers) - 1;
  unsigned base = 0;
  if (lane == leader) base = atomicAdd(counter, static_cast<unsigned>(__popc(peers)));
  base = __shfl_sync(peers, base, leader);
  return base + __popc(peers & ((1u << lane) - 1u));
}

// counts[2l]: rows of level l of at most 32 off-diagonal entries, [2l + 1]:
// longer rows.
template <class P>
__global__ void count_kernel(const P* row_ptr, const I* col, const I* level, int64_t rows,
                             bool ascending, unsigned* counts) {
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < rows;
       k += int64_t{gridDim.x} * blockDim.x) {
    const int64_t slot = 2 * int64_t{level[k]} + is_long(row_ptr, col, k, ascending);
    add_by_slot(counts + slot, static_cast<unsigned long long>(slot));
  }
}

// Level l: its short rows, then (from a multiple of 32) 32 positions per
// long row. One thread: the alignment depends on everything before.
__global__ void layout_kernel(const unsigned* highest, unsigned* counts, unsigned* out_tickets) {
  unsigned o = 0;
  for (unsigned l = 0; l <= *highest; ++l) {
    const unsigned nshort = counts[2 * l], nlong = counts[2 * l + 1];
    counts[2 * l] = o;
    o += nshort;
    if (nlong) o = (o + 31u) & ~31u;
    counts[2 * l + 1] = o;
    o += 32u * nlong;
  }
  *out_tickets = (o + 31u) / 32u;
}

template <class P>
__global__ void place_kernel(const P* row_ptr, const I* col, const I* level, int64_t rows,
                             bool ascending, const unsigned* offset, unsigned* fill,
                             RowRecT<P>* recs) {
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < rows;
       k += int64_t{gridDim.x} * blockDim.x) {
    const int64_t slot = 2 * int64_t{level[k]} + is_long(row_ptr, col, k, ascending);
    const unsigned n = add_by_slot(fill + slot, static_cast<unsigned long long>(slot));
    const unsigned p = offset[slot] + ((slot & 1) ? 32u * n : n);
    P rb = row_ptr[k], re = row_ptr[k + 1], diag = -1;
    if (ascending) {
      if (re > rb && col[re - 1] == k) diag = --re;
    } else {
      if (re > rb && col[rb] == k) diag = rb++;
    }
    recs[p] = {static_cast<I>(k), rb, re, diag};
  }
}

}  // namespace

xhal_status_t syncfree_init(Device* d, int64_t n, int words, SyncFreeState* st,
                            std::vector<void*>* allocations) {
  void* f = nullptr;
  const int64_t len = n * words;
  const size_t bytes = sizeof(unsigned long long) * (len + 1);  // + the two ticket counters
  gpuError_t e = gpuMalloc(&f, bytes);
  if (e != gpuSuccess) return runtime_error(e, "allocating solve state");
  allocations->push_back(f);
  e = gpuMemsetAsync(f, 0, bytes, d->stream);
  if (e != gpuSuccess) return runtime_error(e, "clearing solve state");
  st->xs = static_cast<unsigned long long*>(f);
  st->len = len;
  st->ticket = reinterpret_cast<unsigned*>(st->xs + len);
  cudaDeviceGetAttribute(&st->sms, cudaDevAttrMultiProcessorCount, d->ordinal);
  return XHAL_OK;
}

template <class P>
xhal_status_t syncfree_analyse(Device* d, SyncFreeState* st, const P* row_ptr, const I* col,
                               int64_t rows, bool ascending, int64_t long_rows, int64_t long_terms,
                               int64_t entries, int64_t max_terms, SyncFreeSchedule* out,
                               std::vector<void*>* allocations) {
  if (rows == 0) return XHAL_OK;
  TraceLaps trace(d,
                  ascending ? "sync-free analysis (ascending)" : "sync-free analysis (descending)");
  // level[rows], highest, counts[2 rows], fill[2 rows] (levels <= rows).
  const size_t words = rows + 1 + 4 * static_cast<size_t>(rows);
  void* tmp = nullptr;
  gpuError_t e = gpuMalloc(&tmp, words * sizeof(unsigned));
  if (e != gpuSuccess) return runtime_error(e, "allocating solve analysis memory");
  I* level = static_cast<I*>(tmp);
  unsigned* highest = reinterpret_cast<unsigned*>(level + rows);
  unsigned* counts = highest + 1;
  unsigned* fill = counts + 2 * rows;
  gpuMemsetAsync(highest, 0, sizeof(unsigned) * (1 + 4 * rows), d->stream);

  // Short rows take one position, long ones 32 plus at most 31 of padding.
  const int64_t bound = (rows - long_rows) + 63 * long_rows + 32;
  void* recs = nullptr;
  e = gpuMalloc(&recs, sizeof(RowRecT<P>) * bound + sizeof(unsigned));
  if (e != gpuSuccess) {
    gpuFree(tmp);
    return runtime_error(e, "allocating the solve schedule");
  }
  allocations->push_back(recs);
  unsigned* warps = reinterpret_cast<unsigned*>(static_cast<RowRecT<P>*>(recs) + bound);
  gpuMemsetAsync(recs, 0xff, sizeof(RowRecT<P>) * bound, d->stream);  // k = -1: padding
  trace.lap("allocations and clears");

  // The solve's blocks an SM, from the H200 sweep of 2026-12-04
  // (docs/performance.md, "Solve sweep"): where long rows hold 1-25% of the
  // entries, two beat four by 7-11% (fewer warps polling on the chains);
  // where they hold more, the long rows' loads want the fourth block's
  // warps; rows of <= 32 terms only: one block.
  const bool some_long = 100 * long_terms >= entries && 4 * long_terms < entries;
  const int per_sm = long_rows == 0 ? 1 : some_long ? 2 : 4;
  // The level pass takes rows in row order, not level order. Where rows
  // hold few entries (river networks, whose chains run basin by basin) the
  // rows in flight bound how many chains advance at once: four blocks an SM
  // ran 2.4x faster than one there; elsewhere the solve's shape was best
  // (H200, 2026-12-04, docs/performance.md "CSR creation").
  const int level_per_sm = entries < 4 * rows ? 4 : per_sm;
  next_epoch(d, st);
  const int block = 128;
  const int64_t blocks = (rows + block - 1) / block;
  const unsigned grid =
      static_cast<unsigned>(std::min<int64_t>(blocks, int64_t{level_per_sm} * st->sms));
  LevelArgs<P> la{row_ptr,   col,   rows,   ascending, st->xs, {st->ticket, grid * (block / 32)},
                  st->epoch, level, highest};
  if (max_terms <= 1) level_kernel<P, true><<<grid, block, 0, d->stream>>>(la);
  else level_kernel<P, false><<<grid, block, 0, d->stream>>>(la);
  trace.lap("levels (sync-free pass)");
  count_kernel<<<grid_for(rows, 256), 256, 0, d->stream>>>(row_ptr, col, level, rows, ascending,
                                                           counts);
  trace.lap("counts");
  layout_kernel<<<1, 1, 0, d->stream>>>(highest, counts, warps);
  trace.lap("layout (one thread)");
  place_kernel<<<grid_for(rows, 256), 256, 0, d->stream>>>(
      row_ptr, col, level, rows, ascending, counts, fill, static_cast<RowRecT<P>*>(recs));
  d->launches += 4;
  e = gpuStreamSynchronize(d->stream);  // before the scratch goes
  trace.lap("placement");
  gpuFree(tmp);
  trace.lap("free");
  if (e != gpuSuccess) return runtime_error(e, "building the solve schedule");
  out->built = true;
  out->recs = recs;
  out->warps = warps;
  out->max_warps = static_cast<unsigned>((bound + 31) / 32);
  out->has_long = long_rows > 0;
  out->blocks_per_sm = per_sm;
  out->chains = max_terms <= 1;
  return XHAL_OK;
}
template xhal_status_t syncfree_analyse<I>(Device*, SyncFreeState*, const I*, const I*, int64_t,
                                           bool, int64_t, int64_t, int64_t, int64_t,
                                           SyncFreeSchedule*, std::vector<void*>*);
template xhal_status_t syncfree_analyse<int64_t>(Device*, SyncFreeState*, const int64_t*, const I*,
                                                 int64_t, bool, int64_t, int64_t, int64_t, int64_t,
                                                 SyncFreeSchedule*, std::vector<void*>*);

}  // namespace xhal::gpu
#endif
