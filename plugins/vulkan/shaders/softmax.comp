#version 460
// softmax over the last dim (docs/semantics.md 3.3), FORWARD or backward,
// one workgroup of CPG chunks per row (rows.glsl). A row of at most CPG
// chunks keeps x and its exponentials in registers: one xhal_exp per
// element, as 3.3 intends; longer rows recompute e in the output pass from
// the kept chunk maxima (the same bits).
// F64 (docs/semantics.md 7.3): every tensor and operation in binary64
// (REAL, common.glsl: xexp is xhal_exp64, xdiv the binary64 division).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128 * CPG) in;
#include "common.glsl"
#include "narrow.glsl"
#include "rows.glsl"

layout(push_constant) uniform Params {
  uint64_t a;         // forward: x; backward: y
  uint64_t b;         // backward: dy
  uint64_t out_addr;  // forward: y; backward: dx
  uint64_t rows;
  uint64_t n;
} pc;

REAL v[8];
REAL w[8];

#if FORWARD
// The (m, s) operator of 3.3 and its subtree stack (invocation 0 only).
REAL ms_m[40], ms_s[40];
int ms_top;
uint ms_count;

void ms_combine(REAL am, REAL as_, REAL bm, REAL bs, out REAL m, out REAL s) {
  m = nan_max(am, bm);
  if (m == REAL_NEG_INF) {
    s = REAL(0.0);
    return;
  }
  s = xadd(xmul(as_, xexp(xsub(am, m))), xmul(bs, xexp(xsub(bm, m))));
}

void ms_push(REAL m, REAL s) {
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

// Chunk maxima of the row for the output pass; longer rows recompute them.
const uint kKeptChunks = 2048u;
shared REAL s_chunk_max[kKeptChunks];

REAL chunk_exp(REAL x, REAL m) { return m == REAL_NEG_INF ? REAL(0.0) : xexp(xsub(x, m)); }
#endif

void load_group(uint64_t ra, uint64_t rb, uint64_t q) {
  [[unroll]] for (uint k = 0u; k < 8u; ++k) {
    uint64_t i = row_index(q, k);
#if FORWARD
    v[k] = REAL_NEG_INF;  // (no ?: around a load: it may become a select that loads anyway)
    if (i < pc.n) v[k] = lde(ra, i);
#else
    v[k] = REAL(0.0);
    w[k] = REAL(0.0);
    if (i < pc.n) {
      v[k] = lde(ra, i);
      w[k] = lde(rb, i);
    }
#endif
  }
}

void main() {
  uint t = wg_t(), l = wg_lane(), g = wg_chunk();
  uint64_t n = pc.n, groups = row_groups(n);
  for (uint64_t row = first_row(); row < pc.rows; row += row_step()) {
    uint64_t ra = pc.a + row * n * REAL_BYTES, rb = pc.b + row * n * REAL_BYTES, ro = pc.out_addr + row * n * REAL_BYTES;
#if FORWARD
    if (t == 0u) {
      ms_top = 0;
      ms_count = 0u;
    }
    REAL m = REAL_NEG_INF;
    for (uint64_t q = 0ul; q < groups; ++q) {
      load_group(ra, rb, q);
      REAL m_l = REAL_NEG_INF;
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        if (row_index(q, k) < n) m_l = nan_max(m_l, v[k]);
      m = wg_chunk_max(m_l);
      REAL a = REAL(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        if (row_index(q, k) < n) {
          w[k] = chunk_exp(v[k], m);  // e, kept for the output pass
          a = xadd(a, w[k]);
        }
      }
      wg_chunk_tree(a);
      // Chunks in order onto the (m, s) stack; chunks past the row's end
      // are padding, which the operator's identity makes unnecessary.
      if (t == 0u) {
        [[unroll]] for (uint c = 0u; c < uint(CPG); ++c) {
          uint64_t chunk = q * uint64_t(CPG) + uint64_t(c);
          if (chunk * 1024ul >= n) break;
          ms_push(s_max[c * 128u], s_tree[c * 128u]);
          if (chunk < uint64_t(kKeptChunks)) s_chunk_max[uint(chunk)] = s_max[c * 128u];
        }
      }
    }
    // (M, S) and 1/S from invocation 0.
    REAL big_m = REAL(0.0), inv = REAL(0.0);
    if (t == 0u) {
      REAL mm = ms_m[ms_top - 1], ss = ms_s[ms_top - 1];
      for (int k = ms_top - 2; k >= 0; --k) ms_combine(ms_m[k], ms_s[k], mm, ss, mm, ss);
      big_m = mm;
      inv = xdiv(REAL(1.0), ss);
    }
    big_m = wg_bcast(big_m);
    inv = wg_bcast(inv);
    for (uint64_t q = 0ul; q < groups; ++q) {
      uint64_t chunk = q * uint64_t(CPG) + uint64_t(g);
      if (groups > 1ul) {
        load_group(ra, rb, q);
        if (chunk < uint64_t(kKeptChunks)) {
          m = s_chunk_max[uint(chunk)];
        } else {
          REAL m_l = REAL_NEG_INF;
          [[unroll]] for (uint k = 0u; k < 8u; ++k)
            if (row_index(q, k) < n) m_l = nan_max(m_l, v[k]);
          m = wg_chunk_max(m_l);
        }
        [[unroll]] for (uint k = 0u; k < 8u; ++k)
          if (row_index(q, k) < n) w[k] = chunk_exp(v[k], m);
      }
      REAL r = xmul(xexp(xsub(m, big_m)), inv);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint64_t i = row_index(q, k);
        if (i < n) ste(ro, i, xmul(w[k], r));
      }
    }
    barrier();  // s_chunk_max is rewritten by the next row
#else
    if (t == 0u) st_reset();
    for (uint64_t q = 0ul; q < groups; ++q) {
      load_group(ra, rb, q);
      REAL a = REAL(0.0);
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        if (row_index(q, k) < n) a = xadd(a, xmul(v[k], w[k]));
      REAL s = wg_group_tree(a);
      if (t == 0u) st_push(s);
    }
    REAL d = wg_bcast(t == 0u ? st_finish() : REAL(0.0));
    for (uint64_t q = 0ul; q < groups; ++q) {
      if (groups > 1ul) load_group(ra, rb, q);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint64_t i = row_index(q, k);
        if (i < n) ste(ro, i, xmul(v[k], xsub(w[k], d)));
      }
    }
#endif
  }
}
