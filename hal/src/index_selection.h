// The transposed selection of an index plan: for each destination row that
// some index selects, the positions of those indices ("sources"), rows
// ascending and sources ascending within a row (the order index_add sums
// them in, docs/semantics.md). Built in O(count log count) time and O(count)
// memory whatever num_rows is; the full per-row form that ABI 1.0 plugins
// read is derived from it on request. Depends on the standard library only,
// so tests can compile it in directly.
#pragma once

#include <cstdint>
#include <vector>

namespace xhal {

struct CompactSelection {
  std::vector<int64_t> rows;     // touched rows, strictly ascending
  std::vector<int64_t> ptr;      // [rows.size() + 1]: sources of rows[k] are
                                 // sources[ptr[k] .. ptr[k+1])
  std::vector<int64_t> sources;  // [count]
  uint64_t max_sources_per_row = 0;
};

// kSort: sort (row, position) pairs, O(count log count), any num_rows.
// kCount: counting sort over the rows, O(count + num_rows) time and memory.
// kAuto: counting sort when num_rows is at most a small multiple of count,
// else the sort. Every method gives the same result.
enum class SelectionMethod { kAuto, kSort, kCount };

// `idx`: `count` indices already validated to lie in [0, num_rows).
// Throws std::bad_alloc when memory runs out.
CompactSelection build_selection(const int64_t* idx, uint64_t count, uint64_t num_rows,
                                 SelectionMethod method = SelectionMethod::kAuto);

// The full form over every row (num_rows + 1 entries, O(num_rows)): the
// sources of row r are sources[row_ptr[r] .. row_ptr[r+1]). Throws
// std::bad_alloc.
std::vector<int64_t> full_row_ptr(const CompactSelection& s, uint64_t num_rows);

}  // namespace xhal
