#version 460
// RMSNorm (3.4) and LayerNorm (3.6), one workgroup per row (rows.glsl):
// RMS_FWD, RMS_BWD, LN_FWD or LN_BWD. A row of at most CPG chunks (every
// row when the host picks CPG for it, up to 8 chunks = 8192 elements) is
// read once and kept in registers; longer rows are read again per pass.
// dgamma/dbeta are colsum.comp's.
// F64 (docs/semantics.md 7.3): x, gamma, beta, dy, the outputs and the
// saved mean/rstd in binary64 (REAL, common.glsl), n as double(n) (exact
// below 2^53), eps widened.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128 * CPG) in;
#include "common.glsl"
#include "narrow.glsl"
#include "rows.glsl"

layout(push_constant) uniform Params {
  uint64_t x;
  uint64_t gamma;
  uint64_t beta;     // LN_FWD
  uint64_t dy;       // backward
  uint64_t out_addr; // y or dx
  uint64_t mean;     // LN: written (forward) or read (backward)
  uint64_t rstd;     // written (forward) or read (backward)
  uint64_t rows;
  uint64_t n;
  float nf;          // (float)n, rounded on the host
  float eps;
} pc;

#ifdef F64
#define NF double(pc.n)
#else
#define NF pc.nf
#endif

REAL v[8];  // x of this invocation's elements in the current group
REAL w[8];  // dy (backward)

void load_group(uint64_t rx, uint64_t rdy, uint64_t q) {
  [[unroll]] for (uint k = 0u; k < 8u; ++k) {
    uint64_t i = row_index(q, k);
    v[k] = REAL(0.0);
    w[k] = REAL(0.0);
    if (i < pc.n) {
      v[k] = lde(rx, i);
#if RMS_BWD || LN_BWD
      w[k] = lde(rdy, i);
#endif
    }
  }
}

void main() {
  uint t = wg_t();
  uint64_t n = pc.n, groups = row_groups(n);
  for (uint64_t row = first_row(); row < pc.rows; row += row_step()) {
    uint64_t rx = pc.x + row * n * REAL_BYTES, rdy = pc.dy + row * n * REAL_BYTES, ro = pc.out_addr + row * n * REAL_BYTES;
#if RMS_FWD
    if (t == 0u) st_reset();
    for (uint64_t q = 0ul; q < groups; ++q) {
      load_group(rx, rdy, q);
      REAL a = REAL(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        if (row_index(q, k) < n) a = xadd(a, xmul(v[k], v[k]));
      REAL s = wg_group_tree(a);
      if (t == 0u) st_push(s);
    }
    REAL ss = wg_bcast(t == 0u ? st_finish() : REAL(0.0));
    REAL rs = xdiv(REAL(1.0), xsqrt(xadd(xdiv(ss, NF), REAL(pc.eps))));
    if (t == 0u) ste(pc.rstd, row, rs);
    for (uint64_t q = 0ul; q < groups; ++q) {
      if (groups > 1ul) load_group(rx, rdy, q);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint64_t i = row_index(q, k);
        if (i < n) ste(ro, i, xmul(xmul(v[k], rs), lde(pc.gamma, i)));
      }
    }
#elif LN_FWD
    if (t == 0u) st_reset();
    for (uint64_t q = 0ul; q < groups; ++q) {
      load_group(rx, rdy, q);
      REAL a = REAL(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        if (row_index(q, k) < n) a = xadd(a, v[k]);
      REAL s = wg_group_tree(a);
      if (t == 0u) st_push(s);
    }
    REAL mean = xdiv(wg_bcast(t == 0u ? st_finish() : REAL(0.0)), NF);
    if (t == 0u) st_reset();
    for (uint64_t q = 0ul; q < groups; ++q) {
      if (groups > 1ul) load_group(rx, rdy, q);
      REAL a = REAL(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        if (row_index(q, k) < n) a = xadd(a, xmul(xsub(v[k], mean), xsub(v[k], mean)));
      REAL s = wg_group_tree(a);
      if (t == 0u) st_push(s);
    }
    REAL var = xdiv(wg_bcast(t == 0u ? st_finish() : REAL(0.0)), NF);
    REAL rs = xdiv(REAL(1.0), xsqrt(xadd(var, REAL(pc.eps))));
    if (t == 0u) {
      ste(pc.mean, row, mean);
      ste(pc.rstd, row, rs);
    }
    for (uint64_t q = 0ul; q < groups; ++q) {
      if (groups > 1ul) load_group(rx, rdy, q);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint64_t i = row_index(q, k);
        if (i < n)
          ste(ro, i, xadd(xmul(xmul(xsub(v[k], mean), rs), lde(pc.gamma, i)), lde(pc.beta, i)));
      }
    }
#elif RMS_BWD
    REAL rs = lde(pc.rstd, row);
    if (t == 0u) st_reset();
    for (uint64_t q = 0ul; q < groups; ++q) {
      load_group(rx, rdy, q);
      REAL a = REAL(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint64_t i = row_index(q, k);
        if (i < n) a = xadd(a, xmul(xmul(w[k], lde(pc.gamma, i)), xmul(v[k], rs)));
      }
      REAL s = wg_group_tree(a);
      if (t == 0u) st_push(s);
    }
    REAL c = xdiv(wg_bcast(t == 0u ? st_finish() : REAL(0.0)), NF);
    for (uint64_t q = 0ul; q < groups; ++q) {
      if (groups > 1ul) load_group(rx, rdy, q);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint64_t i = row_index(q, k);
        if (i < n) {
          REAL g = xmul(w[k], lde(pc.gamma, i));
          REAL xh = xmul(v[k], rs);
          ste(ro, i, xmul(xsub(g, xmul(xh, c)), rs));
        }
      }
    }
#elif LN_BWD
    REAL mean = lde(pc.mean, row), rs = lde(pc.rstd, row);
    REAL sa = REAL(0.0), sb = REAL(0.0);
    if (t == 0u) st_reset();
    for (uint64_t q = 0ul; q < groups; ++q) {
      load_group(rx, rdy, q);
      REAL a = REAL(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        if (row_index(q, k) < n) a = xadd(a, xmul(w[k], lde(pc.gamma, row_index(q, k))));
      REAL s = wg_group_tree(a);
      if (t == 0u) st_push(s);
    }
    sa = wg_bcast(t == 0u ? st_finish() : REAL(0.0));
    if (t == 0u) st_reset();
    for (uint64_t q = 0ul; q < groups; ++q) {
      if (groups > 1ul) load_group(rx, rdy, q);
      REAL b = REAL(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint64_t i = row_index(q, k);
        if (i < n) b = xadd(b, xmul(xmul(w[k], lde(pc.gamma, i)), xmul(xsub(v[k], mean), rs)));
      }
      REAL s = wg_group_tree(b);
      if (t == 0u) st_push(s);
    }
    sb = wg_bcast(t == 0u ? st_finish() : REAL(0.0));
    REAL a = xdiv(sa, NF), b = xdiv(sb, NF);
    for (uint64_t q = 0ul; q < groups; ++q) {
      if (groups > 1ul) load_group(rx, rdy, q);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint64_t i = row_index(q, k);
        if (i < n) {
          REAL g = xmul(w[k], lde(pc.gamma, i));
          REAL xh = xmul(xsub(v[k], mean), rs);
          ste(ro, i, xmul(xsub(xsub(g, a), xmul(xh, b)), rs));
        }
      }
    }
#endif
  }
}
