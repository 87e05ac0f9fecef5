// spmv / spmm: y = (alpha * t) + (beta * y) with t the segment sum of a
// row of op(A) times x (docs/semantics.md, "Sparse (CSR)"). op(A) = A^T walks
// the transposed pattern, its values fetched through the entry permutation,
// so every output has one owner: no atomics, the same bits on any team size.
// T is the matrix's value type: f64 runs the same sequence in binary64, alpha
// and beta widened exactly (docs/semantics.md 7.3); f16/bf16 run the f32
// sequence on widened copies and narrow each output once (7.2).
#include <omp.h>

#include <algorithm>
#include <vector>

#include "narrow.h"
#include "op_registry.h"
#include "sparse_kernels.h"

namespace xhal::cpu {
namespace {

// Rows [first, last) of y = (alpha * op(A) x) + (beta * y).
template <typename T, typename I, bool kPermuted>
void multiply_rows(const CsrPattern<I>& p, const T* values, T alpha, const Columns<T>& x, T beta,
                   const Columns<T>& y, int64_t first, int64_t last) {
  const I* row_ptr = p.row_ptr.data();
  const I* col = p.col_idx.data();
  const I* perm = p.perm.data();
  auto value = [&](int64_t e) { return kPermuted ? values[perm[e]] : values[e]; };
  if (y.k == 1 && x.row_stride == 1 && y.row_stride == 1) {  // plain vectors: the common case
    const T* xv = x.data;
    T* yv = y.data;
    for (int64_t r = first; r < last; ++r) {
      const int64_t rb = row_ptr[r];
      const int64_t m = static_cast<int64_t>(row_ptr[r + 1]) - rb;
      const T t = segsum(m, [&](int64_t i) { return value(rb + i) * xv[col[rb + i]]; });
      yv[r] = beta == T(0) ? alpha * t : (alpha * t) + (beta * yv[r]);
    }
    return;
  }
  for (int64_t r = first; r < last; ++r) {
    const int64_t rb = row_ptr[r];
    const int64_t m = static_cast<int64_t>(row_ptr[r + 1]) - rb;
    for (int64_t c = 0; c < y.k; ++c) {
      const T* xc = x.data + c * x.col_stride;
      const T t = segsum(m, [&](int64_t i) {
        return value(rb + i) * xc[static_cast<int64_t>(col[rb + i]) * x.row_stride];
      });
      T& out = y.at(r, c);
      out = beta == T(0) ? alpha * t : (alpha * t) + (beta * out);
    }
  }
}

template <typename T, typename I, bool kPermuted>
void multiply(const CsrPattern<I>& p, const T* values, T alpha, const Columns<T>& x, T beta,
              const Columns<T>& y, TeamChoice& choice) {
  const int64_t rows = p.rows;
  const int64_t work = (static_cast<int64_t>(p.row_ptr[rows]) + rows) * y.k;
  run_chosen(choice, work, [&](int threads) {
#pragma omp parallel num_threads(threads)
    {
      int64_t first = 0, last = 0;
      balanced_rows(p.row_ptr, rows, omp_get_thread_num(), omp_get_num_threads(), &first, &last);
      multiply_rows<T, I, kPermuted>(p, values, alpha, x, beta, y, first, last);
    }
  });
}

// y = (alpha * A^T x) + (beta * y) for plain vectors, walking A's rows in
// ascending order and adding each A[i,j] * x[i] into a running sum of column
// j (from +0): its terms arrive in ascending i, so a column of at most 32
// entries is summed exactly as segsum sums it, and a longer one keeps one
// running sum per chunk of 32 (slots built at creation) and ends with the
// pairwise tree. Values and
// indices stream in order instead of being gathered through t_perm. Each
// member owns a range of columns and takes that part of every row.
template <typename T, typename I>
void multiply_transposed_by_rows(const CsrPatterns<I>& ps, const T* values, T alpha, const T* x,
                                 T beta, T* y, int threads) {
  const CsrPattern<I>& a = ps.a;
  const int64_t cols = ps.at.rows;
  const I* row_ptr = a.row_ptr.data();
  const I* col = a.col_idx.data();
  const I* slot = ps.slot.data();
  const int64_t* first_slot = ps.first_slot.data();
  T* sums = call_scratch<T>(static_cast<size_t>(first_slot[cols]));
#pragma omp parallel num_threads(threads)
  {
    const int self = omp_get_thread_num(), team = omp_get_num_threads();
    int64_t c0 = 0, c1 = 0;
    balanced_rows(ps.at.row_ptr, cols, self, team, &c0, &c1);
    for (int64_t q = first_slot[c0]; q < first_slot[c1]; ++q) sums[q] = T(0);
    const bool all_columns = c0 == 0 && c1 == cols;
    const bool presplit = team == ps.split_team;
    const I* from = presplit && self > 0 ? ps.row_split.data() + (self - 1) * a.rows : nullptr;
    const I* to = presplit && self + 1 < team ? ps.row_split.data() + self * a.rows : nullptr;
    for (int64_t i = 0; i < a.rows; ++i) {
      int64_t eb = row_ptr[i], ee = row_ptr[i + 1];
      if (presplit) {
        if (from != nullptr) eb = from[i];
        if (to != nullptr) ee = to[i];
      } else if (!all_columns) {
        const I* first = std::lower_bound(col + eb, col + ee, static_cast<I>(c0));
        ee = std::lower_bound(first, col + ee, static_cast<I>(c1)) - col;
        eb = first - col;
      }
      const T xi = x[i];
      for (int64_t e = eb; e < ee; ++e) {
        T& s = sums[slot[e]];
        s = s + values[e] * xi;
      }
    }
    for (int64_t j = c0; j < c1; ++j) {
      const int64_t q = first_slot[j], chunks = first_slot[j + 1] - q;
      const T t = chunks == 1 ? sums[q] : tree_sum_of_copy(&sums[q], chunks);
      y[j] = beta == T(0) ? alpha * t : (alpha * t) + (beta * y[j]);
    }
  }
}

template <typename T>
void multiply_columns(const CsrMatrix& m, const T* values, xhal_transpose_t trans, T alpha,
                      const Columns<T>& xv, T beta, const Columns<T>& yv) {
  with_patterns(m, [&](const auto& ps) {
    using I = typename decltype(ps.a.row_ptr)::value_type;
    const bool vectors = yv.k == 1 && xv.row_stride == 1 && yv.row_stride == 1;
    if (trans == XHAL_TRANSPOSE && vectors) {
      const int64_t work = static_cast<int64_t>(m.nnz) + m.rows + m.cols;
      run_chosen(m.multiply_choice[1], work, [&](int threads) {
        multiply_transposed_by_rows<T, I>(ps, values, alpha, xv.data, beta, yv.data, threads);
      });
    } else if (trans == XHAL_TRANSPOSE)
      multiply<T, I, true>(ps.at, values, alpha, xv, beta, yv, m.multiply_choice[1]);
    else multiply<T, I, false>(ps.a, values, alpha, xv, beta, yv, m.multiply_choice[0]);
  });
}

template <typename T>
void multiply_typed(const CsrMatrix& m, xhal_transpose_t trans, T alpha,
                    const xhal_plugin_tensor_t* x, T beta, const xhal_plugin_tensor_t* y) {
  const Columns<T> xv = columns_of<T>(x), yv = columns_of<T>(y);
  if (yv.n == 0 || yv.k == 0) return;
  multiply_columns<T>(m, m.value_data<T>(), trans, alpha, xv, beta, yv);
}

// A dense [n, k] f32 copy of a strided narrow operand (row-major, so k = 1
// is a plain vector and takes the vector paths).
Columns<float> widened(xhal_dtype_t dtype, const Columns<uint16_t>& v, std::vector<float>& store,
                       bool fill) {
  // Never empty: x of a matrix with no columns is [0, k], and the kernel
  // still forms each column's base pointer (null + offset is undefined).
  store.resize(std::max<size_t>(1, static_cast<size_t>(v.n * v.k)));
  if (fill)
    for (int64_t r = 0; r < v.n; ++r)
      for (int64_t c = 0; c < v.k; ++c) store[r * v.k + c] = widen(dtype, v.at(r, c));
  return Columns<float>{store.data(), v.n, v.k, v.k, 1};
}

// f16/bf16 (docs/semantics.md 7.2): the f32 multiply, in its canonical
// order, on widened copies of the values, x and (when beta != 0) y; each
// output narrowed once.
void multiply_narrow(const CsrMatrix& m, xhal_transpose_t trans, float alpha,
                     const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  const xhal_dtype_t dtype = m.values_dtype;
  const Columns<uint16_t> xs = columns_of<uint16_t>(x), ys = columns_of<uint16_t>(y);
  if (ys.n == 0 || ys.k == 0) return;
  std::vector<float> values(static_cast<size_t>(m.nnz)), xw_store, yw_store;
  widen_row(dtype, m.value_data<uint16_t>(), values.data(), m.nnz);
  const Columns<float> xw = widened(dtype, xs, xw_store, true);
  const Columns<float> yw = widened(dtype, ys, yw_store, beta != 0.0f);
  multiply_columns<float>(m, values.data(), trans, alpha, xw, beta, yw);
  for (int64_t r = 0; r < ys.n; ++r)
    for (int64_t c = 0; c < ys.k; ++c) ys.at(r, c) = narrow(dtype, yw.at(r, c));
}

xhal_status_t multiply_op(void* device, void* a, xhal_transpose_t trans, float alpha,
                          const xhal_plugin_tensor_t* x, float beta,
                          const xhal_plugin_tensor_t* y) {
  count_launch(device);
  const auto& m = *static_cast<const CsrMatrix*>(a);
  if (is_narrow(m.values_dtype)) {
    multiply_narrow(m, trans, alpha, x, beta, y);
    return XHAL_OK;
  }
  with_value_type(m, [&](auto zero) {
    using T = decltype(zero);
    multiply_typed<T>(m, trans, static_cast<T>(alpha), x, static_cast<T>(beta), y);
  });
  return XHAL_OK;
}

}  // namespace

xhal_status_t spmv(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  return guard_allocation("spmv", [&] { return multiply_op(device, a, trans, alpha, x, beta, y); });
}

xhal_status_t spmm(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  return guard_allocation("spmm", [&] { return multiply_op(device, a, trans, alpha, x, beta, y); });
}

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(XHAL_OP_SPMV, kFloatDtypes, api.spmv = spmv);
XHAL_CPU_OP(XHAL_OP_SPMM, kFloatDtypes, api.spmm = spmm);

}  // namespace xhal::cpu
