// Sparse references: see sparse_reference.h. The canonical functions are
// kept deliberately naive (one loop per sentence of docs/semantics.md).
#include "sparse_reference.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace xhal::conf::sparse {

template <class T>
CsrOf<T> transpose(const CsrOf<T>& a, std::vector<int64_t>* perm) {
  CsrOf<T> t;
  t.rows = a.cols;
  t.cols = a.rows;
  t.row_ptr.assign(a.cols + 1, 0);
  for (int64_t e = 0; e < a.nnz(); ++e) ++t.row_ptr[a.col_idx[e] + 1];
  for (int64_t j = 0; j < a.cols; ++j) t.row_ptr[j + 1] += t.row_ptr[j];
  t.col_idx.resize(a.nnz());
  t.values.resize(a.values.empty() ? 0 : a.nnz());
  if (perm) perm->resize(a.nnz());
  std::vector<int64_t> next(t.row_ptr.begin(), t.row_ptr.end() - 1);
  // Walking A row by row visits each column's entries in ascending row.
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
      const int64_t slot = next[a.col_idx[e]]++;
      t.col_idx[slot] = i;
      if (!a.values.empty()) t.values[slot] = a.values[e];
      if (perm) (*perm)[slot] = e;
    }
  }
  return t;
}

bool op_is_lower(xhal_transpose_t trans, xhal_triangle_t triangle) {
  return (trans == XHAL_TRANSPOSE_NONE) == (triangle == XHAL_TRIANGLE_LOWER);
}

xhal_transpose_t flip(xhal_transpose_t trans) {
  return trans == XHAL_TRANSPOSE_NONE ? XHAL_TRANSPOSE : XHAL_TRANSPOSE_NONE;
}

int64_t op_rows(const Csr& a, xhal_transpose_t trans) {
  return trans == XHAL_TRANSPOSE_NONE ? a.rows : a.cols;
}
int64_t op_cols(const Csr& a, xhal_transpose_t trans) {
  return trans == XHAL_TRANSPOSE_NONE ? a.cols : a.rows;
}

// op(A) as an explicit CSR (the references may materialise it; devices may not).
template <class T>
static CsrOf<T> op_matrix(const CsrOf<T>& a, xhal_transpose_t trans) {
  return trans == XHAL_TRANSPOSE_NONE ? a : transpose(a);
}

// ---- canonical orders (float, double; long double for references) -------

template <class T>
T tree_sum(std::span<const T> v) {
  size_t p = 1;
  while (p < v.size()) p *= 2;
  std::vector<T> level(v.begin(), v.end());
  level.resize(p, T(+0.0));
  while (level.size() > 1) {
    std::vector<T> up(level.size() / 2);
    for (size_t i = 0; i < up.size(); ++i) up[i] = level[2 * i] + level[2 * i + 1];
    level.swap(up);
  }
  return level[0];
}

template <class T>
T segsum(std::span<const T> terms) {
  constexpr size_t kChunk = 32;
  std::vector<T> chunk_sums;
  for (size_t start = 0; start < terms.size(); start += kChunk) {
    T c = T(+0.0);
    for (size_t t = start; t < terms.size() && t < start + kChunk; ++t) c = c + terms[t];
    chunk_sums.push_back(c);
  }
  return tree_sum<T>(chunk_sums);
}

template <class T>
std::vector<T> spmm_canonical(const CsrOf<T>& a, xhal_transpose_t trans, T alpha,
                              const std::vector<T>& x, T beta, const std::vector<T>& y, int64_t k) {
  const CsrOf<T> m = op_matrix(a, trans);
  std::vector<T> out(m.rows * k);
  std::vector<T> terms;
  for (int64_t i = 0; i < m.rows; ++i) {
    for (int64_t c = 0; c < k; ++c) {
      terms.clear();
      for (int64_t e = m.row_ptr[i]; e < m.row_ptr[i + 1]; ++e)
        terms.push_back(m.values[e] * x[m.col_idx[e] * k + c]);
      const T t = segsum<T>(terms);
      out[i * k + c] = beta == T(0) ? alpha * t : (alpha * t) + (beta * y[i * k + c]);
    }
  }
  return out;
}

