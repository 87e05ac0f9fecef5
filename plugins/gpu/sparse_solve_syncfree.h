// Sync-free triangular solve (CUDA): the schedule is built on the device at
// csr_create (sparse_solve_syncfree_schedule.cpp), one launch per
// right-hand side (sparse_solve_syncfree.cpp). docs/gpu.md describes it.
#pragma once

#include <vector>

#include "sparse_views.h"

namespace xhal::gpu {

// Rows in level order; a row of more than 32 off-diagonal entries takes 32
// aligned positions (a warp) of its own. Built on the device; the host
// knows only an upper bound of its length.
struct SyncFreeSchedule {
  bool built = false;
  void* recs = nullptr;       // RowRecT<P>, P the matrix's; padding has k = -1
  unsigned* warps = nullptr;  // device: warps' worth of positions
  unsigned max_warps = 0;     // host: an upper bound of *warps
  bool has_long = false;      // a row of more than 32 off-diagonal entries
  int blocks_per_sm = 1;      // what solve.blocks_per_sm=auto takes for this pattern
  bool chains = false;        // no row has more than one off-diagonal entry
};

// Per-matrix state shared by its analyses and solves (one stream, in order).
struct SyncFreeState {
  unsigned long long* xs = nullptr;  // [len]: epoch << 32 | payload (one or two words per x)
  int64_t len = 0;
  unsigned* ticket = nullptr;  // [2]: next ticket, takers gone (zero between launches)
  unsigned epoch = 0;
  int sms = 1;
};

#if !defined(XHAL_GPU_HIP)
// Allocates the state for an n x n matrix whose x takes `words` words
// each (1 for f32, 2 for f64; kept in `allocations`).
xhal_status_t syncfree_init(Device* d, int64_t n, int words, SyncFreeState* st,
                            std::vector<void*>* allocations);

// The schedule of a pattern (device copies of row_ptr and col; P the
// matrix's entry-offset type) that lies in
// the lower (ascending) or upper (descending) triangle, as the caller has
// checked; `long_rows` counts its rows of more than 32 off-diagonal
// entries and `long_terms` their off-diagonal entries together, `entries`
// is the pattern's nnz, `max_terms` the most off-diagonal entries of a
// row. No transfer to the host; synchronises the stream.
template <class P>
xhal_status_t syncfree_analyse(Device* d, SyncFreeState* st, const P* row_ptr, const I* col,
                               int64_t rows, bool ascending, int64_t long_rows, int64_t long_terms,
                               int64_t entries, int64_t max_terms, SyncFreeSchedule* out,
                               std::vector<void*>* allocations);

// Solves every column of x (k launches); b may be x. The launch shape and
// polling form follow d->options (solve.*). T: float or double (the state
// then holds two words per x); P: the entry-offset type.
template <class T, class P>
xhal_status_t syncfree_solve(Device* d, SyncFreeState* st, const SyncFreeSchedule& sc,
                             const PatternViewT<T, P>& a, ColsT<T> b, ColsT<T> x, bool unit,
                             int* launches);
#endif

}  // namespace xhal::gpu
