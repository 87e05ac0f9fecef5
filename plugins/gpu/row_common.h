// Building blocks of the dense row kernels (docs/semantics.md 3.2-3.6),
// also used by the sparse warp sums (tree_device.h). Layout: a logical warp
// (32 lanes) owns a chunk of 1024 elements of one row; thread l loads
// float4s at chunk*1024 + t*128 + 4l and so owns canonical lanes 4l..4l+3.
// A block of W warps (W a power of two) owns W consecutive chunks: an
// aligned subtree of the chunk tree.
#pragma once

#include "canonical_device.h"
#include "narrow_device.h"

namespace xhal::gpu {

constexpr int kChunk = 1024;

// The canonical combiners in the compute type A (float, or double for f64
// storage, docs/semantics.md 7.3). SumOp and MaxSumOp are the f32 ones.
template <class A>
struct SumOpT {
  using T = A;
  __device__ static A identity() { return A(0); }
  __device__ static A combine(A a, A b) { return xadd(a, b); }
  __device__ static A shfl_down(A v, int d) { return xhal_shfl_down(v, d); }
  __device__ static A shfl(A v, int s) { return xhal_shfl(v, s); }
};
using SumOp = SumOpT<float>;
template <class A>
struct MaxSumOpT {
  using T = MaxSumT<A>;
  __device__ static T identity() { return maxsum_identity<A>(); }
  __device__ static T combine(T a, T b) { return maxsum_combine(a, b); }
  __device__ static T shfl_down(T v, int d) {
    return {xhal_shfl_down(v.m, d), xhal_shfl_down(v.s, d)};
  }
  __device__ static T shfl(T v, int s) { return {xhal_shfl(v.m, s), xhal_shfl(v.s, s)}; }
};
using MaxSumOp = MaxSumOpT<float>;

// Pairwise tree over the 32 lanes' values (lanes past `count` hold the
// identity), result broadcast. Padding past the next power of two of the
// true count does not change the bits: the identities combine to the
// identity, and a sum of +0-started chunks is never -0 (docs/gpu.md).
template <class Op>
__device__ __forceinline__ typename Op::T warp_tree(typename Op::T v) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) v = Op::combine(v, Op::shfl_down(v, d));
  return Op::shfl(v, 0);
}

// A word-wise volatile read: sees what another block published before its
// fence, not a stale L1 line (partials of split rows, spmv's piece values).
template <class T>
__device__ __forceinline__ T load_coherent(const T* p) {
  static_assert(sizeof(T) % sizeof(unsigned) == 0, "whole words");
  union {
    T v;
    unsigned w[sizeof(T) / sizeof(unsigned)];
  } u;
  const volatile unsigned* src = reinterpret_cast<const volatile unsigned*>(p);
#pragma unroll
  for (size_t k = 0; k < sizeof(T) / sizeof(unsigned); ++k) u.w[k] = src[k];
  return u.v;
}

// Four consecutive elements from i, widened to the compute type (pad past n).
template <bool VEC, class S>
__device__ __forceinline__ vec4_t<acc_t<S>> load4(const S* p, int64_t i, int64_t n, acc_t<S> pad) {
  if (VEC)
    return i < n ? widen(*reinterpret_cast<const unit4_t<S>*>(p + i)) : make4(pad, pad, pad, pad);
  return make4(i < n ? widen(p[i]) : pad, i + 1 < n ? widen(p[i + 1]) : pad,
               i + 2 < n ? widen(p[i + 2]) : pad, i + 3 < n ? widen(p[i + 3]) : pad);
}

// Combines the W warps' values of a block by the pairwise tree; every
// thread gets the result. `scratch` needs W + 1 entries of shared memory.
template <class Op, int W>
__device__ __forceinline__ typename Op::T block_tree(typename Op::T warp_value,
                                                     typename Op::T* scratch) {
  using T = typename Op::T;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (W > 1) {
    if (lane == 0) scratch[warp] = warp_value;
    __syncthreads();
    if (warp == 0) {
      T v = lane < W ? scratch[lane] : Op::identity();
      v = warp_tree<Op>(v);
      if (lane == 0) scratch[W] = v;
    }
    __syncthreads();
    warp_value = scratch[W];
    __syncthreads();  // scratch is reused by the next row
  }
  return warp_value;
}

}  // namespace xhal::gpu
