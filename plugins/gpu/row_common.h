// Building blocks of the dense row kernels (docs/semantics.md 3.2-3.6).
// Layout: a logical warp (32 lanes) owns CPW consecutive chunks of 1024
// elements of one row; thread l loads float4s at chunk*1024 + t*128 + 4l and
// so owns canonical lanes 4l..4l+3. A block of W warps (W a power of two)
// owns W*CPW consecutive chunks: an aligned subtree of the chunk tree.
// Several blocks per row either exchange their statistics inside a thread
// block cluster (CUDA sm_90, the row stays in registers) or through a
// second kernel (the row is read twice).
#pragma once

#include "canonical_device.h"

#if !defined(XHAL_GPU_HIP) && defined(__CUDACC__)
#include <cooperative_groups.h>
#define XHAL_GPU_HAS_CLUSTERS 1
#endif

namespace xhal::gpu {

constexpr int kChunk = 1024;

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

struct SumOp {
  using T = float;
  __device__ static float identity() { return 0.0f; }
  __device__ static float combine(float a, float b) { return xadd(a, b); }
  __device__ static float shfl_down(float v, int d) { return xhal_shfl_down(v, d); }
  __device__ static float shfl(float v, int s) { return xhal_shfl(v, s); }
};
struct MaxSumOp {
  using T = MaxSum;
  __device__ static MaxSum identity() { return maxsum_identity(); }
  __device__ static MaxSum combine(MaxSum a, MaxSum b) { return maxsum_combine(a, b); }
  __device__ static MaxSum shfl_down(MaxSum v, int d) {
    return {xhal_shfl_down(v.m, d), xhal_shfl_down(v.s, d)};
  }
  __device__ static MaxSum shfl(MaxSum v, int s) { return {xhal_shfl(v.m, s), xhal_shfl(v.s, s)}; }
};

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

// Four consecutive elements from i (pad past n).
template <bool VEC>
__device__ __forceinline__ float4 load4(const float* p, int64_t i, int64_t n, float pad) {
  if (VEC) return i < n ? *reinterpret_cast<const float4*>(p + i) : make_float4(pad, pad, pad, pad);
  return make_float4(i < n ? p[i] : pad, i + 1 < n ? p[i + 1] : pad, i + 2 < n ? p[i + 2] : pad,
                     i + 3 < n ? p[i + 3] : pad);
}

// Loads this warp's CPW chunks; elements past n read as `pad`. Vector path
// needs n % 4 == 0 and a 16-byte aligned row.
template <int CPW, bool VEC>
__device__ __forceinline__ void load_chunks(float4 (&v)[CPW][8], const float* row, int64_t n,
                                            int64_t chunk0, int lane, float pad) {
#pragma unroll
  for (int k = 0; k < CPW; ++k)
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      v[k][t] = load4<VEC>(row, (chunk0 + k) * kChunk + t * 128 + 4 * lane, n, pad);
    }
}

template <int CPW, bool VEC>
__device__ __forceinline__ void store_chunks(const float4 (&v)[CPW][8], float* row, int64_t n,
                                             int64_t chunk0, int lane) {
#pragma unroll
  for (int k = 0; k < CPW; ++k)
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      int64_t i = (chunk0 + k) * kChunk + t * 128 + 4 * lane;
      if (VEC) {
        if (i < n) *reinterpret_cast<float4*>(row + i) = v[k][t];
      } else {
        if (i < n) row[i] = v[k][t].x;
        if (i + 1 < n) row[i + 1] = v[k][t].y;
        if (i + 2 < n) row[i + 2] = v[k][t].z;
        if (i + 3 < n) row[i + 3] = v[k][t].w;
      }
    }
}

// rowsum of one chunk (3.2) from its terms: per lane a = a + term over the 8
// steps from +0, fold (a0+a1)+(a2+a3), then the warp tree.
__device__ __forceinline__ float chunk_sum(const float4 (&v)[8]) {
  float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
#pragma unroll
  for (int t = 0; t < 8; ++t) {
    a0 = xadd(a0, v[t].x);
    a1 = xadd(a1, v[t].y);
    a2 = xadd(a2, v[t].z);
    a3 = xadd(a3, v[t].w);
  }
  return warp_tree_sum(xadd(xadd(a0, a1), xadd(a2, a3)));
}

// Softmax chunk statistics (3.3). Padding must have been loaded as -inf.
// The chunk max uses fmaxf (drops NaN): a NaN element still makes s NaN
// through exp(NaN - m), except when m = -inf, which is rare and rechecked.
__device__ __forceinline__ MaxSum chunk_maxsum(const float4 (&v)[8]) {
  float m = neg_inf();
#pragma unroll
  for (int t = 0; t < 8; ++t) m = fmaxf(fmaxf(m, fmaxf(v[t].x, v[t].y)), fmaxf(v[t].z, v[t].w));
  m = warp_max(m);
  if (m == neg_inf()) {
    bool nan = false;
#pragma unroll
    for (int t = 0; t < 8; ++t)
      nan |= (v[t].x != v[t].x) | (v[t].y != v[t].y) | (v[t].z != v[t].z) | (v[t].w != v[t].w);
    nan = warp_max(nan ? 1.0f : 0.0f) != 0.0f;
    return nan ? MaxSum{__int_as_float(0x7fffffff), __int_as_float(0x7fffffff)} : MaxSum{m, 0.0f};
  }
  float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
#pragma unroll
  for (int t = 0; t < 8; ++t) {
    a0 = xadd(a0, canonical_exp(xsub(v[t].x, m)));
    a1 = xadd(a1, canonical_exp(xsub(v[t].y, m)));
    a2 = xadd(a2, canonical_exp(xsub(v[t].z, m)));
    a3 = xadd(a3, canonical_exp(xsub(v[t].w, m)));
  }
  return {m, warp_tree_sum(xadd(xadd(a0, a1), xadd(a2, a3)))};
}

// Tree over a warp's CPW chunk values (CPW a power of two, compile time).
template <class Op, int CPW>
__device__ __forceinline__ typename Op::T local_tree(typename Op::T (&c)[CPW]) {
#pragma unroll
  for (int w = CPW; w > 1; w >>= 1)
#pragma unroll
    for (int i = 0; i < w / 2; ++i) c[i] = Op::combine(c[2 * i], c[2 * i + 1]);
  return c[0];
}

// Combines the W warps' values of a block (and, with S > 1, of the S blocks
// of a cluster) by the pairwise tree; every thread gets the result.
// `scratch` needs W + 2 entries of shared memory.
template <class Op, int W, int S>
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
  } else if (S > 1) {
    if (threadIdx.x == 0) scratch[W] = warp_value;
  }
#if defined(XHAL_GPU_HAS_CLUSTERS)
  if constexpr (S > 1) {
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();
    if (warp == 0) {
      T v = Op::identity();
      if (lane < S) v = *cluster.map_shared_rank(&scratch[W], lane);
      v = warp_tree<Op>(v);
      if (lane == 0) scratch[W + 1] = v;
    }
    cluster.sync();  // peers are done reading scratch[W]
    warp_value = scratch[W + 1];
    __syncthreads();
  } else
#endif
  {
    if (W > 1) __syncthreads();  // scratch is reused by the next row
  }
  return warp_value;
}

}  // namespace xhal::gpu
