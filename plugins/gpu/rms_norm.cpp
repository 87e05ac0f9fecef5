// RMSNorm forward and backward (docs/semantics.md 3.4, 3.5) as bodies of
// the generic row kernel (row_kernel.h); dgamma through the fused walk
// (norm_backward.h) or the separate colsum (colsum.h).
#include "norm_backward.h"

namespace xhal::gpu {
namespace {

// A: f32, or f64 for f64 x (7.3: gamma and the saved rstd f64 too, eps
// widened exactly, n as (double)n).
template <class S>
struct RmsFwd {
  using A = acc_t<S>;
  using Op = SumOpT<A>;
  static constexpr int kPhases = 1, kInputs = 1;
  static constexpr int kResidentBlocks = sizeof(A) == 4 ? 4 : 0;  // at most 64 registers
  const S* x;
  ColVals<S> gamma;
  A eps;
  S* y;
  A* rstd;
  __device__ const S* input(int) const { return x; }
  __device__ static A pad(int) { return A(0); }
  __device__ A chunk_stat(int, const ChunkRegs<A>& r, const A*, int64_t, int64_t, int64_t) const {
    return chunk_sum_of(
        [&](int t, int q) { return xmul(comp(r.in[0][t], q), comp(r.in[0][t], q)); });
  }
  __device__ A rs(const A* tot, int64_t n) const {
    return xdiv(A(1), xsqrt(xadd(xdiv(tot[0], static_cast<A>(n)), eps)));
  }
  __device__ void apply(ChunkRegs<A>& r, const A* tot, int64_t, int64_t n, int64_t i0,
                        vec4_t<A>* out) const {
    const A s = rs(tot, n);
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const vec4_t<A> g = col4(gamma, elem(i0, t), n);
#pragma unroll
      for (int q = 0; q < 4; ++q) comp(out[t], q) = xmul(xmul(comp(r.in[0][t], q), s), comp(g, q));
    }
  }
  __device__ S* output() const { return y; }
  __device__ void row_out(int64_t row, const A* tot, int64_t n) const { rstd[row] = rs(tot, n); }
};

template <class S>
struct RmsBwd {
  using A = acc_t<S>;
  using Op = SumOpT<A>;
  static constexpr int kPhases = 1, kInputs = 2;
  const S* x;
  const S* dy;
  ColVals<S> gamma;
  const A* rstd;
  S* dx;
  __device__ const S* input(int i) const { return i == 0 ? x : dy; }
  __device__ static A pad(int) { return A(0); }
  __device__ A chunk_stat(int, const ChunkRegs<A>& r, const A*, int64_t row, int64_t n,
                          int64_t i0) const {
    const A s = rstd[row];
    vec4_t<A> gm[8];
#pragma unroll
    for (int t = 0; t < 8; ++t) gm[t] = col4(gamma, elem(i0, t), n);
    return chunk_sum_of([&](int t, int q) {
      const A xh = xmul(comp(r.in[0][t], q), s);
      const A g = xmul(comp(r.in[1][t], q), comp(gm[t], q));
      return xmul(g, xh);
    });
  }
  __device__ void apply(ChunkRegs<A>& r, const A* tot, int64_t row, int64_t n, int64_t i0,
                        vec4_t<A>* out) const {
    const A s = rstd[row];
    const A c = xdiv(tot[0], static_cast<A>(n));
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const vec4_t<A> gm = col4(gamma, elem(i0, t), n);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const A xh = xmul(comp(r.in[0][t], q), s);
        const A g = xmul(comp(r.in[1][t], q), comp(gm, q));
        comp(out[t], q) = xmul(xsub(g, xmul(xh, c)), s);
      }
    }
  }
  // colsum stage 1 terms of step t (3.4, 3.5): dgamma += dy * xh.
  __device__ void col_terms(const ChunkRegs<A>& r, int64_t row, int t, vec4_t<A>& pg,
                            vec4_t<A>&) const {
    const A s = rstd[row];
#pragma unroll
    for (int q = 0; q < 4; ++q)
      comp(pg, q) = xadd(comp(pg, q), xmul(comp(r.in[1][t], q), xmul(comp(r.in[0][t], q), s)));
  }
  __device__ S* output() const { return dx; }
  __device__ void row_out(int64_t, const A*, int64_t) const {}
};

template <class S>
xhal_status_t forward_as(Device* d, const xhal_plugin_tensor_t* x,
                         const xhal_plugin_tensor_t* gamma, float eps,
                         const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* rstd) {
  auto [rows, n] = shape_of(x);
  using A = acc_t<S>;
  RmsFwd<S> b{tensor_as<S>(x), col_vals<S>(gamma), static_cast<A>(eps), tensor_as<S>(y),
              tensor_as<A>(rstd)};
  return run_rows(d, b, rows, n, units_aligned(b.x, b.y), "rms_norm_forward");
}

template <class S>
xhal_status_t backward_as(Device* d, const xhal_plugin_tensor_t* x,
                          const xhal_plugin_tensor_t* gamma, const xhal_plugin_tensor_t* rstd,
                          const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx,
                          const xhal_plugin_tensor_t* dgamma) {
  auto [rows, n] = shape_of(x);
  RmsBwd<S> b{tensor_as<S>(x), tensor_as<S>(dy), col_vals<S>(gamma), tensor_as<acc_t<S>>(rstd),
              tensor_as<S>(dx)};
  const bool vec = units_aligned(b.x, b.dy, b.dx);
  void* dg = dgamma ? tensor_ptr(dgamma) : nullptr;
  const xhal_dtype_t g_dtype = gamma->dtype;
  // Fused: a row's dy is in registers before its dx is written (dx == dy).
  xhal_status_t fst;
  if (dg && try_fused_norm_bwd(d, b, rows, n, vec, dg, nullptr, g_dtype, &fst)) return fst;
  // dgamma reads dy, so it runs before dx may overwrite dy (dx == dy allowed).
  if (dg) {
    xhal_status_t st =
        colsums(d, false, b.x, b.dy, x->dtype, nullptr, b.rstd, rows, n, dg, nullptr, g_dtype);
    if (st != XHAL_OK) return st;
  }
  return run_rows(d, b, rows, n, vec, "rms_norm_backward");
}

}  // namespace

xhal_status_t rms_norm_forward(void* device, const xhal_plugin_tensor_t* x,
                               const xhal_plugin_tensor_t* gamma, float eps,
                               const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* rstd) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  return with_storage(x,
                      [&](auto s) { return forward_as<decltype(s)>(d, x, gamma, eps, y, rstd); });
}

xhal_status_t rms_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                const xhal_plugin_tensor_t* gamma, const xhal_plugin_tensor_t* rstd,
                                const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx,
                                const xhal_plugin_tensor_t* dgamma) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  return with_storage(
      x, [&](auto s) { return backward_as<decltype(s)>(d, x, gamma, rstd, dy, dx, dgamma); });
}

}  // namespace xhal::gpu
