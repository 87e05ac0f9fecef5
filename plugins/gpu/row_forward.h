// Softmax and RMSNorm forward row kernels (docs/semantics.md 3.3, 3.4).
// Template shape: W warps per block, CPW chunks per warp, S blocks per row
// in one cluster (S = 1: one block per row). Rows longer than one cluster
// use the split form: `Pass::kStats` writes each block's partial statistic
// to `ws`, `Pass::kApply` trees a row's partials and writes y.
#pragma once

#include "row_common.h"

namespace xhal::gpu {

enum class Pass { kFull, kStats, kApply };

// Blocks per row: S for clusters; `split` (runtime) for the two-pass form.
template <int W, int CPW, int S, bool VEC, Pass P>
__global__ void __launch_bounds__(W * 32)
softmax_forward_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows,
                       int64_t n, int split, MaxSum* __restrict__ ws) {
  __shared__ MaxSum scratch[W + 2];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int per_row = P == Pass::kFull ? S : split;
  // The apply pass walks the rows backwards: the stats pass read them last,
  // so they are the ones still in L2.
  const unsigned bid = P == Pass::kApply ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int seg = static_cast<int>(bid % per_row);
  const int64_t row_step = gridDim.x / per_row;
  for (int64_t row = bid / per_row; row < rows; row += row_step) {
    const float* xr = x + row * n;
    const int64_t chunk0 = (static_cast<int64_t>(seg) * W + warp) * CPW;
    float4 v[CPW][8];
    load_chunks<CPW, VEC>(v, xr, n, chunk0, lane, neg_inf());
    MaxSum total;
    if (P == Pass::kApply) {
      MaxSum p = lane < split ? ws[row * split + lane] : maxsum_identity();
      total = warp_tree<MaxSumOp>(p);  // split <= 32
    } else {
      MaxSum c[CPW];
#pragma unroll
      for (int k = 0; k < CPW; ++k) c[k] = chunk_maxsum(v[k]);
      total = block_tree<MaxSumOp, W, P == Pass::kFull ? S : 1>(local_tree<MaxSumOp, CPW>(c),
                                                                 scratch);
      if (P == Pass::kStats) {
        if (threadIdx.x == 0) ws[row * split + seg] = total;
        continue;
      }
    }
    const float inv = xdiv(1.0f, total.s);
#pragma unroll
    for (int k = 0; k < CPW; ++k)
#pragma unroll
      for (int t = 0; t < 8; ++t) {
        v[k][t].x = xmul(canonical_exp(xsub(v[k][t].x, total.m)), inv);
        v[k][t].y = xmul(canonical_exp(xsub(v[k][t].y, total.m)), inv);
        v[k][t].z = xmul(canonical_exp(xsub(v[k][t].z, total.m)), inv);
        v[k][t].w = xmul(canonical_exp(xsub(v[k][t].w, total.m)), inv);
      }
    store_chunks<CPW, VEC>(v, y + row * n, n, chunk0, lane);
  }
}

template <int W, int CPW, int S, bool VEC, Pass P>
__global__ void __launch_bounds__(W * 32)
rms_norm_forward_kernel(const float* __restrict__ x, const float* __restrict__ gamma, float eps,
                        float* __restrict__ y, float* __restrict__ rstd_out, int64_t rows,
                        int64_t n, int split, float* __restrict__ ws) {
  __shared__ float scratch[W + 2];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int per_row = P == Pass::kFull ? S : split;
  // The apply pass walks the rows backwards: the stats pass read them last,
  // so they are the ones still in L2.
  const unsigned bid = P == Pass::kApply ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int seg = static_cast<int>(bid % per_row);
  const int64_t row_step = gridDim.x / per_row;
  for (int64_t row = bid / per_row; row < rows; row += row_step) {
    const int64_t chunk0 = (static_cast<int64_t>(seg) * W + warp) * CPW;
    float4 v[CPW][8];
    load_chunks<CPW, VEC>(v, x + row * n, n, chunk0, lane, 0.0f);
    float total;
    if (P == Pass::kApply) {
      float p = lane < split ? ws[row * split + lane] : 0.0f;
      total = warp_tree<SumOp>(p);
    } else {
      float c[CPW];
#pragma unroll
      for (int k = 0; k < CPW; ++k) {
        float4 q[8];
#pragma unroll
        for (int t = 0; t < 8; ++t)
          q[t] = make_float4(xmul(v[k][t].x, v[k][t].x), xmul(v[k][t].y, v[k][t].y),
                             xmul(v[k][t].z, v[k][t].z), xmul(v[k][t].w, v[k][t].w));
        c[k] = chunk_sum(q);
      }
      total = block_tree<SumOp, W, P == Pass::kFull ? S : 1>(local_tree<SumOp, CPW>(c), scratch);
      if (P == Pass::kStats) {
        if (threadIdx.x == 0) ws[row * split + seg] = total;
        continue;
      }
    }
    const float rstd = xdiv(1.0f, xsqrt(xadd(xdiv(total, static_cast<float>(n)), eps)));
    if (seg == 0 && threadIdx.x == 0 && rstd_out) rstd_out[row] = rstd;
#pragma unroll
    for (int k = 0; k < CPW; ++k)
#pragma unroll
      for (int t = 0; t < 8; ++t) {
        const float4 g = load4<VEC>(gamma, (chunk0 + k) * kChunk + t * 128 + 4 * lane, n, 0.0f);
        v[k][t].x = xmul(xmul(v[k][t].x, rstd), g.x);
        v[k][t].y = xmul(xmul(v[k][t].y, rstd), g.y);
        v[k][t].z = xmul(xmul(v[k][t].z, rstd), g.z);
        v[k][t].w = xmul(xmul(v[k][t].w, rstd), g.w);
      }
    store_chunks<CPW, VEC>(v, y + row * n, n, chunk0, lane);
  }
}

}  // namespace xhal::gpu
