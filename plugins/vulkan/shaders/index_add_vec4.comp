#version 460
// index_add.comp's three stages (chunks, tree, apply; STAGE 1, 2, 3) for
// rows whose length is a multiple of 4 floats and whose src, dst and
// scratch addresses are 16-byte aligned: one item is four consecutive
// columns of a row, moved as one vec4. Every column gets exactly the
// additions of index_add.comp in the same order (componentwise, from +0),
// so the bits are the same; only the loads are wider. With STORAGE_F16/BF16
// src and dst are narrow: four elements as one uvec2 (8-byte aligned
// addresses), widened to the same vec4; partials stay f32.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "narrow.glsl"

layout(push_constant) uniform Params {
  uint64_t src;      // [count, w] f32 or narrow
  uint64_t dst;      // [num_rows, w] as src
  uint64_t plan;     // int64 arrays, offsets below in elements
  uint64_t partial;  // [chunks, w] f32 scratch
  uint64_t w;
  uint64_t items;    // rows (apply) or chunks (chunks, tree) times w / 4
  uint64_t sources_at, rows_at, ptr_at, long_at, chunk_at;
  float alpha;
  uint level;        // tree: pair distance 2^level
} pc;

layout(buffer_reference, std430, buffer_reference_align = 16) buffer V4Ref { vec4 v; };
// Per touched row: {row, first source, sources, first chunk or -1}.
layout(buffer_reference, std430, buffer_reference_align = 32) readonly buffer Record { i64vec4 r; };

vec4 ldv(uint64_t base, uint64_t i) { return V4Ref(base + i * 4ul).v; }  // i: a float index
void stv(uint64_t base, uint64_t i, vec4 v) { V4Ref(base + i * 4ul).v = v; }
// src and dst elements in the storage type (partials are always f32).
#if defined(STORAGE_F16) || defined(STORAGE_BF16)
vec4 lde4(uint64_t base, uint64_t i) { return ldn4(base + i * 2ul); }
void ste4(uint64_t base, uint64_t i, vec4 v) { stn4(base + i * 2ul, v); }
#else
#define lde4 ldv
#define ste4 stv
#endif
vec4 vadd(vec4 a, vec4 b) { precise vec4 r = a + b; return r; }
vec4 vscale(float a, vec4 b) { precise vec4 r = a * b; return r; }
int64_t plan_at(uint64_t base, uint64_t i) { return ldi64(pc.plan, base + i); }
int64_t chunk_field(uint64_t q, uint f) { return plan_at(pc.chunk_at, 4ul * q + uint64_t(f)); }

// Item g -> (record a, first column j of its four).
void split(uint64_t g, out uint64_t a, out uint64_t j) {
  if (pc.items < (1ul << 32)) {
    uint wv = uint(pc.w) / 4u, gi = uint(g);
    uint q = gi / wv;
    a = uint64_t(q);
    j = uint64_t(gi - q * wv) * 4ul;
  } else {
    uint64_t wv = pc.w / 4ul;
    a = g / wv;
    j = (g - a * wv) * 4ul;
  }
}

#if STAGE != 3
void main() {
  for (uint64_t g = global_id(); g < pc.items; g += global_threads()) {
    uint64_t a, j;
    split(g, a, j);
#if STAGE == 1
    uint64_t start = uint64_t(chunk_field(a, 0u)), len = uint64_t(chunk_field(a, 1u));
    vec4 s = vec4(0.0);
    for (uint64_t k = 0ul; k < len; ++k) {
      uint64_t i = uint64_t(plan_at(pc.sources_at, start + k));
      s = vadd(s, lde4(pc.src, i * pc.w + j));
    }
    stv(pc.partial, a * pc.w + j, s);
#else
    uint64_t first = uint64_t(chunk_field(a, 2u)), cnt = uint64_t(chunk_field(a, 3u));
    uint64_t qq = a - first, d = 1ul << pc.level;
    if ((qq & (2ul * d - 1ul)) == 0ul && qq + d < cnt) {
      uint64_t at = a * pc.w + j;
      stv(pc.partial, at, vadd(ldv(pc.partial, at), ldv(pc.partial, at + d * pc.w)));
    }
#endif
  }
}
#else
// Apply: one item per invocation on a 2-D grid of 256-item workgroups.
void main() {
  uint64_t g = (uint64_t(gl_WorkGroupID.y) * uint64_t(gl_NumWorkGroups.x) + uint64_t(gl_WorkGroupID.x)) * 256ul +
               uint64_t(gl_LocalInvocationID.x);
  if (g >= pc.items) return;
  uint64_t a, j;
  split(g, a, j);
  i64vec4 rec = Record(pc.plan + 8ul * (pc.long_at + 4ul * a)).r;
  uint64_t at = uint64_t(rec.x) * pc.w + j;
  vec4 d = lde4(pc.dst, at);
  vec4 t;
  if (rec.w >= 0l) {
    t = ldv(pc.partial, uint64_t(rec.w) * pc.w + j);
  } else {
    t = vec4(0.0);
    for (int64_t s = 0l; s < rec.z; ++s) {
      uint64_t i = uint64_t(plan_at(pc.sources_at, uint64_t(rec.y + s)));
      t = vadd(t, lde4(pc.src, i * pc.w + j));
    }
  }
  // T as a sum from +0 would have it, whatever the driver dropped
  // (plus_zero, common.glsl; index_add.comp's apply does the same).
  ste4(pc.dst, at, vadd(d, vscale(pc.alpha, plus_zero(t))));
}
#endif
