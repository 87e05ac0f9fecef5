#version 460
// RMSNorm (3.4) and LayerNorm (3.6), rows=v2: one workgroup of CPG chunks
// per row, four canonical lanes per invocation (rows2.glsl): RMS_FWD,
// RMS_BWD, LN_FWD or LN_BWD. A row of one group (up to 16 chunks = 16,384
// elements) is read once and kept in registers. Longer rows run split
// (phase 1, 2 and for LN_FWD 3: one workgroup per group of a row, partials
// through scratch; rows2.glsl), or, with phase 0, one workgroup per row
// that reads the row again per pass. dgamma/dbeta are colsum.comp's.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 32 * CPG) in;
#include "common.glsl"
#include "narrow.glsl"
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
  uint phase;        // 0: a workgroup per row; 1, 2, 3: split rows
  uint64_t scratch;  // split rows: 2 floats per (row, group)
  uint params_narrow;  // narrow x: 1 if gamma and beta are in x's dtype, 0 if f32
} pc;

vec4 v[8];  // x of this invocation's elements in the current group
vec4 w[8];  // dy (backward)

void load_group(uint64_t rx, uint64_t rdy, uint64_t cb, uint lim) {
  bool vec = pc.vec != 0u;
  [[unroll]] for (uint k = 0u; k < 8u; ++k) {
    v[k] = ld4(rx + cb * ESZ, r_off(k), lim, vec, 0.0);
#if RMS_BWD || LN_BWD
    w[k] = ld4(rdy + cb * ESZ, r_off(k), lim, vec, 0.0);
#endif
  }
}

bool valid(uint k, uint j, uint lim) { return r_off(k) + j < lim; }
// gamma and beta: f32, or for narrow x either f32 or x's dtype (a uniform
// branch only in the narrow variants).
vec4 param4(uint64_t base, uint64_t cb, uint k, uint lim) {
#if defined(STORAGE_F16) || defined(STORAGE_BF16)
  if (pc.params_narrow != 0u) return ld4n(base + cb * 2ul, r_off(k), lim, pc.vec != 0u, 0.0);
#endif
  return ld4f(base + cb * 4ul, r_off(k), lim, pc.vec != 0u, 0.0);
}
vec4 gamma4(uint64_t cb, uint k, uint lim) { return param4(pc.gamma, cb, k, lim); }

