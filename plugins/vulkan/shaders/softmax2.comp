#version 460
// softmax over the last dim (docs/semantics.md 3.3), rows=v2: FORWARD or
// backward, one workgroup of CPG chunks per row, four canonical lanes per
// invocation (rows2.glsl). A row of one group (up to 16 chunks) keeps x and
// its exponentials in registers: one xhal_exp per element, as 3.3 intends;
// longer rows run split (phase 1 and 2: one workgroup per group of a row,
// partials through scratch; rows2.glsl) or, with phase 0, recompute e in
// the output pass from the kept chunk maxima (the same bits).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 32 * CPG) in;
#include "common.glsl"
#include "narrow.glsl"
#include "rows2.glsl"

layout(push_constant) uniform Params {
  uint64_t a;         // forward: x; backward: y
  uint64_t b;         // backward: dy
  uint64_t out_addr;  // forward: y; backward: dx
  uint64_t rows;
  uint64_t n;
  uint vec;           // 1: every row 16-byte aligned and n % 4 == 0
  uint phase;         // 0: a workgroup per row; 1, 2: split rows
  uint64_t scratch;   // split rows: 2 floats per (row, group)
} pc;

vec4 v[8];
vec4 w[8];

#if FORWARD
// The (m, s) operator of 3.3 and its subtree stack (invocation 0 only).
float ms_m[40], ms_s[40];
int ms_top;
uint ms_count;

void ms_combine(float am, float as_, float bm, float bs, out float m, out float s) {
  m = nan_max(am, bm);
  if (m == kNegInf) {
    s = 0.0;
    return;
  }
  s = xadd(xmul(as_, xexp(xsub(am, m))), xmul(bs, xexp(xsub(bm, m))));
}

void ms_push(float m, float s) {
  ms_count += 1u;
  uint c = ms_count;
  while ((c & 1u) == 0u) {
    ms_top -= 1;
    ms_combine(ms_m[ms_top], ms_s[ms_top], m, s, m, s);
    c >>= 1;
  }
  ms_m[ms_top] = m;
  ms_s[ms_top] = s;
  ms_top += 1;
}

shared float s_m[WG];
shared float s_cm[CPG];
// Chunk maxima of a row of several groups for the output pass; longer rows
// recompute them.
const uint kKeptChunks = 2048u;
shared float s_chunk_max[kKeptChunks];

// NaN-propagating max over each chunk (max needs no order; -inf padding is
// its identity), to the chunk's invocations and into s_cm.
float chunk_max(float m) {
  s_m[r_t()] = m;
  barrier();
  if (r_i() == 0u) {
    uint base = r_chunk() * 32u;
    float r = s_m[base];
    [[unroll]] for (uint j = 1u; j < 32u; ++j) r = nan_max(r, s_m[base + j]);
    s_cm[r_chunk()] = r;
  }
  barrier();
  return s_cm[r_chunk()];
}

float local_max() {
  float m = kNegInf;
  [[unroll]] for (uint k = 0u; k < 8u; ++k)
    [[unroll]] for (uint j = 0u; j < 4u; ++j) m = nan_max(m, v[k][j]);
  return m;
}

float chunk_exp(float x, float m) { return m == kNegInf ? 0.0 : xexp(xsub(x, m)); }

// v := e of this invocation's real elements (+0 past the row's end).
void exps(float m, uint lim) {
  [[unroll]] for (uint k = 0u; k < 8u; ++k)
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      float e = 0.0;
      if (r_off(k) + j < lim) e = chunk_exp(v[k][j], m);
      v[k][j] = e;
    }
}
#endif

void load_group(uint64_t ra, uint64_t rb, uint64_t cb, uint lim) {
  bool vec = pc.vec != 0u;
  [[unroll]] for (uint k = 0u; k < 8u; ++k) {
#if FORWARD
    v[k] = ld4(ra + cb * ESZ, r_off(k), lim, vec, kNegInf);
#else
    v[k] = ld4(ra + cb * ESZ, r_off(k), lim, vec, 0.0);
    w[k] = ld4(rb + cb * ESZ, r_off(k), lim, vec, 0.0);
#endif
  }
}

