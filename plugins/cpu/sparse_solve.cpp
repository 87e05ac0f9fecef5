// csr_solve. A row k of op(A) gives
//   x[k] = (b[k] - s) / op(A)[k,k]   (unit: b[k] - s),
// s the segment sum of its off-diagonal terms in ascending column order.
// Rows are dealt to the team at creation and each member waits only for the
// rows of others it reads (sparse_matrix.h, SolveSchedule); the bits do not
// depend on the schedule. f32 and f64 values run the same code (T).
#include "sparse_solve.h"
#include "op_registry.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <type_traits>

#include "sparse_solve_schedule.h"

namespace xhal::cpu {
namespace {

// The unsigned integer of T's width, for masking a term to +0.
template <typename T>
using BitsOf = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

// segsum of m <= 4 terms without a branch on m (a column's count varies
// from row to row in a tree, and a mispredicted loop exit costs more than
// the adds): the missing terms are +0, which leaves a running sum from +0
// bit for bit unchanged (such a sum is never -0, and x + +0 == x otherwise).
template <typename T>
inline T sum_up_to_4(const T* t, int64_t m) {
  using Bits = BitsOf<T>;
  static const T kZeros[4] = {T(0), T(0), T(0), T(0)};
  const T* src = m > 0 ? t : kZeros;
  const int64_t last = m > 0 ? m - 1 : 0;
  T s = T(0);
  for (int64_t i = 0; i < 4; ++i) {
    const Bits keep = i < m ? ~Bits{0} : Bits{0};
    s = s + std::bit_cast<T>(std::bit_cast<Bits>(src[std::min(i, last)]) & keep);
  }
  return s;
}

// Off-diagonal entries of a row are contiguous: a row walked ascending
// (lower) keeps its diagonal last, one walked descending keeps it first.
// The same, for the terms value[e] * x[col[e]] of e in [rb, rb + m): the
// missing ones read the last entry and are masked to +0.
template <typename T, typename I>
[[gnu::always_inline]] inline T sum_products_up_to_4(const T* values, const I* col, const T* x,
                                                     int64_t rb, int64_t m) {
  using Bits = BitsOf<T>;
  const int64_t last = m > 0 ? rb + m - 1 : -1;
  T s = T(0);
  for (int64_t i = 0; i < 4; ++i) {
    const int64_t e = std::min(rb + i, last);
    const T t = e >= 0 ? values[e] * x[col[e]] : T(0);
    const Bits keep = i < m ? ~Bits{0} : Bits{0};
    s = s + std::bit_cast<T>(std::bit_cast<Bits>(t) & keep);
  }
  return s;
}

// kShort: rows of varying, mostly short length (A^T of a tree, whose
// column counts vary from row to row) sum up to 4 terms without a branch.
template <typename T, typename I, bool kPermuted, bool kUnit, bool kAscending, bool kVector,
          bool kShort = false>
struct RowSolver {
  const I* row_ptr;
  const I* col;
  const I* perm;
  const T* values;
  Columns<T> b, x;
  bool every_diagonal;  // CsrPattern::every_diagonal

  T value(int64_t e) const { return kPermuted ? values[perm[e]] : values[e]; }

  // One thread, one contiguous right-hand side: the row formula over the
  // rows in order, with every pointer in a local. Where every row stores
  // its diagonal, at the end of an ascending row or the start of a
  // descending one (the triangle the schedule was built for), the rows skip
  // the search for it (xhal-bench's river A on one thread: 1.91-2.06 ->
  // 1.60-1.83 ms, docs/performance.md "CPU-S5").
  void walk_alone(int64_t n) const requires kVector {
    const RowSolver local = *this;
    if (every_diagonal) {
      if constexpr (!kShort) {
        local.walk_with_diagonals(n);
        return;
      }
      for (int64_t step = 0; step < n; ++step)
        local.row_with_diagonal(kAscending ? step : n - 1 - step);
      return;
    }
    NoWait none;
    for (int64_t step = 0; step < n; ++step) local(kAscending ? step : n - 1 - step, none);
  }

