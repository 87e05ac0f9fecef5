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

// One piece of a solve schedule: rows order[begin, end) either split over
// the team (one level: the rows are independent) or walked in order by one
// thread (a run of consecutive small levels, where a barrier per level would
// cost more than it saves).
struct SolveStage {
  int64_t begin = 0, end = 0;
  bool parallel = false;
};

// Rows of one pattern in dependency order for one solve direction.
template <typename I>
struct SolveSchedule {
  bool built = false;
  int64_t levels = 0;
  std::vector<I> order;
  std::vector<SolveStage> stages;
  bool any_parallel = false;
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
  SolveSchedule<I> ascending, descending;
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

// Rows at least this long in a level make a parallel stage; smaller levels
// are merged into sequential runs.
inline constexpr int64_t kParallelLevelRows = 256;

// Builds the schedule of a solve over `p` walking rows ascending (lower) or
// descending (upper). The pattern must lie in that triangle.
template <typename I>
SolveSchedule<I> build_solve_schedule(const CsrPattern<I>& p, bool ascending, int threads);

}  // namespace xhal::cpu
