// csr_create / csr_destroy: copies the validated pattern (its arrays are
// only valid during the call), narrows indices to int32 where they fit and
// builds the level schedules of the triangular solves once per pattern.
#include "sparse_matrix.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <memory>
#include <new>

#include "dense_ops.h"

namespace xhal::cpu {

template <typename I>
SolveSchedule build_solve_schedule(const CsrPattern<I>& p, bool ascending) {
  SolveSchedule s;
  const int64_t n = p.rows;
  // level[k] = 1 + max level of the rows k depends on (0 when none).
  std::vector<I> level(static_cast<size_t>(n), 0);
  int64_t max_level = -1;
  auto visit = [&](int64_t k) {
    int64_t l = 0;
    for (int64_t e = p.row_ptr[k]; e < p.row_ptr[k + 1]; ++e) {
      const int64_t j = p.col_idx[e];
      if (ascending ? j < k : j > k) l = std::max<int64_t>(l, int64_t{level[j]} + 1);
    }
    level[k] = static_cast<I>(l);
    max_level = std::max(max_level, l);
  };
  if (ascending)
    for (int64_t k = 0; k < n; ++k) visit(k);
  else
    for (int64_t k = n - 1; k >= 0; --k) visit(k);
  s.levels = max_level + 1;
  s.parallel = n >= 2 * kSolveBlockRows && n >= kParallelMinRowsPerLevel * s.levels;
  s.built = true;
  return s;
}

template SolveSchedule build_solve_schedule(const CsrPattern<int32_t>&, bool);
template SolveSchedule build_solve_schedule(const CsrPattern<int64_t>&, bool);

namespace {

template <typename I>
void copy_indices(std::vector<I>& dst, const int64_t* src, int64_t count) {
  dst.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<I>(src[i]);
}

template <typename I>
void fill_patterns(CsrPatterns<I>& ps, const xhal_plugin_csr_desc_t* d, bool lower, bool upper) {
  ps.a.rows = d->rows;
  copy_indices(ps.a.row_ptr, d->row_ptr, d->rows + 1);
  copy_indices(ps.a.col_idx, d->col_idx, d->nnz);
  ps.at.rows = d->cols;
  copy_indices(ps.at.row_ptr, d->t_row_ptr, d->cols + 1);
  copy_indices(ps.at.col_idx, d->t_col_idx, d->nnz);
  copy_indices(ps.at.perm, d->t_perm, d->nnz);
  if (d->rows != d->cols) return;  // no solves on a rectangular matrix
  // A lower: op(A) = A walks A's rows ascending, op(A) = A^T walks A^T's
  // rows descending; an upper A the other way round.
  if (lower) {
    ps.a.ascending = build_solve_schedule(ps.a, true);
    ps.at.descending = build_solve_schedule(ps.at, false);
  }
  if (upper) {
    ps.a.descending = build_solve_schedule(ps.a, false);
    ps.at.ascending = build_solve_schedule(ps.at, true);
  }
}

}  // namespace

xhal_status_t csr_create(void* /*device*/, const xhal_plugin_csr_desc_t* desc, void** out_matrix) {
  try {
    auto m = std::make_unique<CsrMatrix>();
    m->rows = desc->rows;
    m->cols = desc->cols;
    m->nnz = desc->nnz;
    m->values = static_cast<CpuBuffer*>(desc->values_buffer);
    bool lower = true, upper = true;
    for (int64_t e = 0; e < desc->nnz; ++e) {
      lower = lower && desc->col_idx[e] <= desc->row_idx[e];
      upper = upper && desc->col_idx[e] >= desc->row_idx[e];
    }
    m->lower = lower;
    m->upper = upper;
    const bool narrow = desc->rows <= INT32_MAX && desc->cols <= INT32_MAX && desc->nnz <= INT32_MAX;
    if (narrow) {
      fill_patterns(m->patterns.emplace<CsrPatterns<int32_t>>(), desc, lower, upper);
    } else {
      fill_patterns(m->patterns.emplace<CsrPatterns<int64_t>>(), desc, lower, upper);
    }
    *out_matrix = m.release();
    return XHAL_OK;
  } catch (const std::bad_alloc&) {
    char msg[160];
    std::snprintf(msg, sizeof msg,
                  "cpu plugin: csr_create: out of host memory for a %lld x %lld pattern with "
                  "%lld entries",
                  static_cast<long long>(desc->rows), static_cast<long long>(desc->cols),
                  static_cast<long long>(desc->nnz));
    set_error(msg);
    return XHAL_OUT_OF_MEMORY;
  }
}

void csr_destroy(void* /*device*/, void* matrix) { delete static_cast<CsrMatrix*>(matrix); }

}  // namespace xhal::cpu
