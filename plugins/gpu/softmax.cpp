// softmax forward and backward (docs/semantics.md 3.3, "softmax_forward /
// softmax_backward") as bodies of the generic row kernel (row_kernel.h).
#include "row_kernel.h"

namespace xhal::gpu {
namespace {

// Softmax forward, 3.3 as amended: one xhal_exp per element. chunk_stat
// turns the chunk's x into e[i] = xhal_exp(x[i] - m[c]) in registers (all +0
// when m[c] = -inf) and keeps m[c]; apply writes y[i] = e[i] * r[c] with
// r[c] = xhal_exp(m[c] - M) * (1 / S). In f64 (7.3) the same in binary64
// with xhal_exp64.
__device__ __forceinline__ float any_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double any_max(double a, double b) { return fmax(a, b); }

template <class S>
struct SoftmaxFwd {
  using A = acc_t<S>;
  using Op = MaxSumOpT<A>;
  using Stat = MaxSumT<A>;
  static constexpr int kPhases = 1, kInputs = 1;
  static constexpr bool kStatInApply = true;  // split form: the apply pass rebuilds e
  // 48 registers, no spills (f32 compute): 5 resident blocks an SM, not 4.
  static constexpr int kResidentBlocks = sizeof(A) == 4 ? 5 : 0;
  const S* x;
  S* y;
  __device__ const S* input(int) const { return x; }
  __device__ static A pad(int) { return neg_inf<A>(); }
  __device__ Stat chunk_stat(int, ChunkRegs<A>& r, const Stat*, int64_t, int64_t, int64_t) const {
    vec4_t<A>(&v)[8] = r.in[0];
    // fmax drops NaN; a NaN element still turns e and s into NaN through
    // xhal_exp(NaN - m), except when m would be -inf, checked below.
    A m = neg_inf<A>();
#pragma unroll
    for (int t = 0; t < 8; ++t)
      m = any_max(any_max(m, any_max(v[t].x, v[t].y)), any_max(v[t].z, v[t].w));
    m = warp_max(m);
    if (m == neg_inf<A>()) {
      bool nan = false;
#pragma unroll
      for (int t = 0; t < 8; ++t)
        nan |= (v[t].x != v[t].x) | (v[t].y != v[t].y) | (v[t].z != v[t].z) | (v[t].w != v[t].w);
      if (warp_max(nan ? 1.0f : 0.0f) != 0.0f) m = static_cast<A>(__int_as_float(0x7fffffff));
    }
    r.chunk_max = m;
    const bool all_neg_inf = m == neg_inf<A>();
    A a[4] = {A(0), A(0), A(0), A(0)};
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const A e = all_neg_inf ? A(0) : canonical_exp(xsub(comp(v[t], q), m));
        comp(v[t], q) = e;
        a[q] = xadd(a[q], e);  // padding: e = xhal_exp(-inf) = +0 adds nothing
      }
    return {m, warp_tree_sum(xadd(xadd(a[0], a[1]), xadd(a[2], a[3])))};
  }
  __device__ void apply(ChunkRegs<A>& r, const Stat* tot, int64_t, int64_t, int64_t,
                        vec4_t<A>* out) const {
    const A rc = xmul(canonical_exp(xsub(r.chunk_max, tot[0].m)), xdiv(A(1), tot[0].s));
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int q = 0; q < 4; ++q) comp(out[t], q) = xmul(comp(r.in[0][t], q), rc);
  }
  __device__ S* output() const { return y; }
  __device__ void row_out(int64_t, const Stat*, int64_t) const {}
};

template <class S>
struct SoftmaxBwd {
  using A = acc_t<S>;
  using Op = SumOpT<A>;
  static constexpr int kPhases = 1, kInputs = 2;
  const S* y;
  const S* dy;
  S* dx;
  __device__ const S* input(int i) const { return i == 0 ? y : dy; }
  __device__ static A pad(int) { return A(0); }
  __device__ A chunk_stat(int, const ChunkRegs<A>& r, const A*, int64_t, int64_t, int64_t) const {
    return chunk_sum_of(
        [&](int t, int q) { return xmul(comp(r.in[0][t], q), comp(r.in[1][t], q)); });
  }
  __device__ void apply(ChunkRegs<A>& r, const A* tot, int64_t, int64_t, int64_t,
                        vec4_t<A>* out) const {
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int q = 0; q < 4; ++q)
        comp(out[t], q) = xmul(comp(r.in[0][t], q), xsub(comp(r.in[1][t], q), tot[0]));
  }
  __device__ S* output() const { return dx; }
  __device__ void row_out(int64_t, const A*, int64_t) const {}
};

template <class S>
xhal_status_t forward_as(Device* d, const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* y) {
  auto [rows, n] = shape_of(x);
  SoftmaxFwd<S> b{tensor_as<S>(x), tensor_as<S>(y)};
  return run_rows(d, b, rows, n, units_aligned(b.x, b.y), "softmax_forward");
}

template <class S>
xhal_status_t backward_as(Device* d, const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* dy,
                          const xhal_plugin_tensor_t* dx) {
  auto [rows, n] = shape_of(y);
  SoftmaxBwd<S> b{tensor_as<S>(y), tensor_as<S>(dy), tensor_as<S>(dx)};
  return run_rows(d, b, rows, n, units_aligned(b.y, b.dy, b.dx), "softmax_backward");
}

}  // namespace

xhal_status_t softmax_forward(void* device, const xhal_plugin_tensor_t* x,
                              const xhal_plugin_tensor_t* y) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  return with_storage(x, [&](auto s) { return forward_as<decltype(s)>(d, x, y); });
}

xhal_status_t softmax_backward(void* device, const xhal_plugin_tensor_t* y,
                               const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  return with_storage(y, [&](auto s) { return backward_as<decltype(s)>(d, y, dy, dx); });
}

}  // namespace xhal::gpu
