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
#include <type_traits>
namespace xhal::gpu {
namespace {

// T: the matrix's value type. f32 values are published in one word, f64
// values in two (syncfree_device.h, OneWord / TwoWords).
template <class T>
using WordsOf = std::conditional_t<std::is_same_v<T, float>, OneWord, TwoWords>;
__device__ __forceinline__ float from_payload(unsigned bits, float) {
  return __uint_as_float(bits);
}
__device__ __forceinline__ double from_payload(unsigned long long bits, double) {
  return __longlong_as_double(static_cast<long long>(bits));
}
__device__ __forceinline__ unsigned to_payload(float x) { return __float_as_uint(x); }
__device__ __forceinline__ unsigned long long to_payload(double x) {
  return static_cast<unsigned long long>(__double_as_longlong(x));
}

// P: the matrix's entry-offset type.
template <class T, class P>
struct SolveArgs {
  const RowRecT<P>* recs;
  const unsigned* positions;  // warps' worth of positions (written at creation)
  PatternViewT<T, P> a;
  ColsT<T> b, x;
  unsigned long long* xs;
  Tickets tickets;
  unsigned epoch;
  unsigned sleep_ns;
  bool unit;
};

template <class T, class P>
__device__ __forceinline__ void finish_row(const SolveArgs<T, P>& s, I k, T bk, T dv, T sum);

// A lane's sequential sum from +0 of its terms; with k >= 0 it finishes row
// k as soon as the sum is complete.
template <class T, class P>
struct SumTerms {
  using Value = T;
  const SolveArgs<T, P>* s;
  I k;
  T bk, dv;
  T acc = T(0);
  __device__ I col(int64_t e) const { return s->a.col[e]; }
  __device__ T value(int64_t e) const { return s->a.value(e); }
  __device__ void add(T v, typename WordsOf<T>::Payload bits) {
    acc = xadd(acc, xmul(v, from_payload(bits, T())));
  }
  __device__ void done() const {
    if (k >= 0) finish_row(*s, k, bk, dv, acc);
  }
};

// Converged walk of at most 32 terms per lane, in 16-term rounds or all 32
// at once (Wide).
template <bool Wide, class T, class P, class Terms>
__device__ __forceinline__ void walk(const SolveArgs<T, P>& s, int64_t b, int64_t e, Terms& t) {
  if constexpr (Wide) converged_walk32<WordsOf<T>>(s.xs, s.epoch, s.sleep_ns, b, e, t);
  else converged_walk<WordsOf<T>>(s.xs, s.epoch, s.sleep_ns, b, e, t);
}

// Sequential sum from +0 of each lane's terms [b, e) (at most 32), the
// whole warp polling together.
template <bool Wide, class T, class P>
__device__ __forceinline__ T warp_walk_sum(const SolveArgs<T, P>& s, int64_t b, int64_t e) {
  SumTerms<T, P> t{&s, -1, T(0), T(0)};
  walk<Wide>(s, b, e, t);
  return t.acc;
}

// Sequential sum from +0 of the terms [b, e) (at most one 32-term chunk).
// The next group's columns and values load while this group's words are
// awaited, so only the waits themselves sit on the critical path.
template <class T, class P>
__device__ __forceinline__ T chunk_sum(const SolveArgs<T, P>& s, int64_t b, int64_t e) {
  using W = WordsOf<T>;
  T acc = T(0);
  I j[kGroup], jn[kGroup];
  T v[kGroup], vn[kGroup];
  auto load = [&](int64_t g, I* jj, T* vv) {
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
    typename W::Got w[kGroup];
#pragma unroll
    for (int q = 0; q < kGroup; ++q)
      if (q < n) w[q] = W::load(s.xs, j[q]);
    if (g + kGroup < e) load(g + kGroup, jn, vn);
#pragma unroll
    for (int q = 0; q < kGroup; ++q) {
      if (q >= n) break;
      while (!W::ready(w[q], s.epoch)) {
        if (s.sleep_ns) __nanosleep(s.sleep_ns);
        w[q] = W::load(s.xs, j[q]);
      }
      acc = xadd(acc, xmul(v[q], from_payload(W::payload(w[q]), T())));
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
template <class T, class P>
__device__ __forceinline__ void finish_row(const SolveArgs<T, P>& s, I k, T bk, T dv, T sum) {
  const T t = xsub(bk, sum);
  const T xk = s.unit ? t : xdiv(t, dv);
  s.x.at(k, 0) = xk;
  WordsOf<T>::store(s.xs, k, s.epoch, to_payload(xk));
}

template <class T, class P, bool Converged, bool Wide>
__global__ void __launch_bounds__(256) solve_kernel(SolveArgs<T, P> s) {
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
    const RowRecT<P> r = s.recs[int64_t{t} * 32 + lane];
    const int64_t m = r.k >= 0 ? int64_t{r.re} - r.rb : -1;
    T bk = T(0), dv = T(1);
    if (m >= 0) {
      bk = s.b.at(r.k, 0);
      if (!s.unit) dv = r.diag >= 0 ? s.a.value(r.diag) : T(0);
    }
    // Rows of more than one chunk: the warp takes them one by one, lane c
    // summing chunk c, the chunk sums combined by the tree (3.7).
    for (unsigned many = __ballot_sync(0xffffffffu, m > 32); many; many &= many - 1) {
      const int src = __ffs(many) - 1;
      const I k = __shfl_sync(0xffffffffu, r.k, src);
      const P rb = __shfl_sync(0xffffffffu, r.rb, src);
      const P re = __shfl_sync(0xffffffffu, r.re, src);
      const int64_t chunks = (int64_t{re} - rb + 31) / 32;
      T sum;
      if constexpr (Converged) {
        // Lane l sums chunks [l * per, (l + 1) * per) serially as subtrees
        // (serial_tree's stack), then the warp tree joins the lanes; chunks
        // past the end are empty sums, +0, the tree's padding.
        int64_t p2 = 1;
        while (p2 < chunks) p2 <<= 1;
        const int64_t per = p2 > 32 ? p2 / 32 : 1;
        T stack[34];
        int top = 0;
        for (int64_t i = 0; i < per; ++i) {
          const int64_t c = lane * per + i;
          const int64_t cb = c < chunks ? rb + c * 32 : re;
          stack[top++] = warp_walk_sum<Wide>(s, cb, cb + 32 < re ? cb + 32 : re);
          for (int64_t h = i; h & 1; h >>= 1, --top)
            stack[top - 2] = xadd(stack[top - 2], stack[top - 1]);
        }
        sum = warp_tree<SumOpT<T>>(stack[0]);
      } else {
        sum = warp_tree_of<SumOpT<T>>(
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
      SumTerms<T, P> t{&s, short_row ? r.k : -1, bk, dv};
      walk<Wide>(s, short_row ? r.rb : 0, short_row ? r.re : 0, t);
    } else if (short_row) {
      finish_row(s, r.k, bk, dv, chunk_sum(s, r.rb, r.re));
    }
  }
}

}  // namespace

template <class T, class P>
xhal_status_t syncfree_solve(Device* d, SyncFreeState* st, const SyncFreeSchedule& sc,
                             const PatternViewT<T, P>& a, ColsT<T> b, ColsT<T> x, bool unit,
                             int* launches) {
  // "auto" picks per schedule, from the H200 sweeps (docs/performance.md):
  // with long rows, 32-term rounds and two or four blocks of warps per SM
  // (sc.blocks_per_sm); otherwise 16-term rounds and one block per SM; rows
  // of one dependency are fastest with each lane polling its single word
  // alone.
  const DeviceOptions& o = d->options;
  const int block = o.solve_block_threads;
  const int per_sm = o.solve_blocks_per_sm ? o.solve_blocks_per_sm : sc.blocks_per_sm;
  const unsigned sleep_ns = o.solve_sleep_ns;
  const bool converged =
      o.solve_poll == SolvePoll::kAuto ? !sc.chains : o.solve_poll == SolvePoll::kConverged;
  const bool wide = o.solve_poll_terms ? o.solve_poll_terms == 32 : sc.has_long;
  const unsigned warps_per_block = static_cast<unsigned>(block / 32);
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(
      (sc.max_warps + warps_per_block - 1) / warps_per_block, int64_t{per_sm} * st->sms));
  for (int64_t c = 0; c < x.k; ++c) {
    next_epoch(d, st);
    ColsT<T> bc = b, xc = x;
    bc.p += c * b.cs;
    xc.p += c * x.cs;
    bc.k = xc.k = 1;
    SolveArgs<T, P> s{static_cast<const RowRecT<P>*>(sc.recs), sc.warps,  a,        bc,  xc, st->xs,
                      {st->ticket, grid * warps_per_block},    st->epoch, sleep_ns, unit};
    if (!converged) solve_kernel<T, P, false, false><<<grid, block, 0, d->stream>>>(s);
    else if (wide) solve_kernel<T, P, true, true><<<grid, block, 0, d->stream>>>(s);
    else solve_kernel<T, P, true, false><<<grid, block, 0, d->stream>>>(s);
    ++*launches;
  }
  return XHAL_OK;
}
#define XHAL_SYNCFREE_SOLVE(T, P)                                                                  \
  template xhal_status_t syncfree_solve<T, P>(Device*, SyncFreeState*, const SyncFreeSchedule&,    \
                                              const PatternViewT<T, P>&, ColsT<T>, ColsT<T>, bool, \
                                              int*);
XHAL_SYNCFREE_SOLVE(float, I)
XHAL_SYNCFREE_SOLVE(double, I)
XHAL_SYNCFREE_SOLVE(float, int64_t)
XHAL_SYNCFREE_SOLVE(double, int64_t)
#undef XHAL_SYNCFREE_SOLVE

}  // namespace xhal::gpu
#endif
