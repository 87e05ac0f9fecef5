// spmv / spmm: y = (alpha * t) + (beta * y) with t the segment sum of a
// row of op(A) times x (docs/semantics.md, "Sparse (CSR)"). op(A) = A^T walks
// the transposed pattern, its values fetched through the entry permutation,
// so every output has one owner: no atomics, the same bits on any team size.
#include <omp.h>

#include "sparse_kernels.h"

namespace xhal::cpu {
namespace {

// Rows [first, last) of y = (alpha * op(A) x) + (beta * y).
template <typename I, bool kPermuted>
void multiply_rows(const CsrPattern<I>& p, const float* values, float alpha, const Columns& x,
                   float beta, const Columns& y, int64_t first, int64_t last) {
  const I* row_ptr = p.row_ptr.data();
  const I* col = p.col_idx.data();
  const I* perm = p.perm.data();
  auto value = [&](int64_t e) { return kPermuted ? values[perm[e]] : values[e]; };
  if (y.k == 1 && x.row_stride == 1 && y.row_stride == 1) {  // plain vectors: the common case
    const float* xv = x.data;
    float* yv = y.data;
    for (int64_t r = first; r < last; ++r) {
      const int64_t rb = row_ptr[r];
      const int64_t m = static_cast<int64_t>(row_ptr[r + 1]) - rb;
      const float t = segsum(m, [&](int64_t i) { return value(rb + i) * xv[col[rb + i]]; });
      yv[r] = beta == 0.0f ? alpha * t : (alpha * t) + (beta * yv[r]);
    }
    return;
  }
  for (int64_t r = first; r < last; ++r) {
    const int64_t rb = row_ptr[r];
    const int64_t m = static_cast<int64_t>(row_ptr[r + 1]) - rb;
    for (int64_t c = 0; c < y.k; ++c) {
      const float* xc = x.data + c * x.col_stride;
      const float t = segsum(m, [&](int64_t i) {
        return value(rb + i) * xc[static_cast<int64_t>(col[rb + i]) * x.row_stride];
      });
      float& out = y.at(r, c);
      out = beta == 0.0f ? alpha * t : (alpha * t) + (beta * out);
    }
  }
}

template <typename I, bool kPermuted>
void multiply(const CsrPattern<I>& p, const float* values, float alpha, const Columns& x,
              float beta, const Columns& y, TeamChoice& choice) {
  const int64_t rows = p.rows;
  const int64_t work = (static_cast<int64_t>(p.row_ptr[rows]) + rows) * y.k;
  run_chosen(choice, work, [&](int threads) {
#pragma omp parallel num_threads(threads)
    {
      int64_t first = 0, last = 0;
      balanced_rows(p.row_ptr, rows, omp_get_thread_num(), omp_get_num_threads(), &first, &last);
      multiply_rows<I, kPermuted>(p, values, alpha, x, beta, y, first, last);
    }
  });
}

xhal_status_t multiply_op(void* device, void* a, xhal_transpose_t trans, float alpha,
                          const xhal_plugin_tensor_t* x, float beta,
                          const xhal_plugin_tensor_t* y) {
  count_launch(device);
  const auto& m = *static_cast<const CsrMatrix*>(a);
  const Columns xv = columns_of(x), yv = columns_of(y);
  if (yv.n == 0 || yv.k == 0) return XHAL_OK;
  const float* values = m.value_data();
  with_patterns(m, [&](const auto& ps) {
    if (trans == XHAL_TRANSPOSE)
      multiply<typename decltype(ps.at.row_ptr)::value_type, true>(ps.at, values, alpha, xv, beta,
                                                                   yv, m.multiply_choice[1]);
    else
      multiply<typename decltype(ps.a.row_ptr)::value_type, false>(ps.a, values, alpha, xv, beta,
                                                                   yv, m.multiply_choice[0]);
  });
  return XHAL_OK;
}

}  // namespace

xhal_status_t spmv(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  return multiply_op(device, a, trans, alpha, x, beta, y);
}

xhal_status_t spmm(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  return multiply_op(device, a, trans, alpha, x, beta, y);
}

}  // namespace xhal::cpu
