#version 460
// Gradient of A's values after the backward solve: for entry e = (r, cidx)
// of A, (i, j) = (r, cidx) for op(A) = A and (cidx, r) for A^T;
// ga[e] = -segsum_c(gb[i,c] * x[j,c]); a unit diagonal entry gets +0.
// F64: x, gb, ga and the sums in binary64 (REAL, common.glsl).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "narrow.glsl"
#include "sparse.glsl"

layout(push_constant) uniform Params {
  uint64_t row_idx, col;
  uint64_t x, gb, ga;
  uint64_t nnz, k;
  uint transposed, unit_diag;
} pc;

void main() {
  for (uint64_t e = global_id(); e < pc.nnz; e += global_threads()) {
    uint64_t r = uint64_t(csr_at(pc.row_idx, e)), cidx = uint64_t(csr_at(pc.col, e));
    uint64_t i = pc.transposed != 0u ? cidx : r, j = pc.transposed != 0u ? r : cidx;
    REAL g;
    if (pc.unit_diag != 0u && cidx == r) {
      g = REAL(0.0);
    } else if (pc.k <= 32ul) {
      // One chunk: the stack would hold its sum alone (no per-invocation
      // stack array touched).
      REAL s = REAL(0.0);
      for (uint64_t c = 0ul; c < pc.k; ++c) s = xadd(s, xmul(lde(pc.gb, i * pc.k + c), lde(pc.x, j * pc.k + c)));
      g = xneg(s);
    } else {
      st_reset();
      for (uint64_t from = 0ul; from < pc.k; from += 32ul) {
        REAL s = REAL(0.0);
        uint64_t to = min(from + 32ul, pc.k);
        for (uint64_t c = from; c < to; ++c) s = xadd(s, xmul(lde(pc.gb, i * pc.k + c), lde(pc.x, j * pc.k + c)));
        st_push(s);
      }
      g = xneg(st_finish());
    }
    ste(pc.ga, e, g);
  }
}
