#version 460
// Level-scheduled triangular solve of op(A) x = b (docs/semantics.md,
// Sparse): rows grouped by level at csr_create (a row's level is one more
// than the highest level it reads), so the rows of one level are
// independent. Vulkan promises no forward progress between workgroups, so
// nothing ever waits on another invocation's progress:
//   RUN = 1: one workgroup walks levels [begin, end) with a barrier between
//            levels (consecutive narrow levels: one dispatch for all);
//   RUN = 0: one level's rows [begin, end) of the order, over many
//            workgroups (a wide level).
// Row k: s = segsum of op(A)[k,j] * x[j] over its off-diagonal entries in
// ascending j, x[k] = (b[k] - s) / op(A)[k,k] (unit: b[k] - s).
#extension GL_GOOGLE_include_directive : require
#if RUN
// Narrow levels: a small workgroup makes each level's barrier cheap.
#define RUN_SIZE 64
layout(local_size_x = RUN_SIZE) in;
#else
layout(local_size_x = 256) in;
#endif
#include "common.glsl"
#include "sparse.glsl"

layout(push_constant) uniform Params {
  uint64_t row_ptr, col, perm, values;
  uint64_t b, x;
  uint64_t order;      // rows sorted by level
  uint64_t level_ptr;  // [levels + 1] into order
  uint64_t k;          // right-hand sides
  uint64_t begin, end; // levels (RUN) or positions of order (a level)
  uint unit_diag;
  uint ascending;      // the diagonal ends the row (else it starts it)
} pc;

float ldx(uint64_t i) { return F32Coherent(pc.x + i * 4ul).v; }

void solve_item(uint64_t pos, uint64_t c) {
  uint64_t row = uint64_t(csr_at(pc.order, pos));
  uint64_t rb = uint64_t(csr_at(pc.row_ptr, row)), re = uint64_t(csr_at(pc.row_ptr, row + 1ul));
  uint64_t diag = ~0ul;
  if (re > rb) {
    if (pc.ascending != 0u) {
      if (uint64_t(csr_at(pc.col, re - 1ul)) == row) { diag = re - 1ul; re -= 1ul; }
    } else {
      if (uint64_t(csr_at(pc.col, rb)) == row) { diag = rb; rb += 1ul; }
    }
  }
  st_reset();
  for (uint64_t from = rb; from < re; from += 32ul) {
    float s = 0.0;
    uint64_t to = min(from + 32ul, re);
    for (uint64_t e = from; e < to; ++e) {
      uint64_t j = uint64_t(csr_at(pc.col, e));
      s = xadd(s, xmul(csr_value(pc.values, pc.perm, e), ldx(j * pc.k + c)));
    }
    st_push(s);
  }
  float s = st_finish();
  uint64_t at = row * pc.k + c;
  float r = xsub(ldf(pc.b, at), s);
  if (pc.unit_diag == 0u) {
    float d = diag != ~0ul ? csr_value(pc.values, pc.perm, diag) : 0.0;
    r = xdiv(r, d);
  }
  F32Coherent(pc.x + at * 4ul).v = r;
}

void main() {
#if RUN
  uint l = gl_LocalInvocationID.x;
  for (uint64_t lev = pc.begin; lev < pc.end; ++lev) {
    uint64_t pb = uint64_t(csr_at(pc.level_ptr, lev)), pe = uint64_t(csr_at(pc.level_ptr, lev + 1ul));
    uint64_t items = (pe - pb) * pc.k;
    for (uint64_t g = uint64_t(l); g < items; g += uint64_t(RUN_SIZE)) {
      uint64_t q = g / pc.k;
      solve_item(pb + q, g - q * pc.k);
    }
    // This level's x before the next level reads it.
    memoryBarrierBuffer();
    barrier();
  }
#else
  uint64_t items = (pc.end - pc.begin) * pc.k;
  for (uint64_t g = global_id(); g < items; g += global_threads()) {
    uint64_t q = g / pc.k;
    solve_item(pc.begin + q, g - q * pc.k);
  }
#endif
}
