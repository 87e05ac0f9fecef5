// The device copy of an index plan (docs/semantics.md "Index plans"), shared
// by index_select.cpp and index_add.cpp: the indices for the gather, and
// the sources grouped by row with index_add's schedule (index_schedule.h,
// built from the touched rows only). Every array is O(count); none is sized
// by num_rows.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu_plugin.h"
#include "index_schedule.h"

namespace xhal::gpu {

struct Plan {
  int64_t count = 0, num_rows = 0;
  int64_t* indices = nullptr;      // [count]
  int64_t* row_sources = nullptr;  // [count], grouped by touched row
  DirectRow* direct = nullptr;     // rows with 1..32 sources
  int64_t num_direct = 0;
  int64_t* chunk_begin = nullptr;  // long rows' chunks
  int32_t* chunk_len = nullptr;
  int64_t num_chunks = 0;
  int64_t* long_rows = nullptr;  // [num_long]
  int64_t* long_base = nullptr;  // first partial slot of each long row
  int64_t num_long = 0;
  int64_t* group_triples = nullptr;
  std::vector<int64_t> group_offsets;  // host: round g uses triples [off[g], off[g+1])
};

// Frees every device array of `p` (gpuFree) and `p` itself.
void free_plan(Plan* p);

}  // namespace xhal::gpu
