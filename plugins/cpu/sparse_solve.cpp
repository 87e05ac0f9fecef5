// csr_solve and csr_solve_backward. A row k of op(A) gives
//   x[k] = (b[k] - s) / op(A)[k,k]   (unit: b[k] - s),
// s the segment sum of its off-diagonal terms in ascending column order.
// Rows are dealt to the team at creation and each member waits only for the
// rows of others it reads (sparse_matrix.h, SolveSchedule); the bits do not
// depend on the schedule.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <vector>
#include <cstdio>
#include <thread>

#include "dense_ops.h"
#include "sparse_kernels.h"

namespace xhal::cpu {
namespace {

// Off-diagonal entries of a row are contiguous: a row walked ascending
// (lower) keeps its diagonal last, one walked descending keeps it first.
template <typename I, bool kPermuted, bool kUnit, bool kAscending>
struct RowSolver {
  const I* row_ptr;
  const I* col;
  const I* perm;
  const float* values;
  Columns b, x;

  float value(int64_t e) const { return kPermuted ? values[perm[e]] : values[e]; }

  template <typename Wait>
  [[gnu::always_inline]] void operator()(int64_t k, Wait& wait) const {
    int64_t rb = row_ptr[k], re = row_ptr[k + 1];
    int64_t diag = -1;
    if constexpr (kAscending) {
      if (re > rb && static_cast<int64_t>(col[re - 1]) == k) diag = --re;
    } else {
      if (re > rb && static_cast<int64_t>(col[rb]) == k) diag = rb++;
    }
    for (int64_t e = rb; e < re; ++e) wait(static_cast<int64_t>(col[e]));
    // A stored diagonal is checked present by the core; a missing one reads
    // as the 0 it is, giving the IEEE quotient.
    const float d = kUnit ? 1.0f : (diag >= 0 ? value(diag) : 0.0f);
    if (x.k != 1 || x.row_stride != 1 || b.row_stride != 1) {
      solve_columns(k, rb, re, d);
      return;
    }
    // One contiguous right-hand side, the common case: kept small so that
    // the rows of a walk overlap in the core.
    const float* xv = x.data;
    const float s = segsum(re - rb, [&](int64_t i) { return value(rb + i) * xv[col[rb + i]]; });
    const float r = b.data[k] - s;
    x.data[k] = kUnit ? r : r / d;
  }

