// The GPU plugins' bf16/f16 conversions (plugins/gpu/narrow.h, docs/semantics.md
// 7.1) on the host, against a reference that works on values, not bits: the
// format's finite values decoded with ldexp, the nearer of the two
// neighbours of x (ties to the even pattern), the infinity pattern standing
// for the next power of two past the largest finite value; NaNs as the
// one positive quiet NaN.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "narrow.h"

namespace {

using namespace xhal::gpu;

float f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A binary format with `mant` stored significand bits and `exp` exponent bits.
struct Format {
  int mant, exp;
  uint32_t inf_bits() const { return ((1u << exp) - 1u) << mant; }
  uint32_t qnan_bits() const { return inf_bits() | (1u << (mant - 1)); }
  double value(uint32_t b) const {  // b positive, <= inf_bits (which stands for 2^(emax+1))
    const int bias = (1 << (exp - 1)) - 1;
    const uint32_t e = b >> mant, m = b & ((1u << mant) - 1u);
    if (e == 0) return std::ldexp(static_cast<double>(m), 1 - bias - mant);
    return std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -mant), static_cast<int>(e) - bias);
  }
};
constexpr Format kF16{10, 5}, kBf16{7, 8};

uint16_t reference_narrow(const Format& fmt, uint32_t u) {
  const uint32_t sign = (u >> 31) << (fmt.mant + fmt.exp);
  const float f = f32(u);
  if (std::isnan(f)) return static_cast<uint16_t>(fmt.qnan_bits());
  if (std::isinf(f)) return static_cast<uint16_t>(sign | fmt.inf_bits());
  const double v = std::fabs(static_cast<double>(f));
  // Largest lo with value(lo) <= v (positive patterns are ordered by value).
  uint32_t lo = 0, hi = fmt.inf_bits();
  while (lo + 1 < hi) {
    const uint32_t mid = (lo + hi) / 2;
    (fmt.value(mid) <= v ? lo : hi) = mid;
  }
  if (fmt.value(lo) == v) return static_cast<uint16_t>(sign | lo);
  const double a = v - fmt.value(lo), b = fmt.value(lo + 1) - v;
  return static_cast<uint16_t>(sign | ((a < b || (a == b && !(lo & 1u))) ? lo : lo + 1));
}

// Every f32 pattern in steps of 4099 (odd, so every low-bit pattern occurs),
// plus every pattern near the rounding boundaries of both formats.
template <class F>
void for_sampled_f32(F check) {
  for (uint64_t i = 0; i < (uint64_t{1} << 32); i += 4099) check(static_cast<uint32_t>(i));
  for (uint32_t hi = 0; hi < 0x10000u; ++hi)
    for (uint32_t lo : {0x0u, 0x1000u, 0x1001u, 0x3000u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      check((hi << 16) | lo);
}

TEST(GpuNarrow, F16FromF32MatchesRoundToNearestEven) {
  uint64_t bad = 0;
  for_sampled_f32([&](uint32_t u) {
    const uint16_t ref = reference_narrow(kF16, u);
    if (f16_bits_from_f32(u) != ref && bad++ < 5)
      ADD_FAILURE() << std::hex << u << ": " << f16_bits_from_f32(u) << " expected " << ref;
  });
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(f16_bits_from_f32(0x477ff000u), 0x7c00u);  // 65520 rounds to infinity
  EXPECT_EQ(f16_bits_from_f32(0x477fefffu), 0x7bffu);  // just below: 65504
  EXPECT_EQ(f16_bits_from_f32(0x33000000u), 0x0000u);  // 2^-25: tie to even zero
  EXPECT_EQ(f16_bits_from_f32(0x33000001u), 0x0001u);
  EXPECT_EQ(f16_bits_from_f32(0xffc00001u), 0x7e00u);  // every NaN: the one positive quiet NaN
  EXPECT_EQ(f16_bits_from_f32(0x7f800001u), 0x7e00u);
}

TEST(GpuNarrow, F16ToF32IsExact) {
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const uint32_t mine = f32_bits_from_f16(static_cast<uint16_t>(b)), pos = b & 0x7fffu;
    if (pos > kF16.inf_bits()) {  // NaN: a NaN of the same sign
      EXPECT_TRUE(std::isnan(f32(mine))) << std::hex << b;
      EXPECT_EQ(mine >> 31, b >> 15) << std::hex << b;
      continue;
    }
    const double v = pos == kF16.inf_bits() ? HUGE_VAL : kF16.value(pos);
    ASSERT_EQ(static_cast<double>(f32(mine)), (b & 0x8000u) ? -v : v) << std::hex << b;
    ASSERT_EQ(mine >> 31, b >> 15) << std::hex << b;         // -0 stays -0
    ASSERT_EQ(f16_bits_from_f32(mine), b) << std::hex << b;  // round trip
  }
}

TEST(GpuNarrow, Bf16FromF32MatchesRoundToNearestEven) {
  uint64_t bad = 0;
  for_sampled_f32([&](uint32_t u) {
    const uint16_t ref = reference_narrow(kBf16, u);
    if (bf16_bits_from_f32(u) != ref && bad++ < 5)
      ADD_FAILURE() << std::hex << u << ": " << bf16_bits_from_f32(u) << " expected " << ref;
  });
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(bf16_bits_from_f32(0x7f7fffffu), 0x7f80u);  // FLT_MAX rounds to infinity
  EXPECT_EQ(bf16_bits_from_f32(0x7f7f7fffu), 0x7f7fu);
  EXPECT_EQ(bf16_bits_from_f32(0x00008000u), 0x0000u);  // subnormal tie to even
  EXPECT_EQ(bf16_bits_from_f32(0x00018000u), 0x0002u);
  EXPECT_EQ(bf16_bits_from_f32(0x7f800001u), 0x7fc0u);
  EXPECT_EQ(bf16_bits_from_f32(0xffc00000u), 0x7fc0u);  // x86's default NaN is negative
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    if (!std::isnan(f32(f32_bits_from_bf16(static_cast<uint16_t>(b))))) {
      ASSERT_EQ(bf16_bits_from_f32(f32_bits_from_bf16(static_cast<uint16_t>(b))), b);
    }
  }
}

}  // namespace
