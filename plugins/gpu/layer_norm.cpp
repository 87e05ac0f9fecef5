// LayerNorm forward and backward (docs/semantics.md 3.6, 3.5) as bodies of
// the generic row kernel (row_kernel.h); dgamma and dbeta through the fused
// walk (norm_backward.h) or the separate colsum (colsum.h).
#include "norm_backward.h"

namespace xhal::gpu {
namespace {

struct Sum2 {
  float a, b;
};
struct Sum2Op {
  using T = Sum2;
  __device__ static Sum2 identity() { return {0.0f, 0.0f}; }
  __device__ static Sum2 combine(Sum2 x, Sum2 y) { return {xadd(x.a, y.a), xadd(x.b, y.b)}; }
  __device__ static Sum2 shfl_down(Sum2 v, int d) {
    return {xhal_shfl_down(v.a, d), xhal_shfl_down(v.b, d)};
  }
  __device__ static Sum2 shfl(Sum2 v, int s) { return {xhal_shfl(v.a, s), xhal_shfl(v.b, s)}; }
};

template <class S>
struct LnFwd {
  using Op = SumOp;
  static constexpr int kPhases = 2, kInputs = 1;
  const S* x;
  ColVals<S> gamma;
  ColVals<S> beta;
  float eps;
  S* y;
  float* mean;
  float* rstd;
  __device__ const S* input(int) const { return x; }
  __device__ static float pad(int) { return 0.0f; }
  __device__ float chunk_stat(int phase, const ChunkRegs& r, const float* tot, int64_t, int64_t n,
                              int64_t i0) const {
    if (phase == 0) return chunk_sum_of([&](int t, int q) { return comp(r.in[0][t], q); });
    const float mu = xdiv(tot[0], static_cast<float>(n));
    return chunk_sum_of([&](int t, int q) {
      const float d = xsub(comp(r.in[0][t], q), mu);
      return elem(i0, t) + q < n ? xmul(d, d) : 0.0f;
    });
  }
  __device__ float rs(const float* tot, int64_t n) const {
    return xdiv(1.0f, xsqrt(xadd(xdiv(tot[1], static_cast<float>(n)), eps)));
  }
  __device__ void apply(ChunkRegs& r, const float* tot, int64_t, int64_t n, int64_t i0,
                        float4* out) const {
    const float mu = xdiv(tot[0], static_cast<float>(n));
    const float s = rs(tot, n);
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const float4 g = col4(gamma, elem(i0, t), n), b = col4(beta, elem(i0, t), n);
#pragma unroll
      for (int q = 0; q < 4; ++q)
        comp(out[t], q) =
            xadd(xmul(xmul(xsub(comp(r.in[0][t], q), mu), s), comp(g, q)), comp(b, q));
    }
  }
  __device__ S* output() const { return y; }
  __device__ void row_out(int64_t row, const float* tot, int64_t n) const {
    mean[row] = xdiv(tot[0], static_cast<float>(n));
    rstd[row] = rs(tot, n);
  }
};

template <class S>
struct LnBwd {
  using Op = Sum2Op;
  static constexpr int kPhases = 1, kInputs = 2;
  const S* x;
  const S* dy;
  ColVals<S> gamma;
  const float* mean;
  const float* rstd;
  S* dx;
  __device__ const S* input(int i) const { return i == 0 ? x : dy; }
  __device__ static float pad(int) { return 0.0f; }
  __device__ Sum2 chunk_stat(int, const ChunkRegs& r, const Sum2*, int64_t row, int64_t n,
                             int64_t i0) const {
    const float mu = mean[row], s = rstd[row];
    float4 gm[8];
#pragma unroll
    for (int t = 0; t < 8; ++t) gm[t] = col4(gamma, elem(i0, t), n);
    const float a =
        chunk_sum_of([&](int t, int q) { return xmul(comp(r.in[1][t], q), comp(gm[t], q)); });
    const float b = chunk_sum_of([&](int t, int q) {
      const float xh = xmul(xsub(comp(r.in[0][t], q), mu), s);
      const float g = xmul(comp(r.in[1][t], q), comp(gm[t], q));
      return elem(i0, t) + q < n ? xmul(g, xh) : 0.0f;
    });
    return {a, b};
  }
  __device__ void apply(ChunkRegs& r, const Sum2* tot, int64_t row, int64_t n, int64_t i0,
                        float4* out) const {
    const float mu = mean[row], s = rstd[row];
    const float a = xdiv(tot[0].a, static_cast<float>(n));
    const float b = xdiv(tot[0].b, static_cast<float>(n));
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const float4 gm = col4(gamma, elem(i0, t), n);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float xh = xmul(xsub(comp(r.in[0][t], q), mu), s);
        const float g = xmul(comp(r.in[1][t], q), comp(gm, q));
        comp(out[t], q) = xmul(xsub(xsub(g, a), xmul(xh, b)), s);
      }
    }
  }
  // colsum stage 1 terms of step t (3.5, 3.6): dgamma += dy * xh, dbeta += dy.
  __device__ void col_terms(const ChunkRegs& r, int64_t row, int t, float4& pg, float4& pb) const {
    const float mu = mean[row], s = rstd[row];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float dyv = comp(r.in[1][t], q);
      comp(pg, q) = xadd(comp(pg, q), xmul(dyv, xmul(xsub(comp(r.in[0][t], q), mu), s)));
      comp(pb, q) = xadd(comp(pb, q), dyv);
    }
  }
  __device__ S* output() const { return dx; }
  __device__ void row_out(int64_t, const Sum2*, int64_t) const {}
};

