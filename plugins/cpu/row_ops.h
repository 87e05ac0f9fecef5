// Shared plumbing of the row-wise ops (softmax, norms): the [rows, n] view of
// a tensor and the column reduction of the norms' weight gradients (3.5).
#pragma once

#include <cstdint>
#include <vector>

#include "cpu_plugin.h"
#include "narrow.h"

namespace xhal::cpu {

struct RowShape {
  int64_t rows = 0;
  int64_t n = 0;
};

// x as [rows, n]: n is the last dim, rows the product of the others.
inline RowShape row_shape(const xhal_plugin_tensor_t* x) {
  RowShape s;
  if (x->rank == 0) return {1, 1};
  s.n = x->shape[x->rank - 1];
  s.rows = 1;
  for (uint32_t k = 0; k + 1 < x->rank; ++k) s.rows *= x->shape[k];
  return s;
}

constexpr int64_t kColsumBlockRows = 32;  // R of section 3.5

// Stage 2 of colsum (3.5): out[j] = tree(partial[0..blocks)[j]) for every
// column, partial being blocks rows of n elements (destroyed). f32 and f64
// (colsum.cpp, one template).
void colsum_tree(float* partial, int64_t blocks, int64_t n, float* out);
void colsum_tree(double* partial, int64_t blocks, int64_t n, double* out);

// A norm's gamma or beta of n elements as f32 (docs/semantics.md 7.2): the
// tensor itself when it is f32, else its exact widening into `store`.
inline const float* params_f32(const xhal_plugin_tensor_t* t, int64_t n,
                               std::vector<float>& store) {
  if (t->dtype == XHAL_DTYPE_F32) return tensor_data<const float>(t);
  store.resize(static_cast<size_t>(n));
  widen_row(t->dtype, tensor_data<const uint16_t>(t), store.data(), n);
  return store.data();
}

// Writes the f32 values v[0..n) to t (dgamma, dbeta): a copy for f32, one
// narrowing per element for f16/bf16.
inline void store_params(const xhal_plugin_tensor_t* t, const float* v, int64_t n) {
  if (t->dtype == XHAL_DTYPE_F32) {
    float* out = tensor_data<float>(t);
    for (int64_t j = 0; j < n; ++j) out[j] = v[j];
  } else {
    narrow_row(t->dtype, v, tensor_data<uint16_t>(t), n);
  }
}

}  // namespace xhal::cpu
