#version 460
// Level-scheduled triangular solve of op(A) x = b (docs/semantics.md,
// Sparse): rows grouped by level at csr_create (a row's level is one more
// than the highest level it reads), so the rows of one level are
// independent. Vulkan promises no forward progress between workgroups, so
// nothing ever waits on another invocation's progress:
//   RUN > 0: one workgroup of RUN invocations walks levels [begin, end)
//            with a barrier between steps (consecutive narrow levels: one
//            dispatch for all);
//   RUN = 0: one step of one level (begin) over many workgroups (a wide
//            level; flags bit 2 picks the step).
// Row k: s = segsum of op(A)[k,j] * x[j] over its off-diagonal entries in
// ascending j, x[k] = (b[k] - s) / op(A)[k,k] (unit: b[k] - s).
// Within a level the short rows (at most 32 off-diagonal entries: one
// chunk) come first, then the long ones. A level is two steps:
//   step 1: one item per (short row, RHS), the whole row; and one per
//           (chunk of a long row, RHS), the chunk's sum from +0 in
//           ascending order into `partial`;
//   step 2: one item per (long row, RHS): the chunk sums pushed in order
//           onto the subtree stack (3.1), exactly the pushes the row's own
//           walk would make, then the row's finish.
// The same operations in the same order as one invocation walking the row.
#extension GL_GOOGLE_include_directive : require
#if RUN
layout(local_size_x = RUN) in;
#else
layout(local_size_x = 256) in;
#endif
#include "common.glsl"
#include "sparse.glsl"

layout(push_constant) uniform Params {
  uint64_t row_ptr, col, perm, values;
  uint64_t b, x;
  uint64_t order;       // rows sorted by level (short rows of a level first)
  uint64_t level_ptr;   // [levels + 1] into order
  uint64_t long_ptr;    // [levels + 1] into the long rows (in order)
  uint64_t long_first;  // [long rows + 1] first chunk of each long row
  uint64_t chunks;      // per chunk: {position in order, chunk index}
  uint64_t partial;     // chunk sums, [chunk][RHS]
  uint64_t begin, end;  // levels (RUN); RUN = 0: the level in begin
  uint k;               // right-hand sides
  uint flags;           // 1: unit diagonal; 2: ascending (the diagonal ends a
                        // row, else it starts it); 4: step 2 (RUN = 0)
} pc;

float ldx(uint64_t i) { return F32Coherent(pc.x + i * 4ul).v; }
// Chunk sums: written and read by other invocations of the same run.
float ldp(uint64_t i) { return F32Coherent(pc.partial + i * 4ul).v; }
void stp(uint64_t i, float v) { F32Coherent(pc.partial + i * 4ul).v = v; }

// The row at position pos and its off-diagonal range [rb, re); diag: the
// stored diagonal entry or ~0.
void row_range(uint64_t pos, out uint64_t row, out uint64_t rb, out uint64_t re,
               out uint64_t diag) {
  row = uint64_t(csr_at(pc.order, pos));
  rb = uint64_t(csr_at(pc.row_ptr, row));
  re = uint64_t(csr_at(pc.row_ptr, row + 1ul));
  diag = ~0ul;
  if (re > rb) {
    if ((pc.flags & 2u) != 0u) {
      if (uint64_t(csr_at(pc.col, re - 1ul)) == row) { diag = re - 1ul; re -= 1ul; }
    } else {
      if (uint64_t(csr_at(pc.col, rb)) == row) { diag = rb; rb += 1ul; }
    }
  }
}

// One chunk's sum from +0, entries [from, to) in ascending order.
float chunk_sum(uint64_t from, uint64_t to, uint64_t c) {
  float s = 0.0;
  for (uint64_t e = from; e < to; ++e) {
    uint64_t j = uint64_t(csr_at(pc.col, e));
    s = xadd(s, xmul(csr_value(pc.values, pc.perm, e), ldx(j * uint64_t(pc.k) + c)));
  }
  return s;
}

void finish_row(uint64_t row, uint64_t c, float s, uint64_t diag) {
  uint64_t at = row * uint64_t(pc.k) + c;
  float r = xsub(ldf(pc.b, at), s);
  if ((pc.flags & 1u) == 0u) {
    float d = diag != ~0ul ? csr_value(pc.values, pc.perm, diag) : 0.0;
    r = xdiv(r, d);
  }
  F32Coherent(pc.x + at * 4ul).v = r;
}