template <class S>
xhal_status_t forward_as(Device* d, const xhal_plugin_tensor_t* x,
                         const xhal_plugin_tensor_t* gamma, const xhal_plugin_tensor_t* beta,
                         float eps, const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* mean,
                         const xhal_plugin_tensor_t* rstd) {
  auto [rows, n] = shape_of(x);
  LnFwd<S> b{tensor_as<S>(x), col_vals<S>(gamma), col_vals<S>(beta), eps,
             tensor_as<S>(y), tensor_f32(mean),   tensor_f32(rstd)};
  return run_rows(d, b, rows, n, units_aligned(b.x, b.y), "layer_norm_forward");
}

template <class S>
xhal_status_t backward_as(Device* d, const xhal_plugin_tensor_t* x,
                          const xhal_plugin_tensor_t* gamma, const xhal_plugin_tensor_t* mean,
                          const xhal_plugin_tensor_t* rstd, const xhal_plugin_tensor_t* dy,
                          const xhal_plugin_tensor_t* dx, const xhal_plugin_tensor_t* dgamma,
                          const xhal_plugin_tensor_t* dbeta) {
  auto [rows, n] = shape_of(x);
  LnBwd<S> b{tensor_as<S>(x),  tensor_as<S>(dy), col_vals<S>(gamma),
             tensor_f32(mean), tensor_f32(rstd), tensor_as<S>(dx)};
  const bool vec = units_aligned(b.x, b.dy, b.dx);
  void* dg = dgamma ? tensor_ptr(dgamma) : nullptr;
  void* db = dbeta ? tensor_ptr(dbeta) : nullptr;
  const xhal_dtype_t g_dtype = gamma->dtype;
  xhal_status_t fst;
  if ((dg || db) && try_fused_norm_bwd(d, b, rows, n, vec, dg, db, g_dtype, &fst)) return fst;
  if (dg || db) {
    // Only dbeta: dgamma's tree goes into dbeta first, then is overwritten.
    xhal_status_t st =
        colsums(d, true, b.x, b.dy, x->dtype, b.mean, b.rstd, rows, n, dg ? dg : db, db, g_dtype);
    if (st != XHAL_OK) return st;
  }
  return run_rows(d, b, rows, n, vec, "layer_norm_backward");
}

}  // namespace

xhal_status_t layer_norm_forward(void* device, const xhal_plugin_tensor_t* x,
                                 const xhal_plugin_tensor_t* gamma,
                                 const xhal_plugin_tensor_t* beta, float eps,
                                 const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* mean,
                                 const xhal_plugin_tensor_t* rstd) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  return with_storage(
      x, [&](auto s) { return forward_as<decltype(s)>(d, x, gamma, beta, eps, y, mean, rstd); });
}

xhal_status_t layer_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                  const xhal_plugin_tensor_t* gamma,
                                  const xhal_plugin_tensor_t* mean,
                                  const xhal_plugin_tensor_t* rstd, const xhal_plugin_tensor_t* dy,
                                  const xhal_plugin_tensor_t* dx,
                                  const xhal_plugin_tensor_t* dgamma,
                                  const xhal_plugin_tensor_t* dbeta) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  return with_storage(x, [&](auto s) {
    return backward_as<decltype(s)>(d, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
  });
}

}  // namespace xhal::gpu
