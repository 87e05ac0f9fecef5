// Pairwise tree (docs/semantics.md 3.1) and segment sum (3.7) over values
// in device memory, evaluated by one logical warp.
#pragma once

#include "row_common.h"
namespace xhal::gpu {

// Tree of a power-of-two aligned range [base, base + len) of f(i) (values
// past m are the identity), computed serially with a stack: after each
// value, pairs are merged while the count of values seen is even at that
// level, which reproduces the pairwise tree exactly.
template <class Op, class F>
__device__ typename Op::T serial_tree(F f, int64_t base, int64_t len, int64_t m) {
  using T = typename Op::T;
  T stack[40];
  int top = 0;
  for (int64_t i = 0; i < len; ++i) {
    stack[top++] = base + i < m ? f(base + i) : Op::identity();
    for (int64_t c = i; c & 1; c >>= 1) {
      stack[top - 2] = Op::combine(stack[top - 2], stack[top - 1]);
      --top;
    }
  }
  return stack[0];
}

// Tree of f(0..m) by the 32 lanes of a warp; every lane returns it.
template <class Op, class F>
__device__ __forceinline__ typename Op::T warp_tree_of(F f, int64_t m) {
  const int lane = threadIdx.x & 31;
  int64_t p = 1;
  while (p < m) p <<= 1;
  const int64_t per_lane = p > 32 ? p / 32 : 1;
  typename Op::T v = serial_tree<Op>(f, lane * per_lane, per_lane, m);
  return warp_tree<Op>(v);
}

// segsum by one thread (used where m is known to be small, or as a simple
// fallback): chunk sums, then their tree.
template <class A = float, class F>
__device__ __forceinline__ A thread_segsum(F term, int64_t m) {
  if (m <= 32) {
    A s = A(0);
#pragma unroll 4
    for (int64_t k = 0; k < m; ++k) s = xadd(s, term(k));
    return s;
  }
  const int64_t chunks = (m + 31) / 32;
  int64_t p = 1;
  while (p < chunks) p <<= 1;
  return serial_tree<SumOpT<A>>(
      [&](int64_t c) {
        A s = A(0);
        const int64_t end = c * 32 + 32 < m ? c * 32 + 32 : m;
#pragma unroll 4
        for (int64_t k = c * 32; k < end; ++k) s = xadd(s, term(k));
        return s;
      },
      0, p, chunks);
}

}  // namespace xhal::gpu
