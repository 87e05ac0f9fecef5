// Row reductions of docs/semantics.md 3.2 for one workgroup of 128
// invocations per row: invocation l is canonical lane l. Each 1024-element
// chunk: lane l adds elements c*1024 + t*128 + l (t = 0..7) from +0, the 128
// lane sums go through a shared-memory pairwise tree (3.1) and invocation 0
// pushes the chunk sum onto its subtree stack (common.glsl), whose finish
// is the tree over the chunks. No subgroup operation is used: the answer
// cannot depend on the subgroup size (32 on NVIDIA, 8 or 4 on lavapipe).
shared float s_tree[128];
shared float s_bcast[2];

// Pairwise tree of the 128 lane values (lane l from invocation l), returned
// to every invocation. Level d adds lane l + d into lane l for l a multiple
// of 2d: the adjacent pairs of 3.1, level by level.
float wg_tree128(float a) {
  uint l = gl_LocalInvocationID.x;
  barrier();
  s_tree[l] = a;
  barrier();
  for (uint d = 1u; d < 128u; d <<= 1) {
    if ((l & (2u * d - 1u)) == 0u) s_tree[l] = xadd(s_tree[l], s_tree[l + d]);
    barrier();
  }
  return s_tree[0];
}

// NaN-propagating max over the workgroup (max needs no fixed order).
float wg_max128(float a) {
  uint l = gl_LocalInvocationID.x;
  barrier();
  s_tree[l] = a;
  barrier();
  for (uint d = 64u; d > 0u; d >>= 1) {
    if (l < d) s_tree[l] = nan_max(s_tree[l], s_tree[l + d]);
    barrier();
  }
  return s_tree[0];
}

// Invocation 0's value, to every invocation.
float wg_bcast(float v) {
  barrier();
  if (gl_LocalInvocationID.x == 0u) s_bcast[0] = v;
  barrier();
  return s_bcast[0];
}

// OUT = rowsum over i in [0, N) of TERM (an expression in `i`), 3.2.
#define ROWSUM(OUT, N, TERM)                                      \
  {                                                               \
    uint l_ = gl_LocalInvocationID.x;                             \
    if (l_ == 0u) st_reset();                                     \
    uint64_t chunks_ = ((N) + 1023ul) / 1024ul;                   \
    for (uint64_t c_ = 0ul; c_ < chunks_; ++c_) {                 \
      float a_ = 0.0;                                             \
      for (uint t_ = 0u; t_ < 8u; ++t_) {                         \
        uint64_t i = c_ * 1024ul + uint64_t(t_ * 128u + l_);      \
        if (i < (N)) a_ = xadd(a_, TERM);                         \
      }                                                           \
      float s_ = wg_tree128(a_);                                  \
      if (l_ == 0u) st_push(s_);                                  \
    }                                                             \
    OUT = wg_bcast(l_ == 0u ? st_finish() : 0.0);                 \
  }

// Row-major 2-D grid of rows: workgroup w walks rows w, w + groups, ...
uint64_t first_row() { return uint64_t(gl_WorkGroupID.x); }
uint64_t row_step() { return uint64_t(gl_NumWorkGroups.x); }
