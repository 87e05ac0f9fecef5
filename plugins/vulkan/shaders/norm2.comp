#version 460
// RMSNorm (3.4) and LayerNorm (3.6), rows=v2: one workgroup of CPG chunks
// per row, four canonical lanes per invocation (rows2.glsl): RMS_FWD,
// RMS_BWD, LN_FWD or LN_BWD. A row of one group (up to 16 chunks = 16,384
// elements) is read once and kept in registers; longer rows are read again
// per pass. dgamma/dbeta are colsum.comp's.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 32 * CPG) in;
#include "common.glsl"
#include "rows2.glsl"

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
  uint vec;          // 1: every row and gamma/beta 16-byte aligned, n % 4 == 0
} pc;

vec4 v[8];  // x of this invocation's elements in the current group
vec4 w[8];  // dy (backward)

void load_group(uint64_t rx, uint64_t rdy, uint64_t cb, uint lim) {
  bool vec = pc.vec != 0u;
  [[unroll]] for (uint k = 0u; k < 8u; ++k) {
    v[k] = ld4(rx + cb * 4ul, r_off(k), lim, vec, 0.0);
#if RMS_BWD || LN_BWD
    w[k] = ld4(rdy + cb * 4ul, r_off(k), lim, vec, 0.0);
#endif
  }
}

bool valid(uint k, uint j, uint lim) { return r_off(k) + j < lim; }

void main() {
  uint t = r_t();
  bool vec = pc.vec != 0u;
  uint64_t n = pc.n, groups = r_groups(n);
  bool one = groups == 1ul;
  for (uint64_t row = first_row(); row < pc.rows; row += row_step()) {
    uint64_t rx = pc.x + row * n * 4ul, rdy = pc.dy + row * n * 4ul, ro = pc.out_addr + row * n * 4ul;
#if RMS_FWD
    if (t == 0u) st_reset();
    float ss = 0.0;
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      load_group(rx, rdy, cb, lim);
      vec4 a = vec4(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        [[unroll]] for (uint j = 0u; j < 4u; ++j)
          if (valid(k, j, lim)) a[j] = xadd(a[j], xmul(v[k][j], v[k][j]));
      ss = group_sum(lanes4(a));
      if (!one && t == 0u) st_push(ss);
    }
    if (!one) ss = r_bcast(t == 0u ? st_finish() : 0.0);
    float rs = xdiv(1.0, xsqrt(xadd(xdiv(ss, pc.nf), pc.eps)));
    if (t == 0u) stf(pc.rstd, row, rs);
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      if (!one) load_group(rx, rdy, cb, lim);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        vec4 g = ld4(pc.gamma + cb * 4ul, r_off(k), lim, vec, 0.0);
        vec4 y;
        [[unroll]] for (uint j = 0u; j < 4u; ++j) y[j] = xmul(xmul(v[k][j], rs), g[j]);
        st4(ro + cb * 4ul, r_off(k), lim, vec, y);
      }
    }
#elif LN_FWD
    if (t == 0u) st_reset();
    float sm = 0.0;
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      load_group(rx, rdy, cb, lim);
      vec4 a = vec4(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        [[unroll]] for (uint j = 0u; j < 4u; ++j)
          if (valid(k, j, lim)) a[j] = xadd(a[j], v[k][j]);
      sm = group_sum(lanes4(a));
      if (!one && t == 0u) st_push(sm);
    }
    if (!one) sm = r_bcast(t == 0u ? st_finish() : 0.0);
    float mean = xdiv(sm, pc.nf);
    if (t == 0u) st_reset();
    float sv = 0.0;
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      if (!one) load_group(rx, rdy, cb, lim);
      vec4 a = vec4(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        [[unroll]] for (uint j = 0u; j < 4u; ++j)
          if (valid(k, j, lim)) {
            float d = xsub(v[k][j], mean);
            a[j] = xadd(a[j], xmul(d, d));
          }
      sv = group_sum(lanes4(a));
      if (!one && t == 0u) st_push(sv);
    }
    if (!one) sv = r_bcast(t == 0u ? st_finish() : 0.0);
    float rs = xdiv(1.0, xsqrt(xadd(xdiv(sv, pc.nf), pc.eps)));
    if (t == 0u) {
      stf(pc.mean, row, mean);
      stf(pc.rstd, row, rs);
    }
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      if (!one) load_group(rx, rdy, cb, lim);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        vec4 g = ld4(pc.gamma + cb * 4ul, r_off(k), lim, vec, 0.0);
        vec4 b = ld4(pc.beta + cb * 4ul, r_off(k), lim, vec, 0.0);
        vec4 y;
        [[unroll]] for (uint j = 0u; j < 4u; ++j)
          y[j] = xadd(xmul(xmul(xsub(v[k][j], mean), rs), g[j]), b[j]);
        st4(ro + cb * 4ul, r_off(k), lim, vec, y);
      }
    }
