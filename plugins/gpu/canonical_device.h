// Device forms of the canonical float32 building blocks of
// docs/semantics.md (sections 1-3); the host forms are plugins/cpu/canonical.h.
// Every operation is one explicit correctly rounded intrinsic, so the bits do
// not depend on compiler flags.
#pragma once

#include "exp64.h"
#include "gpu_port.h"

namespace xhal::gpu {

__device__ __forceinline__ float pow2i(int j) {  // 2^j, j in [-126, 127]
  return __int_as_float((j + 127) << 23);
}

// Section 2 as written (NaN, overflow, underflow and subnormal results).
static __device__ __noinline__ float canonical_exp_slow(float x) {
  if (x != x) return x;
  if (x > 0x1.62e42ep+6f) return __int_as_float(0x7f800000);
  if (x < -0x1.9fe368p+6f) return 0.0f;
  float t = xmul(x, 0x1.715476p+0f);
  float k = xsub(xadd(t, 0x1.8p23f), 0x1.8p23f);
  float r = xsub(x, xmul(k, 0x1.62e400p-1f));
  r = xsub(r, xmul(k, 0x1.7f7d1cp-20f));
  float p = 0x1.687c02p-10f;
  p = xadd(xmul(p, r), 0x1.123ba6p-7f);
  p = xadd(xmul(p, r), 0x1.555b5ap-5f);
  p = xadd(xmul(p, r), 0x1.55548ep-3f);
  p = xadd(xmul(p, r), 0x1.fffff8p-2f);
  p = xadd(xmul(p, r), 1.0f);
  p = xadd(xmul(p, r), 1.0f);
  int ki = static_cast<int>(k);
  if (ki > 127) return xmul(xmul(p, pow2i(127)), pow2i(ki - 127));
  if (ki < -126) return xmul(xmul(p, pow2i(-100)), pow2i(ki + 100));
  return xmul(p, pow2i(ki));
}

// The same bits with one branch on the common path: for |x| <= 87 the
// result is normal and k lies in [-126, 126]. k is read from the bits of
// t + 0x1.8p23 (exactly 0x4B400000 + k), which also gives 2^k by a shift:
// (bits + 127) << 23, the 0x4B400000 part shifting out.
__device__ __forceinline__ float canonical_exp(float x) {
  if (!(fabsf(x) <= 87.0f)) return canonical_exp_slow(x);
  float t = xmul(x, 0x1.715476p+0f);
  float kb = xadd(t, 0x1.8p23f);
  float k = xsub(kb, 0x1.8p23f);
  float r = xsub(x, xmul(k, 0x1.62e400p-1f));
  r = xsub(r, xmul(k, 0x1.7f7d1cp-20f));
  float p = 0x1.687c02p-10f;
  p = xadd(xmul(p, r), 0x1.123ba6p-7f);
  p = xadd(xmul(p, r), 0x1.555b5ap-5f);
  p = xadd(xmul(p, r), 0x1.55548ep-3f);
  p = xadd(xmul(p, r), 0x1.fffff8p-2f);
  p = xadd(xmul(p, r), 1.0f);
  p = xadd(xmul(p, r), 1.0f);
  return xmul(p, __int_as_float((__float_as_int(kb) + 127) << 23));
}

// xhal_exp64 (7.3), exp64.h: the same two forms in binary64.
__device__ __forceinline__ double canonical_exp(double x) { return f64::exp64(x); }

// -inf of the compute type A (float, or double for f64).
template <class A = float>
__device__ __forceinline__ A neg_inf() {
  return static_cast<A>(__int_as_float(0xff800000));
}

// max of section 1: NaN if either operand is NaN (fmaxf would drop it).
template <class A>
__device__ __forceinline__ A nan_max(A a, A b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}

// Softmax chunk statistics (m, s) and the (+) operator of section 3.3, in
// the compute type A.
template <class A>
struct MaxSumT {
  A m, s;
};
using MaxSum = MaxSumT<float>;
template <class A>
__device__ __forceinline__ MaxSumT<A> maxsum_identity() {
  return {neg_inf<A>(), A(0)};
}
template <class A>
__device__ __forceinline__ MaxSumT<A> maxsum_combine(MaxSumT<A> a, MaxSumT<A> b) {
  A M = nan_max(a.m, b.m);
  if (M == neg_inf<A>()) return {M, A(0)};
  return {M, xadd(xmul(a.s, canonical_exp(xsub(a.m, M))), xmul(b.s, canonical_exp(xsub(b.m, M))))};
}

// The last 5 levels of the pairwise tree (section 3.1) over the 32 lanes of
// a logical warp: lane i adds lane i + d. Lane 0 holds the tree sum; the
// result is broadcast so every lane returns it.
template <class A>
__device__ __forceinline__ A warp_tree_sum(A v) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) v = xadd(v, xhal_shfl_down(v, d));
  return xhal_shfl(v, 0);
}

// Any-order NaN-propagating max over a logical warp, broadcast.
template <class A>
__device__ __forceinline__ A warp_max(A v) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) v = nan_max(v, xhal_shfl_down(v, d));
  return xhal_shfl(v, 0);
}

}  // namespace xhal::gpu
