// LayerNorm forward and backward (docs/semantics.md 3.6), two-pass and
// numerically stable (the variance sums (x - mean)^2). Backward computes its
// two row sums in one pass and builds dgamma/dbeta as in rms_norm.cpp.
#include <cmath>
#include <vector>

#include "dense_ops.h"
#include "reductions.h"
#include "row_ops.h"

namespace xhal::cpu {
namespace {

struct MeanRstd {
  float mean, rstd;
};

XHAL_CPU_CLONES
MeanRstd layer_norm_row(const float* x, const float* gamma, const float* beta, float eps,
                        float* y, int64_t n) {
  const float nf = static_cast<float>(n);
  const float mean = rowsum(n, [&](int64_t i) { return load(x + i); },
                            [&](int64_t i) { return x[i]; }) / nf;
  const V mv = splat(mean);
  const float var = rowsum(
      n, [&](int64_t i) { V d = load(x + i) - mv; return d * d; },
      [&](int64_t i) { float d = x[i] - mean; return d * d; }) / nf;
  const float rstd = 1.0f / std::sqrt(var + eps);
  const V rv = splat(rstd);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    store(y + i, ((load(x + i) - mv) * rv) * load(gamma + i) + load(beta + i));
  for (; i < n; ++i) y[i] = ((x[i] - mean) * rstd) * gamma[i] + beta[i];
  return {mean, rstd};
}

XHAL_CPU_CLONES
void layer_norm_backward_row(const float* x, const float* gamma, float mean, float rstd,
                             const float* dy, float* dx, float* pg, float* pb, int64_t n) {
  const float nf = static_cast<float>(n);
  const V mv = splat(mean), rv = splat(rstd);
  const float a = rowsum(n, [&](int64_t i) { return load(dy + i) * load(gamma + i); },
                         [&](int64_t i) { return dy[i] * gamma[i]; }) / nf;
  const float b = rowsum(
      n,
      [&](int64_t i) { return (load(dy + i) * load(gamma + i)) * ((load(x + i) - mv) * rv); },
      [&](int64_t i) { return (dy[i] * gamma[i]) * ((x[i] - mean) * rstd); }) / nf;
  const V av = splat(a), bv = splat(b);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const V xh = (load(x + i) - mv) * rv;
    const V d = load(dy + i);
    const V g = d * load(gamma + i);
    store(pg + i, load(pg + i) + d * xh);
    store(pb + i, load(pb + i) + d);
    store(dx + i, ((g - av) - xh * bv) * rv);
  }
  for (; i < n; ++i) {
    const float xh = (x[i] - mean) * rstd;
    const float d = dy[i];
    const float g = d * gamma[i];
    pg[i] = pg[i] + d * xh;
    pb[i] = pb[i] + d;
    dx[i] = ((g - a) - xh * b) * rstd;
  }
}

}  // namespace

xhal_status_t layer_norm_forward(void* device, const xhal_plugin_tensor_t* x,
                                 const xhal_plugin_tensor_t* gamma,
                                 const xhal_plugin_tensor_t* beta, float eps,
                                 const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* mean,
                                 const xhal_plugin_tensor_t* rstd) {
  count_launch(device);
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;  // empty: writes nothing
  const float* xp = tensor_data<float>(x);
  const float* gp = tensor_data<float>(gamma);
  const float* bp = tensor_data<float>(beta);
  float* yp = tensor_data<float>(y);
  float* mp = tensor_data<float>(mean);
  float* rp = tensor_data<float>(rstd);
#pragma omp parallel for schedule(dynamic, 4) if (s.rows * s.n > 8192)
  for (int64_t r = 0; r < s.rows; ++r) {
    const MeanRstd m = layer_norm_row(xp + r * s.n, gp, bp, eps, yp + r * s.n, s.n);
    mp[r] = m.mean;
    rp[r] = m.rstd;
  }
  return XHAL_OK;
}

xhal_status_t layer_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                  const xhal_plugin_tensor_t* gamma,
                                  const xhal_plugin_tensor_t* mean,
                                  const xhal_plugin_tensor_t* rstd,
                                  const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx,
                                  const xhal_plugin_tensor_t* dgamma,
                                  const xhal_plugin_tensor_t* dbeta) {
  count_launch(device);
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;  // empty: writes nothing
  const float* xp = tensor_data<float>(x);
  const float* gp = tensor_data<float>(gamma);
  const float* mp = tensor_data<float>(mean);
  const float* rp = tensor_data<float>(rstd);
  const float* dyp = tensor_data<float>(dy);
  float* dxp = tensor_data<float>(dx);
  const int64_t blocks = (s.rows + kColsumBlockRows - 1) / kColsumBlockRows;
  std::vector<float> partial_g(static_cast<size_t>(blocks * s.n));
  std::vector<float> partial_b(static_cast<size_t>(blocks * s.n));
#pragma omp parallel for schedule(dynamic, 1) if (s.rows * s.n > 8192)
  for (int64_t b = 0; b < blocks; ++b) {
    float* pg = partial_g.data() + b * s.n;
    float* pb = partial_b.data() + b * s.n;
    for (int64_t j = 0; j < s.n; ++j) pg[j] = pb[j] = 0.0f;
    const int64_t end = (b + 1) * kColsumBlockRows < s.rows ? (b + 1) * kColsumBlockRows : s.rows;
    for (int64_t r = b * kColsumBlockRows; r < end; ++r)
      layer_norm_backward_row(xp + r * s.n, gp, mp[r], rp[r], dyp + r * s.n, dxp + r * s.n, pg,
                              pb, s.n);
  }
  colsum_tree(partial_g.data(), blocks, s.n, tensor_data<float>(dgamma));
  colsum_tree(partial_b.data(), blocks, s.n, tensor_data<float>(dbeta));
  return XHAL_OK;
}

}  // namespace xhal::cpu
