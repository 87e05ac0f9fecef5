// csr_solve_backward: gb = solve(op(A)^T, dx), then the gradient of A's
// values on its pattern, ga[e] = -segsum_c(gb[i,c] * x[j,c]), in the
// matrix's value type T (f32 or f64, the same sequence).
#include <omp.h>

#include "op_registry.h"
#include "sparse_solve.h"

namespace xhal::cpu {
namespace {

// Rows [first, last) of the pattern gradient.
template <typename T, typename I, bool kTransposed, bool kVectors>
void gradient_rows(const CsrPattern<I>& p, bool unit, const Columns<T>& x, const Columns<T>& gb,
                   T* ga, int64_t ga_stride, int64_t first, int64_t last) {
  const I* row_ptr = p.row_ptr.data();
  const I* col = p.col_idx.data();
  for (int64_t r = first; r < last; ++r) {
    for (int64_t e = row_ptr[r]; e < static_cast<int64_t>(row_ptr[r + 1]); ++e) {
      const int64_t cidx = col[e];
      const int64_t i = kTransposed ? cidx : r;
      const int64_t j = kTransposed ? r : cidx;
      T g;
      if constexpr (kVectors)  // segsum of one term: +0 + gb[i] * x[j]
        g = -(T(0) + gb.data[i] * x.data[j]);
      else g = -segsum(x.k, [&](int64_t c) { return gb.at(i, c) * x.at(j, c); });
      ga[e * ga_stride] = unit && cidx == r ? T(0) : g;
    }
  }
}

// ga[e] = -segsum_c(gb[i,c] * x[j,c]) on A's pattern; (i, j) = (row, col)
// for op(A) = A and (col, row) for A^T. Unit diagonal entries get +0.
template <typename T, typename I>
void pattern_gradient(const CsrPattern<I>& p, bool transposed, bool unit, const Columns<T>& x,
                      const Columns<T>& gb, T* ga, int64_t ga_stride, TeamChoice& choice) {
  const int64_t rows = p.rows;
  const int64_t work = (static_cast<int64_t>(p.row_ptr[rows]) + rows) * x.k;
  const bool vectors = x.k == 1 && x.row_stride == 1 && gb.row_stride == 1;
  run_chosen(choice, work, [&](int threads) {
#pragma omp parallel num_threads(threads)
    {
      int64_t first = 0, last = 0;
      balanced_rows(p.row_ptr, rows, omp_get_thread_num(), omp_get_num_threads(), &first, &last);
      if (vectors && transposed)
        gradient_rows<T, I, true, true>(p, unit, x, gb, ga, ga_stride, first, last);
      else if (vectors)
        gradient_rows<T, I, false, true>(p, unit, x, gb, ga, ga_stride, first, last);
      else if (transposed)
        gradient_rows<T, I, true, false>(p, unit, x, gb, ga, ga_stride, first, last);
      else gradient_rows<T, I, false, false>(p, unit, x, gb, ga, ga_stride, first, last);
    }
  });
}

template <typename T>
xhal_status_t solve_backward(const CsrMatrix& m, xhal_transpose_t trans, xhal_triangle_t triangle,
                             xhal_diagonal_t diagonal, const xhal_plugin_tensor_t* x,
                             const xhal_plugin_tensor_t* dx, const xhal_plugin_tensor_t* gb,
                             const xhal_plugin_tensor_t* ga) {
  const xhal_transpose_t flipped = trans == XHAL_TRANSPOSE ? XHAL_TRANSPOSE_NONE : XHAL_TRANSPOSE;
  const Columns<T> gbv = columns_of<T>(gb);
  const xhal_status_t st = guard_allocation("csr_solve_backward", [&] {
    return solve(m, flipped, triangle, diagonal, columns_of<T>(dx), gbv);
  });
  if (st != XHAL_OK || ga == nullptr || m.nnz == 0) return st;
  T* gav = tensor_data<T>(ga);
  const int64_t ga_stride = ga->strides[0];
  const Columns<T> xv = columns_of<T>(x);
  const bool transposed = trans == XHAL_TRANSPOSE;
  const bool unit = diagonal == XHAL_DIAGONAL_UNIT;
  with_patterns(m, [&](const auto& ps) {
    pattern_gradient(ps.a, transposed, unit, xv, gbv, gav, ga_stride, m.gradient_choice);
  });
  return XHAL_OK;
}

}  // namespace

xhal_status_t csr_solve_backward(void* device, void* a, xhal_transpose_t trans,
                                 xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                                 const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* dx,
                                 const xhal_plugin_tensor_t* gb, const xhal_plugin_tensor_t* ga) {
  count_launch(device);
  const auto& m = *static_cast<const CsrMatrix*>(a);
  return with_value_type(m, [&](auto zero) {
    return solve_backward<decltype(zero)>(m, trans, triangle, diagonal, x, dx, gb, ga);
  });
}

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(XHAL_OP_CSR_SOLVE_BACKWARD, kF32F64Dtypes, api.csr_solve_backward = csr_solve_backward);

}  // namespace xhal::cpu
