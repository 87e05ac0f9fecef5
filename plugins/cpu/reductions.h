// The canonical sums of docs/semantics.md section 3 in vector form:
// rowsum (3.2), the softmax (m, s) statistics (3.3), the streaming pairwise
// tree (3.1) and xhal_exp (section 2). Each gives the bits of the scalar
// reference in canonical.h (checked by tests/dense_kernels_test.cpp). For
// the per-ISA builds only (see simd.h).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "simd.h"

namespace xhal::cpu::XHAL_CPU_ISA_NS {

constexpr int64_t kChunk = 1024;  // rowsum chunk: 128 lanes x 8 steps
constexpr int kChunkVectors = 128 / kLanes;

// ---- pairwise tree (3.1) over a stream of values --------------------------
// Values arrive left to right; equal-height subtrees merge as soon as they
// exist, so memory is O(log m). finish() pads with +0 to the next power of two.
struct TreeStream {
  float value[64];
  int height[64];
  int top = 0;

  void push(float x) {
    value[top] = x;
    height[top] = 0;
    ++top;
    collapse();
  }
  float finish() {
    if (top == 0) return 0.0f;
    while (top > 1) {
      value[top - 1] = value[top - 1] + 0.0f;  // right sibling is all padding
      ++height[top - 1];
      collapse();
    }
    return value[0];
  }

