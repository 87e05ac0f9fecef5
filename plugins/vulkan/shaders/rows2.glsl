// Row reductions of docs/semantics.md 3.2, second form (device option
// rows=v2, the default; rows.glsl is rows=v1). One workgroup per row, CPG
// chunks of 1024 wide (CPG = 1, 2, 4, 8 or 16; 32 * CPG invocations).
//
// Invocation t is the thread l' = t % 32 of chunk t / 32 of the current
// group of CPG aligned chunks, and owns canonical lanes 4l'..4l'+3: it
// loads vector k (k = 0..7) at element c*1024 + k*128 + 4l' (a vec4 where
// the row allows, else four scalars at the same places) and component j
// adds into lane 4l'+j from +0, k ascending: the lane sums of 3.2. The
// first two tree levels over its lanes, (a0 + a1) + (a2 + a3), are its own
// adds. The remaining 32 values of each chunk go through shared memory:
// after one barrier the first invocation of each chunk adds them as the
// pairwise tree of 3.1 in registers (the chunk sum); after a second
// barrier every invocation adds the CPG chunk sums as the pairwise tree
// (the group's aligned subtree). Rows of more than one group stack the
// group sums (common.glsl) in invocation 0. Padding past the row's end is
// +0 for sums and -inf for maxima, as in 3.1-3.3: the lane and chunk sums
// start from +0, are never -0, and are unchanged by adding +0.
//
// Barriers: none before a reduction writes s_a again, because every read of
// s_a (by the chunk leaders) comes before the previous reduction's second
// barrier, and every read of s_c before the next reduction's first.
// No subgroup operation is used: the subgroup size cannot change an answer.
layout(buffer_reference, std430, buffer_reference_align = 16) buffer V4Ref { vec4 v; };

#define WG (32u * uint(CPG))
shared float s_a[WG];
shared float s_a2[WG];
shared float s_c[CPG];
shared float s_c2[CPG];
shared float s_bc[2];

uint r_t() { return gl_LocalInvocationID.x; }
uint r_i() { return gl_LocalInvocationID.x & 31u; }
uint r_chunk() { return gl_LocalInvocationID.x >> 5; }

// Offset in its chunk of element 0 of this invocation's vector k.
uint r_off(uint k) { return k * 128u + 4u * r_i(); }
// The first element of this invocation's chunk in group q.
uint64_t r_cbase(uint64_t q) { return (q * uint64_t(CPG) + uint64_t(r_chunk())) * 1024ul; }
// How many elements of a chunk starting at cb lie in the row (0..1024).
uint r_lim(uint64_t n, uint64_t cb) { return cb >= n ? 0u : uint(min(n - cb, 1024ul)); }
uint64_t r_groups(uint64_t n) { return (n + uint64_t(CPG) * 1024ul - 1ul) / (uint64_t(CPG) * 1024ul); }

// Vector k of a chunk at byte address ca: its elements at or past lim are
// `pad`. vec: ca is 16-byte aligned and lim a multiple of 4 (the host checks
// the addresses and n % 4).
vec4 ld4f(uint64_t ca, uint off, uint lim, bool vec, float pad) {
  vec4 r = vec4(pad);
  if (vec) {
    if (off < lim) r = V4Ref(ca + uint64_t(off) * 4ul).v;
  } else {
    [[unroll]] for (uint j = 0u; j < 4u; ++j)
      if (off + j < lim) r[j] = F32Ref(ca + uint64_t(off + j) * 4ul).v;
  }
  return r;
}

void st4f(uint64_t ca, uint off, uint lim, bool vec, vec4 x) {
  if (vec) {
    if (off < lim) V4Ref(ca + uint64_t(off) * 4ul).v = x;
  } else {
    [[unroll]] for (uint j = 0u; j < 4u; ++j)
      if (off + j < lim) F32Ref(ca + uint64_t(off + j) * 4ul).v = x[j];
  }
}

// The row tensors' storage (STORAGE_F16, STORAGE_BF16: narrow.glsl; else
// f32) and its element size ESZ in bytes. Narrow vectors are the same four
// elements widened from one uvec2 (vec: ca 8-byte aligned, lim a multiple
// of 4), else element by element; either way the lanes and their order are
// the f32 kernel's, and every value is f32 from load to store.
#if defined(STORAGE_F16) || defined(STORAGE_BF16)
#define ESZ 2ul
// (The bits are gathered first and converted once, so each vector has one
// copy of the conversions: less code for the driver to compile.)
vec4 ld4n(uint64_t ca, uint off, uint lim, bool vec, float pad) {
  uvec4 b = uvec4(0u);
  if (vec) {
    if (off < lim) b = ldn4_bits(ca + uint64_t(off) * 2ul);
  } else {
    [[unroll]] for (uint j = 0u; j < 4u; ++j)
      if (off + j < lim) b[j] = ldn_bits(ca + uint64_t(off + j) * 2ul);
  }
  vec4 r;
  [[unroll]] for (uint j = 0u; j < 4u; ++j) r[j] = off + j < lim ? widen(b[j]) : pad;
  return r;
}
void st4n(uint64_t ca, uint off, uint lim, bool vec, vec4 x) {
  uvec4 h;
  [[unroll]] for (uint j = 0u; j < 4u; ++j) h[j] = narrow(x[j]);
  if (vec) {
    if (off < lim) stn4_bits(ca + uint64_t(off) * 2ul, h);
  } else {
    [[unroll]] for (uint j = 0u; j < 4u; ++j)
      if (off + j < lim) stn_bits(ca + uint64_t(off + j) * 2ul, h[j]);
  }
}
#define ld4 ld4n
#define st4 st4n
#else
#define ESZ 4ul
#define ld4 ld4f
#define st4 st4f
#endif

