#version 460
// SpGEMM numeric: C[i,j] = sequential sum from +0 over k ascending (A's row
// i) of A[i,k] * B[k,j], for the k whose row of B holds j (binary search;
// B's columns are strictly increasing within a row). One invocation per
// entry of C. F64: every value and the sum in binary64 (docs/semantics.md
// 7.3, REAL in common.glsl).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "narrow.glsl"
#include "sparse.glsl"

layout(push_constant) uniform Params {
  uint64_t a_row_ptr, a_col, a_val;
  uint64_t b_row_ptr, b_col, b_val;
  uint64_t c_row, c_col, c_val;
  uint64_t nnz;
  uint narrow;  // bit 0: A's pattern is int32, bit 1: B's, bit 2: C's
} pc;

// The three matrices were uploaded separately, each int32 or int64.
int64_t at_of(uint64_t arr, uint64_t i, uint bit) {
  return (pc.narrow & bit) != 0u ? int64_t(I32Ref(arr + i * 4ul).v) : ldi64(arr, i);
}
#define A_AT(arr, i) at_of(arr, i, 1u)
#define B_AT(arr, i) at_of(arr, i, 2u)
#define C_AT(arr, i) at_of(arr, i, 4u)

void main() {
  for (uint64_t e = global_id(); e < pc.nnz; e += global_threads()) {
    uint64_t i = uint64_t(C_AT(pc.c_row, e));
    int64_t j = C_AT(pc.c_col, e);
    uint64_t ab = uint64_t(A_AT(pc.a_row_ptr, i)), ae = uint64_t(A_AT(pc.a_row_ptr, i + 1ul));
    REAL acc = REAL(0.0);
    for (uint64_t ea = ab; ea < ae; ++ea) {
      uint64_t kk = uint64_t(A_AT(pc.a_col, ea));
      uint64_t lo = uint64_t(B_AT(pc.b_row_ptr, kk)), hi = uint64_t(B_AT(pc.b_row_ptr, kk + 1ul));
      while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2ul;
        int64_t cm = B_AT(pc.b_col, mid);
        if (cm < j) lo = mid + 1ul;
        else hi = mid;
      }
      if (lo < uint64_t(B_AT(pc.b_row_ptr, kk + 1ul)) && B_AT(pc.b_col, lo) == j)
        acc = xadd(acc, xmul(lde(pc.a_val, ea), lde(pc.b_val, lo)));
    }
    ste(pc.c_val, e, acc);
  }
}
