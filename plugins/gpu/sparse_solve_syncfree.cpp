// The sync-free triangular solve on CUDA (docs/gpu.md, "Triangular solve
// (CUDA)"): one launch per right-hand side over the schedule built at
// creation (sparse_solve_syncfree_schedule.cpp). A row of more than 32
// off-diagonal entries gets a warp of its own (31 padding positions), whose
// lane c sums chunk c. Every sum is the segsum of docs/semantics.md 3.7 in
// its fixed order: only the scheduling differs from the level batches of
// sparse_solve_levels.cpp. The launch shape and polling form come from the
// device options (solve.*, docs/device-options.md); none changes a bit.
#include "syncfree_device.h"

#if !defined(XHAL_GPU_HIP)
#include <algorithm>

namespace xhal::gpu {
namespace {

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

__device__ __forceinline__ void finish_row(const SolveArgs& s, I k, float bk, float dv, float sum);

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
__device__ __forceinline__ void finish_row(const SolveArgs& s, I k, float bk, float dv, float sum) {
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
          for (int64_t h = i; h & 1; h >>= 1, --top)
            stack[top - 2] = xadd(stack[top - 2], stack[top - 1]);
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

}  // namespace

xhal_status_t syncfree_solve(Device* d, SyncFreeState* st, const SyncFreeSchedule& sc,
                             const PatternView& a, Cols b, Cols x, bool unit, int* launches) {
  // "auto" picks per schedule, from the H200 sweeps (docs/performance.md):
  // with long rows, 32-term rounds and four blocks of warps per SM;
  // otherwise 16-term rounds and one block per SM; rows of one dependency
  // are fastest with each lane polling its single word alone.
  const DeviceOptions& o = d->options;
  const int block = o.solve_block_threads;
  const int per_sm = o.solve_blocks_per_sm ? o.solve_blocks_per_sm : (sc.has_long ? 4 : 1);
  const unsigned sleep_ns = o.solve_sleep_ns;
  const bool converged =
      o.solve_poll == SolvePoll::kAuto ? !sc.chains : o.solve_poll == SolvePoll::kConverged;
  const bool wide = o.solve_poll_terms ? o.solve_poll_terms == 32 : sc.has_long;
  const unsigned warps_per_block = static_cast<unsigned>(block / 32);
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(
      (sc.max_warps + warps_per_block - 1) / warps_per_block, int64_t{per_sm} * st->sms));
  for (int64_t c = 0; c < x.k; ++c) {
    next_epoch(d, st);
    Cols bc = b, xc = x;
    bc.p += c * b.cs;
    xc.p += c * x.cs;
    bc.k = xc.k = 1;
    SolveArgs s{sc.recs,   sc.warps, a,   bc, xc, st->xs, {st->ticket, grid * warps_per_block},
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
