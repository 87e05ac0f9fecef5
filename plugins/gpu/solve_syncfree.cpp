// Sync-free triangular solve on CUDA (docs/gpu.md "Triangular solve").
//
// Every solved x[k] is published as one 64-bit word xs[k] = epoch << 32 |
// bits(x[k]); a reader learns "ready" and the value from a single load, so
// no fence separates them. Warps take 32 schedule positions at a time from
// a ticket counter; positions are in level order, so a warp only waits on
// earlier positions, held by running or finished warps: the waits end. Lanes
// of one warp may wait on each other where a warp straddles two levels
// (sm_70+ independent thread scheduling lets the awaited lane go on). A row
// of more than 32 off-diagonal entries gets a warp of its own (31 padding
// positions), whose lane c sums chunk c. Every sum is the segsum of
// docs/semantics.md 3.7 in its fixed order: only the scheduling differs from
// the level-batch kernels in ops_sparse.cpp.
//
// The schedule is built on the device at creation, with no transfer back to
// the host (xhal_spgemm creates its result inside an op): a sync-free pass
// in row order computes each row's level the same way, then per-level
// counts, one thread laying out the levels, and a scatter. Placement inside
// a level uses atomics and may differ between runs; results do not.
// The last warp (block) of a launch to finish resets the ticket counters.
#include "solve_syncfree.h"

#if !defined(XHAL_GPU_HIP)
#include <algorithm>
#include <cstdlib>
#include <cstring>


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

// Dependency loads a lane keeps in flight together.
constexpr int kGroup = 16;

// One polling round of a lane over terms [q, n) of its current group of G:
// asks for every word not yet seen, then consumes the ready ones in order.
template <int G, class P>
__device__ __forceinline__ bool poll_round(const unsigned long long* xs, unsigned epoch,
                                           const I (&j)[G], const float (&v)[G], int& q, int n,
                                           P& p) {
  unsigned long long w[G];
#pragma unroll
  for (int i = 0; i < G; ++i)
    if (i >= q && i < n) w[i] = load_word(xs + j[i]);
  bool progressed = false;
#pragma unroll
  for (int i = 0; i < G; ++i) {
    if (i < q || i >= n) continue;
    if (static_cast<unsigned>(w[i] >> 32) != epoch) break;
    p.add(v[i], static_cast<unsigned>(w[i]));
    q = i + 1;
    progressed = true;
  }
  return progressed;
}

// The converged form: every lane of the warp walks its own range [b, e) of
// terms in order, but the warp polls together: each round every lane issues
// the loads of its group's words not yet seen, then consumes the ready ones
// in order. Lanes never spin apart, so a lane whose row is ready is never
// stuck behind another lane's wait. A lane calls p.done() (which publishes
// its row) in the round its range is used up, so a lane may wait on a row
// of its own warp. All 32 lanes must call it.
// P supplies col(e), value(e), add(value, payload) in term order, done().
template <class P>
__device__ __forceinline__ void converged_walk(const unsigned long long* xs, unsigned epoch,
                                               unsigned sleep_ns, int64_t b, int64_t e, P& p) {
  I j[kGroup], jn[kGroup];
  float v[kGroup], vn[kGroup];
  auto load = [&](int64_t g, I* jj, float* vv) {
#pragma unroll
    for (int i = 0; i < kGroup; ++i)
      if (g + i < e) {
        jj[i] = p.col(g + i);
        vv[i] = p.value(g + i);
      }
  };
  int64_t g = b;
  int q = 0;
  int n = static_cast<int>(e - g < kGroup ? e - g : kGroup);
  if (g < e) load(g, j, v);
  if (g + kGroup < e) load(g + kGroup, jn, vn);
  bool finished = false;
  for (;;) {
    const bool busy = g < e;
    if (!busy && !finished) {
      p.done();
      finished = true;
    }
    if (!__any_sync(0xffffffffu, busy)) return;
    bool progressed = false;
    if (busy) {
      progressed = poll_round<kGroup>(xs, epoch, j, v, q, n, p);
      if (q == n) {
        g += kGroup;
        q = 0;
#pragma unroll
        for (int i = 0; i < kGroup; ++i) {
          j[i] = jn[i];
          v[i] = vn[i];
        }
        n = static_cast<int>(e - g < kGroup ? e - g : kGroup);
        if (g + kGroup < e) load(g + kGroup, jn, vn);
      }
    }
    if (sleep_ns && !__any_sync(0xffffffffu, progressed)) __nanosleep(sleep_ns);
  }
}

