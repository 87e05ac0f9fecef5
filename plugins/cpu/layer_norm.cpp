// LayerNorm forward and backward (docs/semantics.md 3.6; f64: 7.3),
// two-pass and numerically stable (the variance sums (x - mean)^2). Backward
// builds dgamma/dbeta from 32-row block partials as in rms_norm.cpp. One
// driver for both dtypes: f32 rows run the per-ISA kernels, f64 rows the
// templated row_kernels.h. f16/bf16 (7.2): as rms_norm.cpp, with beta in
// gamma's dtype and mean, rstd f32.
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
xhal_status_t forward(const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* gamma,
                      const xhal_plugin_tensor_t* beta, float eps, const xhal_plugin_tensor_t* y,
                      const xhal_plugin_tensor_t* mean, const xhal_plugin_tensor_t* rstd, Row row) {
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;  // empty: writes nothing
  const T* xp = tensor_data<T>(x);
  const T* gp = tensor_data<T>(gamma);
  const T* bp = tensor_data<T>(beta);
  T* yp = tensor_data<T>(y);
  T* mp = tensor_data<T>(mean);
  T* rp = tensor_data<T>(rstd);
  const T e = static_cast<T>(eps);  // exact
  const bool stream = static_cast<uint64_t>(s.rows * s.n) * sizeof(T) >= kStreamBytes;
#pragma omp parallel for schedule(dynamic, 4) if (s.rows * s.n > 8192)
  for (int64_t r = 0; r < s.rows; ++r)
    row(xp + r * s.n, gp, bp, e, yp + r * s.n, s.n, mp + r, rp + r, stream);
  return XHAL_OK;
}

template <class T, class Row>
xhal_status_t backward(const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* gamma,
                       const xhal_plugin_tensor_t* mean, const xhal_plugin_tensor_t* rstd,
                       const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx,
                       const xhal_plugin_tensor_t* dgamma, const xhal_plugin_tensor_t* dbeta,
                       Row row) {
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;  // empty: writes nothing
  const T* xp = tensor_data<T>(x);
  const T* gp = tensor_data<T>(gamma);
  const T* mp = tensor_data<T>(mean);
  const T* rp = tensor_data<T>(rstd);
  const T* dyp = tensor_data<T>(dy);
  T* dxp = tensor_data<T>(dx);
  const bool stream = static_cast<uint64_t>(s.rows * s.n) * sizeof(T) >= kStreamBytes;
  const int64_t blocks = (s.rows + kColsumBlockRows - 1) / kColsumBlockRows;
  // Every element is set by its block before use: no zero-fill.
  std::unique_ptr<T[]> partial_g(new T[static_cast<size_t>(blocks * s.n)]);
  std::unique_ptr<T[]> partial_b(new T[static_cast<size_t>(blocks * s.n)]);
#pragma omp parallel for schedule(dynamic, 1) if (s.rows * s.n > 8192)
  for (int64_t b = 0; b < blocks; ++b) {
    T* pg = partial_g.get() + b * s.n;
    T* pb = partial_b.get() + b * s.n;
    for (int64_t j = 0; j < s.n; ++j) pg[j] = pb[j] = T(0);
    const int64_t end = (b + 1) * kColsumBlockRows < s.rows ? (b + 1) * kColsumBlockRows : s.rows;
    for (int64_t r = b * kColsumBlockRows; r < end; ++r)
      row(xp + r * s.n, gp, mp[r], rp[r], dyp + r * s.n, dxp + r * s.n, pg, pb, s.n, stream);
  }
  colsum_tree(partial_g.get(), blocks, s.n, tensor_data<T>(dgamma));
  colsum_tree(partial_b.get(), blocks, s.n, tensor_data<T>(dbeta));
  return XHAL_OK;
}

xhal_status_t forward_narrow(const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* gamma,
                             const xhal_plugin_tensor_t* beta, float eps,
                             const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* mean,
                             const xhal_plugin_tensor_t* rstd) {
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;
  const xhal_dtype_t dtype = x->dtype;
  std::vector<float> gamma_store, beta_store;
  const float* gp = params_f32(gamma, s.n, gamma_store);
  const float* bp = params_f32(beta, s.n, beta_store);
  const uint16_t* xp = tensor_data<uint16_t>(x);
  uint16_t* yp = tensor_data<uint16_t>(y);
  float* mp = tensor_data<float>(mean);
  float* rp = tensor_data<float>(rstd);
  const auto row = isa().layer_norm_row;
#pragma omp parallel if (s.rows * s.n > 8192)
  {
    std::vector<float> xr(static_cast<size_t>(s.n)), yr(static_cast<size_t>(s.n));
#pragma omp for schedule(dynamic, 4)
    for (int64_t r = 0; r < s.rows; ++r) {
      widen_row(dtype, xp + r * s.n, xr.data(), s.n);
      row(xr.data(), gp, bp, eps, yr.data(), s.n, mp + r, rp + r, false);
      narrow_row(dtype, yr.data(), yp + r * s.n, s.n);
    }
  }
  return XHAL_OK;
}

