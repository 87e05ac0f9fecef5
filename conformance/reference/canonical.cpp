#include "reference/canonical.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace xhal::conf::canon {

namespace {

// 2^j from its bit pattern, j in [-126, 127].
float exp2_bits(int j) {
  uint32_t bits = static_cast<uint32_t>(j + 127) << 23;
  return std::bit_cast<float>(bits);
}

size_t pow2_at_least(size_t m) {
  size_t p = 1;
  while (p < m) p *= 2;
  return p;
}

// 2^j from its bit pattern, j in [-1022, 1023].
double exp2_bits64(int j) {
  uint64_t bits = static_cast<uint64_t>(j + 1023) << 52;
  return std::bit_cast<double>(bits);
}

// The exp and max of the element type (sections 2 and 7.3).
float exp_of(float x) { return xhal_exp(x); }
double exp_of(double x) { return xhal_exp64(x); }
template <class T>
T max_of(T a, T b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  return a < b ? b : a;
}

template <class T>
struct Stat {
  T m, s;
};

// The (+) operator of 3.3.
template <class T>
Stat<T> combine(Stat<T> a, Stat<T> b) {
  const T neg_inf = -std::numeric_limits<T>::infinity();
  T big = max_of(a.m, b.m);
  if (big == neg_inf) return {big, T(0)};
  T left = a.s * exp_of(a.m - big);
  T right = b.s * exp_of(b.m - big);
  return {big, left + right};
}

}  // namespace

float nan_max(float a, float b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  return a < b ? b : a;
}

float xhal_exp(float x) {
  if (x != x) return x;
  if (x > 0x1.62e42ep+6f) return std::numeric_limits<float>::infinity();
  if (x < -0x1.9fe368p+6f) return 0.0f;
  const float shifter = 0x1.8p23f;
  float t = x * 0x1.715476p+0f;
  float k = t + shifter;
  k = k - shifter;
  float hi = k * 0x1.62e400p-1f;
  float r = x - hi;
  float lo = k * 0x1.7f7d1cp-20f;
  r = r - lo;
  const float coeff[7] = {0x1.687c02p-10f, 0x1.123ba6p-7f, 0x1.555b5ap-5f, 0x1.55548ep-3f,
                          0x1.fffff8p-2f,  0x1.000000p+0f, 0x1.000000p+0f};
  float p = coeff[0];
  for (int i = 1; i < 7; ++i) {
    float pr = p * r;
    p = pr + coeff[i];
  }
  int ki = static_cast<int>(k);
  if (ki > 127) {
    float a = p * exp2_bits(127);
    return a * exp2_bits(ki - 127);
  }
  if (ki < -126) {
    float a = p * exp2_bits(-100);
    return a * exp2_bits(ki + 100);
  }
  return p * exp2_bits(ki);
}

double xhal_exp64(double x) {
  if (x != x) return x;
  if (x > 0x1.62e42fefa39efp+9) return std::numeric_limits<double>::infinity();
  if (x < -0x1.74910d52d3051p+9) return 0.0;
  const double shifter = 0x1.8p52;
  double t = x * 0x1.71547652b82fep+0;
  double k = t + shifter;
  k = k - shifter;
  double hi = k * 0x1.62e42fee00000p-1;
  double r = x - hi;
  double lo = k * 0x1.a39ef35793c76p-33;
  r = r - lo;
  // c_n = 1/n! rounded to binary64, n = 13 down to 0: 1.0 / n! is one
  // correctly rounded division of exact values (n! is exact in binary64).
  double coeff[14];
  double fact = 1.0;
  for (int n = 1; n <= 13; ++n) fact *= n;
  for (int n = 13, i = 0; n >= 0; --n, ++i) {
    coeff[i] = 1.0 / fact;
    if (n > 0) fact /= n;
  }
  double p = coeff[0];
  for (int i = 1; i < 14; ++i) {
    double pr = p * r;
    p = pr + coeff[i];
  }
  int ki = static_cast<int>(k);
  if (ki > 1023) {
    double a = p * exp2_bits64(1023);
    return a * exp2_bits64(ki - 1023);
  }
  if (ki < -1022) {
    double a = p * exp2_bits64(-600);
    return a * exp2_bits64(ki + 600);
  }
  return p * exp2_bits64(ki);
}