// converged_walk for ranges of at most 32 terms: all columns and values
// load at once and every word is asked for in the first round. On the H200
// this paid for patterns with long rows (a transposed random matrix) and
// cost for patterns of a few terms per row, so the kernel is chosen per
// schedule (docs/performance.md).
template <class P>
__device__ __forceinline__ void converged_walk32(const unsigned long long* xs, unsigned epoch,
                                                 unsigned sleep_ns, int64_t b, int64_t e, P& p) {
  I j[32];
  float v[32];
  const int n = static_cast<int>(e - b);
#pragma unroll
  for (int i = 0; i < 32; ++i)
    if (i < n) {
      j[i] = p.col(b + i);
      v[i] = p.value(b + i);
    }
  int q = 0;
  bool finished = false;
  for (;;) {
    const bool busy = q < n;
    if (!busy && !finished) {
      p.done();
      finished = true;
    }
    if (!__any_sync(0xffffffffu, busy)) return;
    const bool progressed = busy && poll_round<32>(xs, epoch, j, v, q, n, p);
    if (sleep_ns && !__any_sync(0xffffffffu, progressed)) __nanosleep(sleep_ns);
  }
}

// ---- analysis: levels, then rows placed by level ----

// Counters of a launch: next ticket, takers that have left. Both are zero
// before a launch; the last taker to leave zeroes them for the next one.
struct Tickets {
  unsigned* next;
  unsigned takers;  // blocks or warps of the launch
  __device__ unsigned take() const { return atomicAdd(next, 1u); }
  __device__ void leave() const {
    if (atomicAdd(next + 1, 1u) == takers - 1) {
      next[0] = 0;
      next[1] = 0;
    }
  }
};

