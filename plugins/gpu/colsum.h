// dgamma / dbeta of the norm backwards (docs/semantics.md 3.5): stage 1 sums
// each column over blocks of 32 rows in order, stage 2 trees the block
// partials per column. The fused path (norm_backward.h) does stage 1 inside
// the row kernel and calls colsum_tree for stage 2.
#pragma once

#include <cstdint>

#include "gpu_plugin.h"

namespace xhal::gpu {

// Both stages after the row kernel (x and dy read again): dgamma from
// dy * xh, and with layer_norm dbeta from dy. dgamma may equal dbeta (only
// dbeta wanted: the dbeta tree runs last). x and dy are of x_dtype (f32,
// bf16 or f16, widened on load); the sums are f32 and dgamma/dbeta are
// written in out_dtype (f32, or x's narrow dtype: one rounding, 7.2). For
// f64 x, mean, rstd, the sums and dgamma/dbeta are all f64 (7.3).
xhal_status_t colsums(Device* d, bool layer_norm, const void* x, const void* dy,
                      xhal_dtype_t x_dtype, const void* mean, const void* rstd, int64_t rows,
                      int64_t n, void* dgamma, void* dbeta, xhal_dtype_t out_dtype);

// Stage 2 alone: out[j] = tree over b of p[b * n + j], b < nb, written in
// out_dtype (one launch, not counted here).
void colsum_tree(Device* d, const float* p, int64_t nb, int64_t n, void* out,
                 xhal_dtype_t out_dtype);

}  // namespace xhal::gpu
