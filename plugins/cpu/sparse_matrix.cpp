// csr_create / csr_destroy: copies the validated pattern (its arrays are
// only valid during the call), narrows indices to int32 where they fit and
// builds the level schedules of the triangular solves once per pattern.
#include "sparse_matrix.h"
#include "op_registry.h"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>

#include "dense_ops.h"
#include "sparse_kernels.h"

namespace xhal::cpu {

template <typename I>
SolveSchedule<I> build_solve_schedule(const CsrPattern<I>& p, bool ascending, int threads) {
  SolveSchedule<I> s;
  const int64_t n = p.rows;
  auto row_at = [&](int64_t pos) { return ascending ? pos : n - 1 - pos; };
  auto depends = [&](int64_t j, int64_t k) { return ascending ? j < k : j > k; };

  // level[k] = 1 + max level of the rows k depends on (0 when none).
  std::vector<I> level(static_cast<size_t>(n), 0);
  int64_t max_level = -1;
  for (int64_t pos = 0; pos < n; ++pos) {
    const int64_t k = row_at(pos);
    int64_t l = 0;
    for (int64_t e = p.row_ptr[k]; e < p.row_ptr[k + 1]; ++e) {
      const int64_t j = p.col_idx[e];
      if (depends(j, k)) l = std::max<int64_t>(l, int64_t{level[j]} + 1);
    }
    level[k] = static_cast<I>(l);
    max_level = std::max(max_level, l);
  }
  s.levels = max_level + 1;
  s.built = true;
  const int team = std::clamp(threads, 1, kMaxSolveTeam);
  if (team < 2 || n < kParallelMinRowsPerLevel * s.levels || n < 4 * kSolveBalanceSlack) return s;

  // Deal rows in walking order: to the owner of the latest dependency (the
  // one most likely still running) unless it is more than the slack ahead of
  // the least loaded member, which then takes the row.
  std::vector<uint8_t> owner(static_cast<size_t>(n), 0);
  std::vector<int64_t> load(static_cast<size_t>(team), 0), count(static_cast<size_t>(team), 0);
  for (int64_t pos = 0; pos < n; ++pos) {
    const int64_t k = row_at(pos);
    const int64_t rb = p.row_ptr[k], re = p.row_ptr[k + 1];
    int least = 0;
    for (int t = 1; t < team; ++t)
      if (load[t] < load[least]) least = t;
    int chosen = least;
    int64_t latest = -1;
    for (int64_t e = rb; e < re; ++e) {
      const int64_t j = p.col_idx[e];
      if (!depends(j, k)) continue;
      const int64_t at = ascending ? j : n - 1 - j;
      if (at > latest) {
        latest = at;
        chosen = owner[j];
      }
    }
    if (load[chosen] - load[least] > kSolveBalanceSlack) chosen = least;
    owner[k] = static_cast<uint8_t>(chosen);
    load[chosen] += 1 + (re - rb);
    ++count[chosen];
  }
  s.team = team;
  s.first.assign(static_cast<size_t>(team) + 1, 0);
  for (int t = 0; t < team; ++t) s.first[t + 1] = s.first[t] + count[t];
  s.rows.resize(static_cast<size_t>(n));
  std::vector<int64_t> next(s.first.begin(), s.first.end() - 1);
  for (int64_t pos = 0; pos < n; ++pos) {
    const int64_t k = row_at(pos);
    s.rows[next[owner[k]]++] = static_cast<I>(k);
  }
  return s;
}

template SolveSchedule<int32_t> build_solve_schedule(const CsrPattern<int32_t>&, bool, int);
template SolveSchedule<int64_t> build_solve_schedule(const CsrPattern<int64_t>&, bool, int);

namespace {

template <typename I>
void copy_indices(std::vector<I>& dst, const int64_t* src, int64_t count) {
  dst.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<I>(src[i]);
}

// CsrPatterns::push_target, pull_first and push_slots for a pattern that
// pushes (push_flags set); a pattern whose slots would not fit I does not
// push.
template <typename I>
void push_targets(const xhal_plugin_csr_desc_t* d, CsrPatterns<I>* ps) {
  const int64_t n = d->rows;
  const int64_t ring = ps->push_slot_mask < 0 ? n : ps->push_slot_mask + 1;
  auto pulled = [&](int64_t j) { return (ps->push_flags[j] & kPushPulled) != 0; };
  std::vector<I> first(static_cast<size_t>(n) + 1);
  int64_t next = ring;
  for (int64_t j = 0; j < n; ++j) {
    if (next > std::numeric_limits<I>::max()) break;
    first[j] = static_cast<I>(next);
    if (pulled(j)) next += d->t_row_ptr[j + 1] - d->t_row_ptr[j] - ps->has_diagonal[j];
  }
  if (next > std::numeric_limits<I>::max()) {
    ps->push_transposed = false;
    std::vector<uint8_t>().swap(ps->push_flags);
    return;
  }
  first[n] = static_cast<I>(next);
  std::vector<I> target(static_cast<size_t>(d->nnz));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t e = d->row_ptr[i]; e < d->row_ptr[i + 1]; ++e) {
      const int64_t j = d->col_idx[e];
      if (j == i || !pulled(j)) {
        target[e] = static_cast<I>(j & ps->push_slot_mask);
        continue;
      }
      // Column j's rows ascend in A^T; its diagonal, if stored, is one of them.
      int64_t rank = ps->t_pos[e] - d->t_row_ptr[j];
      if (ps->has_diagonal[j]) {
        const int64_t rb = d->row_ptr[j];
        const int64_t diag = d->col_idx[rb] == j ? rb : d->row_ptr[j + 1] - 1;
        if (ps->t_pos[diag] < ps->t_pos[e]) --rank;
      }
      target[e] = static_cast<I>(first[j] + rank);
    }
  }
  ps->pull_first = std::move(first);
  ps->push_target = std::move(target);
  ps->push_slots = next;
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
  ps.first_slot.resize(static_cast<size_t>(d->cols) + 1);
  ps.first_slot[0] = 0;
  ps.slot.resize(static_cast<size_t>(d->nnz));
  for (int64_t j = 0; j < d->cols; ++j) {
    const int64_t begin = d->t_row_ptr[j], count = d->t_row_ptr[j + 1] - begin;
    for (int64_t q = 0; q < count; ++q)
      ps.slot[d->t_perm[begin + q]] = static_cast<I>(ps.first_slot[j] + q / kSegsumChunk);
    ps.first_slot[j + 1] =
        ps.first_slot[j] + std::max<int64_t>(1, (count + kSegsumChunk - 1) / kSegsumChunk);
  }
  const int threads = omp_get_max_threads();
  if (threads > 1 && threads <= kMaxSolveTeam) {
    ps.split_team = threads;
    ps.row_split.resize(static_cast<size_t>(threads - 1) * static_cast<size_t>(d->rows));
    for (int t = 1; t < threads; ++t) {
      int64_t c0 = 0, c1 = 0;
      balanced_rows(ps.at.row_ptr, d->cols, t, threads, &c0, &c1);
      I* split = ps.row_split.data() + static_cast<size_t>(t - 1) * static_cast<size_t>(d->rows);
      for (int64_t i = 0; i < d->rows; ++i) {
        const int64_t* row_end = d->col_idx + d->row_ptr[i + 1];
        split[i] =
            static_cast<I>(std::lower_bound(d->col_idx + d->row_ptr[i], row_end, c0) - d->col_idx);
      }
    }
  }
  if (d->rows != d->cols) return;  // no solves on a rectangular matrix
  ps.t_pos.resize(static_cast<size_t>(d->nnz));
  for (int64_t q = 0; q < d->nnz; ++q) ps.t_pos[d->t_perm[q]] = static_cast<I>(q);
  ps.has_diagonal.assign(static_cast<size_t>(d->rows), 0);
  for (int64_t i = 0; i < d->rows; ++i) {
    const int64_t b = d->row_ptr[i], e = d->row_ptr[i + 1];
    ps.has_diagonal[i] = e > b && (d->col_idx[b] == i || d->col_idx[e - 1] == i);
  }
  ps.a.every_diagonal = ps.at.every_diagonal =
      std::all_of(ps.has_diagonal.begin(), ps.has_diagonal.end(), [](uint8_t h) { return h != 0; });
  ps.push_flags.resize(static_cast<size_t>(d->rows));
  int64_t pulled = 0;
  for (int64_t j = 0; j < d->rows; ++j) {
    const bool pull = d->t_row_ptr[j + 1] - d->t_row_ptr[j] - ps.has_diagonal[j] > kPushMaxTerms;
    ps.push_flags[j] =
        static_cast<uint8_t>((ps.has_diagonal[j] ? kPushDiagonal : 0) | (pull ? kPushPulled : 0));
    pulled += pull;
  }
  ps.push_transposed = pulled * 100 <= kPushMaxPulledPercent * d->rows;
  if (!ps.push_transposed) {
    std::vector<uint8_t>().swap(ps.push_flags);
  } else {
    int64_t bandwidth = 0;
    for (int64_t i = 0; i < d->rows; ++i) {
      const int64_t b = d->row_ptr[i], e = d->row_ptr[i + 1];
      if (e > b)
        bandwidth =
            std::max({bandwidth, std::abs(i - d->col_idx[b]), std::abs(d->col_idx[e - 1] - i)});
    }
    // The sums live at a row's walk are those of its bandwidth + 1 nearest
    // columns (those it or a row before it pushes into), so a ring of more
    // slots never holds two at once.
    if (bandwidth < kPushMaxRing)
      ps.push_slot_mask =
          static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(bandwidth) + 1)) - 1;
    push_targets(d, &ps);
  }
  // A lower: op(A) = A walks A's rows ascending, op(A) = A^T walks A^T's
  // rows descending; an upper A the other way round.
  if (lower) {
    ps.a.ascending = build_solve_schedule(ps.a, true, threads);
    ps.at.descending = build_solve_schedule(ps.at, false, threads);
  }
  if (upper) {
    ps.a.descending = build_solve_schedule(ps.a, false, threads);
    ps.at.ascending = build_solve_schedule(ps.at, true, threads);
  }
}

}  // namespace

