// Builds the transposed selection of an index plan (index_selection.h).
#include "index_selection.h"

#include <algorithm>
#include <new>
#include <utility>

namespace xhal {
namespace {

// Counting sort pays O(num_rows) for the per-row counters, so it is used
// only while that stays within a few times the index list.
constexpr uint64_t kCountingRowsPerIndex = 4;

CompactSelection by_sort(const int64_t* idx, uint64_t count) {
  // (row, position) pairs are all distinct, so the order is total and the
  // positions of a row come out ascending.
  std::vector<std::pair<int64_t, int64_t>> pairs(count);
  for (uint64_t i = 0; i < count; ++i) pairs[i] = {idx[i], static_cast<int64_t>(i)};
  // Index lists often arrive sorted (or nearly); skip the sort then.
  if (!std::is_sorted(pairs.begin(), pairs.end())) std::sort(pairs.begin(), pairs.end());
  CompactSelection s;
  s.sources.resize(count);
  s.ptr.push_back(0);
  for (uint64_t k = 0; k < count; ++k) {
    if (k == 0 || pairs[k].first != pairs[k - 1].first) {
      if (k > 0) s.ptr.push_back(static_cast<int64_t>(k));
      s.rows.push_back(pairs[k].first);
    }
    s.sources[k] = pairs[k].second;
  }
  if (count > 0) s.ptr.push_back(static_cast<int64_t>(count));
  return s;
}

CompactSelection by_counting(const int64_t* idx, uint64_t count, uint64_t num_rows) {
  // next[r]: sources of row r seen so far, then where the next one goes.
  std::vector<int64_t> next(num_rows, 0);
  for (uint64_t i = 0; i < count; ++i) ++next[static_cast<size_t>(idx[i])];
  CompactSelection s;
  s.ptr.push_back(0);
  int64_t at = 0;
  for (uint64_t r = 0; r < num_rows; ++r) {
    const int64_t m = next[r];
    if (m == 0) continue;
    next[r] = at;
    at += m;
    s.rows.push_back(static_cast<int64_t>(r));
    s.ptr.push_back(at);
  }
  // In position order, so each row's sources land ascending.
  s.sources.resize(count);
  for (uint64_t i = 0; i < count; ++i)
    s.sources[static_cast<size_t>(next[static_cast<size_t>(idx[i])]++)] = static_cast<int64_t>(i);
  return s;
}

}  // namespace

CompactSelection build_selection(const int64_t* idx, uint64_t count, uint64_t num_rows,
                                 SelectionMethod method) {
  if (method == SelectionMethod::kAuto)
    method = num_rows / kCountingRowsPerIndex <= count ? SelectionMethod::kCount
                                                       : SelectionMethod::kSort;
  CompactSelection s =
      method == SelectionMethod::kCount ? by_counting(idx, count, num_rows) : by_sort(idx, count);
  for (size_t k = 0; k + 1 < s.ptr.size(); ++k)
    s.max_sources_per_row =
        std::max(s.max_sources_per_row, static_cast<uint64_t>(s.ptr[k + 1] - s.ptr[k]));
  return s;
}

std::vector<int64_t> full_row_ptr(const CompactSelection& s, uint64_t num_rows) {
  // Past max_size() the vector would throw length_error; callers expect
  // bad_alloc for "too large to hold".
  if (num_rows >= std::vector<int64_t>().max_size()) throw std::bad_alloc();
  std::vector<int64_t> row_ptr(num_rows + 1, 0);
  // Rows up to and including rows[k] start at ptr[k]; rows after it start
  // at ptr[k+1].
  size_t k = 0;
  for (uint64_t r = 0; r <= num_rows; ++r) {
    while (k < s.rows.size() && static_cast<uint64_t>(s.rows[k]) < r) ++k;
    row_ptr[r] = s.ptr[k];
  }
  return row_ptr;
}

}  // namespace xhal