xhal_status_t backward_narrow(const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* gamma,
                              const xhal_plugin_tensor_t* mean, const xhal_plugin_tensor_t* rstd,
                              const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx,
                              const xhal_plugin_tensor_t* dgamma,
                              const xhal_plugin_tensor_t* dbeta) {
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;
  const xhal_dtype_t dtype = x->dtype;
  std::vector<float> gamma_store;
  const float* gp = params_f32(gamma, s.n, gamma_store);
  const uint16_t* xp = tensor_data<uint16_t>(x);
  const float* mp = tensor_data<float>(mean);
  const float* rp = tensor_data<float>(rstd);
  const uint16_t* dyp = tensor_data<uint16_t>(dy);
  uint16_t* dxp = tensor_data<uint16_t>(dx);  // may be dy: each row is widened first
  const int64_t blocks = (s.rows + kColsumBlockRows - 1) / kColsumBlockRows;
  std::unique_ptr<float[]> partial_g(new float[static_cast<size_t>(blocks * s.n)]);
  std::unique_ptr<float[]> partial_b(new float[static_cast<size_t>(blocks * s.n)]);
  const auto row = isa().layer_norm_backward_row;
#pragma omp parallel if (s.rows * s.n > 8192)
  {
    std::vector<float> xr(static_cast<size_t>(s.n)), dyr(static_cast<size_t>(s.n)),
        dxr(static_cast<size_t>(s.n));
#pragma omp for schedule(dynamic, 1)
    for (int64_t b = 0; b < blocks; ++b) {
      float* pg = partial_g.get() + b * s.n;
      float* pb = partial_b.get() + b * s.n;
      for (int64_t j = 0; j < s.n; ++j) pg[j] = pb[j] = 0.0f;
      const int64_t end = (b + 1) * kColsumBlockRows < s.rows ? (b + 1) * kColsumBlockRows : s.rows;
      for (int64_t r = b * kColsumBlockRows; r < end; ++r) {
        widen_row(dtype, xp + r * s.n, xr.data(), s.n);
        widen_row(dtype, dyp + r * s.n, dyr.data(), s.n);
        row(xr.data(), gp, mp[r], rp[r], dyr.data(), dxr.data(), pg, pb, s.n, false);
        narrow_row(dtype, dxr.data(), dxp + r * s.n, s.n);
      }
    }
  }
  std::vector<float> sum(static_cast<size_t>(s.n));
  colsum_tree(partial_g.get(), blocks, s.n, sum.data());
  store_params(dgamma, sum.data(), s.n);
  colsum_tree(partial_b.get(), blocks, s.n, sum.data());
  store_params(dbeta, sum.data(), s.n);
  return XHAL_OK;
}

}  // namespace

xhal_status_t layer_norm_forward(void* device, const xhal_plugin_tensor_t* x,
                                 const xhal_plugin_tensor_t* gamma,
                                 const xhal_plugin_tensor_t* beta, float eps,
                                 const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* mean,
                                 const xhal_plugin_tensor_t* rstd) {
  count_launch(device);
  if (x->dtype == XHAL_DTYPE_F64)
    return forward<double>(x, gamma, beta, eps, y, mean, rstd, rows::layer_norm_row<double>);
  if (is_narrow(x->dtype)) return forward_narrow(x, gamma, beta, eps, y, mean, rstd);
  return forward<float>(x, gamma, beta, eps, y, mean, rstd, isa().layer_norm_row);
}

xhal_status_t layer_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                  const xhal_plugin_tensor_t* gamma,
                                  const xhal_plugin_tensor_t* mean,
                                  const xhal_plugin_tensor_t* rstd, const xhal_plugin_tensor_t* dy,
                                  const xhal_plugin_tensor_t* dx,
                                  const xhal_plugin_tensor_t* dgamma,
                                  const xhal_plugin_tensor_t* dbeta) {
  count_launch(device);
  if (x->dtype == XHAL_DTYPE_F64)
    return backward<double>(x, gamma, mean, rstd, dy, dx, dgamma, dbeta,
                            rows::layer_norm_backward_row<double>);
  if (is_narrow(x->dtype)) return backward_narrow(x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
  return backward<float>(x, gamma, mean, rstd, dy, dx, dgamma, dbeta,
                         isa().layer_norm_backward_row);
}

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(XHAL_OP_LAYER_NORM_FORWARD, kFloatDtypes, api.layer_norm_forward = layer_norm_forward);
XHAL_CPU_OP(XHAL_OP_LAYER_NORM_BACKWARD, kFloatDtypes,
            api.layer_norm_backward = layer_norm_backward);

}  // namespace xhal::cpu
