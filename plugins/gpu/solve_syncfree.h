// Sync-free triangular solve (CUDA): the schedule is built on the device at
// csr_create, one launch per right-hand side. docs/gpu.md describes it.
#pragma once

#include <vector>

#include "sparse_views.h"

namespace xhal::gpu {

// Rows in level order, each level padded to whole warps (32 positions), so
// the rows one warp takes never depend on each other.
struct SyncFreeSchedule {
  bool built = false;
  RowRec* recs = nullptr;  // [tickets * 32], padding has k = -1
  unsigned tickets = 0;    // warps' worth of positions
  int64_t levels = 0;
};

// Per-matrix state shared by its analyses and solves (one stream, in order).
struct SyncFreeState {
  unsigned long long* xs = nullptr;  // [len]: epoch << 32 | payload
  int64_t len = 0;
  unsigned* ticket = nullptr;  // grows by a known count per launch
  unsigned ticket_base = 0;
  unsigned epoch = 0;
  int sms = 1;
};

#if !defined(XHAL_GPU_HIP)
// Allocates the state for an n x n matrix (kept in `allocations`).
xhal_status_t syncfree_init(Device* d, int64_t n, SyncFreeState* st, std::vector<void*>* allocations);

// Levels of the pattern (device copies of row_ptr and col) walked ascending
// (lower) or descending (upper); out->built stays false when an entry lies
// on the wrong side. Synchronises the stream (creation time only).
xhal_status_t syncfree_analyse(Device* d, SyncFreeState* st, const I* row_ptr, const I* col,
                               int64_t rows, bool ascending, SyncFreeSchedule* out,
                               std::vector<void*>* allocations);

// Solves every column of x (k launches); b may be x.
xhal_status_t syncfree_solve(Device* d, SyncFreeState* st, const SyncFreeSchedule& sc,
                             const PatternView& a, Cols b, Cols x, bool unit, int* launches);
#endif

}  // namespace xhal::gpu
