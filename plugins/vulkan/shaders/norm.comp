#version 460
// RMSNorm (3.4) and LayerNorm (3.6), one workgroup per row (rows.glsl):
// RMS_FWD, RMS_BWD, LN_FWD or LN_BWD. A row of at most CPG chunks (every
// row when the host picks CPG for it, up to 8 chunks = 8192 elements) is
// read once and kept in registers; longer rows are read again per pass.
// dgamma/dbeta are colsum.comp's.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128 * CPG) in;
#include "common.glsl"
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

float v[8];  // x of this invocation's elements in the current group
float w[8];  // dy (backward)

void load_group(uint64_t rx, uint64_t rdy, uint64_t q) {
  [[unroll]] for (uint k = 0u; k < 8u; ++k) {
    uint64_t i = row_index(q, k);
    v[k] = 0.0;
    w[k] = 0.0;
    if (i < pc.n) {
      v[k] = ldf(rx, i);
#if RMS_BWD || LN_BWD
      w[k] = ldf(rdy, i);
#endif
    }
  }
}

void main() {
  uint t = wg_t();
  uint64_t n = pc.n, groups = row_groups(n);
  for (uint64_t row = first_row(); row < pc.rows; row += row_step()) {
    uint64_t rx = pc.x + row * n * 4ul, rdy = pc.dy + row * n * 4ul, ro = pc.out_addr + row * n * 4ul;
#if RMS_FWD
    if (t == 0u) st_reset();
    for (uint64_t q = 0ul; q < groups; ++q) {
      load_group(rx, rdy, q);
      float a = 0.0;
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        if (row_index(q, k) < n) a = xadd(a, xmul(v[k], v[k]));
      float s = wg_group_tree(a);
      if (t == 0u) st_push(s);
    }
    float ss = wg_bcast(t == 0u ? st_finish() : 0.0);
    float rs = xdiv(1.0, xsqrt(xadd(xdiv(ss, pc.nf), pc.eps)));
    if (t == 0u) stf(pc.rstd, row, rs);
    for (uint64_t q = 0ul; q < groups; ++q) {
      if (groups > 1ul) load_group(rx, rdy, q);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint64_t i = row_index(q, k);
        if (i < n) stf(ro, i, xmul(xmul(v[k], rs), ldf(pc.gamma, i)));
      }
    }
#elif LN_FWD
    if (t == 0u) st_reset();
    for (uint64_t q = 0ul; q < groups; ++q) {
      load_group(rx, rdy, q);
      float a = 0.0;
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        if (row_index(q, k) < n) a = xadd(a, v[k]);
      float s = wg_group_tree(a);
      if (t == 0u) st_push(s);
    }
    float mean = xdiv(wg_bcast(t == 0u ? st_finish() : 0.0), pc.nf);
    if (t == 0u) st_reset();
    for (uint64_t q = 0ul; q < groups; ++q) {
      if (groups > 1ul) load_group(rx, rdy, q);
      float a = 0.0;
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        if (row_index(q, k) < n) a = xadd(a, xmul(xsub(v[k], mean), xsub(v[k], mean)));
      float s = wg_group_tree(a);
      if (t == 0u) st_push(s);
    }
    float var = xdiv(wg_bcast(t == 0u ? st_finish() : 0.0), pc.nf);
    float rs = xdiv(1.0, xsqrt(xadd(var, pc.eps)));
    if (t == 0u) {
      stf(pc.mean, row, mean);
      stf(pc.rstd, row, rs);
    }
    for (uint64_t q = 0ul; q < groups; ++q) {
      if (groups > 1ul) load_group(rx, rdy, q);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint64_t i = row_index(q, k);
        if (i < n)
          stf(ro, i, xadd(xmul(xmul(xsub(v[k], mean), rs), ldf(pc.gamma, i)), ldf(pc.beta, i)));
      }
    }
#elif RMS_BWD
    float rs = ldf(pc.rstd, row);
    if (t == 0u) st_reset();
    for (uint64_t q = 0ul; q < groups; ++q) {
      load_group(rx, rdy, q);
      float a = 0.0;
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint64_t i = row_index(q, k);
        if (i < n) a = xadd(a, xmul(xmul(w[k], ldf(pc.gamma, i)), xmul(v[k], rs)));
      }
      float s = wg_group_tree(a);
      if (t == 0u) st_push(s);
    }
    float c = xdiv(wg_bcast(t == 0u ? st_finish() : 0.0), pc.nf);
    for (uint64_t q = 0ul; q < groups; ++q) {
      if (groups > 1ul) load_group(rx, rdy, q);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint64_t i = row_index(q, k);
        if (i < n) {
          float g = xmul(w[k], ldf(pc.gamma, i));
          float xh = xmul(v[k], rs);
          stf(ro, i, xmul(xsub(g, xmul(xh, c)), rs));
        }
      }
    }
#elif LN_BWD
    float mean = ldf(pc.mean, row), rs = ldf(pc.rstd, row);
    float sa = 0.0, sb = 0.0;
    if (t == 0u) st_reset();
    for (uint64_t q = 0ul; q < groups; ++q) {
      load_group(rx, rdy, q);
      float a = 0.0;
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        if (row_index(q, k) < n) a = xadd(a, xmul(w[k], ldf(pc.gamma, row_index(q, k))));
      float s = wg_group_tree(a);
      if (t == 0u) st_push(s);
    }
    sa = wg_bcast(t == 0u ? st_finish() : 0.0);
    if (t == 0u) st_reset();
    for (uint64_t q = 0ul; q < groups; ++q) {
      if (groups > 1ul) load_group(rx, rdy, q);
      float b = 0.0;
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint64_t i = row_index(q, k);
        if (i < n) b = xadd(b, xmul(xmul(w[k], ldf(pc.gamma, i)), xmul(xsub(v[k], mean), rs)));
      }
      float s = wg_group_tree(b);
      if (t == 0u) st_push(s);
    }
    sb = wg_bcast(t == 0u ? st_finish() : 0.0);
    float a = xdiv(sa, pc.nf), b = xdiv(sb, pc.nf);
    for (uint64_t q = 0ul; q < groups; ++q) {
      if (groups > 1ul) load_group(rx, rdy, q);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint64_t i = row_index(q, k);
        if (i < n) {
          float g = xmul(w[k], ldf(pc.gamma, i));
          float xh = xmul(xsub(v[k], mean), rs);
          stf(ro, i, xmul(xsub(xsub(g, a), xmul(xh, b)), rs));
        }
      }
    }
#endif
  }
}
