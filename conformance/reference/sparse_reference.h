// Host references for the sparse CSR ops, independent of every plugin.
//
// Two kinds:
//  - float64 references (accuracy): plain math in double, any order.
//  - canonical float32 references (bit-exactness): the sequence of rounded
//    float operations docs/semantics.md fixes ("### Sparse (CSR)", 3.1, 3.7),
//    written as plainly as possible so a reader can check them against the
//    spec line by line.
// Dense operands are row-major [n, k] (k = 1 for vectors).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "xhal/sparse.h"

namespace xhal::conf::sparse {

// A CSR matrix on the host with values of T. Columns strictly increase
// within a row.
template <class T>
struct CsrOf {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<int64_t> row_ptr{0};  // rows + 1
  std::vector<int64_t> col_idx;     // nnz
  std::vector<T> values;            // nnz
  int64_t nnz() const { return static_cast<int64_t>(col_idx.size()); }
};
using Csr = CsrOf<float>;
using Csr64 = CsrOf<double>;
// The matrix holding a's pattern and `values` (of another type, say).
template <class T, class S>
CsrOf<T> with_values(const CsrOf<S>& a, std::vector<T> values) {
  CsrOf<T> m;
  m.rows = a.rows;
  m.cols = a.cols;
  m.row_ptr = a.row_ptr;
  m.col_idx = a.col_idx;
  m.values = std::move(values);
  return m;
}

// A^T as CSR: row j lists A's column j in ascending row order; values move
// with their entries. `perm[e]` (if given) receives the A entry of A^T entry e.
// (Instantiated for float, double and long double, as the canonical
// functions below.)
template <class T>
CsrOf<T> transpose(const CsrOf<T>& a, std::vector<int64_t>* perm = nullptr);

// True when op(A) (A's stored triangle seen through `trans`) is lower.
bool op_is_lower(xhal_transpose_t trans, xhal_triangle_t triangle);
xhal_transpose_t flip(xhal_transpose_t trans);
// Rows of op(A).
int64_t op_rows(const Csr& a, xhal_transpose_t trans);
int64_t op_cols(const Csr& a, xhal_transpose_t trans);

// ---- canonical orders --------------------------------------------------
// In T = float the f32 ops, in T = double the f64 ops (7.3: the same orders
// in binary64); T = long double gives the accuracy reference of an f64 op
// (the same order with 11 more bits).

// 3.1: pad with +0.0 to a power of two, add adjacent pairs until one is left.
template <class T>
T tree_sum(std::span<const T> v);
// 3.7: chunks of 32 terms, each summed left to right from +0.0; chunk sums
// combined by tree_sum.
template <class T>
T segsum(std::span<const T> terms);

// Y = alpha * op(A) X + beta * Y as (alpha*t) + (beta*y); beta == 0 never
// reads y (y may then be empty). X [op_cols, k], Y [op_rows, k].
template <class T>
std::vector<T> spmm_canonical(const CsrOf<T>& a, xhal_transpose_t trans, T alpha,
                              const std::vector<T>& x, T beta, const std::vector<T>& y, int64_t k);

// op(A) x = b: lower ascending rows, upper descending; s = segsum of the
// off-diagonal products in ascending column of op(A); x = (b - s) / diag or
// b - s (unit).
template <class T>
std::vector<T> solve_canonical(const CsrOf<T>& a, xhal_transpose_t trans, xhal_triangle_t triangle,
                               xhal_diagonal_t diagonal, const std::vector<T>& b, int64_t k);

template <class T>
struct SolveGradsOf {
  std::vector<T> gb;  // [n, k]
  std::vector<T> ga;  // [nnz]
};
using SolveGrads = SolveGradsOf<float>;
// gb = solve(op(A)^T, dx); ga[e] = -segsum_c(gb[i,c] * x[j,c]), (i, j) =
// (row, col) of entry e for op = A, (col, row) for op = A^T; a unit
// diagonal's entries get +0.
template <class T>
SolveGradsOf<T> solve_backward_canonical(const CsrOf<T>& a, xhal_transpose_t trans,
                                         xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                                         const std::vector<T>& x, const std::vector<T>& dx,
                                         int64_t k);

// C = A B: pattern holds every structural product (columns ascending);
// C[i,j] = sequential sum from +0.0 over ascending k of A[i,k]*B[k,j].
Csr spgemm_pattern(const Csr& a, const Csr& b);  // values all +0
template <class T>
CsrOf<T> spgemm_canonical(const CsrOf<T>& a, const CsrOf<T>& b);

// ---- float64 --------------------------------------------------------------

std::vector<double> to_f64(const std::vector<float>& v);

std::vector<double> spmm_f64(const Csr& a, xhal_transpose_t trans, double alpha,
                             const std::vector<double>& x, double beta,
                             const std::vector<double>& y, int64_t k);
// Same with |alpha| * sum |A_ij x_j| + |beta y_i|: the magnitude an error
// bound scales with; terms[i] receives the number of products of row i.
std::vector<double> spmm_magnitude(const Csr& a, xhal_transpose_t trans, double alpha,
                                   const std::vector<double>& x, double beta,
                                   const std::vector<double>& y, int64_t k,
                                   std::vector<int64_t>* terms);

// Solve in double with the matrix values given explicitly (so a finite
// difference can perturb them); the first form uses a.values.
std::vector<double> solve_f64(const Csr& a, const std::vector<double>& values,
                              xhal_transpose_t trans, xhal_triangle_t triangle,
                              xhal_diagonal_t diagonal, const std::vector<double>& b, int64_t k);
std::vector<double> solve_f64(const Csr& a, xhal_transpose_t trans, xhal_triangle_t triangle,
                              xhal_diagonal_t diagonal, const std::vector<double>& b, int64_t k);

// op(A) x in double with the diagonal as the solve sees it (unit: 1), and
// the matching magnitude |op(A)| |x|: the residual check of section 5.
std::vector<double> triangular_apply_f64(const Csr& a, xhal_transpose_t trans,
                                         xhal_diagonal_t diagonal, const std::vector<double>& x,
                                         int64_t k, bool absolute);

struct SolveGradsF64 {
  std::vector<double> gb;
  std::vector<double> ga;
};
SolveGradsF64 solve_backward_f64(const Csr& a, xhal_transpose_t trans, xhal_triangle_t triangle,
                                 xhal_diagonal_t diagonal, const std::vector<double>& x,
                                 const std::vector<double>& dx, int64_t k);
// ga from given gb and x in double (checks ga consistently with the gb a
// device produced); magnitude[e] = sum_c |gb x|.
std::vector<double> solve_ga_f64(const Csr& a, xhal_transpose_t trans, xhal_diagonal_t diagonal,
                                 const std::vector<double>& gb, const std::vector<double>& x,
                                 int64_t k, std::vector<double>* magnitude);

// Values of A B in double on spgemm_pattern(a, b); magnitude[e] = sum |A B|
// terms, terms[e] their count.
std::vector<double> spgemm_f64(const Csr& a, const Csr& b, std::vector<double>* magnitude,
                               std::vector<int64_t>* terms);

}  // namespace xhal::conf::sparse