  [[gnu::noinline]] void solve_columns(int64_t k, int64_t rb, int64_t re, float d) const {
    for (int64_t c = 0; c < x.k; ++c) {
      const float* xc = x.data + c * x.col_stride;
      const float s = segsum(re - rb, [&](int64_t i) {
        const int64_t e = rb + i;
        return value(e) * xc[static_cast<int64_t>(col[e]) * x.row_stride];
      });
      const float r = b.at(k, c) - s;
      x.at(k, c) = kUnit ? r : r / d;
    }
  }
};

struct NoWait {
  void operator()(int64_t) const {}
};

inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Before a row reads x[j], waits until row j is solved (its own rows are
// always done: a member walks them in the solve's order).
struct WaitForRow {
  uint8_t* done;

  bool is_done(int64_t j) const {
    return std::atomic_ref<uint8_t>(done[j]).load(std::memory_order_acquire) != 0;
  }
  void operator()(int64_t j) const {
    if (is_done(j)) return;
    for (int spins = 0; !is_done(j); ++spins) {
      if (spins < 4096)
        spin_pause();
      else
        std::this_thread::yield();  // another process may hold the core
    }
  }
};

// Each member walks the rows dealt to it, flagging each row when solved.
template <typename I, typename Row, typename Alone>
void run_dealt(const SolveSchedule<I>& sched, int64_t n, const Row& row, const Alone& walk_alone) {
  // Done flags of this call (scratch of the calling thread, so concurrent
  // solves on one matrix do not meet).
  uint8_t* done = call_scratch<uint8_t>(static_cast<size_t>(n));
  std::fill(done, done + n, uint8_t{0});
  const I* rows = sched.rows.data();
#pragma omp parallel num_threads(sched.team)
  {
    const int self = omp_get_thread_num();
    if (omp_get_num_threads() == sched.team) {
      WaitForRow wait{done};
      for (int64_t i = sched.first[self]; i < sched.first[self + 1]; ++i) {
        const int64_t k = rows[i];
        row(k, wait);
        std::atomic_ref<uint8_t>(done[k]).store(1, std::memory_order_release);
      }
    } else if (self == 0) {  // a smaller team than dealt for: one thread, in order
      walk_alone();
    }
  }
}

template <typename I, typename Row>
void run_rows(const SolveSchedule<I>& sched, int64_t n, bool ascending, const Row& row,
              int64_t work) {
  auto walk_alone = [&] {
    NoWait none;
    if (ascending)
      for (int64_t k = 0; k < n; ++k) row(k, none);
    else
      for (int64_t k = n - 1; k >= 0; --k) row(k, none);
  };
  if (sched.team < 2) {
    walk_alone();
    return;
  }
  run_chosen(sched.choice, work, [&](int threads) {
    if (threads < sched.team)
      walk_alone();
    else
      run_dealt(sched, n, row, walk_alone);
  });
}

template <typename I, bool kPermuted, bool kUnit, bool kAscending>
void solve_rows(const CsrPattern<I>& p, const SolveSchedule<I>& sched, const float* values,
                const Columns& b, const Columns& x) {
  const int64_t work = (static_cast<int64_t>(p.row_ptr[p.rows]) + p.rows) * x.k;
  const RowSolver<I, kPermuted, kUnit, kAscending> row{p.row_ptr.data(), p.col_idx.data(),
                                                       p.perm.data(), values, b, x};
  run_rows(sched, p.rows, kAscending, row, work);
}

template <typename I, bool kPermuted>
void solve_pattern(const CsrPattern<I>& p, const SolveSchedule<I>& sched, const float* values,
                   bool ascending, bool unit, const Columns& b, const Columns& x) {
  if (unit) {
    if (ascending)
      solve_rows<I, kPermuted, true, true>(p, sched, values, b, x);
    else
      solve_rows<I, kPermuted, true, false>(p, sched, values, b, x);
  } else {
    if (ascending)
      solve_rows<I, kPermuted, false, true>(p, sched, values, b, x);
    else
      solve_rows<I, kPermuted, false, false>(p, sched, values, b, x);
  }
}

// segsum of m <= 4 terms without a branch on m (a column's count varies
// from row to row in a tree, and a mispredicted loop exit costs more than
// the adds): the missing terms are +0, which leaves a running sum from +0
// bit for bit unchanged (such a sum is never -0, and x + +0 == x otherwise).
inline float sum_up_to_4(const float* t, int64_t m) {
  static const float kZeros[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const float* src = m > 0 ? t : kZeros;
  const int64_t last = m > 0 ? m - 1 : 0;
  float s = 0.0f;
  for (int64_t i = 0; i < 4; ++i) {
    const uint32_t keep = i < m ? 0xffffffffu : 0u;
    s = s + std::bit_cast<float>(std::bit_cast<uint32_t>(src[std::min(i, last)]) & keep);
  }
  return s;
}

// op(A) = A^T with one contiguous right-hand side, walking A's rows: row k
// solves x[k] from the terms its column holds, then writes each of its own
// off-diagonal terms A[k,j] * x[k] into the slot of that entry in column j
// (transposed order). Column j then reads its terms in ascending row order,
// the canonical order, while A's values stream in row order instead of
// being gathered through t_perm.
template <typename I, bool kUnit, bool kAscending>
struct TransposedRowSolver {
  const I* row_ptr;    // A
  const I* col;
  const I* t_row_ptr;  // A^T
  const I* t_col;
  const I* t_pos;
  const float* values;
  float* terms;        // [nnz], in transposed order
  const float* b;
  float* x;

  template <typename Wait>
  [[gnu::always_inline]] void operator()(int64_t k, Wait& wait) const {
    // Column k of A lists rows ascending; op(A) = A^T is walked ascending
    // when A is upper (diagonal last in the column), descending when lower.
    int64_t tb = t_row_ptr[k], te = t_row_ptr[k + 1];
    int64_t rb = row_ptr[k], re = row_ptr[k + 1];
    int64_t diag = -1;
    if constexpr (kAscending) {
      if (te > tb && static_cast<int64_t>(t_col[te - 1]) == k) --te;
      if (re > rb && static_cast<int64_t>(col[rb]) == k) diag = rb++;
    } else {
      if (te > tb && static_cast<int64_t>(t_col[tb]) == k) ++tb;
      if (re > rb && static_cast<int64_t>(col[re - 1]) == k) diag = --re;
    }
    for (int64_t q = tb; q < te; ++q) wait(static_cast<int64_t>(t_col[q]));
    const float d = kUnit ? 1.0f : (diag >= 0 ? values[diag] : 0.0f);
    const float s = te - tb <= 4 ? sum_up_to_4(terms + tb, te - tb)
                                 : segsum(te - tb, [&](int64_t i) { return terms[tb + i]; });
    const float r = b[k] - s;
    const float xk = kUnit ? r : r / d;
    x[k] = xk;
    for (int64_t e = rb; e < re; ++e) terms[t_pos[e]] = values[e] * xk;
  }
};

template <typename I, bool kUnit, bool kAscending>
void solve_transposed_rows(const CsrPatterns<I>& ps, const SolveSchedule<I>& sched,
                           const float* values, float* terms, const Columns& b, const Columns& x) {
  const int64_t n = ps.a.rows;
  const int64_t work = static_cast<int64_t>(ps.a.row_ptr[n]) + n;
  const TransposedRowSolver<I, kUnit, kAscending> row{
      ps.a.row_ptr.data(), ps.a.col_idx.data(), ps.at.row_ptr.data(), ps.at.col_idx.data(),
      ps.t_pos.data(),     values,              terms,                b.data, x.data};
  run_rows(sched, n, kAscending, row, work);
}

template <typename I>
void solve_transposed_vector(const CsrPatterns<I>& ps, const SolveSchedule<I>& sched,
                             const float* values, bool ascending, bool unit, const Columns& b,
                             const Columns& x) {
  float* terms = call_scratch<float>(static_cast<size_t>(ps.a.row_ptr[ps.a.rows]));
  if (unit) {
    if (ascending)
      solve_transposed_rows<I, true, true>(ps, sched, values, terms, b, x);
    else
      solve_transposed_rows<I, true, false>(ps, sched, values, terms, b, x);
  } else {
    if (ascending)
      solve_transposed_rows<I, false, true>(ps, sched, values, terms, b, x);
    else
      solve_transposed_rows<I, false, false>(ps, sched, values, terms, b, x);
  }
}

const char* triangle_name(xhal_triangle_t t) {
  return t == XHAL_TRIANGLE_LOWER ? "lower" : "upper";
}

// Solves op(A) x = b; `triangle` names where A's entries lie.
xhal_status_t solve(const CsrMatrix& m, xhal_transpose_t trans, xhal_triangle_t triangle,
                    xhal_diagonal_t diagonal, const Columns& b, const Columns& x) {
  // op(A) lower walks rows ascending: A lower untransposed, or A upper transposed.
  const bool transposed = trans == XHAL_TRANSPOSE;
  const bool ascending = (triangle == XHAL_TRIANGLE_LOWER) != transposed;
  const bool unit = diagonal == XHAL_DIAGONAL_UNIT;
  const float* values = m.value_data();
  return with_patterns(m, [&](const auto& ps) -> xhal_status_t {
    const auto& p = transposed ? ps.at : ps.a;
    const auto& sched = ascending ? p.ascending : p.descending;
    if (!sched.built) {
      char msg[200];
      std::snprintf(msg, sizeof msg,
                    "cpu plugin: csr_solve: argument 'triangle' is %s but the %lld x %lld "
                    "pattern does not lie in that triangle",
                    triangle_name(triangle), static_cast<long long>(m.rows),
                    static_cast<long long>(m.cols));
      set_error(msg);
      return XHAL_INVALID_STRUCTURE;
    }
    if (x.n == 0 || x.k == 0) return XHAL_OK;
    using I = typename std::remove_cvref_t<decltype(p.row_ptr)>::value_type;
    const bool vectors = x.k == 1 && x.row_stride == 1 && b.row_stride == 1;
    if (transposed && vectors)
      solve_transposed_vector(ps, sched, values, ascending, unit, b, x);
    else if (transposed)
      solve_pattern<I, true>(p, sched, values, ascending, unit, b, x);
    else
      solve_pattern<I, false>(p, sched, values, ascending, unit, b, x);
    return XHAL_OK;
  });
}

// ga[e] = -segsum_c(gb[i,c] * x[j,c]) on A's pattern; (i, j) = (row, col)
// for op(A) = A and (col, row) for A^T. Unit diagonal entries get +0.
// Rows [first, last) of the pattern gradient.
template <typename I, bool kTransposed, bool kVectors>
void gradient_rows(const CsrPattern<I>& p, bool unit, const Columns& x, const Columns& gb,
                   float* ga, int64_t ga_stride, int64_t first, int64_t last) {
  const I* row_ptr = p.row_ptr.data();
  const I* col = p.col_idx.data();
  for (int64_t r = first; r < last; ++r) {
    for (int64_t e = row_ptr[r]; e < static_cast<int64_t>(row_ptr[r + 1]); ++e) {
      const int64_t cidx = col[e];
      const int64_t i = kTransposed ? cidx : r;
      const int64_t j = kTransposed ? r : cidx;
      float g;
      if constexpr (kVectors)  // segsum of one term: +0 + gb[i] * x[j]
        g = -(0.0f + gb.data[i] * x.data[j]);
      else
        g = -segsum(x.k, [&](int64_t c) { return gb.at(i, c) * x.at(j, c); });
      ga[e * ga_stride] = unit && cidx == r ? 0.0f : g;
    }
  }
}

// ga[e] = -segsum_c(gb[i,c] * x[j,c]) on A's pattern; (i, j) = (row, col)
// for op(A) = A and (col, row) for A^T. Unit diagonal entries get +0.
template <typename I>
void pattern_gradient(const CsrPattern<I>& p, bool transposed, bool unit, const Columns& x,
                      const Columns& gb, float* ga, int64_t ga_stride, TeamChoice& choice) {
  const int64_t rows = p.rows;
  const int64_t work = (static_cast<int64_t>(p.row_ptr[rows]) + rows) * x.k;
  const bool vectors = x.k == 1 && x.row_stride == 1 && gb.row_stride == 1;
  run_chosen(choice, work, [&](int threads) {
#pragma omp parallel num_threads(threads)
    {
      int64_t first = 0, last = 0;
      balanced_rows(p.row_ptr, rows, omp_get_thread_num(), omp_get_num_threads(), &first, &last);
      if (vectors && transposed)
        gradient_rows<I, true, true>(p, unit, x, gb, ga, ga_stride, first, last);
      else if (vectors)
        gradient_rows<I, false, true>(p, unit, x, gb, ga, ga_stride, first, last);
      else if (transposed)
        gradient_rows<I, true, false>(p, unit, x, gb, ga, ga_stride, first, last);
      else
        gradient_rows<I, false, false>(p, unit, x, gb, ga, ga_stride, first, last);
    }
  });
}

}  // namespace

xhal_status_t csr_solve(void* device, void* a, xhal_transpose_t trans, xhal_triangle_t triangle,
                        xhal_diagonal_t diagonal, const xhal_plugin_tensor_t* b,
                        const xhal_plugin_tensor_t* x) {
  count_launch(device);
  return guard_allocation("csr_solve", [&] {
    return solve(*static_cast<const CsrMatrix*>(a), trans, triangle, diagonal, columns_of(b),
                 columns_of(x));
  });
}

xhal_status_t csr_solve_backward(void* device, void* a, xhal_transpose_t trans,
                                 xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                                 const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* dx,
                                 const xhal_plugin_tensor_t* gb, const xhal_plugin_tensor_t* ga) {
  count_launch(device);
  const auto& m = *static_cast<const CsrMatrix*>(a);
  const xhal_transpose_t flipped = trans == XHAL_TRANSPOSE ? XHAL_TRANSPOSE_NONE : XHAL_TRANSPOSE;
  const Columns gbv = columns_of(gb);
  const xhal_status_t st = guard_allocation("csr_solve_backward", [&] {
    return solve(m, flipped, triangle, diagonal, columns_of(dx), gbv);
  });
  if (st != XHAL_OK || ga == nullptr || m.nnz == 0) return st;
  float* gav = tensor_data<float>(ga);
  const int64_t ga_stride = ga->strides[0];
  const Columns xv = columns_of(x);
  const bool transposed = trans == XHAL_TRANSPOSE;
  const bool unit = diagonal == XHAL_DIAGONAL_UNIT;
  with_patterns(m, [&](const auto& ps) {
    pattern_gradient(ps.a, transposed, unit, xv, gbv, gav, ga_stride, m.gradient_choice);
  });
  return XHAL_OK;
}

}  // namespace xhal::cpu