  // The walk above with every pointer in a register and a row of one
  // off-diagonal term (every row of a tree but its root) summed on its own:
  // the general row's sum, through a capturing lambda, kept the solver's
  // fields on the stack and stored them again for every row.
  void walk_with_diagonals(int64_t n) const requires kVector {
    const I* const rp = row_ptr;
    const I* const cl = col;
    const T* const bv = b.data;
    T* const xv = x.data;
    for (int64_t step = 0; step < n; ++step) {
      const int64_t k = kAscending ? step : n - 1 - step;
      int64_t rb = rp[k], re = rp[k + 1];
      const int64_t diag = kAscending ? --re : rb++;
      const T d = kUnit ? T(1) : value(diag);
      T s = T(0);
      if (re - rb == 1) {
        s = s + value(rb) * xv[cl[rb]];
      } else if (re - rb <= kSegsumChunk) [[likely]] {
        for (int64_t e = rb; e < re; ++e) s = s + value(e) * xv[cl[e]];
      } else {
        s = sum_row(rb, re, xv);
      }
      const T r = bv[k] - s;
      xv[k] = kUnit ? r : r / d;
    }
  }

  [[gnu::noinline]] T sum_row(int64_t rb, int64_t re, const T* xv) const {
    return segsum(re - rb, [&](int64_t i) { return value(rb + i) * xv[col[rb + i]]; });
  }

  [[gnu::always_inline]] void row_with_diagonal(int64_t k) const requires kVector {
    int64_t rb = row_ptr[k], re = row_ptr[k + 1];
    const int64_t diag = kAscending ? --re : rb++;
    row_sum_and_solve(k, rb, re, kUnit ? T(1) : value(diag));
  }

  [[gnu::always_inline]] void row_sum_and_solve(int64_t k, int64_t rb, int64_t re,
                                                T d) const requires kVector {
    const T* xv = x.data;
    T s;
    if (kShort && !kPermuted && re - rb <= 4)
      s = sum_products_up_to_4(values, col, xv, rb, re - rb);
    else s = segsum(re - rb, [&](int64_t i) { return value(rb + i) * xv[col[rb + i]]; });
    const T r = b.data[k] - s;
    x.data[k] = kUnit ? r : r / d;
  }

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
    const T d = kUnit ? T(1) : (diag >= 0 ? value(diag) : T(0));
    if constexpr (kVector) {
      // One contiguous right-hand side, the common case: kept small so that
      // the rows of a walk overlap in the core.
      row_sum_and_solve(k, rb, re, d);
    } else {
      solve_columns(k, rb, re, d);
    }
  }

  [[gnu::noinline]] void solve_columns(int64_t k, int64_t rb, int64_t re, T d) const {
    for (int64_t c = 0; c < x.k; ++c) {
      const T* xc = x.data + c * x.col_stride;
      const T s = segsum(re - rb, [&](int64_t i) {
        const int64_t e = rb + i;
        return value(e) * xc[static_cast<int64_t>(col[e]) * x.row_stride];
      });
      const T r = b.at(k, c) - s;
      x.at(k, c) = kUnit ? r : r / d;
    }
  }
};

template <typename T, typename I, bool kPermuted, bool kUnit, bool kAscending, bool kShort>
void solve_rows(const CsrPattern<I>& p, const SolveSchedule<I>& sched, const T* values,
                const Columns<T>& b, const Columns<T>& x) {
  const int64_t work = (static_cast<int64_t>(p.row_ptr[p.rows]) + p.rows) * x.k;
  if (x.k == 1 && x.row_stride == 1 && b.row_stride == 1) {
    const RowSolver<T, I, kPermuted, kUnit, kAscending, true, kShort> row{
        p.row_ptr.data(), p.col_idx.data(), p.perm.data(), values, b, x, p.every_diagonal};
    run_rows(sched, p.rows, kAscending, row, work);
  } else {
    const RowSolver<T, I, kPermuted, kUnit, kAscending, false> row{
        p.row_ptr.data(), p.col_idx.data(), p.perm.data(), values, b, x, p.every_diagonal};
    run_rows(sched, p.rows, kAscending, row, work);
  }
}

template <typename T, typename I, bool kPermuted, bool kShort = false>
void solve_pattern(const CsrPattern<I>& p, const SolveSchedule<I>& sched, const T* values,
                   bool ascending, bool unit, const Columns<T>& b, const Columns<T>& x) {
  if (unit) {
    if (ascending) solve_rows<T, I, kPermuted, true, true, kShort>(p, sched, values, b, x);
    else solve_rows<T, I, kPermuted, true, false, kShort>(p, sched, values, b, x);
  } else {
    if (ascending) solve_rows<T, I, kPermuted, false, true, kShort>(p, sched, values, b, x);
    else solve_rows<T, I, kPermuted, false, false, kShort>(p, sched, values, b, x);
  }
}

// op(A) = A^T with one contiguous right-hand side, walking A's rows: row k
// solves x[k] from the terms its column holds, then writes each of its own
// off-diagonal terms A[k,j] * x[k] into the slot of that entry in column j
// (transposed order). Column j then reads its terms in ascending row order,
// the canonical order, while A's values stream in row order instead of
// being gathered through t_perm.
template <typename T, typename I, bool kUnit, bool kAscending>
struct TransposedRowSolver {
  const I* row_ptr;  // A
  const I* col;
  const I* t_row_ptr;  // A^T
  const I* t_col;
  const I* t_pos;
  const uint8_t* has_diagonal;
  const T* values;
  T* terms;  // [nnz], in transposed order
  const T* b;
  T* x;

