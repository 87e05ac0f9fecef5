// Host side of the GPU index_add schedule (docs/gpu.md, "index_add"): which
// rows are summed directly, how longer rows are cut into chunks of 32
// sources, and the rounds of the chunk tree. Built from the touched rows of
// an index plan only, so its size and cost are O(count) whatever num_rows
// is. Plain C++ (direct_row is device code too under nvcc and hipcc), so it
// is unit-tested without a GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "narrow.h"  // XHAL_HD

namespace xhal::gpu {

constexpr int64_t kIndexChunk = 32;  // G of docs/semantics.md 3.7

// A row with 1..32 sources: the row, its first two sources (so a row of one
// or two sources, most rows of a random index list, needs no lookup in the
// source list: its loads wait on the record alone), and where its sources
// start and how many, packed as e0 << 6 | m (m <= 32; an index list of 2^57
// entries would not fit in memory). `second` is -1 for a one-source row.
struct alignas(16) DirectRow {
  int64_t r, first, second, e0m;
};
constexpr int kDirectCountBits = 6;
constexpr int64_t kDirectCountMask = (int64_t{1} << kDirectCountBits) - 1;
// The record of a row whose m sources start at row_sources[e0]; built on
// the host (build_index_add_schedule) and on the device (index_plan_device).
XHAL_HD DirectRow direct_row(int64_t r, const int64_t* row_sources, int64_t e0, int64_t m) {
  return {r, row_sources[e0], m > 1 ? row_sources[e0 + 1] : -1, (e0 << kDirectCountBits) | m};
}

struct IndexAddSchedule {
  std::vector<DirectRow> direct;
  // Rows with more than 32 sources ("long"): chunk c sums
  // row_sources[chunk_begin[c] .. + chunk_len[c]) into partial slot c; a long
  // row's chunks are consecutive slots from long_base.
  std::vector<int64_t> chunk_begin;
  std::vector<int32_t> chunk_len;
  std::vector<int64_t> long_rows;
  std::vector<int64_t> long_base;
  // The chunk tree, five levels per round: triples (first, count <= 32, out)
  // turn `count` consecutive partials from `first` into partial `out` of the
  // next buffer; round g uses triples [group_offsets[g], group_offsets[g+1]).
  // A row already down to one value is copied along (count 1).
  std::vector<int64_t> group_triples;
  std::vector<int64_t> group_offsets{0};
};

// touched_rows ascending; the sources of touched_rows[k] are
// row_sources[touched_ptr[k] .. touched_ptr[k+1]), at least one.
// Throws std::bad_alloc.
IndexAddSchedule build_index_add_schedule(const int64_t* touched_rows, const int64_t* touched_ptr,
                                          uint64_t touched_count, const int64_t* row_sources);

// The touched rows of the full form a 1.0 core passes (row_ptr over every
// row): O(num_rows), the cost such a core already imposes.
void touched_from_row_ptr(const int64_t* row_ptr, uint64_t num_rows, std::vector<int64_t>* rows,
                          std::vector<int64_t>* ptr);

}  // namespace xhal::gpu