template <class T>
std::vector<T> solve_canonical(const CsrOf<T>& a, xhal_transpose_t trans, xhal_triangle_t triangle,
                               xhal_diagonal_t diagonal, const std::vector<T>& b, int64_t k) {
  const CsrOf<T> m = op_matrix(a, trans);
  const int64_t n = m.rows;
  std::vector<T> x(n * k, T(+0.0));
  const bool lower = op_is_lower(trans, triangle);
  std::vector<T> terms;
  for (int64_t step = 0; step < n; ++step) {
    const int64_t row = lower ? step : n - 1 - step;
    for (int64_t c = 0; c < k; ++c) {
      terms.clear();
      T diag = T(1);
      bool has_diag = false;
      for (int64_t e = m.row_ptr[row]; e < m.row_ptr[row + 1]; ++e) {
        const int64_t j = m.col_idx[e];
        if (j == row) {
          diag = m.values[e];
          has_diag = true;
        } else {
          terms.push_back(m.values[e] * x[j * k + c]);
        }
      }
      const T s = segsum<T>(terms);
      if (diagonal == XHAL_DIAGONAL_UNIT) {
        x[row * k + c] = b[row * k + c] - s;
      } else {
        if (!has_diag) throw std::invalid_argument("solve_canonical: missing diagonal");
        x[row * k + c] = (b[row * k + c] - s) / diag;
      }
    }
  }
  return x;
}

template <class T>
SolveGradsOf<T> solve_backward_canonical(const CsrOf<T>& a, xhal_transpose_t trans,
                                         xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                                         const std::vector<T>& x, const std::vector<T>& dx,
                                         int64_t k) {
  SolveGradsOf<T> g;
  // op(A)^T is A seen through the other transpose; the stored triangle stays.
  g.gb = solve_canonical(a, flip(trans), triangle, diagonal, dx, k);
  g.ga.resize(a.nnz());
  std::vector<T> terms;
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) {
      const int64_t col = a.col_idx[e];
      if (diagonal == XHAL_DIAGONAL_UNIT && col == r) {
        g.ga[e] = T(+0.0);
        continue;
      }
      const int64_t i = trans == XHAL_TRANSPOSE_NONE ? r : col;
      const int64_t j = trans == XHAL_TRANSPOSE_NONE ? col : r;
      terms.clear();
      for (int64_t c = 0; c < k; ++c) terms.push_back(g.gb[i * k + c] * x[j * k + c]);
      g.ga[e] = -segsum<T>(terms);
    }
  }
  return g;
}

Csr spgemm_pattern(const Csr& a, const Csr& b) {
  Csr c;
  c.rows = a.rows;
  c.cols = b.cols;
  c.row_ptr.assign(a.rows + 1, 0);
  std::vector<int64_t> mark(b.cols, -1);
  std::vector<int64_t> row_cols;
  for (int64_t i = 0; i < a.rows; ++i) {
    row_cols.clear();
    for (int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
      const int64_t kk = a.col_idx[e];
      for (int64_t f = b.row_ptr[kk]; f < b.row_ptr[kk + 1]; ++f) {
        const int64_t j = b.col_idx[f];
        if (mark[j] != i) {
          mark[j] = i;
          row_cols.push_back(j);
        }
      }
    }
    std::sort(row_cols.begin(), row_cols.end());
    c.col_idx.insert(c.col_idx.end(), row_cols.begin(), row_cols.end());
    c.row_ptr[i + 1] = c.nnz();
  }
  c.values.assign(c.nnz(), +0.0f);
  return c;
}

template <class T>
CsrOf<T> spgemm_canonical(const CsrOf<T>& a, const CsrOf<T>& b) {
  const Csr pattern = spgemm_pattern(with_values(a, std::vector<float>(a.values.size())),
                                     with_values(b, std::vector<float>(b.values.size())));
  CsrOf<T> c = with_values(pattern, std::vector<T>(pattern.col_idx.size(), T(+0.0)));
  std::vector<T> acc(b.cols, T(+0.0));
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t e = c.row_ptr[i]; e < c.row_ptr[i + 1]; ++e) acc[c.col_idx[e]] = T(+0.0);
    // Outer loop over ascending k: every acc[j] sees its terms in k order.
    for (int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
      const int64_t kk = a.col_idx[e];
      for (int64_t f = b.row_ptr[kk]; f < b.row_ptr[kk + 1]; ++f)
        acc[b.col_idx[f]] = acc[b.col_idx[f]] + a.values[e] * b.values[f];
    }
    for (int64_t e = c.row_ptr[i]; e < c.row_ptr[i + 1]; ++e) c.values[e] = acc[c.col_idx[e]];
  }
  return c;
}