  template <typename Wait>
  [[gnu::always_inline]] void operator()(int64_t k, Wait& wait) const {
    // Column k of A lists rows ascending; op(A) = A^T is walked ascending
    // when A is upper (diagonal last in the column), descending when lower.
    int64_t tb = t_row_ptr[k], te = t_row_ptr[k + 1];
    int64_t rb = row_ptr[k], re = row_ptr[k + 1];
    // A stored diagonal ends row k on the side the walk comes from and
    // column k on the other; flagged at creation, so neither's indices are
    // read here (t_col only by a member that waits).
    int64_t diag = -1;
    if (has_diagonal[k]) {
      if constexpr (kAscending) {
        diag = rb++;
        --te;
      } else {
        diag = --re;
        ++tb;
      }
    }
    for (int64_t q = tb; q < te; ++q) wait(static_cast<int64_t>(t_col[q]));
    const T d = kUnit ? T(1) : (diag >= 0 ? values[diag] : T(0));
    const T s = te - tb <= 4 ? sum_up_to_4(terms + tb, te - tb)
                             : segsum(te - tb, [&](int64_t i) { return terms[tb + i]; });
    const T r = b[k] - s;
    const T xk = kUnit ? r : r / d;
    x[k] = xk;
    for (int64_t e = rb; e < re; ++e) terms[t_pos[e]] = values[e] * xk;
  }
};

// The same walk, whose one-thread form pushes instead (CsrPatterns::
// push_transposed): row k takes its column's sum from acc[k], solves x[k],
// then adds each of its own off-diagonal terms A[k,j] * x[k] into acc[j].
// A column of at most kPushMaxTerms terms gets them in walking order, which
// gives the canonical bits (two terms from +0 commute); a pulled column's
// terms each land in a slot of their own, in ascending row order
// (CsrPatterns::push_target), and are summed in canonical order when the
// walk reaches the column (a term of -0 stored as +0 + -0 = +0 sums to the
// same bits: a canonical sum starts from +0). acc is zero between calls:
// each row clears the slots it reads.
template <typename T, typename I, bool kUnit, bool kAscending>
struct PushRowSolver : TransposedRowSolver<T, I, kUnit, kAscending> {
  static_assert(kPushMaxTerms == 2, "only two terms from +0 commute");
  const uint8_t* flags;  // push_flags
  int64_t slot_mask;     // column j's sum is acc[j & slot_mask]
  const I* target;       // push_target
  const I* pull_first;
  T* acc;