// Step 1 item g of level lev (g < (short rows + chunks) * k).
void step1(uint64_t lev, uint64_t g, uint64_t shorts, uint64_t chunk0) {
  uint64_t k = uint64_t(pc.k);
  uint64_t q = g / k, c = g - q * k;
  uint64_t row, rb, re, diag;
  if (q < shorts) {
    // A short row: one chunk, so the stack holds its sum alone (or
    // nothing: +0).
    row_range(uint64_t(csr_at(pc.level_ptr, lev)) + q, row, rb, re, diag);
    finish_row(row, c, chunk_sum(rb, re, c), diag);
  } else {
    uint64_t id = chunk0 + (q - shorts);
    uint64_t pos = uint64_t(csr_at(pc.chunks, 2ul * id)), ci = uint64_t(csr_at(pc.chunks, 2ul * id + 1ul));
    row_range(pos, row, rb, re, diag);
    uint64_t from = rb + 32ul * ci;
    stp(id * k + c, chunk_sum(from, min(from + 32ul, re), c));
  }
}

// Step 2 item g of level lev (g < long rows * k).
void step2(uint64_t lev, uint64_t g) {
  uint64_t k = uint64_t(pc.k);
  uint64_t q = g / k, c = g - q * k;
  uint64_t lb = uint64_t(csr_at(pc.long_ptr, lev)), le = uint64_t(csr_at(pc.long_ptr, lev + 1ul));
  uint64_t j = lb + q;
  uint64_t pos = uint64_t(csr_at(pc.level_ptr, lev + 1ul)) - (le - lb) + q;
  uint64_t first = uint64_t(csr_at(pc.long_first, j)), last = uint64_t(csr_at(pc.long_first, j + 1ul));
  uint64_t row, rb, re, diag;
  row_range(pos, row, rb, re, diag);
  st_reset();
  for (uint64_t id = first; id < last; ++id) st_push(ldp(id * k + c));
  finish_row(row, c, st_finish(), diag);
}

// A level's step-1 item count, and its first chunk and short-row count.
uint64_t level_items(uint64_t lev, out uint64_t shorts, out uint64_t chunk0, out uint64_t longs) {
  uint64_t pb = uint64_t(csr_at(pc.level_ptr, lev)), pe = uint64_t(csr_at(pc.level_ptr, lev + 1ul));
  uint64_t lb = uint64_t(csr_at(pc.long_ptr, lev)), le = uint64_t(csr_at(pc.long_ptr, lev + 1ul));
  longs = le - lb;
  shorts = (pe - pb) - longs;
  chunk0 = uint64_t(csr_at(pc.long_first, lb));
  uint64_t chunk1 = uint64_t(csr_at(pc.long_first, le));
  return (shorts + (chunk1 - chunk0)) * uint64_t(pc.k);
}

void main() {
#if RUN
  uint l = gl_LocalInvocationID.x;
  for (uint64_t lev = pc.begin; lev < pc.end; ++lev) {
    uint64_t shorts, chunk0, longs;
    uint64_t items = level_items(lev, shorts, chunk0, longs);
    for (uint64_t g = uint64_t(l); g < items; g += uint64_t(RUN)) step1(lev, g, shorts, chunk0);
    // This step's writes (x, partial) before the next step reads them.
    memoryBarrierBuffer();
    barrier();
    if (longs != 0ul) {  // the same value in every invocation
      uint64_t items2 = longs * uint64_t(pc.k);
      for (uint64_t g = uint64_t(l); g < items2; g += uint64_t(RUN)) step2(lev, g);
      memoryBarrierBuffer();
      barrier();
    }
  }
#else
  uint64_t lev = pc.begin;
  uint64_t shorts, chunk0, longs;
  uint64_t items = level_items(lev, shorts, chunk0, longs);
  if ((pc.flags & 4u) == 0u) {
    for (uint64_t g = global_id(); g < items; g += global_threads()) step1(lev, g, shorts, chunk0);
  } else {
    uint64_t items2 = longs * uint64_t(pc.k);
    for (uint64_t g = global_id(); g < items2; g += global_threads()) step2(lev, g);
  }
#endif
}
