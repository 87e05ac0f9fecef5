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

template <class G>
void stage2(Device* d, const acc_t<G>* p, int64_t nb, int64_t n, void* out) {
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