// This invocation's lane sums of the group's terms, folded to its subtree.
#if RMS_FWD
float terms(uint64_t cb, uint lim) {
  vec4 a = vec4(0.0);
  [[unroll]] for (uint k = 0u; k < 8u; ++k)
    [[unroll]] for (uint j = 0u; j < 4u; ++j)
      if (valid(k, j, lim)) a[j] = xadd(a[j], xmul(v[k][j], v[k][j]));
  return lanes4(a);
}
float finish(float ss) { return xdiv(1.0, xsqrt(xadd(xdiv(ss, pc.nf), pc.eps))); }
void outputs(uint64_t ro, uint64_t cb, uint lim, float rs) {
  [[unroll]] for (uint k = 0u; k < 8u; ++k) {
    vec4 g = gamma4(cb, k, lim), y;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) y[j] = xmul(xmul(v[k][j], rs), g[j]);
    st4(ro + cb * ESZ, r_off(k), lim, pc.vec != 0u, y);
  }
}
#elif LN_FWD
float terms_x(uint lim) {
  vec4 a = vec4(0.0);
  [[unroll]] for (uint k = 0u; k < 8u; ++k)
    [[unroll]] for (uint j = 0u; j < 4u; ++j)
      if (valid(k, j, lim)) a[j] = xadd(a[j], v[k][j]);
  return lanes4(a);
}
float terms_d(uint lim, float mean) {
  vec4 a = vec4(0.0);
  [[unroll]] for (uint k = 0u; k < 8u; ++k)
    [[unroll]] for (uint j = 0u; j < 4u; ++j)
      if (valid(k, j, lim)) {
        float d = xsub(v[k][j], mean);
        a[j] = xadd(a[j], xmul(d, d));
      }
  return lanes4(a);
}
float finish(float sv) { return xdiv(1.0, xsqrt(xadd(xdiv(sv, pc.nf), pc.eps))); }
void outputs(uint64_t ro, uint64_t cb, uint lim, float mean, float rs) {
  [[unroll]] for (uint k = 0u; k < 8u; ++k) {
    vec4 g = gamma4(cb, k, lim), b = param4(pc.beta, cb, k, lim), y;
    [[unroll]] for (uint j = 0u; j < 4u; ++j)
      y[j] = xadd(xmul(xmul(xsub(v[k][j], mean), rs), g[j]), b[j]);
    st4(ro + cb * ESZ, r_off(k), lim, pc.vec != 0u, y);
  }
}
#elif RMS_BWD
float terms(uint64_t cb, uint lim, float rs) {
  vec4 a = vec4(0.0);
  [[unroll]] for (uint k = 0u; k < 8u; ++k) {
    vec4 g = gamma4(cb, k, lim);
    [[unroll]] for (uint j = 0u; j < 4u; ++j)
      if (valid(k, j, lim)) a[j] = xadd(a[j], xmul(xmul(w[k][j], g[j]), xmul(v[k][j], rs)));
  }
  return lanes4(a);
}
void outputs(uint64_t ro, uint64_t cb, uint lim, float rs, float c) {
  [[unroll]] for (uint k = 0u; k < 8u; ++k) {
    vec4 gm = gamma4(cb, k, lim), y;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      float g = xmul(w[k][j], gm[j]);
      float xh = xmul(v[k][j], rs);
      y[j] = xmul(xsub(g, xmul(xh, c)), rs);
    }
    st4(ro + cb * ESZ, r_off(k), lim, pc.vec != 0u, y);
  }
}
#elif LN_BWD
// Both sums: (rowsum terms of g, of g * xh).
vec2 terms2(uint64_t cb, uint lim, float mean, float rs) {
  vec4 a = vec4(0.0), b = vec4(0.0);
  [[unroll]] for (uint k = 0u; k < 8u; ++k) {
    vec4 gm = gamma4(cb, k, lim);
    [[unroll]] for (uint j = 0u; j < 4u; ++j)
      if (valid(k, j, lim)) {
        float g = xmul(w[k][j], gm[j]);
        a[j] = xadd(a[j], g);
        b[j] = xadd(b[j], xmul(g, xmul(xsub(v[k][j], mean), rs)));
      }
  }
  return vec2(lanes4(a), lanes4(b));
}
void outputs(uint64_t ro, uint64_t cb, uint lim, float mean, float rs, float a, float b) {
  [[unroll]] for (uint k = 0u; k < 8u; ++k) {
    vec4 gm = gamma4(cb, k, lim), y;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      float g = xmul(w[k][j], gm[j]);
      float xh = xmul(xsub(v[k][j], mean), rs);
      y[j] = xmul(xsub(xsub(g, a), xmul(xh, b)), rs);
    }
    st4(ro + cb * ESZ, r_off(k), lim, pc.vec != 0u, y);
  }
}
#endif

// Split rows: one group q of one row per item (rows2.glsl).
void split_main() {
  uint t = r_t();
  uint64_t n = pc.n, groups = r_groups(n), sc = pc.scratch;
  for (uint64_t item = first_row(); item < pc.rows * groups; item += row_step()) {
    uint64_t row = item / groups, q = item - row * groups;
    uint64_t rx = pc.x + row * n * ESZ, rdy = pc.dy + row * n * ESZ, ro = pc.out_addr + row * n * ESZ;
    uint64_t cb = r_cbase(q);
    uint lim = r_lim(n, cb);
    load_group(rx, rdy, cb, lim);
#if RMS_FWD
    if (pc.phase == 1u) {
      float s = group_sum(terms(cb, lim));
      if (t == 0u) stf(sc, item * 2ul, s);
    } else {
      float rs = finish(r_bcast(t == 0u ? split_stack(sc, row, groups, 0u) : 0.0));
      if (q == 0ul && t == 0u) stf(pc.rstd, row, rs);
      outputs(ro, cb, lim, rs);
    }
#elif LN_FWD
    if (pc.phase == 1u) {
      float s = group_sum(terms_x(lim));
      if (t == 0u) stf(sc, item * 2ul, s);
    } else if (pc.phase == 2u) {
      float mean = xdiv(r_bcast(t == 0u ? split_stack(sc, row, groups, 0u) : 0.0), pc.nf);
      float s = group_sum(terms_d(lim, mean));
      if (t == 0u) stf(sc, item * 2ul + 1ul, s);
    } else {
      vec2 ms = vec2(0.0);
      if (t == 0u) ms = vec2(split_stack(sc, row, groups, 0u), split_stack(sc, row, groups, 1u));
      ms = r_bcast2(ms);
      float mean = xdiv(ms.x, pc.nf), rs = finish(ms.y);
      if (q == 0ul && t == 0u) {
        stf(pc.mean, row, mean);
        stf(pc.rstd, row, rs);
      }
      outputs(ro, cb, lim, mean, rs);
    }
#elif RMS_BWD
    float rs = ldf(pc.rstd, row);
    if (pc.phase == 1u) {
      float s = group_sum(terms(cb, lim, rs));
      if (t == 0u) stf(sc, item * 2ul, s);
    } else {
      float c = xdiv(r_bcast(t == 0u ? split_stack(sc, row, groups, 0u) : 0.0), pc.nf);
      outputs(ro, cb, lim, rs, c);
    }
#elif LN_BWD
    float mean = ldf(pc.mean, row), rs = ldf(pc.rstd, row);
    if (pc.phase == 1u) {
      vec2 ab = terms2(cb, lim, mean, rs);
      vec2 s = group_sum2(ab.x, ab.y);
      if (t == 0u) {
        stf(sc, item * 2ul, s.x);
        stf(sc, item * 2ul + 1ul, s.y);
      }
    } else {
      vec2 s = vec2(0.0);
      if (t == 0u) s = vec2(split_stack(sc, row, groups, 0u), split_stack(sc, row, groups, 1u));
      s = r_bcast2(s);
      outputs(ro, cb, lim, mean, rs, xdiv(s.x, pc.nf), xdiv(s.y, pc.nf));
    }
#endif
  }
}

