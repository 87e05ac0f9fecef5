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

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Stat {
  float m, s;
};

// The (+) operator of 3.3.
Stat combine(Stat a, Stat b) {
  float big = nan_max(a.m, b.m);
  if (big == kNegInf) return {big, 0.0f};
  float left = a.s * xhal_exp(a.m - big);
  float right = b.s * xhal_exp(b.m - big);
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

float tree(std::vector<float> v) {
  if (v.empty()) return 0.0f;
  v.resize(pow2_at_least(v.size()), 0.0f);
  while (v.size() > 1) {
    std::vector<float> next(v.size() / 2);
    for (size_t i = 0; i < next.size(); ++i) next[i] = v[2 * i] + v[2 * i + 1];
    v.swap(next);
  }
  return v[0];
}

float rowsum(const float* x, size_t n) {
  size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<float> s(chunks);
  for (size_t c = 0; c < chunks; ++c) {
    std::vector<float> a(kLanes, 0.0f);
    for (size_t l = 0; l < kLanes; ++l)
      for (size_t t = 0; t < kSteps; ++t) {
        size_t i = c * kChunk + t * kLanes + l;
        float e = i < n ? x[i] : 0.0f;
        a[l] = a[l] + e;
      }
    s[c] = tree(a);
  }
  return tree(s);
}

float segsum(const std::vector<float>& terms) {
  std::vector<float> sums;
  for (size_t start = 0; start < terms.size(); start += kSegChunk) {
    float c = 0.0f;
    for (size_t k = start; k < terms.size() && k < start + kSegChunk; ++k) c = c + terms[k];
    sums.push_back(c);
  }
  return tree(sums);
}

std::vector<float> colsum(const float* terms, size_t rows, size_t n) {
  size_t blocks = (rows + kColBlock - 1) / kColBlock;
  std::vector<float> out(n);
  for (size_t j = 0; j < n; ++j) {
    std::vector<float> p(blocks);
    for (size_t b = 0; b < blocks; ++b) {
      float acc = 0.0f;
      for (size_t r = b * kColBlock; r < rows && r < b * kColBlock + kColBlock; ++r)
        acc = acc + terms[r * n + j];
      p[b] = acc;
    }
    out[j] = tree(p);
  }
  return out;
}

namespace {

// Section 3.3 for one row: per chunk the max m[c] and the exponentials
// e[i] (kept for the outputs), the chunk sums s[c], and their (+) tree.
struct SoftmaxRow {
  std::vector<float> chunk_max, e;
  float m = 0, s = 0;
};

SoftmaxRow softmax_row(const float* x, size_t n) {
  SoftmaxRow row;
  size_t chunks = (n + kChunk - 1) / kChunk;
  row.chunk_max.resize(chunks);
  row.e.resize(n);
  std::vector<Stat> st(chunks);
  for (size_t c = 0; c < chunks; ++c) {
    float m = kNegInf;
    for (size_t i = c * kChunk; i < n && i < (c + 1) * kChunk; ++i) m = nan_max(m, x[i]);
    for (size_t i = c * kChunk; i < n && i < (c + 1) * kChunk; ++i)
      row.e[i] = m == kNegInf ? 0.0f : xhal_exp(x[i] - m);
    std::vector<float> a(kLanes, 0.0f);
    for (size_t l = 0; l < kLanes; ++l)
      for (size_t t = 0; t < kSteps; ++t) {
        size_t i = c * kChunk + t * kLanes + l;
        if (i < n) a[l] = a[l] + row.e[i];
      }
    row.chunk_max[c] = m;
    st[c] = {m, tree(a)};
  }
  st.resize(pow2_at_least(st.size()), Stat{kNegInf, 0.0f});
  while (st.size() > 1) {
    std::vector<Stat> next(st.size() / 2);
    for (size_t i = 0; i < next.size(); ++i) next[i] = combine(st[2 * i], st[2 * i + 1]);
    st.swap(next);
  }
  row.m = st[0].m;
  row.s = st[0].s;
  return row;
}

}  // namespace

void softmax_stats(const float* x, size_t n, float* out_m, float* out_s) {
  SoftmaxRow row = softmax_row(x, n);
  *out_m = row.m;
  *out_s = row.s;
}

void softmax_forward(const float* x, size_t rows, size_t n, float* y) {
  for (size_t r = 0; r < rows; ++r) {
    SoftmaxRow row = softmax_row(x + r * n, n);
    float inv = 1.0f / row.s;
    for (size_t c = 0; c < row.chunk_max.size(); ++c) {
      // One scale per chunk; its outputs reuse the chunk's exponentials.
      float scale = xhal_exp(row.chunk_max[c] - row.m) * inv;
      for (size_t i = c * kChunk; i < n && i < (c + 1) * kChunk; ++i)
        y[r * n + i] = row.e[i] * scale;
    }
  }
}

void softmax_backward(const float* y, const float* dy, size_t rows, size_t n, float* dx) {
  std::vector<float> p(n);
  for (size_t r = 0; r < rows; ++r) {
    const float* yr = y + r * n;
    const float* dyr = dy + r * n;
    for (size_t i = 0; i < n; ++i) p[i] = yr[i] * dyr[i];
    float d = rowsum(p.data(), n);
    for (size_t i = 0; i < n; ++i) dx[r * n + i] = yr[i] * (dyr[i] - d);
  }
}

void rms_norm_forward(const float* x, const float* gamma, size_t rows, size_t n, float eps,
                      float* y, float* rstd) {
  std::vector<float> q(n);
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    for (size_t i = 0; i < n; ++i) q[i] = xr[i] * xr[i];
    float ms = rowsum(q.data(), n) / static_cast<float>(n);
    float rs = 1.0f / std::sqrt(ms + eps);
    rstd[r] = rs;
    for (size_t i = 0; i < n; ++i) y[r * n + i] = (xr[i] * rs) * gamma[i];
  }
}

