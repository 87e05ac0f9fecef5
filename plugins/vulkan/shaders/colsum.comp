#version 460
// dgamma / dbeta (docs/semantics.md 3.5), two stages, no atomic sums (a
// narrow dgamma/dbeta element is stored with atomics on its half-word only).
// STAGE 1: per block b of 32 rows and column j, p[b][j] = +0 then + term(r, j)
//   for r ascending (LN: also the dbeta terms into q[b][j]).
//   x and dy in the storage type (STORAGE_F16/BF16: widened on load).
// STAGE 2: per column, the pairwise tree over the blocks' partials, in
//   passes: each pass stacks groups of 64 consecutive partials (common.glsl)
//   into one (an aligned subtree of 3.1; the last group padded with +0,
//   which these sums, never -0, are unchanged by) until one is left, which
//   the last pass writes to dgamma/dbeta (narrowed once when STORAGE_* is
//   defined: the variant for a gamma in x's narrow dtype). Short serial chains, and no
//   invocation loops long (lavapipe's loop limiter).
// F64 (docs/semantics.md 7.3): x, dy, mean, rstd, the partials and
// dgamma/dbeta in binary64 (REAL; ldr/str are REAL loads and stores, f32 in
// the other variants: mean, rstd and the partials stay f32 for narrow x).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "narrow.glsl"

layout(push_constant) uniform Params {
  uint64_t x;
  uint64_t dy;
  uint64_t mean;     // LN only
  uint64_t rstd;
  uint64_t p;        // [blocks, n] scratch
  uint64_t q;        // [blocks, n] scratch (LN dbeta)
  uint64_t dgamma;
  uint64_t dbeta;    // LN only
  uint64_t rows;
  uint64_t n;
  uint64_t blocks;   // stage 2: partials in p (and q) this pass reads
  uint64_t p_out;    // stage 2: where this pass writes (0: dgamma/dbeta)
  uint64_t q_out;
} pc;

void main() {
#if STAGE == 1
  uint64_t items = pc.blocks * pc.n;
  for (uint64_t g = global_id(); g < items; g += global_threads()) {
    uint64_t b = g / pc.n, j = g - b * pc.n;
    uint64_t end = min(32ul * b + 32ul, pc.rows);
    REAL p = REAL(0.0), q = REAL(0.0);
    for (uint64_t r = 32ul * b; r < end; ++r) {
      uint64_t at = r * pc.n + j;
      REAL dy = lde(pc.dy, at);
#if LN
      REAL xh = xmul(xsub(lde(pc.x, at), ldr(pc.mean, r)), ldr(pc.rstd, r));
      q = xadd(q, dy);
#else
      REAL xh = xmul(lde(pc.x, at), ldr(pc.rstd, r));
#endif
      p = xadd(p, xmul(dy, xh));
    }
    str(pc.p, g, p);
#if LN
    str(pc.q, g, q);
#endif
  }
#else
  uint64_t groups = (pc.blocks + 63ul) / 64ul;
  uint64_t items = groups * pc.n;
  for (uint64_t g = global_id(); g < items; g += global_threads()) {
    uint64_t grp = g / pc.n, j = g - grp * pc.n;
    uint64_t end = min(64ul * grp + 64ul, pc.blocks);
    bool last = groups == 1ul;
    st_reset();
    for (uint64_t b = 64ul * grp; b < end; ++b) st_push(ldr(pc.p, b * pc.n + j));
    if (last) ste(pc.dgamma, j, st_finish());
    else str(pc.p_out, g, st_finish());
#if LN
    st_reset();
    for (uint64_t b = 64ul * grp; b < end; ++b) st_push(ldr(pc.q, b * pc.n + j));
    if (last) ste(pc.dbeta, j, st_finish());
    else str(pc.q_out, g, st_finish());
#endif
  }
#endif
}
