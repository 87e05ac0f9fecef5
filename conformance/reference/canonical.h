// Canonical float32 reference: docs/semantics.md sections 2-4 written as
// plain scalar loops, in the spec's order, one rounded float operation at a
// time. A bit-exact backend matches these bits. Independent of every plugin
// (the CPU plugin's own helpers are deliberately not used). The f64
// overloads are the same templates in binary64 (section 7.3: same orders,
// xhal_exp64, eps and alpha widened exactly from the call's float).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xhal::conf::canon {

constexpr size_t kLanes = 128;    // rowsum lanes (3.2)
constexpr size_t kSteps = 8;      // rowsum steps per lane
constexpr size_t kChunk = 1024;   // rowsum chunk = kLanes * kSteps
constexpr size_t kColBlock = 32;  // colsum rows per block R (3.5)
constexpr size_t kSegChunk = 32;  // segsum terms per chunk G (3.7)

// Section 2.
float xhal_exp(float x);
// Section 7.3.
double xhal_exp64(double x);
// max of section 1: NaN if either is NaN.
float nan_max(float a, float b);

// 3.1: pairwise tree over v (copied, padded with +0 to a power of two).
float tree(std::vector<float> v);
double tree64(std::vector<double> v);
// 3.2: contiguous row reduction.
float rowsum(const float* x, size_t n);
double rowsum64(const double* x, size_t n);
// 3.7: chunks of 32 sequential sums, combined by tree.
float segsum(const std::vector<float>& terms);
double segsum64(const std::vector<double>& terms);
// 3.5: colsum over rows of term(r, j) given as a [rows, n] array.
std::vector<float> colsum(const float* terms, size_t rows, size_t n);
std::vector<double> colsum64(const double* terms, size_t rows, size_t n);

// 3.3 softmax over rows of length n (per-chunk exponentials reused for y,
// one scale xhal_exp(m[c] - M) * (1 / S) per chunk).
void softmax_forward(const float* x, size_t rows, size_t n, float* y);
void softmax_forward(const double* x, size_t rows, size_t n, double* y);
void softmax_backward(const float* y, const float* dy, size_t rows, size_t n, float* dx);
void softmax_backward(const double* y, const double* dy, size_t rows, size_t n, double* dx);
// 3.3 row statistics (M, S), exposed for the reference's own tests.
void softmax_stats(const float* x, size_t n, float* out_m, float* out_s);

// 3.4 RMSNorm.
void rms_norm_forward(const float* x, const float* gamma, size_t rows, size_t n, float eps,
                      float* y, float* rstd);
void rms_norm_forward(const double* x, const double* gamma, size_t rows, size_t n, float eps,
                      double* y, double* rstd);
void rms_norm_backward(const float* x, const float* gamma, const float* rstd, const float* dy,
                       size_t rows, size_t n, float* dx, float* dgamma);
void rms_norm_backward(const double* x, const double* gamma, const double* rstd, const double* dy,
                       size_t rows, size_t n, double* dx, double* dgamma);

// 3.6 LayerNorm.
void layer_norm_forward(const float* x, const float* gamma, const float* beta, size_t rows,
                        size_t n, float eps, float* y, float* mean, float* rstd);
void layer_norm_forward(const double* x, const double* gamma, const double* beta, size_t rows,
                        size_t n, float eps, double* y, double* mean, double* rstd);
void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd,
                         const float* dy, size_t rows, size_t n, float* dx, float* dgamma,
                         float* dbeta);
void layer_norm_backward(const double* x, const double* gamma, const double* mean,
                         const double* rstd, const double* dy, size_t rows, size_t n, double* dx,
                         double* dgamma, double* dbeta);

// index_add (section 4): dst[num_rows, w] updated in place.
void index_add(float* dst, size_t num_rows, const float* src, const std::vector<int64_t>& idx,
               size_t w, float alpha);
void index_add(double* dst, size_t num_rows, const double* src, const std::vector<int64_t>& idx,
               size_t w, float alpha);

// index_select for any element size: out[i] = src[idx[i]] (rows of row_bytes).
std::vector<uint8_t> index_select(const uint8_t* src, const std::vector<int64_t>& idx,
                                  size_t row_bytes);

// permute (section 4): src is an element array read through `strides`
// (elements) from element offset 0; returns the contiguous dst bytes.
std::vector<uint8_t> permute(const uint8_t* src, size_t elem_size,
                             const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                             const std::vector<uint32_t>& perm);

}  // namespace xhal::conf::canon