void main() {
  if (pc.phase != 0u) {
    split_main();
    return;
  }
  uint t = r_t();
  uint64_t n = pc.n, groups = r_groups(n);
  bool one = groups == 1ul;
  for (uint64_t row = first_row(); row < pc.rows; row += row_step()) {
    uint64_t rx = pc.x + row * n * ESZ, rdy = pc.dy + row * n * ESZ, ro = pc.out_addr + row * n * ESZ;
#if RMS_FWD
    if (t == 0u) st_reset();
    float ss = 0.0;
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      load_group(rx, rdy, cb, lim);
      ss = group_sum(terms(cb, lim));
      if (!one && t == 0u) st_push(ss);
    }
    if (!one) ss = r_bcast(t == 0u ? st_finish() : 0.0);
    float rs = finish(ss);
    if (t == 0u) stf(pc.rstd, row, rs);
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      if (!one) load_group(rx, rdy, cb, lim);
      outputs(ro, cb, lim, rs);
    }
#elif LN_FWD
    if (t == 0u) st_reset();
    float sm = 0.0;
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      load_group(rx, rdy, cb, lim);
      sm = group_sum(terms_x(lim));
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
      sv = group_sum(terms_d(lim, mean));
      if (!one && t == 0u) st_push(sv);
    }
    if (!one) sv = r_bcast(t == 0u ? st_finish() : 0.0);
    float rs = finish(sv);
    if (t == 0u) {
      stf(pc.mean, row, mean);
      stf(pc.rstd, row, rs);
    }
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      if (!one) load_group(rx, rdy, cb, lim);
      outputs(ro, cb, lim, mean, rs);
    }
#elif RMS_BWD
    float rs = ldf(pc.rstd, row);
    if (t == 0u) st_reset();
    float sc = 0.0;
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      load_group(rx, rdy, cb, lim);
      sc = group_sum(terms(cb, lim, rs));
      if (!one && t == 0u) st_push(sc);
    }
    if (!one) sc = r_bcast(t == 0u ? st_finish() : 0.0);
    float c = xdiv(sc, pc.nf);
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      if (!one) load_group(rx, rdy, cb, lim);
      outputs(ro, cb, lim, rs, c);
    }
#elif LN_BWD
    float mean = ldf(pc.mean, row), rs = ldf(pc.rstd, row);
    vec2 sab = vec2(0.0);
    if (one) {
      uint64_t cb = r_cbase(0ul);
      uint lim = r_lim(n, cb);
      load_group(rx, rdy, cb, lim);
      vec2 ab = terms2(cb, lim, mean, rs);
      sab = group_sum2(ab.x, ab.y);
    } else {
      // One pass per sum, each with invocation 0's stack of group sums.
      [[unroll]] for (uint which = 0u; which < 2u; ++which) {
        if (t == 0u) st_reset();
        for (uint64_t q = 0ul; q < groups; ++q) {
          uint64_t cb = r_cbase(q);
          uint lim = r_lim(n, cb);
          load_group(rx, rdy, cb, lim);
          vec2 ab = terms2(cb, lim, mean, rs);
          float s = group_sum(which == 0u ? ab.x : ab.y);
          if (t == 0u) st_push(s);
        }
        sab[which] = r_bcast(t == 0u ? st_finish() : 0.0);
      }
    }
    float a = xdiv(sab.x, pc.nf), b = xdiv(sab.y, pc.nf);
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      if (!one) load_group(rx, rdy, cb, lim);
      outputs(ro, cb, lim, mean, rs, a, b);
    }
#endif
  }
}
