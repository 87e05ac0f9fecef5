// The CPU copy of a validated index plan (the core's arrays live only for
// the create call), plus the work split that index_add uses.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu_plugin.h"

namespace xhal::cpu {

constexpr int64_t kSegsumChunk = 32;  // G of docs/semantics.md 3.7
// Destination rows with more sources than this are summed by all threads
// together (chunk subtrees in parallel); lighter rows get one thread each.
constexpr int64_t kHubSources = 64 * kSegsumChunk;

// A destination row with at least one source: its sources are
// row_sources[begin .. end), ascending.
struct TouchedRow {
  int64_t row, begin, end;
};

// Everything here is O(count): rows no index selects are not listed.
struct IndexPlan {
  uint64_t count = 0;
  uint64_t num_rows = 0;
  std::vector<int64_t> indices;        // [count]
  std::vector<int64_t> row_sources;    // [count], grouped by row, ascending within a row
  std::vector<TouchedRow> light_rows;  // rows with 1..kHubSources sources, ascending
  std::vector<TouchedRow> hub_rows;    // rows with more
};

// Elements per row of a [rows, ...] tensor (product of the dims after the first).
inline int64_t row_elements(const xhal_plugin_tensor_t* t) {
  int64_t w = 1;
  for (uint32_t k = 1; k < t->rank; ++k) w *= t->shape[k];
  return w;
}

inline uint64_t dtype_size(xhal_dtype_t dtype) {
  switch (dtype) {
    case XHAL_DTYPE_U8:
      return 1;
    case XHAL_DTYPE_F16:
    case XHAL_DTYPE_BF16:
      return 2;
    case XHAL_DTYPE_F32:
    case XHAL_DTYPE_I32:
      return 4;
    case XHAL_DTYPE_I64:
    case XHAL_DTYPE_F64:
      return 8;
    default:
      return 0;
  }
}

}  // namespace xhal::cpu
