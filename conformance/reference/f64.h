// Float64 reference: the ops as plain math in double, independent of the
// canonical orders. Used for the accurate-and-deterministic level: a result
// must lie within conformance/tolerances.h of these values. Each function
// also returns, per output element, the magnitude `scale` that the bound is
// relative to (the sum of the magnitudes of the terms that form the value).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xhal::conf::ref64 {

struct Values {
  std::vector<double> v;      // the reference values
  std::vector<double> scale;  // per element, see above
};

// Each op also takes double inputs (f64 ops, docs/semantics.md 7.5): then
// it computes in long double (x87, 64-bit significand) and rounds the
// reference to double at the end.
Values softmax_forward(const float* x, size_t rows, size_t n);
Values softmax_forward(const double* x, size_t rows, size_t n);
Values softmax_backward(const float* y, const float* dy, size_t rows, size_t n);
Values softmax_backward(const double* y, const double* dy, size_t rows, size_t n);

struct NormForward {
  Values y, mean, rstd;  // mean only for layer norm
};
NormForward rms_norm_forward(const float* x, const float* gamma, size_t rows, size_t n, float eps);
NormForward rms_norm_forward(const double* x, const double* gamma, size_t rows, size_t n,
                             float eps);
NormForward layer_norm_forward(const float* x, const float* gamma, const float* beta, size_t rows,
                               size_t n, float eps);
NormForward layer_norm_forward(const double* x, const double* gamma, const double* beta,
                               size_t rows, size_t n, float eps);

struct NormBackward {
  Values dx, dgamma, dbeta;  // dbeta only for layer norm
};
// The backward as a function of the op's own inputs (saved mean/rstd as given).
NormBackward rms_norm_backward(const float* x, const float* gamma, const float* rstd,
                               const float* dy, size_t rows, size_t n);
NormBackward rms_norm_backward(const double* x, const double* gamma, const double* rstd,
                               const double* dy, size_t rows, size_t n);
NormBackward layer_norm_backward(const float* x, const float* gamma, const float* mean,
                                 const float* rstd, const float* dy, size_t rows, size_t n);
NormBackward layer_norm_backward(const double* x, const double* gamma, const double* mean,
                                 const double* rstd, const double* dy, size_t rows, size_t n);

// dst_old[num_rows, w] + alpha * sum of the sources of each row.
Values index_add(const float* dst_old, size_t num_rows, const float* src,
                 const std::vector<int64_t>& idx, size_t w, float alpha);
Values index_add(const double* dst_old, size_t num_rows, const double* src,
                 const std::vector<int64_t>& idx, size_t w, float alpha);

// Pure double forward functions (for central finite differences): the loss
// sum(dy * y(x, gamma, beta)) where y is the op's forward output.
double softmax_loss(const std::vector<double>& x, const std::vector<double>& dy, size_t rows,
                    size_t n);
double rms_norm_loss(const std::vector<double>& x, const std::vector<double>& gamma,
                     const std::vector<double>& dy, size_t rows, size_t n, double eps);
double layer_norm_loss(const std::vector<double>& x, const std::vector<double>& gamma,
                       const std::vector<double>& beta, const std::vector<double>& dy, size_t rows,
                       size_t n, double eps);

}  // namespace xhal::conf::ref64