 private:
  void collapse() {
    while (top >= 2 && height[top - 1] == height[top - 2]) {
      value[top - 2] = value[top - 2] + value[top - 1];
      ++height[top - 2];
      --top;
    }
  }
};

// ---- tree of the 128 lanes of one chunk -----------------------------------
// __builtin_shufflevector (gcc >= 12 and clang) takes the lane indices as
// constant arguments, hence the index pack; lanes 0..L-1 are a, L..2L-1 b.
template <size_t... P>
XHAL_CPU_INLINE V pair_sums_lanes(V a, V b, std::index_sequence<P...>) {
  return __builtin_shufflevector(a, b, static_cast<int>(2 * P)...) +
         __builtin_shufflevector(a, b, static_cast<int>(2 * P + 1)...);
}

XHAL_CPU_INLINE V pair_sums(V a, V b) {  // [a0+a1, a2+a3, ..., b(L-2)+b(L-1)]
  return pair_sums_lanes(a, b, std::make_index_sequence<kLanes>{});
}

// tree (3.1) of the 128 lanes held as kChunkVectors vectors, in lane order:
// each level of pair sums halves the vectors and keeps the order.
XHAL_CPU_INLINE float tree128(const V acc[kChunkVectors]) {
  V level[kChunkVectors];
  for (int i = 0; i < kChunkVectors; ++i) level[i] = acc[i];
  for (int count = kChunkVectors; count > 1; count /= 2)
    for (int i = 0; i < count / 2; ++i) level[i] = pair_sums(level[2 * i], level[2 * i + 1]);
  float s[kLanes];
  store(s, level[0]);
  for (int w = kLanes; w > 1; w >>= 1)
    for (int i = 0; i < w / 2; ++i) s[i] = s[2 * i] + s[2 * i + 1];
  return s[0];
}

// ---- rowsum (3.2) of term(i), i in [0, n) ---------------------------------
// vec(i): the 16 terms i..i+15 (all < n); one(i): the single term i.
template <class Vec, class One>
XHAL_CPU_INLINE float rowsum(int64_t n, Vec&& vec, One&& one) {
  TreeStream chunks;
  const int64_t full = n / kChunk;
  for (int64_t c = 0; c < full; ++c) {
    const int64_t base = c * kChunk;
    V acc[kChunkVectors];
    for (int v = 0; v < kChunkVectors; ++v) acc[v] = vec(base + v * kLanes);
    // a starts at +0: +0 + t == t bit for bit unless t is -0 (then +0).
    for (int v = 0; v < kChunkVectors; ++v) acc[v] = splat(0.0f) + acc[v];
    for (int t = 1; t < 8; ++t)
      for (int v = 0; v < kChunkVectors; ++v) acc[v] = acc[v] + vec(base + t * 128 + v * kLanes);
    chunks.push(tree128(acc));
  }
  if (full * kChunk < n) {  // last, partial chunk: lanes add only real terms
    const int64_t base = full * kChunk;
    alignas(64) float lane[128];
    for (int l = 0; l < 128; ++l) lane[l] = 0.0f;
    for (int t = 0; t < 8; ++t)
      for (int l = 0; l < 128; ++l) {
        const int64_t i = base + t * 128 + l;
        if (i < n) lane[l] = lane[l] + one(i);
      }
    V acc[kChunkVectors];
    for (int v = 0; v < kChunkVectors; ++v) acc[v] = load(lane + v * kLanes);
    chunks.push(tree128(acc));
  }
  return chunks.finish();
}

// Two rowsums of the same length in one pass (each in its own canonical
// order): vec(i) and one(i) return a pair of terms.
struct V2 {
  V a, b;
};
struct F2 {
  float a, b;
};
template <class Vec, class One>
XHAL_CPU_INLINE F2 rowsum2(int64_t n, Vec&& vec, One&& one) {
  TreeStream chunks_a, chunks_b;
  const int64_t full = n / kChunk;
  for (int64_t c = 0; c < full; ++c) {
    const int64_t base = c * kChunk;
    V acc_a[kChunkVectors], acc_b[kChunkVectors];
    for (int v = 0; v < kChunkVectors; ++v) {
      const V2 t = vec(base + v * kLanes);
      acc_a[v] = splat(0.0f) + t.a;
      acc_b[v] = splat(0.0f) + t.b;
    }
    for (int t = 1; t < 8; ++t)
      for (int v = 0; v < kChunkVectors; ++v) {
        const V2 term = vec(base + t * 128 + v * kLanes);
        acc_a[v] = acc_a[v] + term.a;
        acc_b[v] = acc_b[v] + term.b;
      }
    chunks_a.push(tree128(acc_a));
    chunks_b.push(tree128(acc_b));
  }
  if (full * kChunk < n) {
    const int64_t base = full * kChunk;
    alignas(64) float lane_a[128], lane_b[128];
    for (int l = 0; l < 128; ++l) lane_a[l] = lane_b[l] = 0.0f;
    for (int t = 0; t < 8; ++t)
      for (int l = 0; l < 128; ++l) {
        const int64_t i = base + t * 128 + l;
        if (i < n) {
          const F2 term = one(i);
          lane_a[l] = lane_a[l] + term.a;
          lane_b[l] = lane_b[l] + term.b;
        }
      }
    V acc_a[kChunkVectors], acc_b[kChunkVectors];
    for (int v = 0; v < kChunkVectors; ++v) {
      acc_a[v] = load(lane_a + v * kLanes);
      acc_b[v] = load(lane_b + v * kLanes);
    }
    chunks_a.push(tree128(acc_a));
    chunks_b.push(tree128(acc_b));
  }
  return {chunks_a.finish(), chunks_b.finish()};
}

// ---- xhal_exp (section 2), 16 lanes ----------------------------------------
// The general form: every lane, every range.
XHAL_CPU_INLINE V exp_v_general(V x) {
  const VI too_big = x > 0x1.62e42ep+6f;
  const VI too_small = x < -0x1.9fe368p+6f;
  const VI is_nan = x != x;
  // Out-of-range lanes compute on 0 (their result is replaced below).
  const V xc = select(too_big | too_small | is_nan, splat(0.0f), x);
  const V t = xc * 0x1.715476p+0f;
  const V k = (t + 0x1.8p23f) - 0x1.8p23f;
  V r = xc - k * 0x1.62e400p-1f;
  r = r - k * 0x1.7f7d1cp-20f;
  V p = splat(0x1.687c02p-10f);
  p = p * r + 0x1.123ba6p-7f;
  p = p * r + 0x1.555b5ap-5f;
  p = p * r + 0x1.55548ep-3f;
  p = p * r + 0x1.fffff8p-2f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const VI ki = __builtin_convertvector(k, VI);
  const VI high = ki > 127;
  const VI low = ki < -126;
  // (p * s1) * 2^j with s1 = 1 in the normal range: p * 1 is exact.
  const V s1 = select(high, splat(0x1p127f), select(low, splat(0x1p-100f), splat(1.0f)));
  const VI j = high ? ki - 127 : (low ? ki + 100 : ki);
  V s2;
  const VI bits = (j + 127) << 23;
  std::memcpy(&s2, &bits, sizeof s2);
  V y = (p * s1) * s2;
  y = select(too_big, splat(INFINITY), y);
  y = select(too_small, splat(0.0f), y);
  return select(is_nan, x, y);
}

// Fast path when every lane lies in [-87, 88]: then k is in [-126, 127],
// no range fix-up applies and the result is p * 2^k, the same bits as the
// general form (whose (p * 1) * 2^k is that product).
XHAL_CPU_INLINE V exp_v_inside(V x) {  // every lane known to be in [-87, 88]
  const V t = x * 0x1.715476p+0f;
  const V shifted = t + 0x1.8p23f;  // k in the low mantissa bits: 0x4b400000 + k
  const V k = shifted - 0x1.8p23f;
  V r = x - k * 0x1.62e400p-1f;
  r = r - k * 0x1.7f7d1cp-20f;
  V p = splat(0x1.687c02p-10f);
  p = p * r + 0x1.123ba6p-7f;
  p = p * r + 0x1.555b5ap-5f;
  p = p * r + 0x1.55548ep-3f;
  p = p * r + 0x1.fffff8p-2f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^k from the bits of `shifted`: (0x4b400000 + k) << 23 wraps to k << 23
  // (0x4b400000 << 23 is 0 mod 2^32), so no float-to-int conversion.
  VI bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  bits = (bits << 23) + (127 << 23);
  V scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

XHAL_CPU_INLINE V exp_v(V x) {
  const VI outside = (x < -87.0f) | (x > 88.0f) | (x != x);
  uint64_t words[sizeof(VI) / 8];
  std::memcpy(words, &outside, sizeof words);
  uint64_t any = 0;
  for (uint64_t w : words) any |= w;
  if (__builtin_expect(any != 0, 0)) return exp_v_general(x);
  return exp_v_inside(x);
}

// xhal_exp of one float: lane 0 of the vector form (same bits by construction).
XHAL_CPU_INLINE float exp1(float x) {
  float out[kLanes];
  store(out, exp_v(splat(x)));
  return out[0];
}

// ---- softmax statistics (3.3) ---------------------------------------------
struct MaxSum {
  float m, s;
};

XHAL_CPU_INLINE MaxSum combine(MaxSum a, MaxSum b) {
  const float m = nan_max(a.m, b.m);
  if (m == -INFINITY) return {m, 0.0f};
  return {m, a.s * exp1(a.m - m) + b.s * exp1(b.m - m)};
}

// Tree of (m, s) pairs; the padding (-inf, +0) is the identity, so the
// leftover subtrees simply merge right to left.
struct MaxSumTree {
  MaxSum value[64];
  int height[64];
  int top = 0;
  void push(MaxSum x) {
    value[top] = x;
    height[top] = 0;
    ++top;
    while (top >= 2 && height[top - 1] == height[top - 2]) {
      value[top - 2] = combine(value[top - 2], value[top - 1]);
      ++height[top - 2];
      --top;
    }
  }
  MaxSum finish() {
    if (top == 0) return {-INFINITY, 0.0f};
    while (top > 1) {
      value[top - 2] = combine(value[top - 2], value[top - 1]);
      --top;
    }
    return value[0];
  }
};

// Lane-wise NaN-propagating max, reduced to one float.
XHAL_CPU_INLINE float max_of(V v) {
  float s[kLanes];
  store(s, v);
  float m = s[0];
  for (int i = 1; i < kLanes; ++i) m = nan_max(m, s[i]);
  return m;
}

XHAL_CPU_INLINE V nan_max_v(V a, V b) {
  const V larger = select(a > b, a, b);
  return select(a != a, a, select(b != b, b, larger));
}

}  // namespace xhal::cpu::XHAL_CPU_ISA_NS
