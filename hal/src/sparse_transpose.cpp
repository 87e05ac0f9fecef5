// The transposed pattern of a CSR matrix: a counting sort by column that
// keeps each column's entries in ascending row order. Large patterns are
// cut into row ranges of about equal entry counts, one thread each: every
// thread counts its columns, a prefix over (column, thread) gives each
// thread its own slice of every column, and the threads scatter into their
// slices. The slices follow row order, so the result is the sequential
// sort's, entry for entry, whatever the thread count.
#include <algorithm>
#include <vector>

#include "validate_sparse.h"

namespace xhal {
namespace {

// Threads for a pattern: parts_for(nnz), and no more than entries per
// column (the per-thread column counts must not outweigh the pattern).
int64_t thread_count(int64_t nnz, int64_t cols) {
  int64_t t = parts_for(nnz);
  if (cols > 0) t = std::min(t, nnz / cols);
  return std::max<int64_t>(t, 1);
}

}  // namespace

void transpose_pattern(Matrix& m) {
  const int64_t rows = m.rows, cols = m.cols, nnz = m.nnz;
  m.t_row_ptr.resize(cols + 1);
  m.t_row_ptr[0] = 0;
  m.t_col_idx.resize(nnz);  // uninitialised: the scatter below touches them first
  m.t_perm.resize(nnz);
  const int64_t parts = thread_count(nnz, cols);
  std::vector<int64_t> first_row(parts + 1, rows);
  first_row[0] = 0;
  for (int64_t t = 1; t < parts; ++t) {
    const int64_t target = nnz / parts * t;
    first_row[t] =
        std::upper_bound(m.row_ptr.begin(), m.row_ptr.end(), target) - m.row_ptr.begin() - 1;
    first_row[t] = std::clamp(first_row[t], first_row[t - 1], rows);
  }
  // slot[t * cols + c]: part t's entries in column c, then where its next
  // one goes. Each part zeroes its own row of slots (the first touch of
  // those pages happens on the thread that uses them).
  IndexArray slot(static_cast<size_t>(parts * cols));
  run_parts(parts, [&](int64_t t) {
    int64_t* s = slot.data() + t * cols;
    std::fill(s, s + cols, 0);
    for (int64_t k = m.row_ptr[first_row[t]]; k < m.row_ptr[first_row[t + 1]]; ++k)
      ++s[m.col_idx[k]];
  });
  // The prefix over (column, part), by column blocks side by side: each
  // block's total, their running sum, then each block from its start.
  const int64_t blocks = parts_for(cols * parts);
  auto block_begin = [&](int64_t b) { return b == blocks ? cols : cols / blocks * b; };
  std::vector<int64_t> block_start(static_cast<size_t>(blocks) + 1, 0);
  run_parts(blocks, [&](int64_t b) {
    int64_t sum = 0;
    for (int64_t t = 0; t < parts; ++t)
      for (int64_t c = block_begin(b); c < block_begin(b + 1); ++c) sum += slot[t * cols + c];
    block_start[b + 1] = sum;
  });
  for (int64_t b = 0; b < blocks; ++b) block_start[b + 1] += block_start[b];
  run_parts(blocks, [&](int64_t b) {
    int64_t next = block_start[b];
    for (int64_t c = block_begin(b); c < block_begin(b + 1); ++c) {
      for (int64_t t = 0; t < parts; ++t) {
        const int64_t n = slot[t * cols + c];
        slot[t * cols + c] = next;
        next += n;
      }
      m.t_row_ptr[c + 1] = next;
    }
  });
  run_parts(parts, [&](int64_t t) {
    int64_t* s = slot.data() + t * cols;
    for (int64_t i = first_row[t]; i < first_row[t + 1]; ++i)
      for (int64_t k = m.row_ptr[i]; k < m.row_ptr[i + 1]; ++k) {
        const int64_t p = s[m.col_idx[k]]++;
        m.t_col_idx[p] = i;
        m.t_perm[p] = k;
      }
  });
}

}  // namespace xhal
