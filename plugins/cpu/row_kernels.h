// The row ops of docs/semantics.md 3.2-3.6 as one source templated on the
// element type T (float or double): the rowsum lanes and chunk tree, the
// softmax (m, s) tree, RMSNorm and LayerNorm rows and their colsum stage-1
// partials, every operation one rounded T operation in the canonical order
// (7.3: f64 is the same order in binary64, exp is xhal_exp64). The plugin
// runs the f64 ops through these; the f32 ops run the per-ISA vector loops
// of isa_rows.cpp, which tests/cpu_kernels/dense_kernels_test.cpp checks
// bit for bit against the float instantiation of this file.
//
// Loops over the 128 lanes are plain element-wise adds, which the compiler
// vectorises without reassociating (built with -ffp-contract=off, no
// -ffast-math).
#pragma once

#include <cmath>
#include <cstdint>

#include "canonical.h"

namespace xhal::cpu::rows {

constexpr int64_t kLanes = 128;  // 3.2
constexpr int64_t kSteps = 8;
constexpr int64_t kChunk = kLanes * kSteps;

// The pairwise tree (3.1) over values that arrive left to right; equal-height
// subtrees merge as soon as they exist. finish() pads with +0.
template <class T>
struct TreeStream {
  T value[64];
  int height[64];
  int top = 0;
  void push(T x) {
    value[top] = x;
    height[top] = 0;
    ++top;
    collapse();
  }
  T finish() {
    if (top == 0) return T(0);
    while (top > 1) {
      value[top - 1] = value[top - 1] + T(0);  // right sibling is all padding
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

// rowsum (3.2) of term(i), i in [0, n).
template <class T, class Term>
inline T rowsum(int64_t n, Term&& term) {
  TreeStream<T> chunks;
  for (int64_t base = 0; base < n; base += kChunk) {
    alignas(64) T a[2 * kLanes];  // room for tree_sum's (absent) padding
    for (int64_t l = 0; l < kLanes; ++l) a[l] = T(0);
    if (base + kChunk <= n) {
      for (int64_t t = 0; t < kSteps; ++t)
        for (int64_t l = 0; l < kLanes; ++l) a[l] = a[l] + term(base + t * kLanes + l);
    } else {  // partial chunk: a lane adds only real terms
      for (int64_t t = 0; t < kSteps; ++t)
        for (int64_t l = 0; l < kLanes; ++l)
          if (base + t * kLanes + l < n) a[l] = a[l] + term(base + t * kLanes + l);
    }
    chunks.push(tree_sum(a, kLanes));
  }
  return chunks.finish();
}

template <class T>
inline T nan_max(T a, T b) {  // section 1
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}

// ---- softmax (3.3) ---------------------------------------------------------
template <class T>
struct MaxSum {
  T m, s;
};

template <class T>
inline MaxSum<T> combine(MaxSum<T> a, MaxSum<T> b) {
  const T m = nan_max(a.m, b.m);
  if (m == -INFINITY) return {m, T(0)};
  return {m, a.s * canonical_exp_of(a.m - m) + b.s * canonical_exp_of(b.m - m)};
}

// Tree of (m, s); the padding (-inf, +0) is the identity, so the leftover
// subtrees merge right to left.
template <class T>
struct MaxSumTree {
  MaxSum<T> value[64];
  int height[64];
  int top = 0;
  void push(MaxSum<T> x) {
    value[top] = x;
    height[top] = 0;
    ++top;
    while (top >= 2 && height[top - 1] == height[top - 2]) {
      value[top - 2] = combine(value[top - 2], value[top - 1]);
      ++height[top - 2];
      --top;
    }
  }
  MaxSum<T> finish() {
    if (top == 0) return {-INFINITY, T(0)};
    while (top > 1) {
      value[top - 2] = combine(value[top - 2], value[top - 1]);
      --top;
    }
    return value[0];
  }
};

// scratch: n + ceil(n / 1024) elements (the exponentials, then chunk maxima).
template <class T>
void softmax_row(const T* x, T* y, int64_t n, T* scratch, bool /*stream*/) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  T* e = scratch;
  T* chunk_max = scratch + n;
  MaxSumTree<T> tree;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunk;
    const int64_t len = begin + kChunk <= n ? kChunk : n - begin;
    T m = -INFINITY;
    for (int64_t i = begin; i < begin + len; ++i) m = nan_max(m, x[i]);
    alignas(64) T a[2 * kLanes];
    for (int64_t l = 0; l < kLanes; ++l) a[l] = T(0);
    if (m == -INFINITY) {
      for (int64_t i = begin; i < begin + len; ++i) e[i] = T(0);
    } else {
      for (int64_t i = begin; i < begin + len; ++i) e[i] = canonical_exp_of(x[i] - m);
      for (int64_t t = 0; t * kLanes < len; ++t)
        for (int64_t l = 0; l < kLanes && t * kLanes + l < len; ++l)
          a[l] = a[l] + e[begin + t * kLanes + l];
    }
    chunk_max[c] = m;
    tree.push({m, m == -INFINITY ? T(0) : tree_sum(a, kLanes)});
  }
  const MaxSum<T> row = tree.finish();
  const T inv = T(1) / row.s;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunk;
    const int64_t end = begin + kChunk <= n ? begin + kChunk : n;
    const T scale = canonical_exp_of(chunk_max[c] - row.m) * inv;
    for (int64_t i = begin; i < end; ++i) y[i] = e[i] * scale;
  }
}

template <class T>
void softmax_backward_row(const T* y, const T* dy, T* dx, int64_t n, bool /*stream*/) {
  const T d = rowsum<T>(n, [&](int64_t i) { return y[i] * dy[i]; });
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] * (dy[i] - d);
}

