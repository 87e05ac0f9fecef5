// The f16 and bf16 storage conversions of docs/semantics.md 7.1, the one
// source the plugin uses for them: widening to f32 is exact for every value
// (f16 subnormals become normal f32 values, infinities stay, a NaN keeps its
// sign); narrowing is one rounding to nearest, ties to even, with no flush
// to zero, overflow to the infinity of the value's sign, and every NaN
// stored as the one positive quiet NaN (f16 0x7E00, bf16 0x7FC0: the sign of
// a NaN made by arithmetic differs between CPUs and GPUs).
// Integer bit manipulation only: the result does not depend on the FPU's
// rounding mode, FTZ/DAZ or the compiler's float options.
//
// The ops on narrow tensors (7.2) widen on load, run the f32 op with every
// intermediate in f32 in the canonical order, and narrow each output
// element once; widen_row / narrow_row are those loads and stores.
#pragma once

#include <bit>
#include <cstdint>

#include "xhal/xhal_plugin.h"

namespace xhal::cpu {

inline float widen_bf16(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

inline float widen_f16(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return std::bit_cast<float>(sign);  // +-0
  // Subnormal mant * 2^-24: normalise (the leading bit moves to bit 10).
  int shift = 0;
  uint32_t m = mant;
  while (!(m & 0x400u)) {
    m <<= 1;
    ++shift;
  }
  return std::bit_cast<float>(sign | static_cast<uint32_t>(113 - shift) << 23 |
                              ((m & 0x3ffu) << 13));
}

inline uint16_t narrow_bf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
  // Round to nearest even on the low 16 bits; a carry out of the largest
  // finite value lands on the infinity's bits.
  return static_cast<uint16_t>((u + 0x7fffu + (u >> 16 & 1u)) >> 16);
}

inline uint16_t narrow_f16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>(u >> 16 & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7e00u;                                 // NaN
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // |v| >= 65520, inf
  if (a >= 0x38800000u) {                                              // normal: |v| >= 2^-14
    const uint32_t r = a - (112u << 23);                               // rebias the exponent
    return static_cast<uint16_t>(sign | (r + 0xfffu + (r >> 13 & 1u)) >> 13);
  }
  if (a <= 0x33000000u) return sign;  // |v| <= 2^-25: rounds to zero (2^-25 ties to even 0)
  // Subnormal: |v| / 2^-24 rounded to nearest even (a carry to 0x400 is the
  // smallest normal, whose bits it is).
  const uint32_t e = a >> 23;                      // 102..112
  const uint32_t m = (a & 0x7fffffu) | 0x800000u;  // |v| = m * 2^(e - 150)
  const uint32_t shift = 126 - e;                  // 14..24
  const uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  return static_cast<uint16_t>(sign | (q + (rem > half || (rem == half && (q & 1u)) ? 1u : 0u)));
}

inline float widen(xhal_dtype_t dtype, uint16_t h) {
  return dtype == XHAL_DTYPE_BF16 ? widen_bf16(h) : widen_f16(h);
}
inline uint16_t narrow(xhal_dtype_t dtype, float f) {
  return dtype == XHAL_DTYPE_BF16 ? narrow_bf16(f) : narrow_f16(f);
}

// dst[0..n) = widen(src[0..n)), dtype f16 or bf16.
inline void widen_row(xhal_dtype_t dtype, const uint16_t* src, float* dst, int64_t n) {
  if (dtype == XHAL_DTYPE_BF16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = widen_bf16(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = widen_f16(src[i]);
  }
}

// dst[0..n) = narrow(src[0..n)), one rounding per element.
inline void narrow_row(xhal_dtype_t dtype, const float* src, uint16_t* dst, int64_t n) {
  if (dtype == XHAL_DTYPE_BF16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = narrow_bf16(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = narrow_f16(src[i]);
  }
}

inline bool is_narrow(xhal_dtype_t dtype) {
  return dtype == XHAL_DTYPE_F16 || dtype == XHAL_DTYPE_BF16;
}

}  // namespace xhal::cpu