// Split rows: one group q of one row per item (rows2.glsl).
void split_main() {
  uint t = r_t();
  uint64_t n = pc.n, groups = r_groups(n), sc = pc.scratch;
  for (uint64_t item = first_row(); item < pc.rows * groups; item += row_step()) {
    uint64_t row = item / groups, q = item - row * groups;
    uint64_t ra = pc.a + row * n * ESZ, rb = pc.b + row * n * ESZ, ro = pc.out_addr + row * n * ESZ;
    uint64_t cb = r_cbase(q);
    uint lim = r_lim(n, cb);
    load_group(ra, rb, cb, lim);
#if FORWARD
    float m = chunk_max(local_max());
    exps(m, lim);
    if (pc.phase == 1u) {
      vec4 a = vec4(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        [[unroll]] for (uint j = 0u; j < 4u; ++j) a[j] = xadd(a[j], v[k][j]);
      chunk_sums(lanes4(a));
      // The group's chunks in order onto the (m, s) stack, finished right to
      // left: the group's aligned subtree (its padding is the identity).
      if (t == 0u) {
        ms_top = 0;
        ms_count = 0u;
        [[unroll]] for (uint c = 0u; c < uint(CPG); ++c) {
          if ((q * uint64_t(CPG) + uint64_t(c)) * 1024ul >= n) break;
          ms_push(s_cm[c], s_c[c]);
        }
        float mm = ms_m[ms_top - 1], ss = ms_s[ms_top - 1];
        for (int k = ms_top - 2; k >= 0; --k) ms_combine(ms_m[k], ms_s[k], mm, ss, mm, ss);
        stf(sc, item * 2ul, mm);
        stf(sc, item * 2ul + 1ul, ss);
      }
    } else {
      vec2 mi = vec2(0.0);
      if (t == 0u) {
        ms_top = 0;
        ms_count = 0u;
        for (uint64_t g = 0ul; g < groups; ++g)
          ms_push(ldf(sc, (row * groups + g) * 2ul), ldf(sc, (row * groups + g) * 2ul + 1ul));
        float mm = ms_m[ms_top - 1], ss = ms_s[ms_top - 1];
        for (int k = ms_top - 2; k >= 0; --k) ms_combine(ms_m[k], ms_s[k], mm, ss, mm, ss);
        mi = vec2(mm, xdiv(1.0, ss));
      }
      mi = r_bcast2(mi);
      float r = xmul(xexp(xsub(m, mi.x)), mi.y);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        vec4 y;
        [[unroll]] for (uint j = 0u; j < 4u; ++j) y[j] = xmul(v[k][j], r);
        st4(ro + cb * ESZ, r_off(k), lim, pc.vec != 0u, y);
      }
    }
#else
    if (pc.phase == 1u) {
      vec4 a = vec4(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        [[unroll]] for (uint j = 0u; j < 4u; ++j)
          if (r_off(k) + j < lim) a[j] = xadd(a[j], xmul(v[k][j], w[k][j]));
      float s = group_sum(lanes4(a));
      if (t == 0u) stf(sc, item * 2ul, s);
    } else {
      float d = r_bcast(t == 0u ? split_stack(sc, row, groups, 0u) : 0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        vec4 y;
        [[unroll]] for (uint j = 0u; j < 4u; ++j) y[j] = xmul(v[k][j], xsub(w[k][j], d));
        st4(ro + cb * ESZ, r_off(k), lim, pc.vec != 0u, y);
      }
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
  bool vec = pc.vec != 0u;
  uint64_t n = pc.n, groups = r_groups(n);
  bool one = groups == 1ul;
  for (uint64_t row = first_row(); row < pc.rows; row += row_step()) {
    uint64_t ra = pc.a + row * n * ESZ, rb = pc.b + row * n * ESZ, ro = pc.out_addr + row * n * ESZ;
#if FORWARD
    if (t == 0u) {
      ms_top = 0;
      ms_count = 0u;
    }
    float m = kNegInf;
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      load_group(ra, rb, cb, lim);
      m = chunk_max(local_max());
      exps(m, lim);
      vec4 a = vec4(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        [[unroll]] for (uint j = 0u; j < 4u; ++j) a[j] = xadd(a[j], v[k][j]);
      chunk_sums(lanes4(a));
      // Chunks in order onto the (m, s) stack; chunks past the row's end
      // are padding, which the operator's identity makes unnecessary.
      if (t == 0u) {
        [[unroll]] for (uint c = 0u; c < uint(CPG); ++c) {
          uint64_t chunk = q * uint64_t(CPG) + uint64_t(c);
          if (chunk * 1024ul >= n) break;
          ms_push(s_cm[c], s_c[c]);
          if (!one && chunk < uint64_t(kKeptChunks)) s_chunk_max[uint(chunk)] = s_cm[c];
        }
      }
    }
    // (M, S) and 1/S from invocation 0.
    if (t == 0u) {
      float mm = ms_m[ms_top - 1], ss = ms_s[ms_top - 1];
      for (int k = ms_top - 2; k >= 0; --k) ms_combine(ms_m[k], ms_s[k], mm, ss, mm, ss);
      s_bc[0] = mm;
      s_bc[1] = xdiv(1.0, ss);
    }
    barrier();
    float big_m = s_bc[0], inv = s_bc[1];
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      if (!one) {
        load_group(ra, rb, cb, lim);
        if ((q + 1ul) * uint64_t(CPG) <= uint64_t(kKeptChunks)) m = s_chunk_max[uint(cb >> 10)];
        else m = chunk_max(local_max());
        exps(m, lim);
      }
      float r = xmul(xexp(xsub(m, big_m)), inv);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        vec4 y;
        [[unroll]] for (uint j = 0u; j < 4u; ++j) y[j] = xmul(v[k][j], r);
        st4(ro + cb * ESZ, r_off(k), lim, vec, y);
      }
    }
    if (!one) barrier();  // s_chunk_max is rewritten by the next row
#else
    if (t == 0u) st_reset();
    float d = 0.0;
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      load_group(ra, rb, cb, lim);
      vec4 a = vec4(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        [[unroll]] for (uint j = 0u; j < 4u; ++j)
          if (r_off(k) + j < lim) a[j] = xadd(a[j], xmul(v[k][j], w[k][j]));
      d = group_sum(lanes4(a));
      if (!one && t == 0u) st_push(d);
    }
    if (!one) d = r_bcast(t == 0u ? st_finish() : 0.0);
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t cb = r_cbase(q);
      uint lim = r_lim(n, cb);
      if (!one) load_group(ra, rb, cb, lim);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        vec4 y;
        [[unroll]] for (uint j = 0u; j < 4u; ++j) y[j] = xmul(v[k][j], xsub(w[k][j], d));
        st4(ro + cb * ESZ, r_off(k), lim, vec, y);
      }
    }
#endif
  }
}
