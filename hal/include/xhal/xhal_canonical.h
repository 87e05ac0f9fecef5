/* xhal_canonical.h: the canonical float32 pieces of docs/semantics.md
 * (section 2 xhal_exp, section 3 the sum orders) as plain scalar code, for a
 * plugin author who needs to see which bits a bit-exact backend must give.
 *
 * Header-only, C99 and C++ (every function is static inline, no allocation,
 * no libm beyond what the sections name), installed with the plugin SDK as
 * <xhal/xhal_canonical.h>. It is a debugging aid and a building block, not
 * part of the plugin ABI: nothing here crosses a library boundary.
 *
 * Build what includes it WITHOUT floating-point contraction
 * (-ffp-contract=off; xhal_add_plugin and xhal-plugin.pc pass it): every
 * `a * b + c` below must be a multiply and an add, each correctly rounded,
 * never one FMA. Subnormals must not be flushed (no -ffast-math, no FTZ/DAZ).
 *
 * The conformance suite's own canonical reference (conformance/reference/,
 * installed under share/doc/xhal/conformance) is a separate implementation of
 * the same text; the ctest sdk.canonical_header checks that this header gives
 * the cpu plugin's bits, through the public API, on a few hundred rows.
 *
 * float32 only: the float64 forms (the same orders in binary64, xhal_exp64)
 * are in the suite's reference so far.
 *
 * Typical use while debugging a bit-exact failure of a row op: compute the
 * row here, compare with the device's output, and look at the first element
 * that differs (a wrong lane order changes the sum of a row longer than 128
 * elements; a fused multiply-add changes xhal_exp in the last bit).
 */
#ifndef XHAL_XHAL_CANONICAL_H_
#define XHAL_XHAL_CANONICAL_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Constants of section 3. */
#define XHAL_CANON_ROWSUM_LANES 128u  /* 3.2: lanes of a chunk */
#define XHAL_CANON_ROWSUM_STEPS 8u    /* 3.2: elements per lane per chunk */
#define XHAL_CANON_ROWSUM_CHUNK 1024u /* 3.2: K = lanes * steps */
#define XHAL_CANON_COLSUM_BLOCK 32u   /* 3.5: R, rows per stage-1 block */
#define XHAL_CANON_SEGSUM_CHUNK 32u   /* 3.7: G, terms per sequential chunk */

