// Softmax over the last dim (docs/semantics.md 3.3): rows in parallel, each
// row by the ISA kernel (per 1024-chunk max and exponentials with their lane
// sums, chunks combined by the (m, s) tree, then each chunk's exponentials
// scaled by xhal_exp(m[c] - M) * (1 / S)). One driver for both dtypes: f32
// rows run the per-ISA kernels, f64 rows the templated row_kernels.h. f16
// and bf16 rows (7.2) are widened into a per-thread f32 row, run through
// the f32 kernel and narrowed once per element.
#include <vector>

#include "dense_ops.h"
#include "isa_kernels.h"
#include "narrow.h"
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

// f16/bf16: each row widened exactly, the f32 row kernel, one narrowing.
xhal_status_t forward_narrow(const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* y) {
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;
  const xhal_dtype_t dtype = x->dtype;
  const uint16_t* xp = tensor_data<uint16_t>(x);
  uint16_t* yp = tensor_data<uint16_t>(y);
  const auto row = isa().softmax_row;
#pragma omp parallel if (s.rows * s.n > 8192)
  {
    std::vector<float> xr(static_cast<size_t>(s.n)), yr(static_cast<size_t>(s.n));
    std::vector<float> scratch(static_cast<size_t>(softmax_scratch_floats(s.n)));
#pragma omp for schedule(dynamic, 4)
    for (int64_t r = 0; r < s.rows; ++r) {
      widen_row(dtype, xp + r * s.n, xr.data(), s.n);
      row(xr.data(), yr.data(), s.n, scratch.data(), false);
      narrow_row(dtype, yr.data(), yp + r * s.n, s.n);
    }
  }
  return XHAL_OK;
}

xhal_status_t backward_narrow(const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* dy,
                              const xhal_plugin_tensor_t* dx) {
  const RowShape s = row_shape(y);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;
  const xhal_dtype_t dtype = y->dtype;
  const uint16_t* yp = tensor_data<uint16_t>(y);
  const uint16_t* dyp = tensor_data<uint16_t>(dy);
  uint16_t* dxp = tensor_data<uint16_t>(dx);  // may be dy (in place): each row is read first
  const auto row = isa().softmax_backward_row;
#pragma omp parallel if (s.rows * s.n > 8192)
  {
    std::vector<float> yr(static_cast<size_t>(s.n)), dyr(static_cast<size_t>(s.n)),
        dxr(static_cast<size_t>(s.n));
#pragma omp for schedule(dynamic, 4)
    for (int64_t r = 0; r < s.rows; ++r) {
      widen_row(dtype, yp + r * s.n, yr.data(), s.n);
      widen_row(dtype, dyp + r * s.n, dyr.data(), s.n);
      row(yr.data(), dyr.data(), dxr.data(), s.n, false);
      narrow_row(dtype, dxr.data(), dxp + r * s.n, s.n);
    }
  }
  return XHAL_OK;
}

}  // namespace

xhal_status_t softmax_forward(void* device, const xhal_plugin_tensor_t* x,
                              const xhal_plugin_tensor_t* y) {
  count_launch(device);
  if (x->dtype == XHAL_DTYPE_F64) return forward<double>(x, y, rows::softmax_row<double>);
  if (is_narrow(x->dtype)) return forward_narrow(x, y);
  return forward<float>(x, y, isa().softmax_row);
}

xhal_status_t softmax_backward(void* device, const xhal_plugin_tensor_t* y,
                               const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx) {
  count_launch(device);
  if (y->dtype == XHAL_DTYPE_F64)
    return backward<double>(y, dy, dx, rows::softmax_backward_row<double>);
  if (is_narrow(y->dtype)) return backward_narrow(y, dy, dx);
  return backward<float>(y, dy, dx, isa().softmax_backward_row);
}

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(XHAL_OP_SOFTMAX_FORWARD, kFloatDtypes, api.softmax_forward = softmax_forward);
XHAL_CPU_OP(XHAL_OP_SOFTMAX_BACKWARD, kFloatDtypes, api.softmax_backward = softmax_backward);

}  // namespace xhal::cpu
