// bf16 and f16 storage (docs/semantics.md 7.1): exact widening to f32 and
// one round-to-nearest-even narrowing with the canonical NaN, as integer
// operations on the bits so that CUDA, HIP and a host test compute the same
// thing without relying on any library's conversion of NaNs or subnormals.
// narrow_device.h wraps these for the kernels.
#pragma once

#include <cstdint>

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>  // __forceinline__ for a file that includes no kernel header
#endif
#if defined(__CUDACC__) || defined(__HIPCC__)
#define XHAL_HD __host__ __device__ __forceinline__
#else
#define XHAL_HD inline
#endif

namespace xhal::gpu {

// f32 bits -> bf16 bits: round to nearest even (a carry past the largest
// finite value gives infinity); any NaN -> 0x7FC0 (its sign is not kept: a
// NaN made by arithmetic is negative on x86 and positive on NVIDIA GPUs).
XHAL_HD uint16_t bf16_bits_from_f32(uint32_t u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

XHAL_HD uint32_t f32_bits_from_bf16(uint16_t h) { return static_cast<uint32_t>(h) << 16; }

// Shifts m right by s (1 <= s <= 31) rounding to nearest even.
XHAL_HD uint32_t shift_rne(uint32_t m, uint32_t s) {
  const uint32_t q = m >> s, rem = m & ((1u << s) - 1u), half = 1u << (s - 1u);
  return q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
}

// f32 bits -> f16 bits: round to nearest even onto the f16 grid, subnormals
// included (no flush to zero); |v| >= 65520 -> infinity; any NaN -> 0x7E00.
XHAL_HD uint16_t f16_bits_from_f32(uint32_t u) {
  const uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7e00u;
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // 65520 and up, inf
  if (a >= 0x38800000u)                                                // 2^-14 and up: normal f16
    return static_cast<uint16_t>(sign | shift_rne(a - 0x38000000u, 13));
  if (a <= 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25: rounds to zero
  // Subnormal f16: v * 2^24 = m * 2^(e - 126), rounded to an integer.
  const uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
  return static_cast<uint16_t>(sign | shift_rne(m, 126u - e));
}

// f16 bits -> f32 bits, exact.
XHAL_HD uint32_t f32_bits_from_f16(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return sign | 0x7f800000u | (m << 13);
  if (e != 0) return sign | ((e + 112u) << 23) | (m << 13);
  if (m == 0) return sign;
  uint32_t p = 9;  // position of m's leading bit: m * 2^-24 = 1.f * 2^(p - 24)
  while (!(m & (1u << p))) --p;
  return sign | ((p + 103u) << 23) | ((m << (23u - p)) & 0x7fffffu);
}

}  // namespace xhal::gpu
