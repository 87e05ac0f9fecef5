// RMSNorm forward and backward (docs/semantics.md 3.4, 3.5) as bodies of
// the generic row kernel (row_kernel.h); dgamma through the fused walk
// (norm_backward.h) or the separate colsum (colsum.h).
#include "norm_backward.h"

namespace xhal::gpu {
namespace {

struct RmsFwd {
  using Op = SumOp;
  static constexpr int kPhases = 1, kInputs = 1;
  const float* x;
  const float* gamma;
  float eps;
  float* y;
  float* rstd;
  __device__ const float* input(int) const { return x; }
  __device__ static float pad(int) { return 0.0f; }
  __device__ float chunk_stat(int, const ChunkRegs& r, const float*, int64_t, int64_t,
                              int64_t) const {
    return chunk_sum_of(
        [&](int t, int q) { return xmul(comp(r.in[0][t], q), comp(r.in[0][t], q)); });
  }
  __device__ float rs(const float* tot, int64_t n) const {
    return xdiv(1.0f, xsqrt(xadd(xdiv(tot[0], static_cast<float>(n)), eps)));
  }
  __device__ void apply(ChunkRegs& r, const float* tot, int64_t, int64_t n, int64_t i0,
                        float4* out) const {
    const float s = rs(tot, n);
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const float4 g = col4(gamma, elem(i0, t), n);
#pragma unroll
      for (int q = 0; q < 4; ++q) comp(out[t], q) = xmul(xmul(comp(r.in[0][t], q), s), comp(g, q));
    }
  }
  __device__ float* output() const { return y; }
  __device__ void row_out(int64_t row, const float* tot, int64_t n) const {
    rstd[row] = rs(tot, n);
  }
};

struct RmsBwd {
  using Op = SumOp;
  static constexpr int kPhases = 1, kInputs = 2;
  const float* x;
  const float* dy;
  const float* gamma;
  const float* rstd;
  float* dx;
  __device__ const float* input(int i) const { return i == 0 ? x : dy; }
  __device__ static float pad(int) { return 0.0f; }
  __device__ float chunk_stat(int, const ChunkRegs& r, const float*, int64_t row, int64_t n,
                              int64_t i0) const {
    const float s = rstd[row];
    float4 gm[8];
#pragma unroll
    for (int t = 0; t < 8; ++t) gm[t] = col4(gamma, elem(i0, t), n);
    return chunk_sum_of([&](int t, int q) {
      const float xh = xmul(comp(r.in[0][t], q), s);
      const float g = xmul(comp(r.in[1][t], q), comp(gm[t], q));
      return xmul(g, xh);
    });
  }
  __device__ void apply(ChunkRegs& r, const float* tot, int64_t row, int64_t n, int64_t i0,
                        float4* out) const {
    const float s = rstd[row];
    const float c = xdiv(tot[0], static_cast<float>(n));
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const float4 gm = col4(gamma, elem(i0, t), n);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float xh = xmul(comp(r.in[0][t], q), s);
        const float g = xmul(comp(r.in[1][t], q), comp(gm, q));
        comp(out[t], q) = xmul(xsub(g, xmul(xh, c)), s);
      }
    }
  }
  // colsum stage 1 terms of step t (3.4, 3.5): dgamma += dy * xh.
  __device__ void col_terms(const ChunkRegs& r, int64_t row, int t, float4& pg, float4&) const {
    const float s = rstd[row];
#pragma unroll
    for (int q = 0; q < 4; ++q)
      comp(pg, q) = xadd(comp(pg, q), xmul(comp(r.in[1][t], q), xmul(comp(r.in[0][t], q), s)));
  }
  __device__ float* output() const { return dx; }
  __device__ void row_out(int64_t, const float*, int64_t) const {}
};

}  // namespace

xhal_status_t rms_norm_forward(void* device, const xhal_plugin_tensor_t* x,
                               const xhal_plugin_tensor_t* gamma, float eps,
                               const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* rstd) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  auto [rows, n] = shape_of(x);
  RmsFwd b{tensor_f32(x), tensor_f32(gamma), eps, tensor_f32(y), tensor_f32(rstd)};
  return run_rows(d, b, rows, n, aligned16(b.x) && aligned16(b.gamma) && aligned16(b.y),
                  "rms_norm_forward");
}

xhal_status_t rms_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                const xhal_plugin_tensor_t* gamma, const xhal_plugin_tensor_t* rstd,
                                const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx,
                                const xhal_plugin_tensor_t* dgamma) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  auto [rows, n] = shape_of(x);
  RmsBwd b{tensor_f32(x), tensor_f32(dy), tensor_f32(gamma), tensor_f32(rstd), tensor_f32(dx)};
  const bool vec = aligned16(b.x) && aligned16(b.dy) && aligned16(b.gamma) && aligned16(b.dx);
  // Fused: a row's dy is in registers before its dx is written (dx == dy).
  xhal_status_t fst;
  if (dgamma && try_fused_norm_bwd(d, b, rows, n, vec, tensor_f32(dgamma), nullptr, &fst))
    return fst;
  // dgamma reads dy, so it runs before dx may overwrite dy (dx == dy allowed).
  if (dgamma) {
    xhal_status_t st = colsums(d, false, tensor_f32(x), tensor_f32(dy), nullptr, tensor_f32(rstd),
                               rows, n, tensor_f32(dgamma), nullptr);
    if (st != XHAL_OK) return st;
  }
  return run_rows(d, b, rows, n, vec, "rms_norm_backward");
}

}  // namespace xhal::gpu
