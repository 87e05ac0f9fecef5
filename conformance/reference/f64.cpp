#include "reference/f64.h"

#include <cmath>
#include <limits>

namespace xhal::conf::ref64 {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <class A, class In>
A row_max(const In* x, size_t n) {
  A m = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) return kNaN;
    m = std::max(m, static_cast<A>(x[i]));
  }
  return m;
}

template <class A, class In>
Values softmax_forward_t(const In* x, size_t rows, size_t n) {
  Values out{std::vector<double>(rows * n), std::vector<double>(rows * n)};
  for (size_t r = 0; r < rows; ++r) {
    const In* xr = x + r * n;
    A m = row_max<A>(xr, n);
    bool nan_row = std::isnan(m) || m == -INFINITY || m == INFINITY;
    A s = 0;
    for (size_t i = 0; i < n && !nan_row; ++i) s += std::exp(static_cast<A>(xr[i]) - m);
    for (size_t i = 0; i < n; ++i) {
      A y = nan_row ? kNaN : std::exp(static_cast<A>(xr[i]) - m) / s;
      out.v[r * n + i] = y;
      out.scale[r * n + i] = std::fabs(y);
    }
  }
  return out;
}

template <class A, class In>
Values softmax_backward_t(const In* y, const In* dy, size_t rows, size_t n) {
  Values out{std::vector<double>(rows * n), std::vector<double>(rows * n)};
  for (size_t r = 0; r < rows; ++r) {
    A d = 0, dabs = 0;
    for (size_t i = 0; i < n; ++i) {
      A p = static_cast<A>(y[r * n + i]) * dy[r * n + i];
      d += p;
      dabs += std::fabs(p);
    }
    for (size_t i = 0; i < n; ++i) {
      A yi = y[r * n + i], dyi = dy[r * n + i];
      out.v[r * n + i] = yi * (dyi - d);
      out.scale[r * n + i] = std::fabs(yi) * (std::fabs(dyi) + dabs);
    }
  }
  return out;
}

template <class A, class In>
NormForward rms_norm_forward_t(const In* x, const In* gamma, size_t rows, size_t n, float eps) {
  NormForward f;
  f.y.v.resize(rows * n);
  f.y.scale.resize(rows * n);
  f.rstd.v.resize(rows);
  f.rstd.scale.resize(rows);
  for (size_t r = 0; r < rows; ++r) {
    A ss = 0;
    for (size_t i = 0; i < n; ++i) ss += static_cast<A>(x[r * n + i]) * x[r * n + i];
    A rstd = 1.0 / std::sqrt(ss / static_cast<A>(n) + eps);
    f.rstd.v[r] = rstd;
    f.rstd.scale[r] = rstd;
    for (size_t i = 0; i < n; ++i) {
      A y = x[r * n + i] * rstd * gamma[i];
      f.y.v[r * n + i] = y;
      f.y.scale[r * n + i] = std::fabs(y);
    }
  }
  return f;
}

