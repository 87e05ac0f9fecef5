// Device views of CSR patterns and dense operands shared by the sparse op
// files (plain structs passed to kernels by value).
#pragma once

#include <cstdint>

#include "gpu_plugin.h"

namespace xhal::gpu {

// Row and column numbers (rows and columns stay below 2^31 - 1).
using I = int32_t;
// P, below, is a matrix's entry-offset type (row pointers, A^T's
// permutation into A's values, a schedule's entry ranges): I, or int64_t
// for a wide matrix (Matrix::wide: 2^31 - 1 entries or more, or the device
// option sparse_index=64).

// One row of a solve schedule: its off-diagonal entries [rb, re) and its
// diagonal entry (-1 if none); k < 0 marks padding.
template <class P = I>
struct RowRecT {
  I k;
  P rb, re, diag;
};
using RowRec = RowRecT<I>;

// A strided [n, k] view of a tensor of T, the matrix's value type (f32, or
// f64 for an f64 matrix; rank 1: k = 1).
template <class T>
struct ColsT {
  T* p;
  int64_t n, k, rs, cs;
  __device__ T& at(int64_t i, int64_t c) const { return p[i * rs + c * cs]; }
};
using Cols = ColsT<float>;
template <class T = float>
inline ColsT<T> cols_of(const xhal_plugin_tensor_t* t) {
  ColsT<T> c{tensor_as<T>(t), t->rank ? t->shape[0] : 1, 1, t->rank ? t->strides[0] : 1, 0};
  if (t->rank >= 2) {
    c.k = t->shape[1];
    c.cs = t->strides[1];
  }
  return c;
}

template <class T, class P = I>
struct PatternViewT {
  const P* row_ptr;
  const I* col;
  const P* perm;  // transposed pattern: index into A's values; null for A
  const T* values;
  __device__ T value(int64_t e) const { return perm ? values[perm[e]] : values[e]; }
};
using PatternView = PatternViewT<float>;

// spmv/spmm's rows of more than 32 entries as pieces of 32 chunks (1024
// entries; sparse_spmv.cpp): piece q is chunks [32 g[q], 32 g[q] + 32) of
// row row[q], a row's pieces consecutive. Rows of more than 1024 entries
// (several pieces) are listed again with their first piece, for the launch
// that combines them.
struct PieceView {
  I* row = nullptr;
  I* g = nullptr;
  int64_t num = 0;
  I* multi_row = nullptr;
  I* multi_first = nullptr;
  int64_t num_multi = 0;
};

// Calls f(T{}) with T the value type of a matrix of `dtype` (f32 or f64):
// the op entry points instantiate their kernels for both.
template <class F>
inline decltype(auto) with_value_type(xhal_dtype_t dtype, F&& f) {
  if (dtype == XHAL_DTYPE_F64) return f(double{});
  return f(float{});
}

}  // namespace xhal::gpu