void rms_norm_backward(const float* x, const float* gamma, const float* rstd, const float* dy,
                       size_t rows, size_t n, float* dx, float* dgamma) {
  std::vector<float> xh(n), g(n), gx(n), terms(rows * n);
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    const float* dyr = dy + r * n;
    for (size_t i = 0; i < n; ++i) {
      xh[i] = xr[i] * rstd[r];
      g[i] = dyr[i] * gamma[i];
      gx[i] = g[i] * xh[i];
      terms[r * n + i] = dyr[i] * xh[i];
    }
    float c = rowsum(gx.data(), n) / static_cast<float>(n);
    for (size_t i = 0; i < n; ++i) dx[r * n + i] = (g[i] - xh[i] * c) * rstd[r];
  }
  std::vector<float> dg = colsum(terms.data(), rows, n);
  std::memcpy(dgamma, dg.data(), n * sizeof(float));
}

void layer_norm_forward(const float* x, const float* gamma, const float* beta, size_t rows,
                        size_t n, float eps, float* y, float* mean, float* rstd) {
  std::vector<float> d(n), dd(n);
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float mu = rowsum(xr, n) / static_cast<float>(n);
    for (size_t i = 0; i < n; ++i) {
      d[i] = xr[i] - mu;
      dd[i] = d[i] * d[i];
    }
    float var = rowsum(dd.data(), n) / static_cast<float>(n);
    float rs = 1.0f / std::sqrt(var + eps);
    mean[r] = mu;
    rstd[r] = rs;
    for (size_t i = 0; i < n; ++i) y[r * n + i] = (d[i] * rs) * gamma[i] + beta[i];
  }
}

void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                         const float* dy, size_t rows, size_t n, float* dx, float* dgamma,
                         float* dbeta) {
  std::vector<float> xh(n), g(n), gx(n), terms(rows * n), dys(dy, dy + rows * n);
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    const float* dyr = dy + r * n;
    for (size_t i = 0; i < n; ++i) {
      xh[i] = (xr[i] - mean[r]) * rstd[r];
      g[i] = dyr[i] * gamma[i];
      gx[i] = g[i] * xh[i];
      terms[r * n + i] = dyr[i] * xh[i];
    }
    float a = rowsum(g.data(), n) / static_cast<float>(n);
    float b = rowsum(gx.data(), n) / static_cast<float>(n);
    for (size_t i = 0; i < n; ++i) dx[r * n + i] = ((g[i] - a) - xh[i] * b) * rstd[r];
  }
  std::vector<float> dg = colsum(terms.data(), rows, n);
  std::vector<float> db = colsum(dys.data(), rows, n);
  std::memcpy(dgamma, dg.data(), n * sizeof(float));
  std::memcpy(dbeta, db.data(), n * sizeof(float));
}

void index_add(float* dst, size_t num_rows, const float* src, const std::vector<int64_t>& idx,
               size_t w, float alpha) {
  // Sources of each row in ascending position (a stable bucket pass).
  std::vector<std::vector<size_t>> sources(num_rows);
  for (size_t i = 0; i < idx.size(); ++i) sources[static_cast<size_t>(idx[i])].push_back(i);
  std::vector<float> terms;
  for (size_t r = 0; r < num_rows; ++r) {
    if (sources[r].empty()) continue;
    for (size_t j = 0; j < w; ++j) {
      terms.clear();
      for (size_t i : sources[r]) terms.push_back(src[i * w + j]);
      float t = segsum(terms);
      dst[r * w + j] = dst[r * w + j] + alpha * t;
    }
  }
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
