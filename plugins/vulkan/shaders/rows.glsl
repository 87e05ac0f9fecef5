// Row reductions of docs/semantics.md 3.2 with one workgroup per row. The
// workgroup is CPG chunks wide (CPG = 1, 2, 4 or 8; 128 * CPG invocations):
// invocation t is canonical lane t % 128 of chunk t / 128 of the current
// group of CPG aligned chunks. Lane l of chunk c adds elements
// c*1024 + k*128 + l (k = 0..7) from +0. The shared-memory tree over all
// 128 * CPG lane values, level d adding leaf t + d into leaf t for t a
// multiple of 2d, is first each chunk's tree over its lanes (d < 128) and
// then the pairwise tree over the group's chunk sums: an aligned subtree of
// 3.1. Invocation 0 stacks the group sums (common.glsl), whose finish is
// the tree over every chunk. Lanes and chunks past the row's end add
// nothing (+0), exactly the padding of 3.1, since these sums are never -0.
// No subgroup operation is used: the subgroup size (32 on NVIDIA, 8 or 4
// on lavapipe) cannot change an answer.
#define GROUP (128u * uint(CPG))
shared REAL s_tree[GROUP];  // double in the F64 variants (common.glsl)
shared REAL s_max[GROUP];
shared REAL s_bcast[2];

uint wg_t() { return gl_LocalInvocationID.x; }
uint wg_lane() { return gl_LocalInvocationID.x & 127u; }
uint wg_chunk() { return gl_LocalInvocationID.x >> 7; }

// Tree levels d in [1, top): the whole group (top = GROUP) or each chunk
// alone (top = 128, its sum left at its first leaf).
void tree_levels(uint top) {
  uint t = wg_t();
  for (uint d = 1u; d < top; d <<= 1) {
    if ((t & (2u * d - 1u)) == 0u) s_tree[t] = xadd(s_tree[t], s_tree[t + d]);
    barrier();
  }
}

// The group's subtree sum, to every invocation. a: this invocation's lane
// sum from +0, whose dropped +0 plus_zero puts back (common.glsl; lavapipe
// drops it once the loop over the lane's elements is unrolled).
REAL wg_group_tree(REAL a) {
  barrier();
  s_tree[wg_t()] = plus_zero(a);
  barrier();
  tree_levels(GROUP);
  return s_tree[0];
}

// Each chunk's own lane tree; returns this invocation's chunk sum.
REAL wg_chunk_tree(REAL a) {
  barrier();
  s_tree[wg_t()] = plus_zero(a);
  barrier();
  tree_levels(128u);
  return s_tree[wg_t() & ~127u];
}

// NaN-propagating max over each chunk's lanes (max needs no fixed order);
// the chunk's max stays at its first leaf of s_max.
REAL wg_chunk_max(REAL a) {
  uint t = wg_t(), l = wg_lane();
  barrier();
  s_max[t] = a;
  barrier();
  for (uint d = 64u; d > 0u; d >>= 1) {
    if (l < d) s_max[t] = nan_max(s_max[t], s_max[t + d]);
    barrier();
  }
  return s_max[t & ~127u];
}

// Invocation 0's value, to every invocation.
REAL wg_bcast(REAL v) {
  barrier();
  if (wg_t() == 0u) s_bcast[0] = v;
  barrier();
  return s_bcast[0];
}

// Index of element k (0..7) of this invocation in group q, and the number
// of groups of a row of n elements.
uint64_t row_index(uint64_t q, uint k) {
  return (q * uint64_t(CPG) + uint64_t(wg_chunk())) * 1024ul + uint64_t(k * 128u + wg_lane());
}
uint64_t row_groups(uint64_t n) { return (n + uint64_t(GROUP) * 8ul - 1ul) / (uint64_t(GROUP) * 8ul); }

// Row-major grid of rows: workgroup w walks rows w, w + groups, ...
uint64_t first_row() { return uint64_t(gl_WorkGroupID.x); }
uint64_t row_step() { return uint64_t(gl_NumWorkGroups.x); }
