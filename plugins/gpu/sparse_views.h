// Device views of CSR patterns and dense operands shared by the sparse op
// files (plain structs passed to kernels by value).
#pragma once

#include <cstdint>

#include "gpu_plugin.h"

namespace xhal::gpu {

using I = int32_t;

// One row of a solve schedule: its off-diagonal entries [rb, re) and its
// diagonal entry (-1 if none); k < 0 marks padding.
struct RowRec {
  I k, rb, re, diag;
};

// A strided [n, k] view of a float tensor (rank 1: k = 1).
struct Cols {
  float* p;
  int64_t n, k, rs, cs;
  __device__ float& at(int64_t i, int64_t c) const { return p[i * rs + c * cs]; }
};
inline Cols cols_of(const xhal_plugin_tensor_t* t) {
  Cols c{tensor_f32(t), t->rank ? t->shape[0] : 1, 1, t->rank ? t->strides[0] : 1, 0};
  if (t->rank >= 2) {
    c.k = t->shape[1];
    c.cs = t->strides[1];
  }
  return c;
}

struct PatternView {
  const I* row_ptr;
  const I* col;
  const I* perm;  // transposed pattern: index into A's values; null for A
  const float* values;
  __device__ float value(int64_t e) const { return perm ? values[perm[e]] : values[e]; }
};

}  // namespace xhal::gpu
