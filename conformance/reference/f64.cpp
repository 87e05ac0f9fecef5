#include "reference/f64.h"

#include <cmath>
#include <limits>

namespace xhal::conf::ref64 {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double row_max(const float* x, size_t n) {
  double m = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) return kNaN;
    m = std::max(m, static_cast<double>(x[i]));
  }
  return m;
}
}  // namespace

Values softmax_forward(const float* x, size_t rows, size_t n) {
  Values out{std::vector<double>(rows * n), std::vector<double>(rows * n)};
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    double m = row_max(xr, n);
    bool nan_row = std::isnan(m) || m == -INFINITY || m == INFINITY;
    double s = 0;
    for (size_t i = 0; i < n && !nan_row; ++i) s += std::exp(static_cast<double>(xr[i]) - m);
    for (size_t i = 0; i < n; ++i) {
      double y = nan_row ? kNaN : std::exp(static_cast<double>(xr[i]) - m) / s;
      out.v[r * n + i] = y;
      out.scale[r * n + i] = std::fabs(y);
    }
  }
  return out;
}

Values softmax_backward(const float* y, const float* dy, size_t rows, size_t n) {
  Values out{std::vector<double>(rows * n), std::vector<double>(rows * n)};
  for (size_t r = 0; r < rows; ++r) {
    double d = 0, dabs = 0;
    for (size_t i = 0; i < n; ++i) {
      double p = static_cast<double>(y[r * n + i]) * dy[r * n + i];
      d += p;
      dabs += std::fabs(p);
    }
    for (size_t i = 0; i < n; ++i) {
      double yi = y[r * n + i], dyi = dy[r * n + i];
      out.v[r * n + i] = yi * (dyi - d);
      out.scale[r * n + i] = std::fabs(yi) * (std::fabs(dyi) + dabs);
    }
  }
  return out;
}

NormForward rms_norm_forward(const float* x, const float* gamma, size_t rows, size_t n, float eps) {
  NormForward f;
  f.y.v.resize(rows * n);
  f.y.scale.resize(rows * n);
  f.rstd.v.resize(rows);
  f.rstd.scale.resize(rows);
  for (size_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (size_t i = 0; i < n; ++i) ss += static_cast<double>(x[r * n + i]) * x[r * n + i];
    double rstd = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
    f.rstd.v[r] = rstd;
    f.rstd.scale[r] = rstd;
    for (size_t i = 0; i < n; ++i) {
      double y = x[r * n + i] * rstd * gamma[i];
      f.y.v[r * n + i] = y;
      f.y.scale[r * n + i] = std::fabs(y);
    }
  }
  return f;
}

NormForward layer_norm_forward(const float* x, const float* gamma, const float* beta, size_t rows,
                               size_t n, float eps) {
  NormForward f;
  f.y.v.resize(rows * n);
  f.y.scale.resize(rows * n);
  for (auto* v : {&f.mean, &f.rstd}) {
    v->v.resize(rows);
    v->scale.resize(rows);
  }
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    double sum = 0, sum_abs = 0;
    for (size_t i = 0; i < n; ++i) {
      sum += xr[i];
      sum_abs += std::fabs(xr[i]);
    }
    double mean = sum / static_cast<double>(n);
    double var = 0;
    for (size_t i = 0; i < n; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<double>(n);
    double rstd = 1.0 / std::sqrt(var + eps);
    f.mean.v[r] = mean;
    f.mean.scale[r] = sum_abs / static_cast<double>(n);
    f.rstd.v[r] = rstd;
    f.rstd.scale[r] = rstd;
    for (size_t i = 0; i < n; ++i) {
      double y = (xr[i] - mean) * rstd * gamma[i] + beta[i];
      f.y.v[r * n + i] = y;
      // x - mean cancels: its rounding is relative to |x| + |mean|.
      f.y.scale[r * n + i] =
          (std::fabs(xr[i]) + std::fabs(mean)) * rstd * std::fabs(gamma[i]) + std::fabs(beta[i]);
    }
  }
  return f;
}

namespace {
NormBackward norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                           const float* dy, size_t rows, size_t n, bool layer) {
  NormBackward b;
  b.dx.v.resize(rows * n);
  b.dx.scale.resize(rows * n);
  for (auto* v : {&b.dgamma, &b.dbeta}) {
    v->v.assign(n, 0.0);
    v->scale.assign(n, 0.0);
  }
  std::vector<double> xh(n), g(n);
  for (size_t r = 0; r < rows; ++r) {
    double rs = rstd[r];
    double mu = layer ? static_cast<double>(mean[r]) : 0.0;
    double sum_g = 0, sum_g_abs = 0, sum_gx = 0, sum_gx_abs = 0;
    for (size_t i = 0; i < n; ++i) {
      xh[i] = (x[r * n + i] - mu) * rs;
      g[i] = static_cast<double>(dy[r * n + i]) * gamma[i];
      sum_g += g[i];
      sum_g_abs += std::fabs(g[i]);
      sum_gx += g[i] * xh[i];
      sum_gx_abs += std::fabs(g[i] * xh[i]);
    }
    double nn = static_cast<double>(n);
    double a = layer ? sum_g / nn : 0.0, c = sum_gx / nn;
    for (size_t i = 0; i < n; ++i) {
      b.dx.v[r * n + i] = (g[i] - a - xh[i] * c) * rs;
      b.dx.scale[r * n + i] =
          (std::fabs(g[i]) + (layer ? sum_g_abs / nn : 0.0) + std::fabs(xh[i]) * sum_gx_abs / nn) *
          rs;
      double t = dy[r * n + i] * xh[i];
      b.dgamma.v[i] += t;
      b.dgamma.scale[i] += std::fabs(t);
      b.dbeta.v[i] += dy[r * n + i];
      b.dbeta.scale[i] += std::fabs(dy[r * n + i]);
    }
  }
  return b;
}
}  // namespace

NormBackward rms_norm_backward(const float* x, const float* gamma, const float* rstd,
                               const float* dy, size_t rows, size_t n) {
  NormBackward b = norm_backward(x, gamma, nullptr, rstd, dy, rows, n, false);
  b.dbeta = {};
  return b;
}

NormBackward layer_norm_backward(const float* x, const float* gamma, const float* mean,
                                 const float* rstd, const float* dy, size_t rows, size_t n) {
  return norm_backward(x, gamma, mean, rstd, dy, rows, n, true);
}

Values index_add(const float* dst_old, size_t num_rows, const float* src,
                 const std::vector<int64_t>& idx, size_t w, float alpha) {
  Values out{std::vector<double>(num_rows * w, 0.0), std::vector<double>(num_rows * w, 0.0)};
  for (size_t i = 0; i < idx.size(); ++i)
    for (size_t j = 0; j < w; ++j) {
      size_t k = static_cast<size_t>(idx[i]) * w + j;
      out.v[k] += src[i * w + j];
      out.scale[k] += std::fabs(src[i * w + j]);
    }
  for (size_t k = 0; k < num_rows * w; ++k) {
    out.v[k] = dst_old[k] + static_cast<double>(alpha) * out.v[k];
    out.scale[k] = std::fabs(dst_old[k]) + std::fabs(alpha) * out.scale[k];
  }
  return out;
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
