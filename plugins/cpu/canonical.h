// The canonical float32 building blocks of docs/semantics.md (sections 2
// and 3), scalar forms. Vectorised loops elsewhere must give the same bits.
// Built with -ffp-contract=off: every a*b+c below is two roundings.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace xhal::cpu {

inline float pow2i(int j) {  // 2^j for j in [-126, 127], exact
  return std::bit_cast<float>(static_cast<uint32_t>(j + 127) << 23);
}

inline float canonical_exp(float x) {
  if (std::isnan(x)) return x;
  if (x > 0x1.62e42ep+6f) return INFINITY;
  if (x < -0x1.9fe368p+6f) return 0.0f;
  float t = x * 0x1.715476p+0f;
  float k = (t + 0x1.8p23f) - 0x1.8p23f;
  float r = x - k * 0x1.62e400p-1f;
  r = r - k * 0x1.7f7d1cp-20f;
  float p = 0x1.687c02p-10f;
  p = p * r + 0x1.123ba6p-7f;
  p = p * r + 0x1.555b5ap-5f;
  p = p * r + 0x1.55548ep-3f;
  p = p * r + 0x1.fffff8p-2f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int ki = static_cast<int>(k);
  if (ki > 127) return (p * pow2i(127)) * pow2i(ki - 127);
  if (ki < -126) return (p * pow2i(-100)) * pow2i(ki + 100);
  return p * pow2i(ki);
}

// Pairwise tree of section 3.1, in place over v[0..m); v must have room for
// the next power of two >= m (padding is written as +0).
inline float tree_sum(float* v, size_t m) {
  if (m == 0) return 0.0f;
  size_t p = 1;
  while (p < m) p <<= 1;
  for (size_t i = m; i < p; ++i) v[i] = 0.0f;
  for (size_t w = p; w > 1; w >>= 1)
    for (size_t i = 0; i < w / 2; ++i) v[i] = v[2 * i] + v[2 * i + 1];
  return v[0];
}

}  // namespace xhal::cpu
