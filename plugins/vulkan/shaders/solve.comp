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
// F64 (docs/semantics.md 7.3, f64 matrices): values, b, x and the chunk
// sums in binary64 (REAL, common.glsl), the division xdiv's binary64 form.
#extension GL_GOOGLE_include_directive : require
#if RUN
layout(local_size_x = RUN) in;
#else
layout(local_size_x = 256) in;
#endif
#include "common.glsl"
#include "narrow.glsl"
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
  uint64_t recs;        // per position: {row, rb, re, diagonal's value index or -1}
  uint64_t begin, end;  // levels (RUN); RUN = 0: the level in begin
  uint k;               // right-hand sides
  uint flags;           // 1: unit diagonal; 2: ascending (the diagonal ends a
                        // row, else it starts it); 4: step 2 (RUN = 0);
                        // 8: the runs load ahead
} pc;

REAL ldx(uint64_t i) { return RealCoherent(pc.x + i * REAL_BYTES).v; }
void stx(uint64_t i, REAL v) { RealCoherent(pc.x + i * REAL_BYTES).v = v; }
// Chunk sums: written and read by other invocations of the same run.
REAL ldp(uint64_t i) { return RealCoherent(pc.partial + i * REAL_BYTES).v; }
void stp(uint64_t i, REAL v) { RealCoherent(pc.partial + i * REAL_BYTES).v = v; }

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
REAL chunk_sum(uint64_t from, uint64_t to, uint64_t c) {
  REAL s = REAL(0.0);
  for (uint64_t e = from; e < to; ++e) {
    uint64_t j = uint64_t(csr_at(pc.col, e));
    s = xadd(s, xmul(csr_value(pc.values, pc.perm, e), ldx(j * uint64_t(pc.k) + c)));
  }
  return plus_zero(s);
}

void finish_row(uint64_t row, uint64_t c, REAL s, uint64_t diag) {
  uint64_t at = row * uint64_t(pc.k) + c;
  REAL r = xsub(lde(pc.b, at), s);
  if ((pc.flags & 1u) == 0u) {
    REAL d = diag != ~0ul ? csr_value(pc.values, pc.perm, diag) : REAL(0.0);
    r = xdiv(r, d);
  }
  stx(at, r);
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

#if RUN
// The runs load a short row's x-independent inputs ahead (software
// pipelined over levels, every load of one step independent of the
// others): level metadata three levels ahead, the row's record two ahead,
// b, the diagonal and its first two entries' columns one ahead; only the x
// loads wait for the barrier. Invocation l does this for its first item
// (g = l) of each level; further items take the plain path.
struct Meta {
  uint64_t pb, shorts, chunk0, longs, items;
};
struct Pre {
  bool ok;
  uint64_t row, rb, re, c, j0, j1, e0, e1;
  int64_t dvi;
  REAL bv, dv;
};

Meta meta(uint64_t lev) {
  Meta m;
  m.pb = 0ul;
  m.shorts = 0ul;
  m.chunk0 = 0ul;
  m.longs = 0ul;
  m.items = 0ul;
  if (lev < pc.end) {
    m.items = level_items(lev, m.shorts, m.chunk0, m.longs);
    m.pb = uint64_t(csr_at(pc.level_ptr, lev));
  }
  return m;
}

Pre rec_load(Meta m, uint l) {
  Pre p;
  uint64_t k = uint64_t(pc.k);
  p.ok = (pc.flags & 8u) != 0u && uint64_t(l) < m.shorts * k;
  p.row = 0ul; p.rb = 0ul; p.re = 0ul; p.c = 0ul; p.j0 = 0ul; p.j1 = 0ul; p.e0 = 0ul; p.e1 = 0ul;
  p.dvi = -1l;
  p.bv = REAL(0.0);
  p.dv = REAL(0.0);
  if (p.ok) {
    uint64_t q = uint64_t(l) / k;
    p.c = uint64_t(l) - q * k;
    uint64_t pos = m.pb + q;
    p.row = uint64_t(csr_at(pc.recs, 4ul * pos));
    p.rb = uint64_t(csr_at(pc.recs, 4ul * pos + 1ul));
    p.re = uint64_t(csr_at(pc.recs, 4ul * pos + 2ul));
    p.dvi = csr_at(pc.recs, 4ul * pos + 3ul);
  }
  return p;
}

void stage_b(inout Pre p) {
  if (!p.ok) return;
  p.bv = lde(pc.b, p.row * uint64_t(pc.k) + p.c);
  if (p.dvi >= 0l) p.dv = lde(pc.values, uint64_t(p.dvi));
  if (p.rb < p.re) {
    p.j0 = uint64_t(csr_at(pc.col, p.rb));
    p.e0 = pc.perm != 0ul ? uint64_t(csr_at(pc.perm, p.rb)) : p.rb;
  }
  if (p.rb + 1ul < p.re) {
    p.j1 = uint64_t(csr_at(pc.col, p.rb + 1ul));
    p.e1 = pc.perm != 0ul ? uint64_t(csr_at(pc.perm, p.rb + 1ul)) : p.rb + 1ul;
  }
}

// The short row's formula, as step1 computes it.
void finish_pre(Pre p) {
  uint64_t k = uint64_t(pc.k);
  REAL s = REAL(0.0);
  if (p.rb < p.re) s = xadd(s, xmul(lde(pc.values, p.e0), ldx(p.j0 * k + p.c)));
  if (p.rb + 1ul < p.re) s = xadd(s, xmul(lde(pc.values, p.e1), ldx(p.j1 * k + p.c)));
  for (uint64_t e = p.rb + 2ul; e < p.re; ++e) {
    uint64_t j = uint64_t(csr_at(pc.col, e));
    s = xadd(s, xmul(csr_value(pc.values, pc.perm, e), ldx(j * k + p.c)));
  }
  s = plus_zero(s);
  uint64_t at = p.row * k + p.c;
  REAL r = xsub(p.bv, s);
  if ((pc.flags & 1u) == 0u) r = xdiv(r, p.dvi >= 0l ? p.dv : REAL(0.0));
  stx(at, r);
}
#endif

void main() {
#if RUN
  uint l = gl_LocalInvocationID.x;
  Meta m0 = meta(pc.begin), m1 = meta(pc.begin + 1ul), m2 = meta(pc.begin + 2ul);
  Pre p0 = rec_load(m0, l), p1 = rec_load(m1, l);
  stage_b(p0);
  for (uint64_t lev = pc.begin; lev < pc.end; ++lev) {
    // Ahead: nothing here reads x.
    Meta m3 = meta(lev + 3ul);
    Pre p2 = rec_load(m2, l);
    stage_b(p1);
    for (uint64_t g = uint64_t(l); g < m0.items; g += uint64_t(RUN)) {
      if (g == uint64_t(l) && p0.ok) finish_pre(p0);
      else step1(lev, g, m0.shorts, m0.chunk0);
    }
    // This step's writes (x, partial) before the next step reads them.
    memoryBarrierBuffer();
    barrier();
    if (m0.longs != 0ul) {  // the same value in every invocation
      uint64_t items2 = m0.longs * uint64_t(pc.k);
      for (uint64_t g = uint64_t(l); g < items2; g += uint64_t(RUN)) step2(lev, g);
      memoryBarrierBuffer();
      barrier();
    }
    m0 = m1;
    m1 = m2;
    m2 = m3;
    p0 = p1;
    p1 = p2;
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
