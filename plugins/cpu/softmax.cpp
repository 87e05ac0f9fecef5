// Softmax over the last dim (docs/semantics.md 3.3): rows in parallel, each
// row by the ISA kernel (per 1024-chunk max and exponentials with their lane
// sums, chunks combined by the (m, s) tree, then each chunk's exponentials
// scaled by xhal_exp(m[c] - M) * (1 / S)).
#include <vector>

#include "dense_ops.h"
#include "isa_kernels.h"
#include "op_registry.h"
#include "row_ops.h"

namespace xhal::cpu {

xhal_status_t softmax_forward(void* device, const xhal_plugin_tensor_t* x,
                              const xhal_plugin_tensor_t* y) {
  count_launch(device);
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;  // empty: writes nothing
  const float* xp = tensor_data<float>(x);
  float* yp = tensor_data<float>(y);
  const auto row = isa().softmax_row;
  const bool stream = static_cast<uint64_t>(s.rows * s.n) * sizeof(float) >= kStreamBytes;
#pragma omp parallel if (s.rows * s.n > 8192)
  {
    // Per-thread home of a row's exponentials between the sum and the write.
    std::vector<float> scratch(static_cast<size_t>(softmax_scratch_floats(s.n)));
#pragma omp for schedule(dynamic, 4)
    for (int64_t r = 0; r < s.rows; ++r)
      row(xp + r * s.n, yp + r * s.n, s.n, scratch.data(), stream);
  }
  return XHAL_OK;
}

xhal_status_t softmax_backward(void* device, const xhal_plugin_tensor_t* y,
                               const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx) {
  count_launch(device);
  const RowShape s = row_shape(y);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;  // empty: writes nothing
  const float* yp = tensor_data<float>(y);
  const float* dyp = tensor_data<float>(dy);
  float* dxp = tensor_data<float>(dx);
  const auto row = isa().softmax_backward_row;
  const bool stream = static_cast<uint64_t>(s.rows * s.n) * sizeof(float) >= kStreamBytes;
#pragma omp parallel for schedule(dynamic, 4) if (s.rows * s.n > 8192)
  for (int64_t r = 0; r < s.rows; ++r) row(yp + r * s.n, dyp + r * s.n, dxp + r * s.n, s.n, stream);
  return XHAL_OK;
}

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(XHAL_OP_SOFTMAX_FORWARD, kF32Dtype, api.softmax_forward = softmax_forward);
XHAL_CPU_OP(XHAL_OP_SOFTMAX_BACKWARD, kF32Dtype, api.softmax_backward = softmax_backward);

}  // namespace xhal::cpu