struct LevelArgs {
  const I* row_ptr;
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
struct LevelTerms {
  const LevelArgs* s;
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

__global__ void __launch_bounds__(256) level_kernel(LevelArgs s) {
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
    I k = -1, rb = 0, re = 0;
    if (pos < s.rows) {
      k = static_cast<I>(s.ascending ? pos : s.rows - 1 - pos);
      rb = s.row_ptr[k];
      re = s.row_ptr[k + 1];
      if (s.ascending) {
        if (re > rb && s.col[re - 1] == k) --re;
      } else {
        if (re > rb && s.col[rb] == k) ++rb;
      }
      // The host checked the triangle; a row outside it would wait forever.
      if (re > rb && (s.ascending ? s.col[re - 1] > k : s.col[rb] < k)) rb = re;
    }
    LevelTerms terms{&s, k};
    converged_walk(s.xs, s.epoch, 0, rb, re, terms);
  }
}

__device__ __forceinline__ bool is_long(const I* row_ptr, const I* col, int64_t k, bool ascending) {
  const I rb = row_ptr[k], re = row_ptr[k + 1];
  const bool diag = re > rb && col[ascending ? re - 1 : rb] == k;
  return re - rb - (diag ? 1 : 0) > 32;
}

// counts[2l]: rows of level l of at most 32 off-diagonal entries, [2l + 1]:
// longer rows.
__global__ void count_kernel(const I* row_ptr, const I* col, const I* level, int64_t rows,
                             bool ascending, unsigned* counts) {
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < rows;
       k += int64_t{gridDim.x} * blockDim.x)
    atomicAdd(counts + 2 * int64_t{level[k]} + is_long(row_ptr, col, k, ascending), 1u);
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

__global__ void place_kernel(const I* row_ptr, const I* col, const I* level, int64_t rows,
                             bool ascending, const unsigned* offset, unsigned* fill,
                             RowRec* recs) {
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < rows;
       k += int64_t{gridDim.x} * blockDim.x) {
    const int64_t slot = 2 * int64_t{level[k]} + is_long(row_ptr, col, k, ascending);
    const unsigned n = atomicAdd(fill + slot, 1u);
    const unsigned p = offset[slot] + ((slot & 1) ? 32u * n : n);
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
  const unsigned* positions;  // warps' worth of positions (written at creation)
  PatternView a;
  Cols b, x;
  unsigned long long* xs;
  Tickets tickets;
  unsigned epoch;
  unsigned sleep_ns;
  bool unit;
};

__device__ __forceinline__ void finish_row(const SolveArgs& s, I k, float bk, float dv,
                                           float sum);

// A lane's sequential sum from +0 of its terms; with k >= 0 it finishes row
// k as soon as the sum is complete.
struct SumTerms {
  const SolveArgs* s;
  I k;
  float bk, dv;
  float acc = 0.0f;
  __device__ I col(int64_t e) const { return s->a.col[e]; }
  __device__ float value(int64_t e) const { return s->a.value(e); }
  __device__ void add(float v, unsigned bits) { acc = xadd(acc, xmul(v, __uint_as_float(bits))); }
  __device__ void done() const {
    if (k >= 0) finish_row(*s, k, bk, dv, acc);
  }
};

// Converged walk of at most 32 terms per lane, in 16-term rounds or all 32
// at once (Wide).
template <bool Wide, class P>
__device__ __forceinline__ void walk(const SolveArgs& s, int64_t b, int64_t e, P& p) {
  if constexpr (Wide) converged_walk32(s.xs, s.epoch, s.sleep_ns, b, e, p);
  else converged_walk(s.xs, s.epoch, s.sleep_ns, b, e, p);
}

// Sequential sum from +0 of each lane's terms [b, e) (at most 32), the
// whole warp polling together.
template <bool Wide>
__device__ __forceinline__ float warp_walk_sum(const SolveArgs& s, int64_t b, int64_t e) {
  SumTerms t{&s, -1, 0.0f, 0.0f};
  walk<Wide>(s, b, e, t);
  return t.acc;
}

// Sequential sum from +0 of the terms [b, e) (at most one 32-term chunk).
// The next group's columns and values load while this group's words are
// awaited, so only the waits themselves sit on the critical path.
__device__ __forceinline__ float chunk_sum(const SolveArgs& s, int64_t b, int64_t e) {
  float acc = 0.0f;
  I j[kGroup], jn[kGroup];
  float v[kGroup], vn[kGroup];
  auto load = [&](int64_t g, I* jj, float* vv) {
#pragma unroll
    for (int q = 0; q < kGroup; ++q)
      if (g + q < e) {
        jj[q] = s.a.col[g + q];
        vv[q] = s.a.value(g + q);
      }
  };
  load(b, j, v);
  for (int64_t g = b; g < e; g += kGroup) {
    const int n = static_cast<int>(e - g < kGroup ? e - g : kGroup);
    unsigned long long w[kGroup];
#pragma unroll
    for (int q = 0; q < kGroup; ++q)
      if (q < n) w[q] = load_word(s.xs + j[q]);
    if (g + kGroup < e) load(g + kGroup, jn, vn);
#pragma unroll
    for (int q = 0; q < kGroup; ++q) {
      if (q >= n) break;
      while (static_cast<unsigned>(w[q] >> 32) != s.epoch) {
        if (s.sleep_ns) __nanosleep(s.sleep_ns);
        w[q] = load_word(s.xs + j[q]);
      }
      acc = xadd(acc, xmul(v[q], __uint_as_float(static_cast<unsigned>(w[q]))));
    }
#pragma unroll
    for (int q = 0; q < kGroup; ++q) {
      j[q] = jn[q];
      v[q] = vn[q];
    }
  }
  return acc;
}

// b[k] and the diagonal were loaded before the wait: only row k reads b[k]
// and writes x[k] (b may be x).
__device__ __forceinline__ void finish_row(const SolveArgs& s, I k, float bk, float dv,
                                           float sum) {
  const float t = xsub(bk, sum);
  const float xk = s.unit ? t : xdiv(t, dv);
  s.x.at(k, 0) = xk;
  store_word(s.xs + k, word(s.epoch, __float_as_uint(xk)));
}

template <bool Converged, bool Wide>
__global__ void __launch_bounds__(256) solve_kernel(SolveArgs s) {
  const int lane = threadIdx.x & 31;
  const unsigned warps = *s.positions;
  for (;;) {
    unsigned t = 0;
    if (lane == 0) t = s.tickets.take();
    t = __shfl_sync(0xffffffffu, t, 0);
    if (t >= warps) {
      if (lane == 0) s.tickets.leave();
      return;
    }
    const RowRec r = s.recs[int64_t{t} * 32 + lane];
    const int64_t m = r.k >= 0 ? int64_t{r.re} - r.rb : -1;
    float bk = 0.0f, dv = 1.0f;
    if (m >= 0) {
      bk = s.b.at(r.k, 0);
      if (!s.unit) dv = r.diag >= 0 ? s.a.value(r.diag) : 0.0f;
    }
    // Rows of more than one chunk: the warp takes them one by one, lane c
    // summing chunk c, the chunk sums combined by the tree (3.7).
    for (unsigned many = __ballot_sync(0xffffffffu, m > 32); many; many &= many - 1) {
      const int src = __ffs(many) - 1;
      const I k = __shfl_sync(0xffffffffu, r.k, src);
      const I rb = __shfl_sync(0xffffffffu, r.rb, src);
      const I re = __shfl_sync(0xffffffffu, r.re, src);
      const int64_t chunks = (int64_t{re} - rb + 31) / 32;
      float sum;
      if constexpr (Converged) {
        // Lane l sums chunks [l * per, (l + 1) * per) serially as subtrees
        // (serial_tree's stack), then the warp tree joins the lanes; chunks
        // past the end are empty sums, +0, the tree's padding.
        int64_t p2 = 1;
        while (p2 < chunks) p2 <<= 1;
        const int64_t per = p2 > 32 ? p2 / 32 : 1;
        float stack[34];
        int top = 0;
        for (int64_t i = 0; i < per; ++i) {
          const int64_t c = lane * per + i;
          const int64_t cb = c < chunks ? rb + c * 32 : re;
          stack[top++] = warp_walk_sum<Wide>(s, cb, cb + 32 < re ? cb + 32 : re);
          for (int64_t h = i; h & 1; h >>= 1, --top) stack[top - 2] = xadd(stack[top - 2], stack[top - 1]);
        }
        sum = warp_tree<SumOp>(stack[0]);
      } else {
        sum = warp_tree_of<SumOp>(
            [&](int64_t c) {
              const int64_t cb = rb + c * 32;
              return chunk_sum(s, cb, cb + 32 < re ? cb + 32 : re);
            },
            chunks);
      }
      if (lane == src) finish_row(s, k, bk, dv, sum);
    }
    const bool short_row = m >= 0 && m <= 32;
    if constexpr (Converged) {
      SumTerms t{&s, short_row ? r.k : -1, bk, dv};
      walk<Wide>(s, short_row ? r.rb : 0, short_row ? r.re : 0, t);
    } else if (short_row) {
      finish_row(s, r.k, bk, dv, chunk_sum(s, r.rb, r.re));
    }
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
  const size_t bytes = sizeof(unsigned long long) * (n + 1);  // + the two ticket counters
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
                               int64_t rows, bool ascending, int64_t long_rows,
                               int64_t max_terms, SyncFreeSchedule* out,
                               std::vector<void*>* allocations) {
  if (rows == 0) return XHAL_OK;
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
  e = gpuMalloc(&recs, sizeof(RowRec) * bound + sizeof(unsigned));
  if (e != gpuSuccess) {
    gpuFree(tmp);
    return runtime_error(e, "allocating the solve schedule");
  }
  allocations->push_back(recs);
  unsigned* warps = reinterpret_cast<unsigned*>(static_cast<RowRec*>(recs) + bound);
  gpuMemsetAsync(recs, 0xff, sizeof(RowRec) * bound, d->stream);  // k = -1: padding

  next_epoch(d, st);
  const int block = 128;
  const int64_t blocks = (rows + block - 1) / block;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(blocks, int64_t{4} * st->sms));
  LevelArgs la{row_ptr, col, rows, ascending, st->xs, {st->ticket, grid * (block / 32)},
               st->epoch, level, highest};
  level_kernel<<<grid, block, 0, d->stream>>>(la);
  count_kernel<<<grid_for(rows, 256), 256, 0, d->stream>>>(row_ptr, col, level, rows, ascending,
                                                           counts);
  layout_kernel<<<1, 1, 0, d->stream>>>(highest, counts, warps);
  place_kernel<<<grid_for(rows, 256), 256, 0, d->stream>>>(
      row_ptr, col, level, rows, ascending, counts, fill, static_cast<RowRec*>(recs));
  d->launches += 4;
  e = gpuStreamSynchronize(d->stream);  // before the scratch goes
  gpuFree(tmp);
  if (e != gpuSuccess) return runtime_error(e, "building the solve schedule");
  out->built = true;
  out->recs = static_cast<RowRec*>(recs);
  out->warps = warps;
  out->max_warps = static_cast<unsigned>((bound + 31) / 32);
  out->has_long = long_rows > 0;
  out->chains = max_terms <= 1;
  return XHAL_OK;
}

xhal_status_t syncfree_solve(Device* d, SyncFreeState* st, const SyncFreeSchedule& sc,
                             const PatternView& a, Cols b, Cols x, bool unit, int* launches) {
  const int block = std::clamp(env_int("XHAL_CUDA_SOLVE_BLOCK", 128), 32, 256) & ~31;
  // Defaults from the H200 sweeps (docs/performance.md): with long rows,
  // 32-term rounds and four blocks of warps per SM; otherwise 16-term rounds
  // and one block per SM; rows of one dependency are fastest with each lane
  // polling its single word alone.
  const int per_sm = std::max(1, env_int("XHAL_CUDA_SOLVE_BLOCKS_PER_SM", sc.has_long ? 4 : 1));
  const unsigned sleep_ns =
      static_cast<unsigned>(std::max(0, env_int("XHAL_CUDA_SOLVE_SLEEP", 0)));
  const char* poll = std::getenv("XHAL_CUDA_SOLVE_POLL");
  const bool converged = poll && *poll ? std::strcmp(poll, "lanes") != 0 : !sc.chains;
  const bool wide = env_int("XHAL_CUDA_SOLVE_WIDE", sc.has_long ? 1 : 0) != 0;
  const unsigned warps_per_block = static_cast<unsigned>(block / 32);
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(
      (sc.max_warps + warps_per_block - 1) / warps_per_block, int64_t{per_sm} * st->sms));
  for (int64_t c = 0; c < x.k; ++c) {
    next_epoch(d, st);
    Cols bc = b, xc = x;
    bc.p += c * b.cs;
    xc.p += c * x.cs;
    bc.k = xc.k = 1;
    SolveArgs s{sc.recs, sc.warps, a, bc, xc, st->xs, {st->ticket, grid * warps_per_block},
                st->epoch, sleep_ns, unit};
    if (!converged) solve_kernel<false, false><<<grid, block, 0, d->stream>>>(s);
    else if (wide) solve_kernel<true, true><<<grid, block, 0, d->stream>>>(s);
    else solve_kernel<true, false><<<grid, block, 0, d->stream>>>(s);
    ++*launches;
  }
  return XHAL_OK;
}

}  // namespace xhal::gpu
#endif