// The instantiations the tests use.
#define XHAL_CONF_SPARSE_CANONICAL(T)                                                             \
  template CsrOf<T> transpose(const CsrOf<T>&, std::vector<int64_t>*);                            \
  template T tree_sum(std::span<const T>);                                                        \
  template T segsum(std::span<const T>);                                                          \
  template std::vector<T> spmm_canonical(const CsrOf<T>&, xhal_transpose_t, T,                    \
                                         const std::vector<T>&, T, const std::vector<T>&,         \
                                         int64_t);                                                \
  template std::vector<T> solve_canonical(const CsrOf<T>&, xhal_transpose_t, xhal_triangle_t,     \
                                          xhal_diagonal_t, const std::vector<T>&, int64_t);       \
  template SolveGradsOf<T> solve_backward_canonical(                                              \
      const CsrOf<T>&, xhal_transpose_t, xhal_triangle_t, xhal_diagonal_t, const std::vector<T>&, \
      const std::vector<T>&, int64_t);                                                            \
  template CsrOf<T> spgemm_canonical(const CsrOf<T>&, const CsrOf<T>&);
XHAL_CONF_SPARSE_CANONICAL(float)
XHAL_CONF_SPARSE_CANONICAL(double)
XHAL_CONF_SPARSE_CANONICAL(long double)
#undef XHAL_CONF_SPARSE_CANONICAL

// ---- float64 ---------------------------------------------------------------

std::vector<double> to_f64(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

static std::vector<double> spmm_generic(const Csr& a, xhal_transpose_t trans, double alpha,
                                        const std::vector<double>& x, double beta,
                                        const std::vector<double>& y, int64_t k, bool absolute,
                                        std::vector<int64_t>* terms) {
  const Csr m = op_matrix(a, trans);
  std::vector<double> out(m.rows * k);
  if (terms) terms->assign(m.rows, 0);
  auto f = [absolute](double v) { return absolute ? std::fabs(v) : v; };
  for (int64_t i = 0; i < m.rows; ++i) {
    if (terms) (*terms)[i] = m.row_ptr[i + 1] - m.row_ptr[i];
    for (int64_t c = 0; c < k; ++c) {
      double t = 0.0;
      for (int64_t e = m.row_ptr[i]; e < m.row_ptr[i + 1]; ++e)
        t += f(double(m.values[e]) * x[m.col_idx[e] * k + c]);
      double v = f(alpha) * t;
      if (beta != 0.0) v += f(beta * y[i * k + c]);
      out[i * k + c] = v;
    }
  }
  return out;
}

std::vector<double> spmm_f64(const Csr& a, xhal_transpose_t trans, double alpha,
                             const std::vector<double>& x, double beta,
                             const std::vector<double>& y, int64_t k) {
  return spmm_generic(a, trans, alpha, x, beta, y, k, false, nullptr);
}

std::vector<double> spmm_magnitude(const Csr& a, xhal_transpose_t trans, double alpha,
                                   const std::vector<double>& x, double beta,
                                   const std::vector<double>& y, int64_t k,
                                   std::vector<int64_t>* terms) {
  return spmm_generic(a, trans, alpha, x, beta, y, k, true, terms);
}

std::vector<double> solve_f64(const Csr& a, const std::vector<double>& values,
                              xhal_transpose_t trans, xhal_triangle_t triangle,
                              xhal_diagonal_t diagonal, const std::vector<double>& b, int64_t k) {
  std::vector<int64_t> perm;
  Csr m = trans == XHAL_TRANSPOSE_NONE ? a : transpose(a, &perm);
  std::vector<double> mv(values.size());
  for (size_t e = 0; e < mv.size(); ++e)
    mv[e] = trans == XHAL_TRANSPOSE_NONE ? values[e] : values[perm[e]];
  const int64_t n = m.rows;
  std::vector<double> x(n * k, 0.0);
  const bool lower = op_is_lower(trans, triangle);
  for (int64_t step = 0; step < n; ++step) {
    const int64_t row = lower ? step : n - 1 - step;
    for (int64_t c = 0; c < k; ++c) {
      double s = 0.0, diag = 1.0;
      for (int64_t e = m.row_ptr[row]; e < m.row_ptr[row + 1]; ++e) {
        if (m.col_idx[e] == row) {
          if (diagonal == XHAL_DIAGONAL_STORED) diag = mv[e];
        } else {
          s += mv[e] * x[m.col_idx[e] * k + c];
        }
      }
      x[row * k + c] = (b[row * k + c] - s) / diag;
    }
  }
  return x;
}

std::vector<double> solve_f64(const Csr& a, xhal_transpose_t trans, xhal_triangle_t triangle,
                              xhal_diagonal_t diagonal, const std::vector<double>& b, int64_t k) {
  return solve_f64(a, to_f64(a.values), trans, triangle, diagonal, b, k);
}

std::vector<double> triangular_apply_f64(const Csr& a, xhal_transpose_t trans,
                                         xhal_diagonal_t diagonal, const std::vector<double>& x,
                                         int64_t k, bool absolute) {
  const Csr m = op_matrix(a, trans);
  std::vector<double> out(m.rows * k, 0.0);
  auto f = [absolute](double v) { return absolute ? std::fabs(v) : v; };
  for (int64_t i = 0; i < m.rows; ++i) {
    for (int64_t c = 0; c < k; ++c) {
      double s = 0.0;
      bool diag_seen = false;
      for (int64_t e = m.row_ptr[i]; e < m.row_ptr[i + 1]; ++e) {
        const int64_t j = m.col_idx[e];
        double v = m.values[e];
        if (j == i) {
          diag_seen = true;
          if (diagonal == XHAL_DIAGONAL_UNIT) v = 1.0;
        }
        s += f(v * x[j * k + c]);
      }
      if (!diag_seen && diagonal == XHAL_DIAGONAL_UNIT) s += f(x[i * k + c]);
      out[i * k + c] = s;
    }
  }
  return out;
}

std::vector<double> solve_ga_f64(const Csr& a, xhal_transpose_t trans, xhal_diagonal_t diagonal,
                                 const std::vector<double>& gb, const std::vector<double>& x,
                                 int64_t k, std::vector<double>* magnitude) {
  std::vector<double> ga(a.nnz(), 0.0);
  if (magnitude) magnitude->assign(a.nnz(), 0.0);
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) {
      const int64_t col = a.col_idx[e];
      if (diagonal == XHAL_DIAGONAL_UNIT && col == r) continue;
      const int64_t i = trans == XHAL_TRANSPOSE_NONE ? r : col;
      const int64_t j = trans == XHAL_TRANSPOSE_NONE ? col : r;
      double s = 0.0, mag = 0.0;
      for (int64_t c = 0; c < k; ++c) {
        s += gb[i * k + c] * x[j * k + c];
        mag += std::fabs(gb[i * k + c] * x[j * k + c]);
      }
      ga[e] = -s;
      if (magnitude) (*magnitude)[e] = mag;
    }
  }
  return ga;
}

