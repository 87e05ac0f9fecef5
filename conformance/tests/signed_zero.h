// Inputs whose canonical sums have only -0 terms (the *SignedZero* tests of
// index_test, softmax_test, norm_test and narrow_test).
//
// A canonical sum starts every lane, segsum chunk and colsum block from +0
// (docs/semantics.md 3.1-3.7), so under round-to-nearest it is never -0:
// +0 + -0 = +0. A backend whose sum starts from -0, or whose compiler folds
// `0 + t` into `t` (lavapipe did so in the solve, docs/vulkan.md), gives the
// same bits for every sum but one whose terms are all -0: that one comes out
// -0. These inputs make such sums and route their sign into an output:
//
// - index_add: dst + alpha * (+0) keeps a -0 dst at -0 only for alpha < 0,
//   so dst -0 shows the sign for both signs of alpha (dst +0 never does);
//   alpha = -0 makes alpha * T -0 for T > 0, which a -0 dst keeps.
// - softmax backward: dx = y * (dy - d) with dy = -0 is -0 for d = +0, +0
//   for d = -0 (y > 0).
// - LayerNorm forward: the saved mean itself; y = (x - mean) * rstd *
//   gamma + beta with x = -0 shows it where beta = -0.
// - LayerNorm backward: a = rowsum(g) / n where every g = dy * gamma is -0,
//   and b = rowsum(g * xh) / n where every g * xh is -0; both reach dx =
//   ((g - a) - xh * b) * rstd where g is -0 and xh > 0; dbeta = colsum(dy)
//   and dgamma = colsum(dy * xh) where a whole column's terms are -0.
// - RMSNorm backward: c = rowsum(g * xh) / n the same way, dgamma likewise.
//   RMSNorm forward has no such sum: its terms x * x are never -0.
//
// A tree pads with +0 to a power of two (3.1), and -0 + +0 = +0, so a -0
// partial survives only where the number of chunks (or blocks) is a power
// of two: the lengths below mix both kinds.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "check.h"

