// Softmax over the last dim (docs/semantics.md 3.3): rows in parallel, each
// row by the ISA kernel (per 1024-chunk max and exponentials with their lane
// sums, chunks combined by the (m, s) tree, then each chunk's exponentials
// scaled by xhal_exp(m[c] - M) * (1 / S)). One driver for both dtypes: f32
// rows run the per-ISA kernels, f64 rows the templated row_kernels.h.
#include <vector>

#include "dense_ops.h"
#include "isa_kernels.h"
#include "op_registry.h"
#include "row_kernels.h"
#include "row_ops.h"

namespace xhal::cpu {
namespace {

template <class T, class Row>
xhal_status_t forward(const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* y, Row row) {
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;  // empty: writes nothing
  const T* xp = tensor_data<T>(x);
  T* yp = tensor_data<T>(y);
  const bool stream = static_cast<uint64_t>(s.rows * s.n) * sizeof(T) >= kStreamBytes;
#pragma omp parallel if (s.rows * s.n > 8192)
  {
    // Per-thread home of a row's exponentials between the sum and the write.
    std::vector<T> scratch(static_cast<size_t>(softmax_scratch_floats(s.n)));
#pragma omp for schedule(dynamic, 4)
    for (int64_t r = 0; r < s.rows; ++r)
      row(xp + r * s.n, yp + r * s.n, s.n, scratch.data(), stream);
  }
  return XHAL_OK;
}

template <class T, class Row>
xhal_status_t backward(const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* dy,
                       const xhal_plugin_tensor_t* dx, Row row) {
  const RowShape s = row_shape(y);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;  // empty: writes nothing
  const T* yp = tensor_data<T>(y);
  const T* dyp = tensor_data<T>(dy);
  T* dxp = tensor_data<T>(dx);
  const bool stream = static_cast<uint64_t>(s.rows * s.n) * sizeof(T) >= kStreamBytes;
#pragma omp parallel for schedule(dynamic, 4) if (s.rows * s.n > 8192)
  for (int64_t r = 0; r < s.rows; ++r) row(yp + r * s.n, dyp + r * s.n, dxp + r * s.n, s.n, stream);
  return XHAL_OK;
}

}  // namespace

xhal_status_t softmax_forward(void* device, const xhal_plugin_tensor_t* x,
                              const xhal_plugin_tensor_t* y) {
  count_launch(device);
  if (x->dtype == XHAL_DTYPE_F64) return forward<double>(x, y, rows::softmax_row<double>);
  return forward<float>(x, y, isa().softmax_row);
}

xhal_status_t softmax_backward(void* device, const xhal_plugin_tensor_t* y,
                               const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx) {
  count_launch(device);
  if (y->dtype == XHAL_DTYPE_F64)
    return backward<double>(y, dy, dx, rows::softmax_backward_row<double>);
  return backward<float>(y, dy, dx, isa().softmax_backward_row);
}

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(XHAL_OP_SOFTMAX_FORWARD, kF32F64Dtypes, api.softmax_forward = softmax_forward);
XHAL_CPU_OP(XHAL_OP_SOFTMAX_BACKWARD, kF32F64Dtypes, api.softmax_backward = softmax_backward);

}  // namespace xhal::cpu
