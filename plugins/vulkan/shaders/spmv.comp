#version 460
// y = alpha * op(A) X + beta * y per column of X (docs/semantics.md, Sparse):
// a row's terms A[i,j] * x[j] in ascending j, segsum (3.7); evaluated as
// (alpha*t) + (beta*y), y not read when beta == 0.
// LONG = 0: one invocation per (row, column) for rows of <= 32 entries.
// LONG = 1: one workgroup of 128 per (row, column) for longer rows: lane l
//   sums chunk 128g + l of group g, the shared tree gives the group's
//   aligned subtree of 3.1, invocation 0 stacks the groups.
// STORAGE_F16 / STORAGE_BF16 (narrow.glsl): A's values, X and y in that
// dtype, every product and sum in f32 as above, y narrowed once. Two y
// elements share a 32-bit word and neighbouring (row, column) pairs belong
// to different invocations (or to the short and the long dispatch, which
// may overlap): y is read with an atomic and stored with stn_bits' atomics
// on its own half-word, so no access races with a neighbour's store.
// F64 (docs/semantics.md 7.3, f64 matrices): values, X and y in binary64,
// the same order in double (REAL, common.glsl); alpha and beta widened.
#extension GL_GOOGLE_include_directive : require
#if LONG
layout(local_size_x = 128) in;
#else
layout(local_size_x = 256) in;
#endif
#include "common.glsl"
#include "narrow.glsl"
#include "sparse.glsl"
#if LONG
#define CPG 1
#include "rows.glsl"
#endif

layout(push_constant) uniform Params {
  uint64_t row_ptr, col, perm, values;
  uint64_t x, y;
  uint64_t list;   // int64 rows this dispatch handles
  uint64_t count;  // entries of list
  uint64_t k;      // columns of X and y
  float alpha, beta;
  uint beta_zero;
} pc;

#if defined(STORAGE_F16) || defined(STORAGE_BF16)
// Element i of y, from its word read atomically (atomicOr of 0): the other
// half may be stored by another invocation at the same time.
float ld_y(uint64_t i) {
  uint64_t a = pc.y + i * 2ul;
  uint w = atomicOr(U32Ref(a & ~3ul).v, 0u);
  return widen((a & 2ul) != 0ul ? w >> 16 : w & 0xffffu);
}
#else
REAL ld_y(uint64_t i) { return lde(pc.y, i); }
#endif

REAL term(uint64_t e, uint64_t c) {
  uint64_t j = uint64_t(csr_at(pc.col, e));
  return xmul(csr_value(pc.values, pc.perm, e), lde(pc.x, j * pc.k + c));
}

void finish(uint64_t row, uint64_t c, REAL t) {
  uint64_t at = row * pc.k + c;
  REAL v = xmul(REAL(pc.alpha), t);
  if (pc.beta_zero == 0u) v = xadd(v, xmul(REAL(pc.beta), ld_y(at)));
  ste(pc.y, at, v);
}

void main() {
#if LONG
  uint l = gl_LocalInvocationID.x;
  uint64_t pairs = pc.count * pc.k;
  for (uint64_t g = uint64_t(gl_WorkGroupID.x); g < pairs; g += uint64_t(gl_NumWorkGroups.x)) {
    uint64_t q = g / pc.k, c = g - q * pc.k;
    uint64_t row = uint64_t(csr_at(pc.list, q));
    uint64_t b = uint64_t(csr_at(pc.row_ptr, row)), e = uint64_t(csr_at(pc.row_ptr, row + 1ul));
    uint64_t chunks = (e - b + 31ul) / 32ul;
    if (l == 0u) st_reset();
    for (uint64_t base = 0ul; base < chunks; base += 128ul) {
      REAL a = REAL(0.0);
      uint64_t chunk = base + uint64_t(l);
      if (chunk < chunks) {
        uint64_t from = b + 32ul * chunk, to = min(from + 32ul, e);
        for (uint64_t p = from; p < to; ++p) a = xadd(a, term(p, c));
      }
      REAL s = wg_group_tree(a);
      if (l == 0u) st_push(s);
    }
    if (l == 0u) finish(row, c, st_finish());
  }
#else
  uint64_t pairs = pc.count * pc.k;
  for (uint64_t g = global_id(); g < pairs; g += global_threads()) {
    uint64_t q = g / pc.k, c = g - q * pc.k;
    uint64_t row = uint64_t(csr_at(pc.list, q));
    uint64_t b = uint64_t(csr_at(pc.row_ptr, row)), e = uint64_t(csr_at(pc.row_ptr, row + 1ul));
    REAL t = REAL(0.0);
    for (uint64_t p = b; p < e; ++p) t = xadd(t, term(p, c));
    finish(row, c, t);
  }
#endif
}