// Tree levels 1 and 2 over this invocation's four lanes. Every caller's
// lanes are sums from +0, which lavapipe compiles without the +0 once the
// loop over k is unrolled (a lane of only -0 terms came out -0): plus_zero
// (common.glsl) gives each lane its canonical bits back.
float lanes4(vec4 a) {
  a = plus_zero(a);
  return xadd(xadd(a.x, a.y), xadd(a.z, a.w));
}

// The pairwise tree over s_a[base .. base + 32) (or s_a2), in registers.
float tree32_a(uint base) {
  float r[32];
  [[unroll]] for (uint j = 0u; j < 32u; ++j) r[j] = s_a[base + j];
  [[unroll]] for (uint d = 1u; d < 32u; d <<= 1)
    [[unroll]] for (uint j = 0u; j < 32u; j += 2u * d) r[j] = xadd(r[j], r[j + d]);
  return r[0];
}
float tree32_a2(uint base) {
  float r[32];
  [[unroll]] for (uint j = 0u; j < 32u; ++j) r[j] = s_a2[base + j];
  [[unroll]] for (uint d = 1u; d < 32u; d <<= 1)
    [[unroll]] for (uint j = 0u; j < 32u; j += 2u * d) r[j] = xadd(r[j], r[j + d]);
  return r[0];
}
// The pairwise tree over the CPG chunk sums s_c (or s_c2).
float tree_c() {
  float r[CPG];
  [[unroll]] for (uint j = 0u; j < uint(CPG); ++j) r[j] = s_c[j];
  [[unroll]] for (uint d = 1u; d < uint(CPG); d <<= 1)
    [[unroll]] for (uint j = 0u; j < uint(CPG); j += 2u * d) r[j] = xadd(r[j], r[j + d]);
  return r[0];
}
float tree_c2() {
  float r[CPG];
  [[unroll]] for (uint j = 0u; j < uint(CPG); ++j) r[j] = s_c2[j];
  [[unroll]] for (uint d = 1u; d < uint(CPG); d <<= 1)
    [[unroll]] for (uint j = 0u; j < uint(CPG); j += 2u * d) r[j] = xadd(r[j], r[j + d]);
  return r[0];
}

// Each chunk's sum into s_c from this invocation's value v (its four lanes'
// subtree): two barriers' worth, the second left to the caller's need.
void chunk_sums(float v) {
  s_a[r_t()] = v;
  barrier();
  if (r_i() == 0u) s_c[r_chunk()] = tree32_a(r_chunk() * 32u);
  barrier();
}

// The group's subtree sum, to every invocation.
float group_sum(float v) {
  chunk_sums(v);
  return tree_c();
}

// Two independent group sums at once.
vec2 group_sum2(float v, float w) {
  s_a[r_t()] = v;
  s_a2[r_t()] = w;
  barrier();
  if (r_i() == 0u) {
    s_c[r_chunk()] = tree32_a(r_chunk() * 32u);
    s_c2[r_chunk()] = tree32_a2(r_chunk() * 32u);
  }
  barrier();
  return vec2(tree_c(), tree_c2());
}

// Invocation 0's value, to every invocation (rows of several groups).
float r_bcast(float v) {
  barrier();
  if (r_t() == 0u) s_bc[0] = v;
  barrier();
  return s_bc[0];
}

// Both of invocation 0's values, to every invocation.
vec2 r_bcast2(vec2 v) {
  barrier();
  if (r_t() == 0u) {
    s_bc[0] = v.x;
    s_bc[1] = v.y;
  }
  barrier();
  return vec2(s_bc[0], s_bc[1]);
}

// Split rows (push constant phase != 0; rows of G > 1 groups): a dispatch
// takes items w = row * G + q, one group q of one row each, so a row's
// groups run on many SMs at once. Each item's partial (a group sum, or a
// group's (m, s)) goes to scratch at 2w (and 2w + 1); the next phase's
// invocation 0 of every item of the row stacks the row's G partials in
// order (common.glsl), which is the pairwise tree over the row's chunks
// (the groups are its aligned subtrees; the last group's padding is +0 or
// the operator's identity).
float split_stack(uint64_t sc, uint64_t row, uint64_t groups, uint slot) {
  st_reset();
  for (uint64_t q = 0ul; q < groups; ++q) st_push(ldf(sc, (row * groups + q) * 2ul + uint64_t(slot)));
  return st_finish();
}

uint64_t first_row() { return uint64_t(gl_WorkGroupID.x); }
uint64_t row_step() { return uint64_t(gl_NumWorkGroups.x); }