namespace xhal::conf::signed_zero {

// Row lengths of the row ops: one term; one partial 1024-chunk (31, 33:
// either side of a 32-wide warp); one full chunk; two chunks (one partial,
// then both full); five chunks (padded to eight: a -0 chunk partial is lost
// there, the lanes' sums still show); 64 full chunks (a row past 32768).
inline constexpr int64_t kRowLengths[] = {1, 31, 33, 1024, 1025, 2048, 5000, 65536};

// (rows, n) of the norm backward tests: the row lengths above, with row
// counts of 1, 2 and 4 32-row colsum blocks (33: a partial second block).
struct RowsN {
  int64_t rows, n;
};
inline constexpr RowsN kNormShapes[] = {{1, 1},    {31, 33},  {33, 1024}, {64, 1025},
                                        {3, 2048}, {100, 31}, {2, 5000},  {2, 65536}};

template <class T>
std::vector<T> random_values(size_t n, T lo, T hi) {
  if constexpr (sizeof(T) == 8) return random_doubles(n, fresh_seed(), lo, hi);
  else return random_floats(n, fresh_seed(), lo, hi);
}

template <class T>
constexpr T kMinusZero = -T(0);

// ---- index_add ------------------------------------------------------------
// Source counts per destination row: 1, 2 and 31-33 (one segsum chunk and
// the first two-chunk rows), 64 and 65 (two and three chunks), 1024 and 1025
// (32 and 33 chunks), 4096 and 5000 (hub rows on the cpu plugin, 128 and
// 157 chunks), and one row of 65536 sources (2048 chunks).
inline constexpr int64_t kSourceCounts[] = {1, 2, 31, 32, 33, 64, 65, 1024, 1025, 4096, 5000};
inline constexpr int64_t kBigHub = 65536;

template <class T>
struct Scatter {
  uint64_t num_rows = 0;
  std::vector<int64_t> idx;
  std::vector<T> src, dst;
};

// Destination rows of three kinds for every source count:
//   all-zero: every source -0; dst -0 in even columns, +0 in odd ones;
//   mixed:    sources -0 except in columns 3k + 2 (random); dst -0, +0, random
//             in columns 3k, 3k + 1, 3k + 2;
//   random:   random sources; dst -0 in even columns, random in odd ones;
// and one all-zero row of kBigHub sources. The sources of all rows are
// interleaved in a random order (segsum takes them in source order); every
// seventh row has no source (check_scatter's untouched rows).
template <class T>
Scatter<T> scatter(int64_t w) {
  enum Kind { kAllZero, kMixed, kRandom };
  struct Row {
    Kind kind;
    int64_t sources;
  };
  std::vector<Row> rows;
  for (int64_t m : kSourceCounts)
    for (Kind k : {kAllZero, kMixed, kRandom}) rows.push_back({k, m});
  rows.push_back({kAllZero, kBigHub});
  std::mt19937_64 rng(fresh_seed());
  std::shuffle(rows.begin(), rows.end(), rng);
  Scatter<T> s;
  std::vector<Kind> kind_of_row;
  for (const Row& r : rows) {
    while (s.num_rows % 7 == 3) {
      kind_of_row.push_back(kRandom);  // untouched: check_scatter poisons it
      ++s.num_rows;
    }
    kind_of_row.push_back(r.kind);
    for (int64_t k = 0; k < r.sources; ++k) s.idx.push_back(static_cast<int64_t>(s.num_rows));
    ++s.num_rows;
  }
  std::shuffle(s.idx.begin(), s.idx.end(), rng);
  const size_t ww = static_cast<size_t>(w);
  s.src = random_values<T>(s.idx.size() * ww, T(-1), T(1));
  s.dst = random_values<T>(s.num_rows * ww, T(-1), T(1));
  for (size_t i = 0; i < s.idx.size(); ++i)
    for (size_t j = 0; j < ww; ++j) {
      const Kind k = kind_of_row[s.idx[i]];
      if (k == kAllZero || (k == kMixed && j % 3 != 2)) s.src[i * ww + j] = kMinusZero<T>;
    }
  for (size_t r = 0; r < s.num_rows; ++r)
    for (size_t j = 0; j < ww; ++j) {
      T& d = s.dst[r * ww + j];
      switch (kind_of_row[r]) {
        case kAllZero:
          d = j % 2 == 0 ? kMinusZero<T> : T(0);
          break;
        case kMixed:
          d = j % 3 == 0 ? kMinusZero<T> : (j % 3 == 1 ? T(0) : d);
          break;
        case kRandom:
          if (j % 2 == 0) d = kMinusZero<T>;
          break;
      }
    }
  return s;
}

// ---- softmax backward -------------------------------------------------------
// x (the forward input of y) and dy of five rows of n:
//   0: dy all -0;
//   1: dy all +0;
//   2: x = -inf at every i = 3k + 1 (y = +0 there) with dy negative there,
//      dy -0 elsewhere: every y * dy is -0;
//   3: dy -0 in the first half, random in the second;
//   4: random dy.
inline constexpr int64_t kSoftmaxRows = 5;
template <class T>
void softmax_rows(int64_t n, std::vector<T>& x, std::vector<T>& dy) {
  const size_t nn = static_cast<size_t>(n);
  x = random_values<T>(kSoftmaxRows * nn, T(-6), T(6));
  dy = random_values<T>(kSoftmaxRows * nn, T(-2), T(2));
  for (size_t i = 0; i < nn; ++i) {
    dy[i] = kMinusZero<T>;
    dy[nn + i] = T(0);
    if (i % 3 == 1) {
      x[2 * nn + i] = -INFINITY;
      dy[2 * nn + i] = -std::fabs(dy[2 * nn + i]);
    } else {
      dy[2 * nn + i] = kMinusZero<T>;
    }
    if (i < nn / 2 || nn == 1) dy[3 * nn + i] = kMinusZero<T>;
  }
}

// ---- LayerNorm forward ----------------------------------------------------
// x of five rows of n: all -0, all +0, -0 and +0 alternating, random, and
// -denorm_min then -0 (its mean underflows to -0: a backend that broadcasts
// the mean by adding it to a +0 vector gets +0 there, and x - mean keeps
// the wrong sign); gamma random with both signs; beta -0, +0, random in
// columns 3k, 3k + 1, 3k + 2.
inline constexpr int64_t kLayerNormRows = 5;
template <class T>
void layer_norm_rows(int64_t n, std::vector<T>& x, std::vector<T>& gamma, std::vector<T>& beta) {
  const size_t nn = static_cast<size_t>(n);
  x = random_values<T>(kLayerNormRows * nn, T(-3), T(3));
  gamma = random_values<T>(nn, T(0.5), T(2));
  beta = random_values<T>(nn, T(-1), T(1));
  for (size_t i = 0; i < nn; ++i) {
    x[i] = kMinusZero<T>;
    x[nn + i] = T(0);
    x[2 * nn + i] = i % 2 == 0 ? kMinusZero<T> : T(0);
    x[4 * nn + i] = i == 0 ? -std::numeric_limits<T>::denorm_min() : kMinusZero<T>;
    if (i % 2 == 1) gamma[i] = -gamma[i];
    if (i % 3 == 0) beta[i] = kMinusZero<T>;
    if (i % 3 == 1) beta[i] = T(0);
  }
}

// ---- norm backward ----------------------------------------------------------
// gamma for the backward tests: random in [0.5, 2], negated in columns
// 3k + 1 (a column of negative gamma turns the -0 terms of dbeta and dgamma
// into +0 ones).
template <class T>
std::vector<T> backward_gamma(int64_t n) {
  std::vector<T> g = random_values<T>(static_cast<size_t>(n), T(0.5), T(2));
  for (size_t j = 1; j < g.size(); j += 3) g[j] = -g[j];
  return g;
}

// dy in {-0, +0} chosen per element so that every g = dy * gamma is -0
// (kGradient: LayerNorm's a, and dbeta's terms where gamma > 0), or every
// g * xh is -0 (kProjection: LayerNorm's b, RMSNorm's c, and dgamma's terms
// dy * xh where gamma > 0). xh is the normalised x the op recomputes.
enum class Pattern { kGradient, kProjection };
template <class T>
T zero_dy(Pattern p, T gamma, T xh) {
  const bool negative =
      p == Pattern::kGradient ? !std::signbit(gamma) : std::signbit(gamma) == std::signbit(xh);
  return negative ? kMinusZero<T> : T(0);
}

inline const char* pattern_name(Pattern p) {
  return p == Pattern::kGradient ? "every dy * gamma is -0" : "every dy * gamma * xh is -0";
}

}  // namespace xhal::conf::signed_zero