xhal_status_t csr_create(void* device, const xhal_plugin_csr_desc_t* desc, void** out_matrix) {
  try {
    auto m = std::make_unique<CsrMatrix>();
    m->rows = desc->rows;
    m->cols = desc->cols;
    m->nnz = desc->nnz;
    m->values = static_cast<CpuBuffer*>(desc->values_buffer);
    // f32 unless a core of ABI 1.6 or newer passed F64 (or 1.7, F16/BF16:
    // csr_values_dtype).
    m->values_dtype = csr_values_dtype(desc);
    m->f64 = m->values_dtype == XHAL_DTYPE_F64;
    if (m->f64) m->transposed_values.arrays.emplace<std::vector<double>>();
    bool lower = true, upper = true;
    for (int64_t e = 0; e < desc->nnz; ++e) {
      lower = lower && desc->col_idx[e] <= desc->row_idx[e];
      upper = upper && desc->col_idx[e] >= desc->row_idx[e];
    }
    m->lower = lower;
    m->upper = upper;
    const bool narrow =
        desc->rows <= INT32_MAX && desc->cols <= INT32_MAX && desc->nnz <= INT32_MAX;
    if (narrow) {
      fill_patterns(m->patterns.emplace<CsrPatterns<int32_t>>(), desc, lower, upper);
    } else {
      fill_patterns(m->patterns.emplace<CsrPatterns<int64_t>>(), desc, lower, upper);
    }
    // The pattern of A and of A^T, kept: one upload of the arrays it copied.
    count_upload(device, static_cast<uint64_t>(desc->rows + 1 + desc->cols + 1 + 3 * desc->nnz) *
                             sizeof(int64_t));
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

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(kNotAnOp, 0, api.csr_create = csr_create; api.csr_destroy = csr_destroy);

}  // namespace xhal::cpu
