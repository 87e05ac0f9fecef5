// The norm backwards with colsum stage 1 fused into the row walk
// (docs/semantics.md 3.5; docs/gpu.md, "dgamma/dbeta"), shared by
// rms_norm.cpp and layer_norm.cpp. A group of W warps walks the 32
// consecutive rows of one colsum block in ascending order: per row it
// computes dx exactly as row_kernel does (same chunk statistics, same block
// tree, same apply), and each thread adds its own columns' terms into
// partials held in registers (the same thread owns the same columns on every
// row), so x and dy are read once. With PF the next row's loads are issued
// before the current row is reduced. W == 1 blocks hold RB independent warps
// (RB colsum blocks); W > 1 needs RB == 1. f32 compute only (f32, bf16
// and f16 storage): an f64 walk would hold twice the registers (row,
// prefetched row and partials) and spill, so f64 takes the separate
// colsum, which gives the same bits.
#pragma once

#include "colsum.h"
#include "row_kernel.h"

namespace xhal::gpu {
namespace {

template <class B, int W, int RB, bool VEC, bool PF>
__global__ void __launch_bounds__(W* RB * 32)
    norm_bwd_fused_kernel(B body, int64_t rows, int64_t n, float* pg, float* pb) {
  static_assert(W == 1 || RB == 1, "one block tree per block");
  static_assert(std::is_same_v<typename B::A, float>, "f32 compute only");
  using Op = typename B::Op;
  using T = typename Op::T;
  __shared__ T sh[W + 2];
  const int lane = threadIdx.x & 31, warp = (threadIdx.x >> 5) % W, grp = (threadIdx.x >> 5) / W;
  const int64_t i0 = int64_t{warp} * kChunk;
  const int64_t nb = (rows + 31) / 32;
  // With RB > 1 (W == 1) the warps never synchronise, so each runs its own
  // loop; with W > 1 every warp of the block has the same blk.
  for (int64_t blk = int64_t{blockIdx.x} * RB + grp; blk < nb; blk += int64_t{gridDim.x} * RB) {
    const int64_t r0 = blk * 32, r1 = r0 + 32 < rows ? r0 + 32 : rows;
    float4 ag[8], ab[8];
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int t = 0; t < 8; ++t) ag[t] = ab[t] = zero;
    ChunkRegs<float> cur, nxt;
    load_chunk<VEC>(body, cur, r0, n, i0);
    for (int64_t row = r0; row < r1; ++row) {
      if (PF && row + 1 < r1) load_chunk<VEC>(body, nxt, row + 1, n, i0);
      const T tot = block_tree<Op, W>(body.chunk_stat(0, cur, nullptr, row, n, i0), sh);
      float4 out[8];
      body.apply(cur, &tot, row, n, i0, out);
#pragma unroll
      for (int t = 0; t < 8; ++t) body.col_terms(cur, row, t, ag[t], ab[t]);
      store_chunk<VEC>(body.output() + row * n, i0, lane, n, out);
      if (row + 1 < r1) {
        if (PF) cur = nxt;
        else load_chunk<VEC>(body, cur, row + 1, n, i0);
      }
    }
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const int64_t i = i0 + t * 128 + 4 * lane;
      float4 g = ag[t], b = ab[t];
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (i + q < n) {
          if (pg) pg[blk * n + i + q] = comp(g, q);
          if (pb) pb[blk * n + i + q] = comp(b, q);
        }
    }
  }
}

template <class B, int W, int RB, bool VEC, bool PF>
void launch_fused(Device* d, const B& body, int64_t rows, int64_t n, float* pg, float* pb) {
  const int64_t nb = (rows + 31) / 32, groups = (nb + RB - 1) / RB;
  const unsigned grid =
      static_cast<unsigned>(groups < (int64_t{1} << 20) ? groups : int64_t{1} << 20);
  norm_bwd_fused_kernel<B, W, RB, VEC, PF>
      <<<grid, W * RB * 32, 0, d->stream>>>(body, rows, n, pg, pb);
}

template <class B, bool VEC>
void launch_fused_w(Device* d, const B& body, int64_t rows, int64_t n, float* pg, float* pb) {
  // One warp per row already has four blocks' worth of warps in flight,
  // and its prefetch form spills (ptxas), so it never prefetches.
  if (n <= kChunk) launch_fused<B, 1, 4, VEC, false>(d, body, rows, n, pg, pb);
  else if (n <= 4 * kChunk) launch_fused<B, 4, 1, VEC, true>(d, body, rows, n, pg, pb);
  else launch_fused<B, kBigW<B>, 1, VEC, true>(d, body, rows, n, pg, pb);
}

// dx and the colsum partials in one pass, then stage 2 per output. Returns
// false (nothing launched) where the separate colsum runs instead: fewer
// rows than the device's norm_backward.fused_from_rows (in whole 32-row
// blocks: the 32-row walks must still fill the GPU), or rows longer than one
// block.
// dgamma and dbeta are written in out_dtype (f32 or x's narrow dtype, 7.2).
template <class B>
bool fused_norm_bwd(Device* d, const B& body, int64_t rows, int64_t n, bool vec, void* dgamma,
                    void* dbeta, xhal_dtype_t out_dtype, xhal_status_t* st) {
  const int64_t nb = (rows + 31) / 32;
  if (rows == 0 || n == 0 || n > int64_t{kBigW<B>} * kChunk) return false;
  if (nb < (d->options.norm_backward_fused_from_rows + 31) / 32) return false;
  vec = vec && n % 4 == 0;
  void* ws = nullptr;
  *st = scratch(d, sizeof(float) * nb * n * ((dgamma ? 1 : 0) + (dbeta ? 1 : 0)), &ws);
  if (*st != XHAL_OK) return true;
  float* pg = dgamma ? static_cast<float*>(ws) : nullptr;
  float* pb = dbeta ? static_cast<float*>(ws) + (dgamma ? nb * n : 0) : nullptr;
  if (vec) launch_fused_w<B, true>(d, body, rows, n, pg, pb);
  else launch_fused_w<B, false>(d, body, rows, n, pg, pb);
  int launches = 1;
  if (pg) {
    colsum_tree(d, pg, nb, n, dgamma, out_dtype);
    ++launches;
  }
  if (pb) {
    colsum_tree(d, pb, nb, n, dbeta, out_dtype);
    ++launches;
  }
  *st = check_launch(d, "norm backward (fused colsum)", launches);
  return true;
}

// f64 (compute type double) never takes it (see the top of this file).
template <class B>
bool try_fused_norm_bwd(Device* d, const B& body, int64_t rows, int64_t n, bool vec, void* dgamma,
                        void* dbeta, xhal_dtype_t out_dtype, xhal_status_t* st) {
  if constexpr (std::is_same_v<typename B::A, float>)
    return fused_norm_bwd(d, body, rows, n, vec, dgamma, dbeta, out_dtype, st);
  else return false;
}

}  // namespace
}  // namespace xhal::gpu
