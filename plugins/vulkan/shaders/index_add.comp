#version 460
// index_add (docs/semantics.md section 4 and 3.7): for a destination row
// with sources i_1 < ... < i_m, T = segsum(src[i_1][j], ..., src[i_m][j]),
// dst[r][j] = dst[r][j] + alpha * T. Three stages, chosen by STAGE:
//   1 chunks: per chunk of 32 sources of a long row (m > 32) and column, the
//     sum from +0 in source order, into partial[q][j];
//   2 tree:   one level of the pairwise tree over a row's chunk sums
//     (partner missing: the value stays, as padding with +0 would leave it);
//   3 apply:  per touched row and column, T (a short row sums its m <= 32
//     sources from +0 here; a long row takes its tree root) and the update.
// src and dst are f32 or, with STORAGE_F16/BF16, narrow (narrow.glsl):
// widened on load; chunk sums and T stay f32 and dst is narrowed once.
// F64: src, dst, the partials and every sum in binary64 (REAL, common.glsl;
// docs/semantics.md 7.3), alpha widened.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "narrow.glsl"

layout(push_constant) uniform Params {
  uint64_t src;      // [count, w] f32 or narrow
  uint64_t dst;      // [num_rows, w] as src
  uint64_t plan;     // int64 arrays, offsets below in elements
  uint64_t partial;  // [chunks, w] REAL scratch
  uint64_t w;
  uint64_t items;    // rows (apply) or chunks (chunks, tree) times w
  uint64_t sources_at, rows_at, ptr_at, long_at, chunk_at;
  float alpha;
  uint level;        // tree: pair distance 2^level
} pc;

// Chunk record q: start (into sources), length, row's first chunk, row's chunk count.
int64_t chunk_field(uint64_t q, uint f) { return ldi64(pc.plan, pc.chunk_at + 4ul * q + uint64_t(f)); }
int64_t plan_at(uint64_t base, uint64_t i) { return ldi64(pc.plan, base + i); }

void split(uint64_t g, out uint64_t a, out uint64_t j) {
  if (pc.items < (1ul << 32)) {
    uint w = uint(pc.w), gi = uint(g);
    uint q = gi / w;
    a = uint64_t(q);
    j = uint64_t(gi - q * w);
  } else {
    a = g / pc.w;
    j = g - a * pc.w;
  }
}

#if STAGE != 3
void main() {
  for (uint64_t g = global_id(); g < pc.items; g += global_threads()) {
    uint64_t a, j;
    split(g, a, j);
#if STAGE == 1
    uint64_t start = uint64_t(chunk_field(a, 0u)), len = uint64_t(chunk_field(a, 1u));
    REAL s = REAL(0.0);
    for (uint64_t k = 0ul; k < len; ++k) {
      uint64_t i = uint64_t(plan_at(pc.sources_at, start + k));
      s = xadd(s, lde(pc.src, i * pc.w + j));
    }
    str(pc.partial, a * pc.w + j, s);
#elif STAGE == 2
    uint64_t first = uint64_t(chunk_field(a, 2u)), cnt = uint64_t(chunk_field(a, 3u));
    uint64_t qq = a - first, d = 1ul << pc.level;
    if ((qq & (2ul * d - 1ul)) == 0ul && qq + d < cnt) {
      uint64_t at = a * pc.w + j;
      str(pc.partial, at, xadd(ldr(pc.partial, at), ldr(pc.partial, at + d * pc.w)));
    }
#else
    // (unused: STAGE 3 has its own main below)
    int64_t lf = plan_at(pc.long_at, a);
    REAL t;
    if (lf >= 0l) {
      t = ldr(pc.partial, uint64_t(lf) * pc.w + j);
    } else {
      uint64_t b = uint64_t(plan_at(pc.ptr_at, a)), e = uint64_t(plan_at(pc.ptr_at, a + 1ul));
      t = REAL(0.0);
      for (uint64_t k = b; k < e; ++k) {
        uint64_t i = uint64_t(plan_at(pc.sources_at, k));
        t = xadd(t, lde(pc.src, i * pc.w + j));
      }
    }
    uint64_t row = uint64_t(plan_at(pc.rows_at, a));
    uint64_t at = row * pc.w + j;
    ste(pc.dst, at, xadd(lde(pc.dst, at), xmul(REAL(pc.alpha), t)));
#endif
  }
}
#endif

#if STAGE == 3
// Apply: four (touched row, column) items per invocation on a blocked 2-D
// grid (workgroup = 1024 consecutive items), each row's plan record
// {row, first source, sources, first chunk or -1} read as one 32-byte load;
// the loads of the four items are issued stage by stage so that their
// latencies overlap.
layout(buffer_reference, std430, buffer_reference_align = 32) readonly buffer Record { i64vec4 r; };

void main() {
  uint64_t base = (uint64_t(gl_WorkGroupID.y) * uint64_t(gl_NumWorkGroups.x) + uint64_t(gl_WorkGroupID.x)) * 1024ul +
                  uint64_t(gl_LocalInvocationID.x);
  i64vec4 rec[4];
  uint64_t col[4];
  REAL t[4], d[4];
  [[unroll]] for (uint k = 0u; k < 4u; ++k) {
    uint64_t g = base + uint64_t(k * 256u);
    rec[k] = i64vec4(0l, 0l, 0l, -1l);
    col[k] = 0ul;
    if (g < pc.items) {
      uint64_t a, j;
      split(g, a, j);
      rec[k] = Record(pc.plan + 8ul * (pc.long_at + 4ul * a)).r;
      col[k] = j;
    }
  }
  [[unroll]] for (uint k = 0u; k < 4u; ++k) {
    t[k] = REAL(0.0);
    d[k] = REAL(0.0);
    if (base + uint64_t(k * 256u) >= pc.items) continue;
    uint64_t at = uint64_t(rec[k].x) * pc.w + col[k];
    d[k] = lde(pc.dst, at);
    if (rec[k].w >= 0l) {
      t[k] = ldr(pc.partial, uint64_t(rec[k].w) * pc.w + col[k]);
    } else {
      uint64_t i = uint64_t(plan_at(pc.sources_at, uint64_t(rec[k].y)));
      t[k] = xadd(REAL(0.0), lde(pc.src, i * pc.w + col[k]));
    }
  }
  [[unroll]] for (uint k = 0u; k < 4u; ++k) {
    if (base + uint64_t(k * 256u) >= pc.items) continue;
    if (rec[k].w < 0l) {  // the rest of a short row's sources, in order
      for (int64_t s = 1l; s < rec[k].z; ++s) {
        uint64_t i = uint64_t(plan_at(pc.sources_at, uint64_t(rec[k].y + s)));
        t[k] = xadd(t[k], lde(pc.src, i * pc.w + col[k]));
      }
    }
    // T from +0: lavapipe drops the +0 of a short row's first add, and a
    // long row's tree keeps a -0 chunk sum; plus_zero (common.glsl) gives
    // the canonical T back for every row.
    ste(pc.dst, uint64_t(rec[k].x) * pc.w + col[k],
        xadd(d[k], xmul(REAL(pc.alpha), plus_zero(t[k]))));
  }
}
#endif
