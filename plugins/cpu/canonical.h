// The canonical building blocks of docs/semantics.md (sections 2, 3 and
// 7.3), scalar forms: xhal_exp (f32), xhal_exp64 (f64) and the pairwise tree
// for either type. Vectorised loops elsewhere must give the same bits.
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

inline double pow2i_f64(int j) {  // 2^j for j in [-1022, 1023], exact
  return std::bit_cast<double>(static_cast<uint64_t>(j + 1023) << 52);
}

// xhal_exp64 (docs/semantics.md 7.3): every step one binary64 operation.
inline double canonical_exp64(double x) {
  if (std::isnan(x)) return x;
  if (x > 0x1.62e42fefa39efp+9) return INFINITY;
  if (x < -0x1.74910d52d3051p+9) return 0.0;
  const double t = x * 0x1.71547652b82fep+0;
  const double k = (t + 0x1.8p52) - 0x1.8p52;
  double r = x - k * 0x1.62e42fee00000p-1;
  r = r - k * 0x1.a39ef35793c76p-33;
  double p = 0x1.6124613a86d09p-33;  // 1/13!
  p = p * r + 0x1.1eed8eff8d898p-29;
  p = p * r + 0x1.ae64567f544e4p-26;
  p = p * r + 0x1.27e4fb7789f5cp-22;
  p = p * r + 0x1.71de3a556c734p-19;
  p = p * r + 0x1.a01a01a01a01ap-16;
  p = p * r + 0x1.a01a01a01a01ap-13;
  p = p * r + 0x1.6c16c16c16c17p-10;
  p = p * r + 0x1.1111111111111p-7;
  p = p * r + 0x1.5555555555555p-5;
  p = p * r + 0x1.5555555555555p-3;
  p = p * r + 0x1.0000000000000p-1;
  p = p * r + 1.0;  // 1/1!
  p = p * r + 1.0;  // 1/0!
  const int ki = static_cast<int>(k);
  if (ki > 1023) return (p * pow2i_f64(1023)) * pow2i_f64(ki - 1023);
  if (ki < -1022) return (p * pow2i_f64(-600)) * pow2i_f64(ki + 600);
  return p * pow2i_f64(ki);
}

// The canonical exp of the element type.
inline float canonical_exp_of(float x) { return canonical_exp(x); }
inline double canonical_exp_of(double x) { return canonical_exp64(x); }

// Pairwise tree of section 3.1, in place over v[0..m); v must have room for
// the next power of two >= m (padding is written as +0).
template <class T>
inline T tree_sum(T* v, size_t m) {
  if (m == 0) return T(0);
  size_t p = 1;
  while (p < m) p <<= 1;
  for (size_t i = m; i < p; ++i) v[i] = T(0);
  for (size_t w = p; w > 1; w >>= 1)
    for (size_t i = 0; i < w / 2; ++i) v[i] = v[2 * i] + v[2 * i + 1];
  return v[0];
}

}  // namespace xhal::cpu
