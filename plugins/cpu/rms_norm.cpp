// RMSNorm forward and backward (docs/semantics.md 3.4). Backward walks rows
// in 32-row blocks so each block's dgamma partial (colsum stage 1) is summed
// in ascending row order by one thread; stage 2 is colsum_tree.
#include <cmath>
#include <vector>

#include "dense_ops.h"
#include "reductions.h"
#include "row_ops.h"

namespace xhal::cpu {
namespace {

XHAL_CPU_CLONES
float rms_norm_row(const float* x, const float* gamma, float eps, float* y, int64_t n) {
  const float sum = rowsum(
      n, [&](int64_t i) { V v = load(x + i); return v * v; },
      [&](int64_t i) { return x[i] * x[i]; });
  const float ms = sum / static_cast<float>(n);
  const float rstd = 1.0f / std::sqrt(ms + eps);
  const V rv = splat(rstd);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(y + i, (load(x + i) * rv) * load(gamma + i));
  for (; i < n; ++i) y[i] = (x[i] * rstd) * gamma[i];
  return rstd;
}

// dx for one row; adds dy * xh into the block partial p (stage 1 of 3.5).
XHAL_CPU_CLONES
void rms_norm_backward_row(const float* x, const float* gamma, float rstd, const float* dy,
                           float* dx, float* p, int64_t n) {
  const V rv = splat(rstd);
  const float dot = rowsum(
      n,
      [&](int64_t i) { return (load(dy + i) * load(gamma + i)) * (load(x + i) * rv); },
      [&](int64_t i) { return (dy[i] * gamma[i]) * (x[i] * rstd); });
  const float c = dot / static_cast<float>(n);
  const V cv = splat(c);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const V xh = load(x + i) * rv;
    const V d = load(dy + i);
    const V g = d * load(gamma + i);
    store(p + i, load(p + i) + d * xh);
    store(dx + i, (g - xh * cv) * rv);
  }
  for (; i < n; ++i) {
    const float xh = x[i] * rstd;
    const float d = dy[i];
    const float g = d * gamma[i];
    p[i] = p[i] + d * xh;
    dx[i] = (g - xh * c) * rstd;
  }
}

}  // namespace

xhal_status_t rms_norm_forward(void* device, const xhal_plugin_tensor_t* x,
                               const xhal_plugin_tensor_t* gamma, float eps,
                               const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* rstd) {
  count_launch(device);
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;  // empty: writes nothing
  const float* xp = tensor_data<float>(x);
  const float* gp = tensor_data<float>(gamma);
  float* yp = tensor_data<float>(y);
  float* rp = tensor_data<float>(rstd);
#pragma omp parallel for schedule(dynamic, 4) if (s.rows * s.n > 8192)
  for (int64_t r = 0; r < s.rows; ++r)
    rp[r] = rms_norm_row(xp + r * s.n, gp, eps, yp + r * s.n, s.n);
  return XHAL_OK;
}

xhal_status_t rms_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                const xhal_plugin_tensor_t* gamma,
                                const xhal_plugin_tensor_t* rstd, const xhal_plugin_tensor_t* dy,
                                const xhal_plugin_tensor_t* dx,
                                const xhal_plugin_tensor_t* dgamma) {
  count_launch(device);
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;  // empty: writes nothing
  const float* xp = tensor_data<float>(x);
  const float* gp = tensor_data<float>(gamma);
  const float* rp = tensor_data<float>(rstd);
  const float* dyp = tensor_data<float>(dy);
  float* dxp = tensor_data<float>(dx);
  const int64_t blocks = (s.rows + kColsumBlockRows - 1) / kColsumBlockRows;
  std::vector<float> partial(static_cast<size_t>(blocks * s.n));
#pragma omp parallel for schedule(dynamic, 1) if (s.rows * s.n > 8192)
  for (int64_t b = 0; b < blocks; ++b) {
    float* p = partial.data() + b * s.n;
    for (int64_t j = 0; j < s.n; ++j) p[j] = 0.0f;
    const int64_t end = (b + 1) * kColsumBlockRows < s.rows ? (b + 1) * kColsumBlockRows : s.rows;
    for (int64_t r = b * kColsumBlockRows; r < end; ++r)
      rms_norm_backward_row(xp + r * s.n, gp, rp[r], dyp + r * s.n, dxp + r * s.n, p, s.n);
  }
  colsum_tree(partial.data(), blocks, s.n, tensor_data<float>(dgamma));
  return XHAL_OK;
}

}  // namespace xhal::cpu
