// Building blocks shared by the sparse kernels, for f32 and f64 values
// (docs/semantics.md 7.3): the segment sum of 3.7, a strided [n, k] view of
// a tensor, the row split of a CSR walk over the team, and dispatch on the
// pattern's index width.
#pragma once

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <new>
#include <type_traits>
#include <variant>
#include <vector>

#include "canonical.h"
#include "dense_ops.h"
#include "sparse_matrix.h"

namespace xhal::cpu {

inline constexpr int64_t kSegsumChunk = 32;

// Per-thread room for chunk sums of long rows.
template <typename T>
inline std::vector<T>& segsum_scratch() {
  thread_local std::vector<T> scratch;
  return scratch;
}

// Scratch of the calling thread for one op call, kept between calls: a fresh
// allocation of tens of MB per call costs more in page faults than the op.
template <typename T>
inline T* call_scratch(size_t count) {
  thread_local std::vector<T> scratch;
  if (scratch.size() < count) scratch.resize(count);
  return scratch.data();
}

// tree_sum of v[0..m) without touching v (tree_sum pads and folds in place).
template <typename T>
inline T tree_sum_of_copy(const T* v, int64_t m) {
  int64_t padded = 1;
  while (padded < m) padded <<= 1;
  std::vector<T>& copy = segsum_scratch<T>();
  if (static_cast<int64_t>(copy.size()) < padded) copy.resize(static_cast<size_t>(padded));
  std::copy(v, v + m, copy.begin());
  return tree_sum(copy.data(), static_cast<size_t>(m));
}

// The value type a segsum adds: that of its terms (float or double).
template <typename Term>
using TermType = std::decay_t<std::invoke_result_t<const Term&, int64_t>>;

// Rows longer than one chunk: chunk sums, then the pairwise tree. Kept out
// of line so that the short-row path stays small in every caller's loop.
template <typename Term, typename T = TermType<Term>>
[[gnu::noinline]] T segsum_chunked(int64_t m, const Term& term) {
  const int64_t chunks = (m + kSegsumChunk - 1) / kSegsumChunk;
  int64_t padded = 1;
  while (padded < chunks) padded <<= 1;
  std::vector<T>& sums = segsum_scratch<T>();
  if (static_cast<int64_t>(sums.size()) < padded) sums.resize(static_cast<size_t>(padded));
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t end = std::min(m, (c + 1) * kSegsumChunk);
    T s = T(0);
    for (int64_t i = c * kSegsumChunk; i < end; ++i) s = s + term(i);
    sums[static_cast<size_t>(c)] = s;
  }
  return tree_sum(sums.data(), static_cast<size_t>(chunks));
}

// segsum(term(0), ..., term(m-1)): chunks of 32 summed left to right from
// +0, chunk sums combined by the padded pairwise tree. Each term is one
// rounded value (a product is rounded before it is added), of the type the
// sum is taken in.
template <typename Term, typename T = TermType<Term>>
[[gnu::always_inline]] inline T segsum(int64_t m, const Term& term) {
  if (m <= kSegsumChunk) [[likely]] {
    T s = T(0);
    for (int64_t i = 0; i < m; ++i) s = s + term(i);
    return s;
  }
  return segsum_chunked(m, term);
}

// A rank-1 [n] or rank-2 [n, k] tensor of T seen as n rows of k columns.
template <typename T>
struct Columns {
  T* data = nullptr;
  int64_t n = 0, k = 0;
  int64_t row_stride = 0, col_stride = 0;

  T& at(int64_t i, int64_t c) const { return data[i * row_stride + c * col_stride]; }
};

template <typename T>
inline Columns<T> columns_of(const xhal_plugin_tensor_t* t) {
  Columns<T> v;
  v.data = tensor_data<T>(t);
  v.n = t->shape[0];
  v.row_stride = t->strides[0];
  if (t->rank >= 2) {
    v.k = t->shape[1];
    v.col_stride = t->strides[1];
  } else {
    v.k = 1;
  }
  return v;
}

// Rows [first, last) of part `part` out of `parts`, balancing entries plus
// rows so that a few long rows do not leave one thread with most of the work.
template <typename I>
inline void balanced_rows(const std::vector<I>& row_ptr, int64_t rows, int part, int parts,
                          int64_t* first, int64_t* last) {
  const int64_t total = static_cast<int64_t>(row_ptr[static_cast<size_t>(rows)]) + rows;
  auto boundary = [&](int p) -> int64_t {
    if (p <= 0) return 0;
    if (p >= parts) return rows;
    const int64_t target = total / parts * p + total % parts * p / parts;
    int64_t lo = 0, hi = rows;  // smallest r with row_ptr[r] + r >= target
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (static_cast<int64_t>(row_ptr[static_cast<size_t>(mid)]) + mid >= target) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
  *first = boundary(part);
  *last = boundary(part + 1);
}

// Work below this many terms runs on the calling thread alone.
inline constexpr int64_t kParallelMinWork = 1 << 15;

// Runs body(threads) with the team or one thread as `choice` says, and
// tells it how long that took. Small work and nested calls use one thread.
template <typename Body>
inline void run_chosen(TeamChoice& choice, int64_t work, Body&& body) {
  const int threads = omp_get_max_threads();
  if (work < kParallelMinWork || threads < 2 || omp_in_parallel()) {
    body(1);
    return;
  }
  const bool team = choice.use_team();
  const auto start = std::chrono::steady_clock::now();
  body(team ? threads : 1);
  choice.record(team,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

// Runs an op's body; a failed scratch allocation (taken before any output
// is written) becomes XHAL_OUT_OF_MEMORY instead of crossing the C ABI.
template <typename Body>
inline xhal_status_t guard_allocation(const char* op, Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    char msg[128];
    std::snprintf(msg, sizeof msg, "cpu plugin: %s: out of host memory for scratch", op);
    set_error(msg);
    return XHAL_OUT_OF_MEMORY;
  }
}

template <typename F>
inline decltype(auto) with_patterns(const CsrMatrix& m, F&& f) {
  return std::visit(std::forward<F>(f), m.patterns);
}

}  // namespace xhal::cpu
