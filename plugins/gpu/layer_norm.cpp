// LayerNorm forward and backward (docs/semantics.md 3.6, 3.5) as bodies of
// the generic row kernel (row_kernel.h); dgamma and dbeta through the fused
// walk (norm_backward.h) or the separate colsum (colsum.h).
#include "norm_backward.h"

namespace xhal::gpu {
namespace {

template <class A>
struct Sum2 {
  A a, b;
};
template <class A>
struct Sum2Op {
  using T = Sum2<A>;
  __device__ static T identity() { return {A(0), A(0)}; }
  __device__ static T combine(T x, T y) { return {xadd(x.a, y.a), xadd(x.b, y.b)}; }
  __device__ static T shfl_down(T v, int d) {
    return {xhal_shfl_down(v.a, d), xhal_shfl_down(v.b, d)};
  }
  __device__ static T shfl(T v, int s) { return {xhal_shfl(v.a, s), xhal_shfl(v.b, s)}; }
};

// A: f32, or f64 for f64 x (7.3: gamma, beta and the saved mean and rstd
// f64 too, eps widened exactly, n as (double)n).
template <class S>
struct LnFwd {
  using A = acc_t<S>;
  using Op = SumOpT<A>;
  static constexpr int kPhases = 2, kInputs = 1;
  // Left alone it holds gamma and beta of the whole chunk too (113
  // registers, 2 resident blocks an SM); at most 64 (f32 compute) gives 4.
  static constexpr int kResidentBlocks = sizeof(A) == 4 ? 4 : 0;
  const S* x;
  ColVals<S> gamma;
  ColVals<S> beta;
  A eps;
  S* y;
  A* mean;
  A* rstd;
  __device__ const S* input(int) const { return x; }
  __device__ static A pad(int) { return A(0); }
  __device__ A chunk_stat(int phase, const ChunkRegs<A>& r, const A* tot, int64_t, int64_t n,
                          int64_t i0) const {
    if (phase == 0) return chunk_sum_of([&](int t, int q) { return comp(r.in[0][t], q); });
    const A mu = xdiv(tot[0], static_cast<A>(n));
    return chunk_sum_of([&](int t, int q) {
      const A d = xsub(comp(r.in[0][t], q), mu);
      return elem(i0, t) + q < n ? xmul(d, d) : A(0);
    });
  }
  __device__ A rs(const A* tot, int64_t n) const {
    return xdiv(A(1), xsqrt(xadd(xdiv(tot[1], static_cast<A>(n)), eps)));
  }
  __device__ void apply(ChunkRegs<A>& r, const A* tot, int64_t, int64_t n, int64_t i0,
                        vec4_t<A>* out) const {
    const A mu = xdiv(tot[0], static_cast<A>(n));
    const A s = rs(tot, n);
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const vec4_t<A> g = col4(gamma, elem(i0, t), n), b = col4(beta, elem(i0, t), n);
#pragma unroll
      for (int q = 0; q < 4; ++q)
        comp(out[t], q) =
            xadd(xmul(xmul(xsub(comp(r.in[0][t], q), mu), s), comp(g, q)), comp(b, q));
    }
  }
  __device__ S* output() const { return y; }
  __device__ void row_out(int64_t row, const A* tot, int64_t n) const {
    mean[row] = xdiv(tot[0], static_cast<A>(n));
    rstd[row] = rs(tot, n);
  }
};

template <class S>
struct LnBwd {
  using A = acc_t<S>;
  using Op = Sum2Op<A>;
  static constexpr int kPhases = 1, kInputs = 2;
  const S* x;
  const S* dy;
  ColVals<S> gamma;
  const A* mean;
  const A* rstd;
  S* dx;
  __device__ const S* input(int i) const { return i == 0 ? x : dy; }
  __device__ static A pad(int) { return A(0); }
  __device__ Sum2<A> chunk_stat(int, const ChunkRegs<A>& r, const Sum2<A>*, int64_t row, int64_t n,
                                int64_t i0) const {
    const A mu = mean[row], s = rstd[row];
    vec4_t<A> gm[8];
#pragma unroll
    for (int t = 0; t < 8; ++t) gm[t] = col4(gamma, elem(i0, t), n);
    const A a =
        chunk_sum_of([&](int t, int q) { return xmul(comp(r.in[1][t], q), comp(gm[t], q)); });
    const A b = chunk_sum_of([&](int t, int q) {
      const A xh = xmul(xsub(comp(r.in[0][t], q), mu), s);
      const A g = xmul(comp(r.in[1][t], q), comp(gm[t], q));
      return elem(i0, t) + q < n ? xmul(g, xh) : A(0);
    });
    return {a, b};
  }
  __device__ void apply(ChunkRegs<A>& r, const Sum2<A>* tot, int64_t row, int64_t n, int64_t i0,
                        vec4_t<A>* out) const {
    const A mu = mean[row], s = rstd[row];
    const A a = xdiv(tot[0].a, static_cast<A>(n));
    const A b = xdiv(tot[0].b, static_cast<A>(n));
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const vec4_t<A> gm = col4(gamma, elem(i0, t), n);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const A xh = xmul(xsub(comp(r.in[0][t], q), mu), s);
        const A g = xmul(comp(r.in[1][t], q), comp(gm, q));
        comp(out[t], q) = xmul(xsub(xsub(g, a), xmul(xh, b)), s);
      }
    }
  }
  // colsum stage 1 terms of step t (3.5, 3.6): dgamma += dy * xh, dbeta += dy.
  __device__ void col_terms(const ChunkRegs<A>& r, int64_t row, int t, vec4_t<A>& pg,
                            vec4_t<A>& pb) const {
    const A mu = mean[row], s = rstd[row];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const A dyv = comp(r.in[1][t], q);
      comp(pg, q) = xadd(comp(pg, q), xmul(dyv, xmul(xsub(comp(r.in[0][t], q), mu), s)));
      comp(pb, q) = xadd(comp(pb, q), dyv);
    }
  }
  __device__ S* output() const { return dx; }
  __device__ void row_out(int64_t, const Sum2<A>*, int64_t) const {}
};

template <class S>
xhal_status_t forward_as(Device* d, const xhal_plugin_tensor_t* x,
                         const xhal_plugin_tensor_t* gamma, const xhal_plugin_tensor_t* beta,
                         float eps, const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* mean,
                         const xhal_plugin_tensor_t* rstd) {
  auto [rows, n] = shape_of(x);
  using A = acc_t<S>;
  LnFwd<S> b{tensor_as<S>(x), col_vals<S>(gamma), col_vals<S>(beta), static_cast<A>(eps),
             tensor_as<S>(y), tensor_as<A>(mean), tensor_as<A>(rstd)};
  return run_rows(d, b, rows, n, units_aligned(b.x, b.y), "layer_norm_forward");
}

template <class S>
xhal_status_t backward_as(Device* d, const xhal_plugin_tensor_t* x,
                          const xhal_plugin_tensor_t* gamma, const xhal_plugin_tensor_t* mean,
                          const xhal_plugin_tensor_t* rstd, const xhal_plugin_tensor_t* dy,
                          const xhal_plugin_tensor_t* dx, const xhal_plugin_tensor_t* dgamma,
                          const xhal_plugin_tensor_t* dbeta) {
  auto [rows, n] = shape_of(x);
  using A = acc_t<S>;
  LnBwd<S> b{tensor_as<S>(x),    tensor_as<S>(dy),   col_vals<S>(gamma),
             tensor_as<A>(mean), tensor_as<A>(rstd), tensor_as<S>(dx)};
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