static inline float xhal_canon_inf_(void) {
  const uint32_t bits = 0x7f800000u;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* 2^j for integer j in [-126, 127], built from its bits (exact). */
static inline float xhal_canon_pow2i(int j) {
  const uint32_t bits = (uint32_t)(j + 127) << 23;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* Section 1: max(a, b) is NaN if either is NaN, else the larger. */
static inline float xhal_canon_max(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? b : a;
}

/* Section 2: xhal_exp, one correctly rounded float operation at a time, in
 * the order written in docs/semantics.md. */
static inline float xhal_canon_exp(float x) {
  float t, k, r, p;
  int ki;
  if (x != x) return x;
  if (x > 0x1.62e42ep+6f) return xhal_canon_inf_();
  if (x < -0x1.9fe368p+6f) return 0.0f;
  t = x * 0x1.715476p+0f;      /* log2(e) */
  k = t + 0x1.8p23f;           /* round to nearest integer ... */
  k = k - 0x1.8p23f;           /* ... exactly */
  r = x - k * 0x1.62e400p-1f;  /* ln2_hi: k * ln2_hi is exact */
  r = r - k * 0x1.7f7d1cp-20f; /* ln2_lo */
  p = 0x1.687c02p-10f;         /* Horner, degree 6: multiply, then add */
  p = p * r + 0x1.123ba6p-7f;
  p = p * r + 0x1.555b5ap-5f;
  p = p * r + 0x1.55548ep-3f;
  p = p * r + 0x1.fffff8p-2f;
  p = p * r + 0x1.000000p+0f;
  p = p * r + 0x1.000000p+0f;
  ki = (int)k;
  if (ki > 127) return (p * xhal_canon_pow2i(127)) * xhal_canon_pow2i(ki - 127);
  if (ki < -126) return (p * xhal_canon_pow2i(-100)) * xhal_canon_pow2i(ki + 100);
  return p * xhal_canon_pow2i(ki);
}

/* Smallest power of two >= m (1 for m <= 1). */
static inline size_t xhal_canon_pow2_at_least_(size_t m) {
  size_t p = 1;
  while (p < m) p <<= 1;
  return p;
}

/* The pairwise tree of 3.1 over the leaves [lo, lo + width) of a list of m
 * values padded with +0: the same additions, in the same pairs, as the level
 * by level form `v'[i] = v[2i] + v[2i+1]` (a subtree is its two halves
 * added). width is a power of two. */
static inline float xhal_canon_tree_at_(const float* v, size_t m, size_t lo, size_t width) {
  if (width == 1) return lo < m ? v[lo] : 0.0f;
  return xhal_canon_tree_at_(v, m, lo, width / 2) +
         xhal_canon_tree_at_(v, m, lo + width / 2, width / 2);
}

/* 3.1: tree(v[0..m)); +0 for an empty list, v[0] itself for one value. */
static inline float xhal_canon_tree(const float* v, size_t m) {
  if (m == 0) return 0.0f;
  return xhal_canon_tree_at_(v, m, 0, xhal_canon_pow2_at_least_(m));
}

/* 3.2, one chunk: 128 lanes from +0, lane l adds x[c*1024 + t*128 + l] for
 * t = 0..7 (+0 past the end), then the tree of the 128 lanes. */
static inline float xhal_canon_rowsum_chunk_(const float* x, size_t n, size_t c) {
  float a[XHAL_CANON_ROWSUM_LANES];
  size_t l, t;
  for (l = 0; l < XHAL_CANON_ROWSUM_LANES; ++l) {
    a[l] = 0.0f;
    for (t = 0; t < XHAL_CANON_ROWSUM_STEPS; ++t) {
      const size_t i = c * XHAL_CANON_ROWSUM_CHUNK + t * XHAL_CANON_ROWSUM_LANES + l;
      a[l] = a[l] + (i < n ? x[i] : 0.0f);
    }
  }
  return xhal_canon_tree(a, XHAL_CANON_ROWSUM_LANES);
}

static inline float xhal_canon_rowsum_at_(const float* x, size_t n, size_t chunks, size_t lo,
                                          size_t width) {
  if (width == 1) return lo < chunks ? xhal_canon_rowsum_chunk_(x, n, lo) : 0.0f;
  return xhal_canon_rowsum_at_(x, n, chunks, lo, width / 2) +
         xhal_canon_rowsum_at_(x, n, chunks, lo + width / 2, width / 2);
}

/* 3.2: rowsum(x[0..n)) of a contiguous row (softmax backward, the norms). */
static inline float xhal_canon_rowsum(const float* x, size_t n) {
  const size_t chunks = (n + XHAL_CANON_ROWSUM_CHUNK - 1) / XHAL_CANON_ROWSUM_CHUNK;
  if (chunks == 0) return 0.0f;
  return xhal_canon_rowsum_at_(x, n, chunks, 0, xhal_canon_pow2_at_least_(chunks));
}

/* 3.7, one chunk: terms [32c, min(32c + 32, m)) added left to right from +0.
 * Term k is t[k * stride]. */
static inline float xhal_canon_segsum_chunk_(const float* t, size_t m, size_t stride, size_t c) {
  float s = 0.0f;
  size_t k;
  for (k = c * XHAL_CANON_SEGSUM_CHUNK; k < m && k < (c + 1) * XHAL_CANON_SEGSUM_CHUNK; ++k)
    s = s + t[k * stride];
  return s;
}

static inline float xhal_canon_segsum_at_(const float* t, size_t m, size_t stride, size_t chunks,
                                          size_t lo, size_t width) {
  if (width == 1) return lo < chunks ? xhal_canon_segsum_chunk_(t, m, stride, lo) : 0.0f;
  return xhal_canon_segsum_at_(t, m, stride, chunks, lo, width / 2) +
         xhal_canon_segsum_at_(t, m, stride, chunks, lo + width / 2, width / 2);
}

/* 3.7: segsum of the m terms t[0], t[stride], ..., t[(m-1)*stride], in that
 * order: chunks of 32 summed sequentially from +0, chunk sums by tree (3.1).
 * index_add: the terms of destination row r, column j are src[i][j] for the
 * sources i with idx[i] == r in ascending i (gather them first); a CSR row:
 * its entries' products in stored order. */
static inline float xhal_canon_segsum(const float* t, size_t m, size_t stride) {
  const size_t chunks = (m + XHAL_CANON_SEGSUM_CHUNK - 1) / XHAL_CANON_SEGSUM_CHUNK;
  if (chunks == 0) return 0.0f;
  return xhal_canon_segsum_at_(t, m, stride, chunks, 0, xhal_canon_pow2_at_least_(chunks));
}

/* 3.5: colsum of column j of terms[rows][n] (row-major): stage 1 sums blocks
 * of 32 rows in ascending order from +0, stage 2 is the tree of the block
 * sums. In 3.5's form that is a segsum down the column with G = R = 32. */
static inline float xhal_canon_colsum(const float* terms, size_t rows, size_t n, size_t j) {
  return xhal_canon_segsum(terms + j, rows, n);
}

/* 3.3: per-chunk statistics (m[c], s[c]) and their (+) operator. */
typedef struct xhal_canon_stat {
  float m, s;
} xhal_canon_stat;

static inline xhal_canon_stat xhal_canon_softmax_combine(xhal_canon_stat a, xhal_canon_stat b) {
  xhal_canon_stat out;
  out.m = xhal_canon_max(a.m, b.m);
  if (out.m == -xhal_canon_inf_()) {
    out.s = 0.0f;
  } else {
    const float left = a.s * xhal_canon_exp(a.m - out.m);
    const float right = b.s * xhal_canon_exp(b.m - out.m);
    out.s = left + right;
  }
  return out;
}

/* Chunk c's maximum (padding -inf) over x[0..n). */
static inline float xhal_canon_chunk_max_(const float* x, size_t n, size_t c) {
  float m = -xhal_canon_inf_();
  size_t i;
  for (i = c * XHAL_CANON_ROWSUM_CHUNK; i < n && i < (c + 1) * XHAL_CANON_ROWSUM_CHUNK; ++i)
    m = xhal_canon_max(m, x[i]);
  return m;
}

/* Chunk c's (m[c], s[c]) given its exponentials e (3.3: the lane/step order
 * of 3.2, a lane adds only real elements). */
static inline xhal_canon_stat xhal_canon_softmax_chunk_(const float* x, const float* e, size_t n,
                                                        size_t c) {
  float a[XHAL_CANON_ROWSUM_LANES];
  xhal_canon_stat st;
  size_t l, t;
  for (l = 0; l < XHAL_CANON_ROWSUM_LANES; ++l) {
    a[l] = 0.0f;
    for (t = 0; t < XHAL_CANON_ROWSUM_STEPS; ++t) {
      const size_t i = c * XHAL_CANON_ROWSUM_CHUNK + t * XHAL_CANON_ROWSUM_LANES + l;
      if (i < n) a[l] = a[l] + e[i];
    }
  }
  st.m = xhal_canon_chunk_max_(x, n, c);
  st.s = xhal_canon_tree(a, XHAL_CANON_ROWSUM_LANES);
  return st;
}

static inline xhal_canon_stat xhal_canon_softmax_at_(const float* x, const float* e, size_t n,
                                                     size_t chunks, size_t lo, size_t width) {
  if (width == 1) {
    if (lo < chunks) return xhal_canon_softmax_chunk_(x, e, n, lo);
    xhal_canon_stat pad;
    pad.m = -xhal_canon_inf_();
    pad.s = 0.0f;
    return pad;
  }
  return xhal_canon_softmax_combine(
      xhal_canon_softmax_at_(x, e, n, chunks, lo, width / 2),
      xhal_canon_softmax_at_(x, e, n, chunks, lo + width / 2, width / 2));
}

/* 3.3: softmax of one contiguous row x[0..n) into y[0..n) (y may not alias
 * x; it holds the exponentials e[i] until the last step). Returns the row's
 * (M, S). */
static inline xhal_canon_stat xhal_canon_softmax_row(const float* x, size_t n, float* y) {
  const size_t chunks = (n + XHAL_CANON_ROWSUM_CHUNK - 1) / XHAL_CANON_ROWSUM_CHUNK;
  xhal_canon_stat row;
  size_t c, i;
  row.m = -xhal_canon_inf_();
  row.s = 0.0f;
  if (chunks == 0) return row;
  for (c = 0; c < chunks; ++c) {
    const float m = xhal_canon_chunk_max_(x, n, c);
    for (i = c * XHAL_CANON_ROWSUM_CHUNK; i < n && i < (c + 1) * XHAL_CANON_ROWSUM_CHUNK; ++i)
      y[i] = m == -xhal_canon_inf_() ? 0.0f : xhal_canon_exp(x[i] - m);
  }
  row = xhal_canon_softmax_at_(x, y, n, chunks, 0, xhal_canon_pow2_at_least_(chunks));
  {
    const float inv = 1.0f / row.s;
    for (c = 0; c < chunks; ++c) {
      /* One scale per chunk; its outputs reuse the chunk's exponentials. */
      const float scale = xhal_canon_exp(xhal_canon_chunk_max_(x, n, c) - row.m) * inv;
      for (i = c * XHAL_CANON_ROWSUM_CHUNK; i < n && i < (c + 1) * XHAL_CANON_ROWSUM_CHUNK; ++i)
        y[i] = y[i] * scale;
    }
  }
  return row;
}

/* 3.3 backward for one row: d = rowsum(y[i] * dy[i]) (p is scratch of n
 * floats), dx[i] = y[i] * (dy[i] - d). */
static inline void xhal_canon_softmax_backward_row(const float* y, const float* dy, size_t n,
                                                   float* p, float* dx) {
  size_t i;
  float d;
  for (i = 0; i < n; ++i) p[i] = y[i] * dy[i];
  d = xhal_canon_rowsum(p, n);
  for (i = 0; i < n; ++i) dx[i] = y[i] * (dy[i] - d);
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* XHAL_XHAL_CANONICAL_H_ */