#elif RMS_BWD
    float rs = ldf(pc.rstd, row);
    if (t == 0u) st_reset();
    float sc = 0.0;
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      load_group(rx, rdy, cb, lim);
      vec4 a = vec4(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        vec4 g = ld4(pc.gamma + cb * 4ul, r_off(k), lim, vec, 0.0);
        [[unroll]] for (uint j = 0u; j < 4u; ++j)
          if (valid(k, j, lim)) a[j] = xadd(a[j], xmul(xmul(w[k][j], g[j]), xmul(v[k][j], rs)));
      }
      sc = group_sum(lanes4(a));
      if (!one && t == 0u) st_push(sc);
    }
    if (!one) sc = r_bcast(t == 0u ? st_finish() : 0.0);
    float c = xdiv(sc, pc.nf);
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      if (!one) load_group(rx, rdy, cb, lim);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        vec4 gm = ld4(pc.gamma + cb * 4ul, r_off(k), lim, vec, 0.0);
        vec4 y;
        [[unroll]] for (uint j = 0u; j < 4u; ++j) {
          float g = xmul(w[k][j], gm[j]);
          float xh = xmul(v[k][j], rs);
          y[j] = xmul(xsub(g, xmul(xh, c)), rs);
        }
        st4(ro + cb * 4ul, r_off(k), lim, vec, y);
      }
    }
#elif LN_BWD
    float mean = ldf(pc.mean, row), rs = ldf(pc.rstd, row);
    if (t == 0u) st_reset();
    vec2 sab = vec2(0.0);
    // A row of one group: both sums in one pass. Longer rows: one pass per
    // sum, each with invocation 0's stack of group sums.
    if (one) {
      uint64_t cb = r_cbase(0ul);
      uint lim = r_lim(n, cb);
      load_group(rx, rdy, cb, lim);
      vec4 a = vec4(0.0), b = vec4(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        vec4 gm = ld4(pc.gamma + cb * 4ul, r_off(k), lim, vec, 0.0);
        [[unroll]] for (uint j = 0u; j < 4u; ++j)
          if (valid(k, j, lim)) {
            float g = xmul(w[k][j], gm[j]);
            a[j] = xadd(a[j], g);
            b[j] = xadd(b[j], xmul(g, xmul(xsub(v[k][j], mean), rs)));
          }
      }
      sab = group_sum2(lanes4(a), lanes4(b));
    } else {
      for (uint64_t q = 0ul; q < groups; ++q) {
        uint64_t cb = r_cbase(q);
        uint lim = r_lim(n, cb);
        load_group(rx, rdy, cb, lim);
        vec4 a = vec4(0.0);
        [[unroll]] for (uint k = 0u; k < 8u; ++k) {
          vec4 gm = ld4(pc.gamma + cb * 4ul, r_off(k), lim, vec, 0.0);
          [[unroll]] for (uint j = 0u; j < 4u; ++j)
            if (valid(k, j, lim)) a[j] = xadd(a[j], xmul(w[k][j], gm[j]));
        }
        float s = group_sum(lanes4(a));
        if (t == 0u) st_push(s);
      }
      sab.x = r_bcast(t == 0u ? st_finish() : 0.0);
      if (t == 0u) st_reset();
      for (uint64_t q = 0ul; q < groups; ++q) {
        uint64_t cb = r_cbase(q);
        uint lim = r_lim(n, cb);
        load_group(rx, rdy, cb, lim);
        vec4 b = vec4(0.0);
        [[unroll]] for (uint k = 0u; k < 8u; ++k) {
          vec4 gm = ld4(pc.gamma + cb * 4ul, r_off(k), lim, vec, 0.0);
          [[unroll]] for (uint j = 0u; j < 4u; ++j)
            if (valid(k, j, lim))
              b[j] = xadd(b[j], xmul(xmul(w[k][j], gm[j]), xmul(xsub(v[k][j], mean), rs)));
        }
        float s = group_sum(lanes4(b));
        if (t == 0u) st_push(s);
      }
      sab.y = r_bcast(t == 0u ? st_finish() : 0.0);
    }
    float a = xdiv(sab.x, pc.nf), b = xdiv(sab.y, pc.nf);
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      if (!one) load_group(rx, rdy, cb, lim);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        vec4 gm = ld4(pc.gamma + cb * 4ul, r_off(k), lim, vec, 0.0);
        vec4 y;
        [[unroll]] for (uint j = 0u; j < 4u; ++j) {
          float g = xmul(w[k][j], gm[j]);
          float xh = xmul(xsub(v[k][j], mean), rs);
          y[j] = xmul(xsub(xsub(g, a), xmul(xh, b)), rs);
        }
        st4(ro + cb * 4ul, r_off(k), lim, vec, y);
      }
    }
#endif
  }
}
