// RMSNorm forward and backward (docs/semantics.md 3.4). Backward walks rows
// in 32-row blocks so each block's dgamma partial (colsum stage 1) is summed
// in ascending row order by one thread; stage 2 is colsum_tree.
#include <memory>

#include "dense_ops.h"
#include "isa_kernels.h"
#include "op_registry.h"
#include "row_ops.h"

namespace xhal::cpu {

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
  const auto row = isa().rms_norm_row;
  const bool stream = static_cast<uint64_t>(s.rows * s.n) * sizeof(float) >= kStreamBytes;
#pragma omp parallel for schedule(dynamic, 4) if (s.rows * s.n > 8192)
  for (int64_t r = 0; r < s.rows; ++r)
    rp[r] = row(xp + r * s.n, gp, eps, yp + r * s.n, s.n, stream);
  return XHAL_OK;
}

xhal_status_t rms_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                const xhal_plugin_tensor_t* gamma, const xhal_plugin_tensor_t* rstd,
                                const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx,
                                const xhal_plugin_tensor_t* dgamma) {
  count_launch(device);
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;  // empty: writes nothing
  const float* xp = tensor_data<float>(x);
  const float* gp = tensor_data<float>(gamma);
  const float* rp = tensor_data<float>(rstd);
  const float* dyp = tensor_data<float>(dy);
  float* dxp = tensor_data<float>(dx);
  const auto row = isa().rms_norm_backward_row;
  const bool stream = static_cast<uint64_t>(s.rows * s.n) * sizeof(float) >= kStreamBytes;
  const int64_t blocks = (s.rows + kColsumBlockRows - 1) / kColsumBlockRows;
  // Every element is set by its block before use: no zero-fill.
  std::unique_ptr<float[]> partial(new float[static_cast<size_t>(blocks * s.n)]);
#pragma omp parallel for schedule(dynamic, 1) if (s.rows * s.n > 8192)
  for (int64_t b = 0; b < blocks; ++b) {
    float* p = partial.get() + b * s.n;
    for (int64_t j = 0; j < s.n; ++j) p[j] = 0.0f;
    const int64_t end = (b + 1) * kColsumBlockRows < s.rows ? (b + 1) * kColsumBlockRows : s.rows;
    for (int64_t r = b * kColsumBlockRows; r < end; ++r)
      row(xp + r * s.n, gp, rp[r], dyp + r * s.n, dxp + r * s.n, p, s.n, stream);
  }
  colsum_tree(partial.get(), blocks, s.n, tensor_data<float>(dgamma));
  return XHAL_OK;
}

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(XHAL_OP_RMS_NORM_FORWARD, kF32Dtype, api.rms_norm_forward = rms_norm_forward);
XHAL_CPU_OP(XHAL_OP_RMS_NORM_BACKWARD, kF32Dtype, api.rms_norm_backward = rms_norm_backward);

}  // namespace xhal::cpu