  void walk_alone(int64_t n) const {
    const I* row_ptr = this->row_ptr;
    const I* target = this->target;
    const T* values = this->values;
    const T* b = this->b;
    const uint8_t* flags = this->flags;
    const int64_t slot_mask = this->slot_mask;
    T* acc = this->acc;
    T* x = this->x;
    for (int64_t step = 0; step < n; ++step) {
      const int64_t k = kAscending ? step : n - 1 - step;
      int64_t rb = row_ptr[k], re = row_ptr[k + 1];
      const uint8_t f = flags[k];
      int64_t diag = -1;
      if (f & kPushDiagonal) diag = kAscending ? rb++ : --re;
      T& slot = acc[k & slot_mask];
      T s = slot;
      slot = T(0);
      if (f & kPushPulled) [[unlikely]]
        s = pulled_sum(k);
      const T d = kUnit ? T(1) : (diag >= 0 ? values[diag] : T(0));
      const T r = b[k] - s;
      const T xk = kUnit ? r : r / d;
      x[k] = xk;
      for (int64_t e = rb; e < re; ++e) {
        T& a = acc[static_cast<int64_t>(target[e])];
        a = a + values[e] * xk;
      }
    }
  }

  // Column k's sum of its m > kPushMaxTerms terms in canonical order, from
  // their slots, which it clears.
  [[gnu::always_inline]] T pulled_sum(int64_t k) const {
    const int64_t p0 = pull_first[k], m = pull_first[k + 1] - p0;
    T* t = acc + p0;
    if (m <= 4) [[likely]] {
      // 3 or 4 terms without a branch on which: a missing fourth is +0,
      // which leaves the sum's bits unchanged (sum_up_to_4).
      using Bits = BitsOf<T>;
      const T s = ((T(0) + t[0]) + t[1]) + t[2];
      const Bits keep = m == 4 ? ~Bits{0} : Bits{0};
      const T last = t[m - 1];
      t[0] = T(0);
      t[1] = T(0);
      t[2] = T(0);
      t[m - 1] = T(0);
      return s + std::bit_cast<T>(std::bit_cast<Bits>(last) & keep);
    }
    return long_pulled_sum(t, m);
  }

  [[gnu::noinline]] static T long_pulled_sum(T* t, int64_t m) {
    const T s = segsum(m, [&](int64_t i) { return t[i]; });
    std::fill(t, t + m, T(0));
    return s;
  }
};

// A thread's accumulators for PushRowSolver, all zero between uses.
template <typename T>
inline T* zeroed_scratch(size_t count) {
  thread_local std::vector<T> acc;
  if (acc.size() < count) acc.resize(count, T(0));
  return acc.data();
}

template <typename T, typename I, bool kUnit, bool kAscending>
void solve_transposed_rows(const CsrPatterns<I>& ps, const SolveSchedule<I>& sched, const T* values,
                           T* terms, const Columns<T>& b, const Columns<T>& x) {
  const int64_t n = ps.a.rows;
  const int64_t work = static_cast<int64_t>(ps.a.row_ptr[n]) + n;
  const TransposedRowSolver<T, I, kUnit, kAscending> row{ps.a.row_ptr.data(),
                                                         ps.a.col_idx.data(),
                                                         ps.at.row_ptr.data(),
                                                         ps.at.col_idx.data(),
                                                         ps.t_pos.data(),
                                                         ps.has_diagonal.data(),
                                                         values,
                                                         terms,
                                                         b.data,
                                                         x.data};
  if (ps.push_transposed) {
    const PushRowSolver<T, I, kUnit, kAscending> push{
        row,
        ps.push_flags.data(),
        ps.push_slot_mask,
        ps.push_target.data(),
        ps.pull_first.data(),
        zeroed_scratch<T>(static_cast<size_t>(ps.push_slots))};
    run_rows(sched, n, kAscending, push, work);
  } else {
    run_rows(sched, n, kAscending, row, work);
  }
}

template <typename T, typename I>
void solve_transposed_vector(const CsrPatterns<I>& ps, const SolveSchedule<I>& sched,
                             const T* values, bool ascending, bool unit, const Columns<T>& b,
                             const Columns<T>& x) {
  T* terms = call_scratch<T>(static_cast<size_t>(ps.a.row_ptr[ps.a.rows]));
  if (unit) {
    if (ascending) solve_transposed_rows<T, I, true, true>(ps, sched, values, terms, b, x);
    else solve_transposed_rows<T, I, true, false>(ps, sched, values, terms, b, x);
  } else {
    if (ascending) solve_transposed_rows<T, I, false, true>(ps, sched, values, terms, b, x);
    else solve_transposed_rows<T, I, false, false>(ps, sched, values, terms, b, x);
  }
}

// A's values in A^T's order if they are current (TransposedValues); null
// when they are being seen for the first time at this version (the caller
// then gathers through t_perm). The caller holds c.mutex.
template <typename T, typename I>
const T* current_transposed_values(const CsrMatrix& m, const CsrPatterns<I>& ps,
                                   TransposedValues& c) {
  const uint64_t version = m.values->version.load(std::memory_order_relaxed);
  std::vector<T>& transposed = c.of<T>();
  if (c.built && c.built_version == version) return transposed.data();
  if (c.seen_version != version) {
    c.seen_version = version;
    return nullptr;
  }
  // The second call in a row at this version: make the copy.
  c.built = false;
  const T* values = m.value_data<T>();
  const auto nnz = static_cast<size_t>(m.nnz);
  transposed.resize(nnz);
  const I* perm = ps.at.perm.data();
  for (size_t q = 0; q < nnz; ++q) transposed[q] = values[static_cast<size_t>(perm[q])];
  c.built = true;
  c.built_version = version;
  return transposed.data();
}

const char* triangle_name(xhal_triangle_t t) {
  return t == XHAL_TRIANGLE_LOWER ? "lower" : "upper";
}

}  // namespace

