// The per-ISA inner loops of the data-movement ops (index_add's segsum,
// index_select's row copy, permute's tile transpose); isa_rows.cpp holds the
// row ops and the table. Built once per ISA like it.
#include <cmath>
#include <cstring>
#include <utility>

#include "isa_kernels.h"
#include "isa_moves.h"
#include "reductions.h"
#include "simd.h"

namespace xhal::cpu::XHAL_CPU_ISA_NS {

// ---- index_add: segsum (3.7) across a tile of columns ------------------------
// The pairwise tree (3.1) over chunk sums, kept as a stack of column tiles.
class ColumnTree {
 public:
  explicit ColumnTree(float* storage) : slot_(storage) {}
  float* next_slot() { return slot_ + top_ * kIndexTile; }
  void push_filled(int64_t width) {
    height_[top_++] = 0;
    collapse(width);
  }
  // Root of what was pushed, padded with +0 up to at least `height`.
  const float* finish(int64_t width, int height) {
    while (top_ > 1) {
      pad_top(width);
      collapse(width);
    }
    while (height_[0] < height) pad_top(width);
    return slot_;
  }

 private:
  void pad_top(int64_t width) {
    float* v = slot_ + (top_ - 1) * kIndexTile;
    for (int64_t j = 0; j < width; ++j) v[j] = v[j] + 0.0f;
    ++height_[top_ - 1];
  }
  void collapse(int64_t width) {
    while (top_ >= 2 && height_[top_ - 1] == height_[top_ - 2]) {
      float* left = slot_ + (top_ - 2) * kIndexTile;
      const float* right = slot_ + (top_ - 1) * kIndexTile;
      for (int64_t j = 0; j < width; ++j) left[j] = left[j] + right[j];
      ++height_[top_ - 2];
      --top_;
    }
  }
  float* slot_;
  int height_[kIndexTreeDepth];
  int top_ = 0;
};

// Asks for the cache lines of [p, p + count) ahead of use.
XHAL_CPU_INLINE void prefetch_floats(const float* p, int64_t count) {
  for (int64_t i = 0; i < count; i += 16) __builtin_prefetch(p + i);
}

void segsum_chunks(const float* src, int64_t w, const int64_t* sources, int64_t m, int64_t c0,
                   int64_t c1, int height, int64_t j0, int64_t width, float* stack, float* out) {
  if (c1 - c0 == 1 && height == 0) {  // one chunk (a row with <= 32 sources): no tree
    const int64_t end = c1 * 32 < m ? c1 * 32 : m;
    for (int64_t j = 0; j < width; ++j) out[j] = 0.0f;
    for (int64_t k = c0 * 32; k < end; ++k) {
      if (k + 2 < end) prefetch_floats(src + sources[k + 2] * w + j0, width);
      const float* row = src + sources[k] * w + j0;
      for (int64_t j = 0; j < width; ++j) out[j] = out[j] + row[j];
    }
    return;
  }
  ColumnTree tree(stack);
  for (int64_t c = c0; c < c1; ++c) {
    float* acc = tree.next_slot();
    for (int64_t j = 0; j < width; ++j) acc[j] = 0.0f;
    const int64_t end = (c + 1) * 32 < m ? (c + 1) * 32 : m;
    for (int64_t k = c * 32; k < end; ++k) {
      if (k + 4 < m) prefetch_floats(src + sources[k + 4] * w + j0, width);
      const float* row = src + sources[k] * w + j0;
      for (int64_t j = 0; j < width; ++j) acc[j] = acc[j] + row[j];
    }
    tree.push_filled(width);
  }
  const float* root = tree.finish(width, height);
  std::memcpy(out, root, static_cast<size_t>(width) * sizeof(float));
}

// A destination row with 1..32 sources (one segsum chunk): the sum from +0
// in source order and dst + alpha * sum, in registers, column block by block.
void add_small_row(float* dst, const float* src, int64_t w, const int64_t* sources, int64_t m,
                   float alpha) {
  const V av = splat(alpha);
  int64_t j = 0;
  for (; j + kLanes <= w; j += kLanes) {
    V acc = splat(0.0f) + load(src + sources[0] * w + j);
    for (int64_t k = 1; k < m; ++k) acc = acc + load(src + sources[k] * w + j);
    store(dst + j, load(dst + j) + av * acc);
  }
  for (; j < w; ++j) {
    float acc = 0.0f + src[sources[0] * w + j];
    for (int64_t k = 1; k < m; ++k) acc = acc + src[sources[k] * w + j];
    dst[j] = dst[j] + alpha * acc;
  }
}

void axpy(float* dst, const float* t, float alpha, int64_t width) {
  for (int64_t j = 0; j < width; ++j) dst[j] = dst[j] + alpha * t[j];
}

void add_rows(float* dst, const float* a, const float* b, int64_t width) {
  if (b == nullptr) {
    for (int64_t j = 0; j < width; ++j) dst[j] = a[j] + 0.0f;
  } else {
    for (int64_t j = 0; j < width; ++j) dst[j] = a[j] + b[j];
  }
}

// ---- index_select: one row, whole vectors with streaming stores --------------
void copy_row(std::byte* dst, const std::byte* src, uint64_t bytes, bool stream) {
  if (!stream || (reinterpret_cast<uintptr_t>(dst) % sizeof(V)) != 0 || bytes % sizeof(V) != 0) {
    std::memcpy(dst, src, bytes);
    return;
  }
  for (uint64_t i = 0; i < bytes; i += sizeof(V)) {
    V v;
    std::memcpy(&v, src + i, sizeof(V));
    store_stream(reinterpret_cast<float*>(dst + i), v);
  }
}

// ---- permute: f32 tile transpose with L x L register blocks -----------------
// L = the ISA's vector width in floats: each block reads L full source
// vectors and writes L full destination vectors (a whole cache line each
// with AVX-512), so a tile is read and written once, line by line.
// kT and VT: isa_moves.h.

// Stage h of the butterfly: rows i and i + h swap their h-wide halves of
// every 2h-wide segment. After h = L/2, ..., 1 the block is transposed.
// Lane p of the new row i (high = false) or i + h (high = true): lanes
// 0..L-1 index row i, L..2L-1 row i + h.
constexpr int32_t butterfly_lane(int h, bool high, int p) {
  const int seg = p / (2 * h), q = p % (2 * h), base = seg * 2 * h + (high ? h : 0);
  return q < h ? base + q : kT + base + (q - h);
}
// One butterfly step on a row pair; the lane indices are constant arguments
// of __builtin_shufflevector (gcc >= 12 and clang).
template <int H, size_t... P>
XHAL_CPU_INLINE void butterfly_pair(VT& row_lo, VT& row_hi, std::index_sequence<P...>) {
  const VT a = row_lo, b = row_hi;
  row_lo = __builtin_shufflevector(a, b, butterfly_lane(H, false, static_cast<int>(P))...);
  row_hi = __builtin_shufflevector(a, b, butterfly_lane(H, true, static_cast<int>(P))...);
}

template <int H>
XHAL_CPU_INLINE void butterfly(VT* rows) {
  for (int i = 0; i < kT; ++i)
    if ((i & H) == 0) butterfly_pair<H>(rows[i], rows[i + H], std::make_index_sequence<kT>{});
  if constexpr (H > 1) butterfly<H / 2>(rows);
}

XHAL_CPU_INLINE void store_vt(float* p, VT v, bool stream) {
#if defined(__AVX512F__)
  if (stream) {
    __m512 m;
    std::memcpy(&m, &v, sizeof m);
    _mm512_stream_ps(p, m);
    return;
  }
#elif defined(__AVX__)
  if (stream) {
    __m256 m;
    std::memcpy(&m, &v, sizeof m);
    _mm256_stream_ps(p, m);
    return;
  }
#elif defined(__SSE2__)
  if (stream) {
    __m128 m;
    std::memcpy(&m, &v, sizeof m);
    _mm_stream_ps(p, m);
    return;
  }
#endif
  std::memcpy(p, &v, sizeof v);
}

// stream: dst and dst_a are aligned to the vector width (checked by the caller).
void transpose_tile_f32(const float* src, float* dst, int64_t src_b, int64_t dst_a, int64_t a_len,
                        int64_t b_len, bool stream) {
  const int64_t aL = a_len - a_len % kT, bL = b_len - b_len % kT;
  for (int64_t a = 0; a < aL; a += kT)
    for (int64_t b = 0; b < bL; b += kT) {
      // rows[k] = src[a .. a+L) of column b + k; after the butterfly
      // rows[i] = element i of every column = dst row a + i.
      VT rows[kT];
      for (int k = 0; k < kT; ++k) std::memcpy(&rows[k], src + a + (b + k) * src_b, sizeof(VT));
      butterfly<kT / 2>(rows);
      for (int i = 0; i < kT; ++i) store_vt(dst + (a + i) * dst_a + b, rows[i], stream);
    }
  for (int64_t a = 0; a < a_len; ++a)  // ragged edges
    for (int64_t b = (a < aL ? bL : 0); b < b_len; ++b) dst[a * dst_a + b] = src[a + b * src_b];
}

}  // namespace xhal::cpu::XHAL_CPU_ISA_NS
