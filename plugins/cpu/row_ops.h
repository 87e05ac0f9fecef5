// Shared plumbing of the row-wise ops (softmax, norms): the [rows, n] view of
// a tensor and the column reduction of the norms' weight gradients (3.5).
#pragma once

#include <cstdint>
#include <vector>

#include "cpu_plugin.h"

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

}  // namespace xhal::cpu