namespace {

template <class T>
T tree_t(std::vector<T> v) {
  if (v.empty()) return T(0);
  v.resize(pow2_at_least(v.size()), T(0));
  while (v.size() > 1) {
    std::vector<T> next(v.size() / 2);
    for (size_t i = 0; i < next.size(); ++i) next[i] = v[2 * i] + v[2 * i + 1];
    v.swap(next);
  }
  return v[0];
}

template <class T>
T rowsum_t(const T* x, size_t n) {
  size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<T> s(chunks);
  for (size_t c = 0; c < chunks; ++c) {
    std::vector<T> a(kLanes, T(0));
    for (size_t l = 0; l < kLanes; ++l)
      for (size_t t = 0; t < kSteps; ++t) {
        size_t i = c * kChunk + t * kLanes + l;
        T e = i < n ? x[i] : T(0);
        a[l] = a[l] + e;
      }
    s[c] = tree_t(a);
  }
  return tree_t(s);
}

template <class T>
T segsum_t(const std::vector<T>& terms) {
  std::vector<T> sums;
  for (size_t start = 0; start < terms.size(); start += kSegChunk) {
    T c = T(0);
    for (size_t k = start; k < terms.size() && k < start + kSegChunk; ++k) c = c + terms[k];
    sums.push_back(c);
  }
  return tree_t(sums);
}

template <class T>
std::vector<T> colsum_t(const T* terms, size_t rows, size_t n) {
  size_t blocks = (rows + kColBlock - 1) / kColBlock;
  std::vector<T> out(n);
  for (size_t j = 0; j < n; ++j) {
    std::vector<T> p(blocks);
    for (size_t b = 0; b < blocks; ++b) {
      T acc = T(0);
      for (size_t r = b * kColBlock; r < rows && r < b * kColBlock + kColBlock; ++r)
        acc = acc + terms[r * n + j];
      p[b] = acc;
    }
    out[j] = tree_t(p);
  }
  return out;
}

// Section 3.3 for one row: per chunk the max m[c] and the exponentials
// e[i] (kept for the outputs), the chunk sums s[c], and their (+) tree.
template <class T>
struct SoftmaxRow {
  std::vector<T> chunk_max, e;
  T m = 0, s = 0;
};

template <class T>
SoftmaxRow<T> softmax_row(const T* x, size_t n) {
  const T neg_inf = -std::numeric_limits<T>::infinity();
  SoftmaxRow<T> row;
  size_t chunks = (n + kChunk - 1) / kChunk;
  row.chunk_max.resize(chunks);
  row.e.resize(n);
  std::vector<Stat<T>> st(chunks);
  for (size_t c = 0; c < chunks; ++c) {
    T m = neg_inf;
    for (size_t i = c * kChunk; i < n && i < (c + 1) * kChunk; ++i) m = max_of(m, x[i]);
    for (size_t i = c * kChunk; i < n && i < (c + 1) * kChunk; ++i)
      row.e[i] = m == neg_inf ? T(0) : exp_of(x[i] - m);
    std::vector<T> a(kLanes, T(0));
    for (size_t l = 0; l < kLanes; ++l)
      for (size_t t = 0; t < kSteps; ++t) {
        size_t i = c * kChunk + t * kLanes + l;
        if (i < n) a[l] = a[l] + row.e[i];
      }
    row.chunk_max[c] = m;
    st[c] = {m, tree_t(a)};
  }
  st.resize(pow2_at_least(st.size()), Stat<T>{neg_inf, T(0)});
  while (st.size() > 1) {
    std::vector<Stat<T>> next(st.size() / 2);
    for (size_t i = 0; i < next.size(); ++i) next[i] = combine(st[2 * i], st[2 * i + 1]);
    st.swap(next);
  }
  row.m = st[0].m;
  row.s = st[0].s;
  return row;
}

template <class T>
void softmax_forward_t(const T* x, size_t rows, size_t n, T* y) {
  for (size_t r = 0; r < rows; ++r) {
    SoftmaxRow<T> row = softmax_row(x + r * n, n);
    T inv = T(1) / row.s;
    for (size_t c = 0; c < row.chunk_max.size(); ++c) {
      // One scale per chunk; its outputs reuse the chunk's exponentials.
      T scale = exp_of(row.chunk_max[c] - row.m) * inv;
      for (size_t i = c * kChunk; i < n && i < (c + 1) * kChunk; ++i)
        y[r * n + i] = row.e[i] * scale;
    }
  }
}

template <class T>
void softmax_backward_t(const T* y, const T* dy, size_t rows, size_t n, T* dx) {
  std::vector<T> p(n);
  for (size_t r = 0; r < rows; ++r) {
    const T* yr = y + r * n;
    const T* dyr = dy + r * n;
    for (size_t i = 0; i < n; ++i) p[i] = yr[i] * dyr[i];
    T d = rowsum_t(p.data(), n);
    for (size_t i = 0; i < n; ++i) dx[r * n + i] = yr[i] * (dyr[i] - d);
  }
}

// eps arrives as the call's float and is widened exactly (7.3).
template <class T>
void rms_norm_forward_t(const T* x, const T* gamma, size_t rows, size_t n, T eps, T* y, T* rstd) {
  std::vector<T> q(n);
  for (size_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    for (size_t i = 0; i < n; ++i) q[i] = xr[i] * xr[i];
    T ms = rowsum_t(q.data(), n) / static_cast<T>(n);
    T rs = T(1) / std::sqrt(ms + eps);
    rstd[r] = rs;
    for (size_t i = 0; i < n; ++i) y[r * n + i] = (xr[i] * rs) * gamma[i];
  }
}

template <class T>
void rms_norm_backward_t(const T* x, const T* gamma, const T* rstd, const T* dy, size_t rows,
                         size_t n, T* dx, T* dgamma) {
  std::vector<T> xh(n), g(n), gx(n), terms(rows * n);
  for (size_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    const T* dyr = dy + r * n;
    for (size_t i = 0; i < n; ++i) {
      xh[i] = xr[i] * rstd[r];
      g[i] = dyr[i] * gamma[i];
      gx[i] = g[i] * xh[i];
      terms[r * n + i] = dyr[i] * xh[i];
    }
    T c = rowsum_t(gx.data(), n) / static_cast<T>(n);
    for (size_t i = 0; i < n; ++i) dx[r * n + i] = (g[i] - xh[i] * c) * rstd[r];
  }
  std::vector<T> dg = colsum_t(terms.data(), rows, n);
  std::memcpy(dgamma, dg.data(), n * sizeof(T));
}

template <class T>
void layer_norm_forward_t(const T* x, const T* gamma, const T* beta, size_t rows, size_t n, T eps,
                          T* y, T* mean, T* rstd) {
  std::vector<T> d(n), dd(n);
  for (size_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    T mu = rowsum_t(xr, n) / static_cast<T>(n);
    for (size_t i = 0; i < n; ++i) {
      d[i] = xr[i] - mu;
      dd[i] = d[i] * d[i];
    }
    T var = rowsum_t(dd.data(), n) / static_cast<T>(n);
    T rs = T(1) / std::sqrt(var + eps);
    mean[r] = mu;
    rstd[r] = rs;
    for (size_t i = 0; i < n; ++i) y[r * n + i] = (d[i] * rs) * gamma[i] + beta[i];
  }
}

template <class T>
void layer_norm_backward_t(const T* x, const T* gamma, const T* mean, const T* rstd, const T* dy,
                           size_t rows, size_t n, T* dx, T* dgamma, T* dbeta) {
  std::vector<T> xh(n), g(n), gx(n), terms(rows * n), dys(dy, dy + rows * n);
  for (size_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    const T* dyr = dy + r * n;
    for (size_t i = 0; i < n; ++i) {
      xh[i] = (xr[i] - mean[r]) * rstd[r];
      g[i] = dyr[i] * gamma[i];
      gx[i] = g[i] * xh[i];
      terms[r * n + i] = dyr[i] * xh[i];
    }
    T a = rowsum_t(g.data(), n) / static_cast<T>(n);
    T b = rowsum_t(gx.data(), n) / static_cast<T>(n);
    for (size_t i = 0; i < n; ++i) dx[r * n + i] = ((g[i] - a) - xh[i] * b) * rstd[r];
  }
  std::vector<T> dg = colsum_t(terms.data(), rows, n);
  std::vector<T> db = colsum_t(dys.data(), rows, n);
  std::memcpy(dgamma, dg.data(), n * sizeof(T));
  std::memcpy(dbeta, db.data(), n * sizeof(T));
}

// alpha is the call's float, widened exactly for f64 (7.3).
template <class T>
void index_add_t(T* dst, size_t num_rows, const T* src, const std::vector<int64_t>& idx, size_t w,
                 T alpha) {
  // Sources of each row in ascending position (a stable bucket pass).
  std::vector<std::vector<size_t>> sources(num_rows);
  for (size_t i = 0; i < idx.size(); ++i) sources[static_cast<size_t>(idx[i])].push_back(i);
  std::vector<T> terms;
  for (size_t r = 0; r < num_rows; ++r) {
    if (sources[r].empty()) continue;
    for (size_t j = 0; j < w; ++j) {
      terms.clear();
      for (size_t i : sources[r]) terms.push_back(src[i * w + j]);
      T t = segsum_t(terms);
      dst[r * w + j] = dst[r * w + j] + alpha * t;
    }
  }
}

}  // namespace

