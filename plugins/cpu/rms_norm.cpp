// RMSNorm forward and backward (docs/semantics.md 3.4; f64: 7.3). Backward
// walks rows in 32-row blocks so each block's dgamma partial (colsum stage
// 1) is summed in ascending row order by one thread; stage 2 is
// colsum_tree. One driver for both dtypes: f32 rows run the per-ISA
// kernels, f64 rows the templated row_kernels.h. f16/bf16 (7.2): x, dy
// widened per row, gamma (narrow or f32) once, the f32 kernels, y and dx
// narrowed once per element, rstd f32, dgamma summed in f32 and narrowed at
// the end when gamma is narrow.
#include <memory>
#include <vector>

#include "dense_ops.h"
#include "isa_kernels.h"
#include "op_registry.h"
#include "row_kernels.h"
#include "row_ops.h"

namespace xhal::cpu {
namespace {

template <class T, class Row>
xhal_status_t forward(const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* gamma, float eps,
                      const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* rstd, Row row) {
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;  // empty: writes nothing
  const T* xp = tensor_data<T>(x);
  const T* gp = tensor_data<T>(gamma);
  T* yp = tensor_data<T>(y);
  T* rp = tensor_data<T>(rstd);
  const T e = static_cast<T>(eps);  // exact
  const bool stream = static_cast<uint64_t>(s.rows * s.n) * sizeof(T) >= kStreamBytes;
#pragma omp parallel for schedule(dynamic, 4) if (s.rows * s.n > 8192)
  for (int64_t r = 0; r < s.rows; ++r) rp[r] = row(xp + r * s.n, gp, e, yp + r * s.n, s.n, stream);
  return XHAL_OK;
}

template <class T, class Row>
xhal_status_t backward(const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* gamma,
                       const xhal_plugin_tensor_t* rstd, const xhal_plugin_tensor_t* dy,
                       const xhal_plugin_tensor_t* dx, const xhal_plugin_tensor_t* dgamma,
                       Row row) {
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;  // empty: writes nothing
  const T* xp = tensor_data<T>(x);
  const T* gp = tensor_data<T>(gamma);
  const T* rp = tensor_data<T>(rstd);
  const T* dyp = tensor_data<T>(dy);
  T* dxp = tensor_data<T>(dx);
  const bool stream = static_cast<uint64_t>(s.rows * s.n) * sizeof(T) >= kStreamBytes;
  const int64_t blocks = (s.rows + kColsumBlockRows - 1) / kColsumBlockRows;
  // Every element is set by its block before use: no zero-fill.
  std::unique_ptr<T[]> partial(new T[static_cast<size_t>(blocks * s.n)]);
#pragma omp parallel for schedule(dynamic, 1) if (s.rows * s.n > 8192)
  for (int64_t b = 0; b < blocks; ++b) {
    T* p = partial.get() + b * s.n;
    for (int64_t j = 0; j < s.n; ++j) p[j] = T(0);
    const int64_t end = (b + 1) * kColsumBlockRows < s.rows ? (b + 1) * kColsumBlockRows : s.rows;
    for (int64_t r = b * kColsumBlockRows; r < end; ++r)
      row(xp + r * s.n, gp, rp[r], dyp + r * s.n, dxp + r * s.n, p, s.n, stream);
  }
  colsum_tree(partial.get(), blocks, s.n, tensor_data<T>(dgamma));
  return XHAL_OK;
}

xhal_status_t forward_narrow(const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* gamma,
                             float eps, const xhal_plugin_tensor_t* y,
                             const xhal_plugin_tensor_t* rstd) {
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;
  const xhal_dtype_t dtype = x->dtype;
  std::vector<float> gamma_store;
  const float* gp = params_f32(gamma, s.n, gamma_store);
  const uint16_t* xp = tensor_data<uint16_t>(x);
  uint16_t* yp = tensor_data<uint16_t>(y);
  float* rp = tensor_data<float>(rstd);
  const auto row = isa().rms_norm_row;
#pragma omp parallel if (s.rows * s.n > 8192)
  {
    std::vector<float> xr(static_cast<size_t>(s.n)), yr(static_cast<size_t>(s.n));
#pragma omp for schedule(dynamic, 4)
    for (int64_t r = 0; r < s.rows; ++r) {
      widen_row(dtype, xp + r * s.n, xr.data(), s.n);
      rp[r] = row(xr.data(), gp, eps, yr.data(), s.n, false);
      narrow_row(dtype, yr.data(), yp + r * s.n, s.n);
    }
  }
  return XHAL_OK;
}

xhal_status_t backward_narrow(const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* gamma,
                              const xhal_plugin_tensor_t* rstd, const xhal_plugin_tensor_t* dy,
                              const xhal_plugin_tensor_t* dx, const xhal_plugin_tensor_t* dgamma) {
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;
  const xhal_dtype_t dtype = x->dtype;
  std::vector<float> gamma_store;
  const float* gp = params_f32(gamma, s.n, gamma_store);
  const uint16_t* xp = tensor_data<uint16_t>(x);
  const float* rp = tensor_data<float>(rstd);
  const uint16_t* dyp = tensor_data<uint16_t>(dy);
  uint16_t* dxp = tensor_data<uint16_t>(dx);  // may be dy: each row is widened first
  const int64_t blocks = (s.rows + kColsumBlockRows - 1) / kColsumBlockRows;
  std::unique_ptr<float[]> partial(new float[static_cast<size_t>(blocks * s.n)]);
  const auto row = isa().rms_norm_backward_row;
#pragma omp parallel if (s.rows * s.n > 8192)
  {
    std::vector<float> xr(static_cast<size_t>(s.n)), dyr(static_cast<size_t>(s.n)),
        dxr(static_cast<size_t>(s.n));
#pragma omp for schedule(dynamic, 1)
    for (int64_t b = 0; b < blocks; ++b) {
      float* p = partial.get() + b * s.n;
      for (int64_t j = 0; j < s.n; ++j) p[j] = 0.0f;
      const int64_t end = (b + 1) * kColsumBlockRows < s.rows ? (b + 1) * kColsumBlockRows : s.rows;
      for (int64_t r = b * kColsumBlockRows; r < end; ++r) {
        widen_row(dtype, xp + r * s.n, xr.data(), s.n);
        widen_row(dtype, dyp + r * s.n, dyr.data(), s.n);
        row(xr.data(), gp, rp[r], dyr.data(), dxr.data(), p, s.n, false);
        narrow_row(dtype, dxr.data(), dxp + r * s.n, s.n);
      }
    }
  }
  std::vector<float> dg(static_cast<size_t>(s.n));
  colsum_tree(partial.get(), blocks, s.n, dg.data());
  store_params(dgamma, dg.data(), s.n);
  return XHAL_OK;
}

}  // namespace

xhal_status_t rms_norm_forward(void* device, const xhal_plugin_tensor_t* x,
                               const xhal_plugin_tensor_t* gamma, float eps,
                               const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* rstd) {
  count_launch(device);
  if (x->dtype == XHAL_DTYPE_F64)
    return forward<double>(x, gamma, eps, y, rstd, rows::rms_norm_row<double>);
  if (is_narrow(x->dtype)) return forward_narrow(x, gamma, eps, y, rstd);
  return forward<float>(x, gamma, eps, y, rstd, isa().rms_norm_row);
}

xhal_status_t rms_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                const xhal_plugin_tensor_t* gamma, const xhal_plugin_tensor_t* rstd,
                                const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx,
                                const xhal_plugin_tensor_t* dgamma) {
  count_launch(device);
  if (x->dtype == XHAL_DTYPE_F64)
    return backward<double>(x, gamma, rstd, dy, dx, dgamma, rows::rms_norm_backward_row<double>);
  if (is_narrow(x->dtype)) return backward_narrow(x, gamma, rstd, dy, dx, dgamma);
  return backward<float>(x, gamma, rstd, dy, dx, dgamma, isa().rms_norm_backward_row);
}

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(XHAL_OP_RMS_NORM_FORWARD, kFloatDtypes, api.rms_norm_forward = rms_norm_forward);
XHAL_CPU_OP(XHAL_OP_RMS_NORM_BACKWARD, kFloatDtypes, api.rms_norm_backward = rms_norm_backward);

}  // namespace xhal::cpu
