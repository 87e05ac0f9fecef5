#version 460
// softmax over the last dim (docs/semantics.md 3.3), FORWARD or backward.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128) in;
#include "common.glsl"
#include "rows.glsl"

layout(push_constant) uniform Params {
  uint64_t a;    // forward: x; backward: y
  uint64_t b;    // backward: dy
  uint64_t out_addr;  // forward: y; backward: dx
  uint64_t rows;
  uint64_t n;
} pc;

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

// Chunk maxima of the row for the second pass; longer rows recompute them.
const uint kKeptChunks = 2048u;
shared float s_chunk_max[kKeptChunks];

float chunk_exp(float x, float m) { return m == kNegInf ? 0.0 : xexp(xsub(x, m)); }
#endif

void main() {
  uint l = gl_LocalInvocationID.x;
  uint64_t n = pc.n;
  uint64_t chunks = (n + 1023ul) / 1024ul;
  for (uint64_t row = first_row(); row < pc.rows; row += row_step()) {
    uint64_t ra = pc.a + row * n * 4ul, rb = pc.b + row * n * 4ul, ro = pc.out_addr + row * n * 4ul;
#if FORWARD
    if (l == 0u) {
      ms_top = 0;
      ms_count = 0u;
    }
    for (uint64_t c = 0ul; c < chunks; ++c) {
      float v[8];
      float m_l = kNegInf;
      for (uint t = 0u; t < 8u; ++t) {
        uint64_t i = c * 1024ul + uint64_t(t * 128u + l);
        v[t] = kNegInf;  // (no ?: around a load: it may become a select that loads anyway)
        if (i < n) {
          v[t] = ldf(ra, i);
          m_l = nan_max(m_l, v[t]);
        }
      }
      float m = wg_max128(m_l);
      float a = 0.0;
      for (uint t = 0u; t < 8u; ++t) {
        uint64_t i = c * 1024ul + uint64_t(t * 128u + l);
        if (i < n) a = xadd(a, chunk_exp(v[t], m));
      }
      float s = wg_tree128(a);
      if (l == 0u) {
        ms_push(m, s);
        if (c < uint64_t(kKeptChunks)) s_chunk_max[uint(c)] = m;
      }
    }
    // (M, S) and 1/S from invocation 0.
    float big_m = 0.0, inv = 0.0;
    if (l == 0u) {
      float m = ms_m[ms_top - 1], s = ms_s[ms_top - 1];
      for (int k = ms_top - 2; k >= 0; --k) ms_combine(ms_m[k], ms_s[k], m, s, m, s);
      big_m = m;
      inv = xdiv(1.0, s);
    }
    big_m = wg_bcast(big_m);
    inv = wg_bcast(inv);
    for (uint64_t c = 0ul; c < chunks; ++c) {
      float v[8];
      for (uint t = 0u; t < 8u; ++t) {
        uint64_t i = c * 1024ul + uint64_t(t * 128u + l);
        v[t] = kNegInf;
        if (i < n) v[t] = ldf(ra, i);
      }
      float m;
      if (c < uint64_t(kKeptChunks)) {
        m = s_chunk_max[uint(c)];
      } else {
        float m_l = kNegInf;
        for (uint t = 0u; t < 8u; ++t)
          if (c * 1024ul + uint64_t(t * 128u + l) < n) m_l = nan_max(m_l, v[t]);
        m = wg_max128(m_l);
      }
      float r = xmul(xexp(xsub(m, big_m)), inv);
      for (uint t = 0u; t < 8u; ++t) {
        uint64_t i = c * 1024ul + uint64_t(t * 128u + l);
        if (i < n) stf(ro, i, xmul(chunk_exp(v[t], m), r));
      }
    }
    barrier();  // s_chunk_max is rewritten by the next row
#else
    float d;
    ROWSUM(d, n, xmul(ldf(ra, i), ldf(rb, i)));
    for (uint64_t i = uint64_t(l); i < n; i += 128ul) {
      float y = ldf(ra, i), dy = ldf(rb, i);
      stf(ro, i, xmul(y, xsub(dy, d)));
    }
#endif
  }
}