// ---- RMSNorm (3.4) -----------------------------------------------------------
template <class T>
T rms_norm_row(const T* x, const T* gamma, T eps, T* y, int64_t n, bool /*stream*/) {
  const T ms = rowsum<T>(n, [&](int64_t i) { return x[i] * x[i]; }) / static_cast<T>(n);
  const T rstd = T(1) / std::sqrt(ms + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * rstd) * gamma[i];
  return rstd;
}

// Also adds dy * xh into the 32-row block partial p (colsum stage 1).
template <class T>
void rms_norm_backward_row(const T* x, const T* gamma, T rstd, const T* dy, T* dx, T* p, int64_t n,
                           bool /*stream*/) {
  const T c = rowsum<T>(n, [&](int64_t i) { return (dy[i] * gamma[i]) * (x[i] * rstd); }) /
              static_cast<T>(n);
  for (int64_t i = 0; i < n; ++i) {
    const T xh = x[i] * rstd;
    const T g = dy[i] * gamma[i];
    p[i] = p[i] + dy[i] * xh;
    dx[i] = (g - xh * c) * rstd;
  }
}

// ---- LayerNorm (3.6) ---------------------------------------------------------
template <class T>
void layer_norm_row(const T* x, const T* gamma, const T* beta, T eps, T* y, int64_t n, T* mean_out,
                    T* rstd_out, bool /*stream*/) {
  const T nf = static_cast<T>(n);
  const T mean = rowsum<T>(n, [&](int64_t i) { return x[i]; }) / nf;
  const T var = rowsum<T>(n,
                          [&](int64_t i) {
                            const T d = x[i] - mean;
                            return d * d;
                          }) /
                nf;
  const T rstd = T(1) / std::sqrt(var + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = ((x[i] - mean) * rstd) * gamma[i] + beta[i];
  *mean_out = mean;
  *rstd_out = rstd;
}

template <class T>
void layer_norm_backward_row(const T* x, const T* gamma, T mean, T rstd, const T* dy, T* dx, T* pg,
                             T* pb, int64_t n, bool /*stream*/) {
  const T nf = static_cast<T>(n);
  const T a = rowsum<T>(n, [&](int64_t i) { return dy[i] * gamma[i]; }) / nf;
  const T b =
      rowsum<T>(n, [&](int64_t i) { return (dy[i] * gamma[i]) * ((x[i] - mean) * rstd); }) / nf;
  for (int64_t i = 0; i < n; ++i) {
    const T xh = (x[i] - mean) * rstd;
    const T d = dy[i];
    const T g = d * gamma[i];
    pg[i] = pg[i] + d * xh;
    pb[i] = pb[i] + d;
    dx[i] = ((g - a) - xh * b) * rstd;
  }
}

}  // namespace xhal::cpu::rows
