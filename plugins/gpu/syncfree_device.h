// Device code shared by the sync-free solve (sparse_solve_syncfree.cpp) and
// the on-device build of its schedule (sparse_solve_syncfree_schedule.cpp),
// CUDA only (docs/gpu.md, "Triangular solve (CUDA)").
//
// Every solved x[k] is published as one 64-bit word xs[k] = epoch << 32 |
// bits(x[k]); a reader learns "ready" and the value from a single load, so
// no fence separates them. Warps take 32 schedule positions at a time from
// a ticket counter; positions are in level order, so a warp only waits on
// earlier positions, held by running or finished warps: the waits end. Lanes
// of one warp may wait on each other where a warp straddles two levels
// (sm_70+ independent thread scheduling lets the awaited lane go on). The
// last warp (block) of a launch to finish resets the ticket counters.
#pragma once

#include "sparse_solve_syncfree.h"

#if !defined(XHAL_GPU_HIP)
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

// How x[j] is published and read. OneWord (f32 values, the analysis'
// levels): xs[j] = epoch << 32 | 32-bit payload. TwoWords (f64 values):
// xs[2j] = epoch << 32 | high half, xs[2j + 1] = epoch << 32 | low half.
// Each word is single-copy atomic and carries the epoch, so a reader that
// sees the epoch in both words has both halves of this pass's x[j]; no
// fence orders them.
struct OneWord {
  using Got = unsigned long long;
  using Payload = unsigned;
  __device__ static Got load(const unsigned long long* xs, I j) { return load_word(xs + j); }
  __device__ static bool ready(Got g, unsigned epoch) {
    return static_cast<unsigned>(g >> 32) == epoch;
  }
  __device__ static Payload payload(Got g) { return static_cast<unsigned>(g); }
  __device__ static void store(unsigned long long* xs, I k, unsigned epoch, Payload p) {
    store_word(xs + k, word(epoch, p));
  }
};
struct TwoWords {
  struct Got {
    unsigned long long hi, lo;
  };
  using Payload = unsigned long long;
  __device__ static Got load(const unsigned long long* xs, I j) {
    return {load_word(xs + 2 * int64_t{j}), load_word(xs + 2 * int64_t{j} + 1)};
  }
  __device__ static bool ready(Got g, unsigned epoch) {
    return static_cast<unsigned>(g.hi >> 32) == epoch && static_cast<unsigned>(g.lo >> 32) == epoch;
  }
  __device__ static Payload payload(Got g) { return (g.hi << 32) | (g.lo & 0xffffffffull); }
  __device__ static void store(unsigned long long* xs, I k, unsigned epoch, Payload p) {
    store_word(xs + 2 * int64_t{k}, word(epoch, static_cast<unsigned>(p >> 32)));
    store_word(xs + 2 * int64_t{k} + 1, word(epoch, static_cast<unsigned>(p)));
  }
};

// One polling round of a lane over terms [q, n) of its current group of G:
// asks for every word not yet seen, then consumes the ready ones in order.
// P::Value is the terms' value type, P::add(value, payload) takes one.
template <class W, int G, class P>
__device__ __forceinline__ bool poll_round(const unsigned long long* xs, unsigned epoch,
                                           const I (&j)[G], const typename P::Value (&v)[G], int& q,
                                           int n, P& p) {
  typename W::Got w[G];
#pragma unroll
  for (int i = 0; i < G; ++i)
    if (i >= q && i < n) w[i] = W::load(xs, j[i]);
  bool progressed = false;
#pragma unroll
  for (int i = 0; i < G; ++i) {
    if (i < q || i >= n) continue;
    if (!W::ready(w[i], epoch)) break;
    p.add(v[i], W::payload(w[i]));
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
// P supplies Value, col(e), value(e), add(value, payload) in term order,
// done(); W how the words are read (OneWord, TwoWords).
template <class W = OneWord, class P>
__device__ __forceinline__ void converged_walk(const unsigned long long* xs, unsigned epoch,
                                               unsigned sleep_ns, int64_t b, int64_t e, P& p) {
  using V = typename P::Value;
  I j[kGroup], jn[kGroup];
  V v[kGroup], vn[kGroup];
  auto load = [&](int64_t g, I* jj, V* vv) {
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
      progressed = poll_round<W, kGroup>(xs, epoch, j, v, q, n, p);
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
template <class W = OneWord, class P>
__device__ __forceinline__ void converged_walk32(const unsigned long long* xs, unsigned epoch,
                                                 unsigned sleep_ns, int64_t b, int64_t e, P& p) {
  I j[32];
  typename P::Value v[32];
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
    const bool progressed = busy && poll_round<W, 32>(xs, epoch, j, v, q, n, p);
    if (sleep_ns && !__any_sync(0xffffffffu, progressed)) __nanosleep(sleep_ns);
  }
}

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

// A new epoch for a pass; on wrap-around no stale word may carry it.
inline void next_epoch(Device* d, SyncFreeState* st) {
  if (++st->epoch == 0) {
    gpuMemsetAsync(st->xs, 0, sizeof(unsigned long long) * st->len, d->stream);
    st->epoch = 1;
  }
}

}  // namespace
}  // namespace xhal::gpu
#endif