float tree(std::vector<float> v) { return tree_t(std::move(v)); }
double tree64(std::vector<double> v) { return tree_t(std::move(v)); }
float rowsum(const float* x, size_t n) { return rowsum_t(x, n); }
double rowsum64(const double* x, size_t n) { return rowsum_t(x, n); }
float segsum(const std::vector<float>& terms) { return segsum_t(terms); }
double segsum64(const std::vector<double>& terms) { return segsum_t(terms); }
std::vector<float> colsum(const float* terms, size_t rows, size_t n) {
  return colsum_t(terms, rows, n);
}
std::vector<double> colsum64(const double* terms, size_t rows, size_t n) {
  return colsum_t(terms, rows, n);
}

void softmax_stats(const float* x, size_t n, float* out_m, float* out_s) {
  SoftmaxRow<float> row = softmax_row(x, n);
  *out_m = row.m;
  *out_s = row.s;
}

void softmax_forward(const float* x, size_t rows, size_t n, float* y) {
  softmax_forward_t(x, rows, n, y);
}
void softmax_forward(const double* x, size_t rows, size_t n, double* y) {
  softmax_forward_t(x, rows, n, y);
}
void softmax_backward(const float* y, const float* dy, size_t rows, size_t n, float* dx) {
  softmax_backward_t(y, dy, rows, n, dx);
}
void softmax_backward(const double* y, const double* dy, size_t rows, size_t n, double* dx) {
  softmax_backward_t(y, dy, rows, n, dx);
}
void rms_norm_forward(const float* x, const float* gamma, size_t rows, size_t n, float eps,
                      float* y, float* rstd) {
  rms_norm_forward_t(x, gamma, rows, n, eps, y, rstd);
}
void rms_norm_forward(const double* x, const double* gamma, size_t rows, size_t n, float eps,
                      double* y, double* rstd) {
  rms_norm_forward_t(x, gamma, rows, n, static_cast<double>(eps), y, rstd);
}
void rms_norm_backward(const float* x, const float* gamma, const float* rstd, const float* dy,
                       size_t rows, size_t n, float* dx, float* dgamma) {
  rms_norm_backward_t(x, gamma, rstd, dy, rows, n, dx, dgamma);
}
void rms_norm_backward(const double* x, const double* gamma, const double* rstd, const double* dy,
                       size_t rows, size_t n, double* dx, double* dgamma) {
  rms_norm_backward_t(x, gamma, rstd, dy, rows, n, dx, dgamma);
}
void layer_norm_forward(const float* x, const float* gamma, const float* beta, size_t rows,
                        size_t n, float eps, float* y, float* mean, float* rstd) {
  layer_norm_forward_t(x, gamma, beta, rows, n, eps, y, mean, rstd);
}
void layer_norm_forward(const double* x, const double* gamma, const double* beta, size_t rows,
                        size_t n, float eps, double* y, double* mean, double* rstd) {
  layer_norm_forward_t(x, gamma, beta, rows, n, static_cast<double>(eps), y, mean, rstd);
}
void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                         const float* dy, size_t rows, size_t n, float* dx, float* dgamma,
                         float* dbeta) {
  layer_norm_backward_t(x, gamma, mean, rstd, dy, rows, n, dx, dgamma, dbeta);
}
void layer_norm_backward(const double* x, const double* gamma, const double* mean,
                         const double* rstd, const double* dy, size_t rows, size_t n, double* dx,
                         double* dgamma, double* dbeta) {
  layer_norm_backward_t(x, gamma, mean, rstd, dy, rows, n, dx, dgamma, dbeta);
}
void index_add(float* dst, size_t num_rows, const float* src, const std::vector<int64_t>& idx,
               size_t w, float alpha) {
  index_add_t(dst, num_rows, src, idx, w, alpha);
}
void index_add(double* dst, size_t num_rows, const double* src, const std::vector<int64_t>& idx,
               size_t w, float alpha) {
  index_add_t(dst, num_rows, src, idx, w, static_cast<double>(alpha));
}