// Solves op(A) x = b; `triangle` names where A's entries lie.
template <typename T>
xhal_status_t solve(const CsrMatrix& m, xhal_transpose_t trans, xhal_triangle_t triangle,
                    xhal_diagonal_t diagonal, const Columns<T>& b, const Columns<T>& x) {
  // op(A) lower walks rows ascending: A lower untransposed, or A upper transposed.
  const bool transposed = trans == XHAL_TRANSPOSE;
  const bool ascending = (triangle == XHAL_TRIANGLE_LOWER) != transposed;
  const bool unit = diagonal == XHAL_DIAGONAL_UNIT;
  const T* values = m.value_data<T>();
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
    // A pattern that pushes (CsrPatterns::push_transposed) needs no copy.
    if (transposed && values != nullptr && m.nnz > 0 && !(vectors && ps.push_transposed)) {
      // A^T's rows in order with A's values transposed once (TransposedValues);
      // a concurrent solve on the same matrix takes the gather path instead.
      TransposedValues& cache = m.transposed_values;
      std::unique_lock<std::mutex> lock(cache.mutex, std::try_to_lock);
      const T* tvalues = nullptr;
      if (lock.owns_lock()) {
        try {
          tvalues = current_transposed_values<T>(m, ps, cache);
        } catch (const std::bad_alloc&) {  // no room for the copy: gather instead
          cache.built = false;
          std::vector<T>().swap(cache.of<T>());
        }
      }
      if (tvalues != nullptr) {
        solve_pattern<T, I, false, true>(p, sched, tvalues, ascending, unit, b, x);
        return XHAL_OK;
      }
    }
    if (transposed && vectors) solve_transposed_vector(ps, sched, values, ascending, unit, b, x);
    else if (transposed) solve_pattern<T, I, true>(p, sched, values, ascending, unit, b, x);
    else solve_pattern<T, I, false>(p, sched, values, ascending, unit, b, x);
    return XHAL_OK;
  });
}

template xhal_status_t solve(const CsrMatrix&, xhal_transpose_t, xhal_triangle_t, xhal_diagonal_t,
                             const Columns<float>&, const Columns<float>&);
template xhal_status_t solve(const CsrMatrix&, xhal_transpose_t, xhal_triangle_t, xhal_diagonal_t,
                             const Columns<double>&, const Columns<double>&);

xhal_status_t csr_solve(void* device, void* a, xhal_transpose_t trans, xhal_triangle_t triangle,
                        xhal_diagonal_t diagonal, const xhal_plugin_tensor_t* b,
                        const xhal_plugin_tensor_t* x) {
  count_launch(device);
  const auto& m = *static_cast<const CsrMatrix*>(a);
  return guard_allocation("csr_solve", [&] {
    return with_value_type(m, [&](auto zero) {
      using T = decltype(zero);
      return solve(m, trans, triangle, diagonal, columns_of<T>(b), columns_of<T>(x));
    });
  });
}

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(XHAL_OP_CSR_SOLVE, kF32F64Dtypes, api.csr_solve = csr_solve);

}  // namespace xhal::cpu
