// softmax forward and backward (docs/semantics.md 3.3, "softmax_forward /
// softmax_backward") as bodies of the generic row kernel (row_kernel.h).
#include "row_kernel.h"

namespace xhal::gpu {
namespace {

// Softmax forward, 3.3 as amended: one xhal_exp per element. chunk_stat
// turns the chunk's x into e[i] = xhal_exp(x[i] - m[c]) in registers (all +0
// when m[c] = -inf) and keeps m[c]; apply writes y[i] = e[i] * r[c] with
// r[c] = xhal_exp(m[c] - M) * (1 / S).
template <class S>
struct SoftmaxFwd {
  using Op = MaxSumOp;
  static constexpr int kPhases = 1, kInputs = 1;
  static constexpr bool kStatInApply = true;  // split form: the apply pass rebuilds e
  const S* x;
  S* y;
  __device__ const S* input(int) const { return x; }
  __device__ static float pad(int) { return neg_inf(); }
  __device__ MaxSum chunk_stat(int, ChunkRegs& r, const MaxSum*, int64_t, int64_t, int64_t) const {
    float4(&v)[8] = r.in[0];
    // fmaxf drops NaN; a NaN element still turns e and s into NaN through
    // xhal_exp(NaN - m), except when m would be -inf, checked below.
    float m = neg_inf();
#pragma unroll
    for (int t = 0; t < 8; ++t) m = fmaxf(fmaxf(m, fmaxf(v[t].x, v[t].y)), fmaxf(v[t].z, v[t].w));
    m = warp_max(m);
    if (m == neg_inf()) {
      bool nan = false;
#pragma unroll
      for (int t = 0; t < 8; ++t)
        nan |= (v[t].x != v[t].x) | (v[t].y != v[t].y) | (v[t].z != v[t].z) | (v[t].w != v[t].w);
      if (warp_max(nan ? 1.0f : 0.0f) != 0.0f) m = __int_as_float(0x7fffffff);
    }
    r.chunk_max = m;
    const bool all_neg_inf = m == neg_inf();
    float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float e = all_neg_inf ? 0.0f : canonical_exp(xsub(comp(v[t], q), m));
        comp(v[t], q) = e;
        a[q] = xadd(a[q], e);  // padding: e = xhal_exp(-inf) = +0 adds nothing
      }
    return {m, warp_tree_sum(xadd(xadd(a[0], a[1]), xadd(a[2], a[3])))};
  }
  __device__ void apply(ChunkRegs& r, const MaxSum* tot, int64_t, int64_t, int64_t,
                        float4* out) const {
    const float rc = xmul(canonical_exp(xsub(r.chunk_max, tot[0].m)), xdiv(1.0f, tot[0].s));
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int q = 0; q < 4; ++q) comp(out[t], q) = xmul(comp(r.in[0][t], q), rc);
  }
  __device__ S* output() const { return y; }
  __device__ void row_out(int64_t, const MaxSum*, int64_t) const {}
};

template <class S>
struct SoftmaxBwd {
  using Op = SumOp;
  static constexpr int kPhases = 1, kInputs = 2;
  const S* y;
  const S* dy;
  S* dx;
  __device__ const S* input(int i) const { return i == 0 ? y : dy; }
  __device__ static float pad(int) { return 0.0f; }
  __device__ float chunk_stat(int, const ChunkRegs& r, const float*, int64_t, int64_t,
                              int64_t) const {
    return chunk_sum_of(
        [&](int t, int q) { return xmul(comp(r.in[0][t], q), comp(r.in[1][t], q)); });
  }
  __device__ void apply(ChunkRegs& r, const float* tot, int64_t, int64_t, int64_t,
                        float4* out) const {
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int q = 0; q < 4; ++q)
        comp(out[t], q) = xmul(comp(r.in[0][t], q), xsub(comp(r.in[1][t], q), tot[0]));
  }
  __device__ S* output() const { return dx; }
  __device__ void row_out(int64_t, const float*, int64_t) const {}
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
  switch (x->dtype) {
    case XHAL_DTYPE_BF16:
      return forward_as<Bf16>(d, x, y);
    case XHAL_DTYPE_F16:
      return forward_as<F16>(d, x, y);
    default:
      return forward_as<float>(d, x, y);
  }
}

xhal_status_t softmax_backward(void* device, const xhal_plugin_tensor_t* y,
                               const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  switch (y->dtype) {
    case XHAL_DTYPE_BF16:
      return backward_as<Bf16>(d, y, dy, dx);
    case XHAL_DTYPE_F16:
      return backward_as<F16>(d, y, dy, dx);
    default:
      return backward_as<float>(d, y, dy, dx);
  }
}

}  // namespace xhal::gpu
