// LayerNorm forward and backward (docs/semantics.md 3.6), two-pass and
// numerically stable (the variance sums (x - mean)^2). Backward builds
// dgamma/dbeta from 32-row block partials as in rms_norm.cpp.
#include <memory>

#include "dense_ops.h"
#include "isa_kernels.h"
#include "op_registry.h"
#include "row_ops.h"

namespace xhal::cpu {

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
  const auto row = isa().layer_norm_row;
  const bool stream = static_cast<uint64_t>(s.rows * s.n) * sizeof(float) >= kStreamBytes;
#pragma omp parallel for schedule(dynamic, 4) if (s.rows * s.n > 8192)
  for (int64_t r = 0; r < s.rows; ++r)
    row(xp + r * s.n, gp, bp, eps, yp + r * s.n, s.n, mp + r, rp + r, stream);
  return XHAL_OK;
}

xhal_status_t layer_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                  const xhal_plugin_tensor_t* gamma,
                                  const xhal_plugin_tensor_t* mean,
                                  const xhal_plugin_tensor_t* rstd, const xhal_plugin_tensor_t* dy,
                                  const xhal_plugin_tensor_t* dx,
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
  const auto row = isa().layer_norm_backward_row;
  const bool stream = static_cast<uint64_t>(s.rows * s.n) * sizeof(float) >= kStreamBytes;
  const int64_t blocks = (s.rows + kColsumBlockRows - 1) / kColsumBlockRows;
  // Every element is set by its block before use: no zero-fill.
  std::unique_ptr<float[]> partial_g(new float[static_cast<size_t>(blocks * s.n)]);
  std::unique_ptr<float[]> partial_b(new float[static_cast<size_t>(blocks * s.n)]);
#pragma omp parallel for schedule(dynamic, 1) if (s.rows * s.n > 8192)
  for (int64_t b = 0; b < blocks; ++b) {
    float* pg = partial_g.get() + b * s.n;
    float* pb = partial_b.get() + b * s.n;
    for (int64_t j = 0; j < s.n; ++j) pg[j] = pb[j] = 0.0f;
    const int64_t end = (b + 1) * kColsumBlockRows < s.rows ? (b + 1) * kColsumBlockRows : s.rows;
    for (int64_t r = b * kColsumBlockRows; r < end; ++r)
      row(xp + r * s.n, gp, mp[r], rp[r], dyp + r * s.n, dxp + r * s.n, pg, pb, s.n, stream);
  }
  colsum_tree(partial_g.get(), blocks, s.n, tensor_data<float>(dgamma));
  colsum_tree(partial_b.get(), blocks, s.n, tensor_data<float>(dbeta));
  return XHAL_OK;
}

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(XHAL_OP_LAYER_NORM_FORWARD, kF32Dtype, api.layer_norm_forward = layer_norm_forward);
XHAL_CPU_OP(XHAL_OP_LAYER_NORM_BACKWARD, kF32Dtype, api.layer_norm_backward = layer_norm_backward);

}  // namespace xhal::cpu