std::vector<uint8_t> index_select(const uint8_t* src, const std::vector<int64_t>& idx,
                                  size_t row_bytes) {
  std::vector<uint8_t> out(idx.size() * row_bytes);
  for (size_t i = 0; i < idx.size(); ++i)
    std::memcpy(out.data() + i * row_bytes, src + static_cast<size_t>(idx[i]) * row_bytes,
                row_bytes);
  return out;
}

std::vector<uint8_t> permute(const uint8_t* src, size_t elem_size,
                             const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                             const std::vector<uint32_t>& perm) {
  size_t rank = shape.size();
  size_t total = 1;
  for (int64_t d : shape) total *= static_cast<size_t>(d);
  std::vector<uint8_t> out(total * elem_size);
  std::vector<int64_t> out_shape(rank), i(rank, 0);
  for (size_t k = 0; k < rank; ++k) out_shape[k] = shape[perm[k]];
  for (size_t flat = 0; flat < total; ++flat) {
    // i is the dst multi-index of `flat`; j[perm[k]] = i[k].
    int64_t src_elem = 0;
    for (size_t k = 0; k < rank; ++k) src_elem += i[k] * strides[perm[k]];
    std::memcpy(out.data() + flat * elem_size, src + src_elem * elem_size, elem_size);
    for (size_t k = rank; k-- > 0;) {
      if (++i[k] < out_shape[k]) break;
      i[k] = 0;
    }
  }
  return out;
}

}  // namespace xhal::conf::canon
