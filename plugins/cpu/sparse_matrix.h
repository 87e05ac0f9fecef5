// The CPU plugin's CSR matrix: the pattern copied at creation (indices
// narrowed to int32 when everything fits), the transposed pattern, and the
// level schedules of the triangular solves. Values are not kept here: they
// live in the core's values buffer and are read at op time.
#pragma once

#include <cstdint>
#include <variant>
#include <vector>

#include "cpu_plugin.h"

namespace xhal::cpu {

// How a triangular solve over one pattern runs. Rows are always walked in
// their natural order (ascending for a lower solve, descending for an upper
// one), cut into blocks dealt round-robin to the team; a thread waits for a
// block of another thread only when a row needs one of its results (a
// wavefront with per-thread progress counters, no barrier per level). A
// pattern whose levels are too narrow for that to pay (a chain) runs on one
// thread. The bits never depend on the schedule: each x[k] has one formula.
struct SolveSchedule {
  bool built = false;     // the pattern lies in this solve's triangle
  int64_t levels = 0;     // length of the longest dependency chain
  bool parallel = false;  // enough rows per level to share
};

// One CSR pattern: A itself, or A^T (then perm maps its entries to A's).
template <typename I>
struct CsrPattern {
  int64_t rows = 0;
  std::vector<I> row_ptr;  // [rows + 1]
  std::vector<I> col_idx;  // [nnz]
  std::vector<I> perm;     // A^T only: [nnz] index into A's values
  // Solves walking this pattern's rows: ascending (its strictly lower part
  // holds the dependencies) and descending (strictly upper part).
  SolveSchedule ascending, descending;
};

template <typename I>
struct CsrPatterns {
  CsrPattern<I> a, at;
};

struct CsrMatrix {
  int64_t rows = 0, cols = 0, nnz = 0;
  CpuBuffer* values = nullptr;  // owned by the core; contents change
  bool lower = false, upper = false;  // where A's entries lie (diagonal counts for both)
  std::variant<CsrPatterns<int32_t>, CsrPatterns<int64_t>> patterns;

  float* value_data() const {
    return values == nullptr ? nullptr : reinterpret_cast<float*>(values->data);
  }
};

// Rows per wavefront block (a power of two), and the average rows per level
// below which a solve stays on one thread.
inline constexpr int64_t kSolveBlockRows = 128;
inline constexpr int64_t kParallelMinRowsPerLevel = 16;

// Analyses a solve over `p` walking rows ascending (lower) or descending
// (upper). The pattern must lie in that triangle.
template <typename I>
SolveSchedule build_solve_schedule(const CsrPattern<I>& p, bool ascending);

}  // namespace xhal::cpu
