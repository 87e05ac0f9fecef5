// Running a triangular solve's rows: in order on one thread, or dealt to
// the team as sparse_matrix.h's SolveSchedule describes, each member waiting
// on per-row done flags for the rows of others it reads.
#pragma once

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>

#include "sparse_kernels.h"

namespace xhal::cpu {

// One thread walking in order: every row it reads is already solved.
struct NoWait {
  void operator()(int64_t) const {}
};

inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Before a row reads x[j], waits until row j is solved (its own rows are
// always done: a member walks them in the solve's order).
struct WaitForRow {
  uint8_t* done;

  bool is_done(int64_t j) const {
    return std::atomic_ref<uint8_t>(done[j]).load(std::memory_order_acquire) != 0;
  }
  void operator()(int64_t j) const {
    if (is_done(j)) return;
    for (int spins = 0; !is_done(j); ++spins) {
      if (spins < 4096) spin_pause();
      else std::this_thread::yield();  // another process may hold the core
    }
  }
};

// Each member walks the rows dealt to it, flagging each row when solved.
template <typename I, typename Row, typename Alone>
void run_dealt(const SolveSchedule<I>& sched, int64_t n, const Row& row, const Alone& walk_alone) {
  // Done flags of this call (scratch of the calling thread, so concurrent
  // solves on one matrix do not meet).
  uint8_t* done = call_scratch<uint8_t>(static_cast<size_t>(n));
  std::fill(done, done + n, uint8_t{0});
  const I* rows = sched.rows.data();
#pragma omp parallel num_threads(sched.team)
  {
    const int self = omp_get_thread_num();
    if (omp_get_num_threads() == sched.team) {
      WaitForRow wait{done};
      for (int64_t i = sched.first[self]; i < sched.first[self + 1]; ++i) {
        const int64_t k = rows[i];
        row(k, wait);
        std::atomic_ref<uint8_t>(done[k]).store(1, std::memory_order_release);
      }
    } else if (self == 0) {  // a smaller team than dealt for: one thread, in order
      walk_alone();
    }
  }
}

template <typename I, typename Row>
void run_rows(const SolveSchedule<I>& sched, int64_t n, bool ascending, const Row& row,
              int64_t work) {
  auto walk_alone = [&] {
    const Row local = row;  // a local copy keeps its pointers in registers
    if constexpr (requires { local.walk_alone(n); }) {
      local.walk_alone(n);  // a row solver with its own one-thread walk
      return;
    }
    NoWait none;
    if (ascending)
      for (int64_t k = 0; k < n; ++k) local(k, none);
    else
      for (int64_t k = n - 1; k >= 0; --k) local(k, none);
  };
  if (sched.team < 2) {
    walk_alone();
    return;
  }
  run_chosen(sched.choice, work, [&](int threads) {
    if (threads < sched.team) walk_alone();
    else run_dealt(sched, n, row, walk_alone);
  });
}

}  // namespace xhal::cpu