template <class A, class In>
NormForward layer_norm_forward_t(const In* x, const In* gamma, const In* beta, size_t rows,
                                 size_t n, float eps) {
  NormForward f;
  f.y.v.resize(rows * n);
  f.y.scale.resize(rows * n);
  for (auto* v : {&f.mean, &f.rstd}) {
    v->v.resize(rows);
    v->scale.resize(rows);
  }
  for (size_t r = 0; r < rows; ++r) {
    const In* xr = x + r * n;
    A sum = 0, sum_abs = 0;
    for (size_t i = 0; i < n; ++i) {
      sum += xr[i];
      sum_abs += std::fabs(xr[i]);
    }
    A mean = sum / static_cast<A>(n);
    A var = 0;
    for (size_t i = 0; i < n; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<A>(n);
    A rstd = 1.0 / std::sqrt(var + eps);
    f.mean.v[r] = mean;
    f.mean.scale[r] = sum_abs / static_cast<A>(n);
    f.rstd.v[r] = rstd;
    f.rstd.scale[r] = rstd;
    for (size_t i = 0; i < n; ++i) {
      A y = (xr[i] - mean) * rstd * gamma[i] + beta[i];
      f.y.v[r * n + i] = y;
      // x - mean cancels: its rounding is relative to |x| + |mean|.
      f.y.scale[r * n + i] =
          (std::fabs(xr[i]) + std::fabs(mean)) * rstd * std::fabs(gamma[i]) + std::fabs(beta[i]);
    }
  }
  return f;
}

template <class A, class In>
NormBackward norm_backward(const In* x, const In* gamma, const In* mean, const In* rstd,
                           const In* dy, size_t rows, size_t n, bool layer) {
  NormBackward b;
  b.dx.v.resize(rows * n);
  b.dx.scale.resize(rows * n);
  for (auto* v : {&b.dgamma, &b.dbeta}) {
    v->v.assign(n, 0.0);
    v->scale.assign(n, 0.0);
  }
  std::vector<A> xh(n), g(n), dg(n, A(0)), dg_abs(n, A(0)), db(n, A(0)), db_abs(n, A(0));
  for (size_t r = 0; r < rows; ++r) {
    A rs = rstd[r];
    A mu = layer ? static_cast<A>(mean[r]) : 0.0;
    A sum_g = 0, sum_g_abs = 0, sum_gx = 0, sum_gx_abs = 0;
    for (size_t i = 0; i < n; ++i) {
      xh[i] = (x[r * n + i] - mu) * rs;
      g[i] = static_cast<A>(dy[r * n + i]) * gamma[i];
      sum_g += g[i];
      sum_g_abs += std::fabs(g[i]);
      sum_gx += g[i] * xh[i];
      sum_gx_abs += std::fabs(g[i] * xh[i]);
    }
    A nn = static_cast<A>(n);
    A a = layer ? sum_g / nn : 0.0, c = sum_gx / nn;
    for (size_t i = 0; i < n; ++i) {
      b.dx.v[r * n + i] = (g[i] - a - xh[i] * c) * rs;
      b.dx.scale[r * n + i] =
          (std::fabs(g[i]) + (layer ? sum_g_abs / nn : 0.0) + std::fabs(xh[i]) * sum_gx_abs / nn) *
          rs;
      A t = dy[r * n + i] * xh[i];
      dg[i] += t;
      dg_abs[i] += std::fabs(t);
      db[i] += dy[r * n + i];
      db_abs[i] += std::fabs(static_cast<A>(dy[r * n + i]));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    b.dgamma.v[i] = static_cast<double>(dg[i]);
    b.dgamma.scale[i] = static_cast<double>(dg_abs[i]);
    b.dbeta.v[i] = static_cast<double>(db[i]);
    b.dbeta.scale[i] = static_cast<double>(db_abs[i]);
  }
  return b;
}

template <class A, class In>
NormBackward rms_norm_backward_t(const In* x, const In* gamma, const In* rstd, const In* dy,
                                 size_t rows, size_t n) {
  NormBackward b = norm_backward<A, In>(x, gamma, nullptr, rstd, dy, rows, n, false);
  b.dbeta = {};
  return b;
}

template <class A, class In>
NormBackward layer_norm_backward_t(const In* x, const In* gamma, const In* mean, const In* rstd,
                                   const In* dy, size_t rows, size_t n) {
  return norm_backward<A, In>(x, gamma, mean, rstd, dy, rows, n, true);
}

template <class A, class In>
Values index_add_t(const In* dst_old, size_t num_rows, const In* src,
                   const std::vector<int64_t>& idx, size_t w, float alpha) {
  std::vector<A> sum(num_rows * w, A(0)), mag(num_rows * w, A(0));
  for (size_t i = 0; i < idx.size(); ++i)
    for (size_t j = 0; j < w; ++j) {
      size_t k = static_cast<size_t>(idx[i]) * w + j;
      sum[k] += src[i * w + j];
      mag[k] += std::fabs(static_cast<A>(src[i * w + j]));
    }
  Values out{std::vector<double>(num_rows * w), std::vector<double>(num_rows * w)};
  for (size_t k = 0; k < num_rows * w; ++k) {
    out.v[k] = static_cast<double>(dst_old[k] + static_cast<A>(alpha) * sum[k]);
    out.scale[k] = static_cast<double>(std::fabs(static_cast<A>(dst_old[k])) +
                                       std::fabs(static_cast<A>(alpha)) * mag[k]);
  }
  return out;
}

}  // namespace

// float inputs: computed in double; double inputs: in long double (x87,
// 64-bit significand), rounded to double at the end (section 7.5).
Values softmax_forward(const float* x, size_t rows, size_t n) {
  return softmax_forward_t<double>(x, rows, n);
}
Values softmax_forward(const double* x, size_t rows, size_t n) {
  return softmax_forward_t<long double>(x, rows, n);
}
Values softmax_backward(const float* y, const float* dy, size_t rows, size_t n) {
  return softmax_backward_t<double>(y, dy, rows, n);
}
Values softmax_backward(const double* y, const double* dy, size_t rows, size_t n) {
  return softmax_backward_t<long double>(y, dy, rows, n);
}
NormForward rms_norm_forward(const float* x, const float* gamma, size_t rows, size_t n, float eps) {
  return rms_norm_forward_t<double>(x, gamma, rows, n, eps);
}
NormForward rms_norm_forward(const double* x, const double* gamma, size_t rows, size_t n,
                             float eps) {
  return rms_norm_forward_t<long double>(x, gamma, rows, n, eps);
}
NormForward layer_norm_forward(const float* x, const float* gamma, const float* beta, size_t rows,
                               size_t n, float eps) {
  return layer_norm_forward_t<double>(x, gamma, beta, rows, n, eps);
}
NormForward layer_norm_forward(const double* x, const double* gamma, const double* beta,
                               size_t rows, size_t n, float eps) {
  return layer_norm_forward_t<long double>(x, gamma, beta, rows, n, eps);
}
NormBackward rms_norm_backward(const float* x, const float* gamma, const float* rstd,
                               const float* dy, size_t rows, size_t n) {
  return rms_norm_backward_t<double>(x, gamma, rstd, dy, rows, n);
}
NormBackward rms_norm_backward(const double* x, const double* gamma, const double* rstd,
                               const double* dy, size_t rows, size_t n) {
  return rms_norm_backward_t<long double>(x, gamma, rstd, dy, rows, n);
}
NormBackward layer_norm_backward(const float* x, const float* gamma, const float* mean,
                                 const float* rstd, const float* dy, size_t rows, size_t n) {
  return layer_norm_backward_t<double>(x, gamma, mean, rstd, dy, rows, n);
}
NormBackward layer_norm_backward(const double* x, const double* gamma, const double* mean,
                                 const double* rstd, const double* dy, size_t rows, size_t n) {
  return layer_norm_backward_t<long double>(x, gamma, mean, rstd, dy, rows, n);
}
Values index_add(const float* dst_old, size_t num_rows, const float* src,
                 const std::vector<int64_t>& idx, size_t w, float alpha) {
  return index_add_t<double>(dst_old, num_rows, src, idx, w, alpha);
}
Values index_add(const double* dst_old, size_t num_rows, const double* src,
                 const std::vector<int64_t>& idx, size_t w, float alpha) {
  return index_add_t<long double>(dst_old, num_rows, src, idx, w, alpha);
}

double softmax_loss(const std::vector<double>& x, const std::vector<double>& dy, size_t rows,
                    size_t n) {
  double loss = 0;
  for (size_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (size_t i = 0; i < n; ++i) m = std::max(m, x[r * n + i]);
    for (size_t i = 0; i < n; ++i) s += std::exp(x[r * n + i] - m);
    for (size_t i = 0; i < n; ++i) loss += dy[r * n + i] * std::exp(x[r * n + i] - m) / s;
  }
  return loss;
}

double rms_norm_loss(const std::vector<double>& x, const std::vector<double>& gamma,
                     const std::vector<double>& dy, size_t rows, size_t n, double eps) {
  double loss = 0;
  for (size_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (size_t i = 0; i < n; ++i) ss += x[r * n + i] * x[r * n + i];
    double rstd = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
    for (size_t i = 0; i < n; ++i) loss += dy[r * n + i] * x[r * n + i] * rstd * gamma[i];
  }
  return loss;
}

double layer_norm_loss(const std::vector<double>& x, const std::vector<double>& gamma,
                       const std::vector<double>& beta, const std::vector<double>& dy, size_t rows,
                       size_t n, double eps) {
  double loss = 0;
  for (size_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (size_t i = 0; i < n; ++i) mean += x[r * n + i];
    mean /= static_cast<double>(n);
    for (size_t i = 0; i < n; ++i) var += (x[r * n + i] - mean) * (x[r * n + i] - mean);
    var /= static_cast<double>(n);
    double rstd = 1.0 / std::sqrt(var + eps);
    for (size_t i = 0; i < n; ++i)
      loss += dy[r * n + i] * ((x[r * n + i] - mean) * rstd * gamma[i] + beta[i]);
  }
  return loss;
}

}  // namespace xhal::conf::ref64
