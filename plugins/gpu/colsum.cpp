// dgamma / dbeta in two stages after the row kernel (colsum.h). The
// norm backwards take this path for fewer rows than
// norm_backward.fused_from_rows, or rows longer than one block.
#include "colsum.h"

#include "narrow_device.h"
#include "tree_device.h"

namespace xhal::gpu {
namespace {

// Stage 1: p[b][j] over rows 32b..32b+31 in order; stage 2: tree over b.
// A is the compute type (f32, or f64 for f64 x).
template <bool kLayerNorm, class S, class A = acc_t<S>>
__global__ void colsum_stage1(const S* x, const S* dy, const A* mean, const A* rstd, int64_t rows,
                              int64_t n, int64_t nb, A* pg, A* pb) {
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < nb * n;
       it += int64_t{gridDim.x} * blockDim.x) {
    const int64_t b = it / n, j = it % n;
    A sg = A(0), sb = A(0);
    const int64_t end = (b + 1) * 32 < rows ? (b + 1) * 32 : rows;
#pragma unroll 8
    for (int64_t r = b * 32; r < end; ++r) {
      const A xv = widen(x[r * n + j]), g = widen(dy[r * n + j]);
      const A xh = kLayerNorm ? xmul(xsub(xv, mean[r]), rstd[r]) : xmul(xv, rstd[r]);
      sg = xadd(sg, xmul(g, xh));
      if (kLayerNorm) sb = xadd(sb, g);
    }
    pg[it] = sg;
    if (kLayerNorm) pb[it] = sb;
  }
}

// One warp per column: lanes tree aligned runs of block partials, then the
// warp tree (3.1); 32 times the parallelism of a thread per column.
template <class G, class A = acc_t<G>>
__global__ void colsum_stage2(const A* p, int64_t nb, int64_t n, G* out) {
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  for (int64_t j = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32; j < n; j += warps) {
    const A v = warp_tree_of<SumOpT<A>>([&](int64_t b) { return p[b * n + j]; }, nb);
    if ((threadIdx.x & 31) == 0) out[j] = to_storage<G>(v);
  }
}

// Stage 2 by 32 columns a block, lane j for column j0 + j, so every load
// of a warp is one coalesced row of partials (colsum_stage2's lanes read 32
// different rows, one sector each, and its serial trees waited on every
// load; this form took 5-6 us off a 0.23 ms RMSNorm backward and 34-35 off
// LayerNorm's at 64 x 262144, H200, docs/performance.md). Warp w trees
// the aligned groups w, w + warps, ... of 32 partials in registers (each a
// subtree of 3.1's tree), then warp 0 trees the group values: the same bits
// as colsum_stage2 (both pad with +0, which leaves a partial unchanged: a
// sum started from +0 is never -0). Up to kGroups<A> groups (nb <= 8,192
// for f32, 4,096 for f64: the group values' shared memory).
template <class A>
constexpr int64_t kGroups = 32768 / (32 * sizeof(A));

template <class G, class A = acc_t<G>>
__global__ void __launch_bounds__(512)
    colsum_stage2_columns(const A* p, int64_t nb, int64_t n, G* out) {
  __shared__ A gv[kGroups<A>][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int64_t j = int64_t{blockIdx.x} * 32 + lane, groups = (nb + 31) / 32;
  const A* pj = p + (j < n ? j : 0);
  for (int64_t g = warp; g < groups; g += warps) {
    // Unconditional loads (of row 0 where out of range), so that all 32
    // are in flight before the first add.
    A v[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const int64_t b = g * 32 + i;
      const bool in = j < n && b < nb;
      const A t = pj[(in ? b : 0) * n];
      v[i] = in ? t : A(0);
    }
#pragma unroll
    for (int s = 1; s < 32; s <<= 1)
#pragma unroll
      for (int i = 0; i < 32; i += 2 * s) v[i] = xadd(v[i], v[i + s]);
    gv[g][lane] = v[0];
  }
  __syncthreads();
  if (warp == 0 && j < n) {
    int64_t span = 1;
    while (span < groups) span <<= 1;
    out[j] = to_storage<G>(
        serial_tree<SumOpT<A>>([&](int64_t g) { return gv[g][lane]; }, 0, span, groups));
  }
}

template <class G>
void stage2(Device* d, const acc_t<G>* p, int64_t nb, int64_t n, void* out) {
  const int64_t groups = (nb + 31) / 32;
  if (groups <= kGroups<acc_t<G>> && (n + 31) / 32 <= int64_t{0x7fffffff}) {
    const int warps = groups < 16 ? static_cast<int>(groups) : 16;
    colsum_stage2_columns<G><<<static_cast<unsigned>((n + 31) / 32), warps * 32, 0, d->stream>>>(
        p, nb, n, static_cast<G*>(out));
    return;
  }
  colsum_stage2<G><<<grid_for(n * 32, 256), 256, 0, d->stream>>>(p, nb, n, static_cast<G*>(out));
}

template <class S, class A = acc_t<S>>
void stage1(Device* d, bool layer_norm, const void* x, const void* dy, const void* mean,
            const void* rstd, int64_t rows, int64_t n, int64_t nb, A* pg, A* pb) {
  const auto* xs = static_cast<const S*>(x);
  const auto* dys = static_cast<const S*>(dy);
  const auto* mu = static_cast<const A*>(mean);
  const auto* rs = static_cast<const A*>(rstd);
  if (layer_norm)
    colsum_stage1<true, S>
        <<<grid_for(nb * n, 256), 256, 0, d->stream>>>(xs, dys, mu, rs, rows, n, nb, pg, pb);
  else
    colsum_stage1<false, S>
        <<<grid_for(nb * n, 256), 256, 0, d->stream>>>(xs, dys, mu, rs, rows, n, nb, pg, pb);
}

// Both stages in the compute type A; dgamma/dbeta in out_dtype.
template <class S, class A = acc_t<S>>
void both_stages(Device* d, bool layer_norm, const void* x, const void* dy, const void* mean,
                 const void* rstd, int64_t rows, int64_t n, int64_t nb, A* pg, A* pb, void* dgamma,
                 void* dbeta, xhal_dtype_t out_dtype) {
  stage1<S>(d, layer_norm, x, dy, mean, rstd, rows, n, nb, pg, pb);
  if constexpr (std::is_same_v<A, double>) {
    stage2<double>(d, pg, nb, n, dgamma);
    if (layer_norm && dbeta) stage2<double>(d, pb, nb, n, dbeta);
  } else {
    colsum_tree(d, pg, nb, n, dgamma, out_dtype);
    if (layer_norm && dbeta) colsum_tree(d, pb, nb, n, dbeta, out_dtype);
  }
}

}  // namespace

void colsum_tree(Device* d, const float* p, int64_t nb, int64_t n, void* out,
                 xhal_dtype_t out_dtype) {
  switch (out_dtype) {
    case XHAL_DTYPE_BF16:
      return stage2<Bf16>(d, p, nb, n, out);
    case XHAL_DTYPE_F16:
      return stage2<F16>(d, p, nb, n, out);
    default:  // f32 (f64 sums never come here: both_stages)
      return stage2<float>(d, p, nb, n, out);
  }
}

xhal_status_t colsums(Device* d, bool layer_norm, const void* x, const void* dy,
                      xhal_dtype_t x_dtype, const void* mean, const void* rstd, int64_t rows,
                      int64_t n, void* dgamma, void* dbeta, xhal_dtype_t out_dtype) {
  if (n == 0) return XHAL_OK;
  if (rows == 0) {  // empty sums are +0 (all-zero bits in every dtype)
    const size_t bytes = static_cast<size_t>(n) * dtype_size(out_dtype);
    gpuMemsetAsync(dgamma, 0, bytes, d->stream);
    if (dbeta) gpuMemsetAsync(dbeta, 0, bytes, d->stream);
    return check_launch(d, "colsum", 0);
  }
  const int64_t nb = (rows + 31) / 32;
  const size_t acc = x_dtype == XHAL_DTYPE_F64 ? sizeof(double) : sizeof(float);
  void* ws = nullptr;
  xhal_status_t st = scratch(d, acc * nb * n * (layer_norm ? 2 : 1), &ws);
  if (st != XHAL_OK) return st;
  float* pg = static_cast<float*>(ws);
  float* pb = pg + nb * n;
  double* pg64 = static_cast<double*>(ws);
  double* pb64 = pg64 + nb * n;
  switch (x_dtype) {
    case XHAL_DTYPE_F64:
      both_stages<double>(d, layer_norm, x, dy, mean, rstd, rows, n, nb, pg64, pb64, dgamma, dbeta,
                          out_dtype);
      break;
    case XHAL_DTYPE_BF16:
      both_stages<Bf16>(d, layer_norm, x, dy, mean, rstd, rows, n, nb, pg, pb, dgamma, dbeta,
                        out_dtype);
      break;
    case XHAL_DTYPE_F16:
      both_stages<F16>(d, layer_norm, x, dy, mean, rstd, rows, n, nb, pg, pb, dgamma, dbeta,
                       out_dtype);
      break;
    default:
      both_stages<float>(d, layer_norm, x, dy, mean, rstd, rows, n, nb, pg, pb, dgamma, dbeta,
                         out_dtype);
      break;
  }
  return check_launch(d, "colsum", layer_norm && dbeta ? 3 : 2);
}

}  // namespace xhal::gpu