SolveGradsF64 solve_backward_f64(const Csr& a, xhal_transpose_t trans, xhal_triangle_t triangle,
                                 xhal_diagonal_t diagonal, const std::vector<double>& x,
                                 const std::vector<double>& dx, int64_t k) {
  SolveGradsF64 g;
  g.gb = solve_f64(a, flip(trans), triangle, diagonal, dx, k);
  g.ga = solve_ga_f64(a, trans, diagonal, g.gb, x, k, nullptr);
  return g;
}

std::vector<double> spgemm_f64(const Csr& a, const Csr& b, std::vector<double>* magnitude,
                               std::vector<int64_t>* terms) {
  const Csr c = spgemm_pattern(a, b);
  std::vector<double> out(c.nnz(), 0.0);
  if (magnitude) magnitude->assign(c.nnz(), 0.0);
  if (terms) terms->assign(c.nnz(), 0);
  std::vector<double> acc(b.cols, 0.0), mag(b.cols, 0.0);
  std::vector<int64_t> cnt(b.cols, 0);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t e = c.row_ptr[i]; e < c.row_ptr[i + 1]; ++e) {
      acc[c.col_idx[e]] = 0.0;
      mag[c.col_idx[e]] = 0.0;
      cnt[c.col_idx[e]] = 0;
    }
    for (int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
      const int64_t kk = a.col_idx[e];
      for (int64_t f = b.row_ptr[kk]; f < b.row_ptr[kk + 1]; ++f) {
        const double p = double(a.values[e]) * double(b.values[f]);
        acc[b.col_idx[f]] += p;
        mag[b.col_idx[f]] += std::fabs(p);
        ++cnt[b.col_idx[f]];
      }
    }
    for (int64_t e = c.row_ptr[i]; e < c.row_ptr[i + 1]; ++e) {
      out[e] = acc[c.col_idx[e]];
      if (magnitude) (*magnitude)[e] = mag[c.col_idx[e]];
      if (terms) (*terms)[e] = cnt[c.col_idx[e]];
    }
  }
  return out;
}

}  // namespace xhal::conf::sparse
