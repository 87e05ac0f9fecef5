// The plugin's f16/bf16 conversions (plugins/cpu/narrow.h, bit manipulation)
// against the conformance suite's (conformance/reference/narrow.cpp,
// arithmetic on the value): every 16-bit pattern widened, and narrowing at
// every representable value, the midpoints between neighbours and the f32
// values one ulp either side of them (the ties and near-ties), the
// subnormal and overflow edges, NaNs of both signs, and 2^22 random f32
// bit patterns.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "narrow.h"
#include "reference/narrow.h"

namespace {

constexpr xhal_dtype_t kDtypes[] = {XHAL_DTYPE_F16, XHAL_DTYPE_BF16};

TEST(NarrowConversions, WidenEveryPattern) {
  for (xhal_dtype_t d : kDtypes)
    for (uint32_t h = 0; h < 65536; ++h) {
      const float got = xhal::cpu::widen(d, static_cast<uint16_t>(h));
      const float want = xhal::conf::narrow::widen(d, static_cast<uint16_t>(h));
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got)) << h;
        ASSERT_EQ(std::signbit(got), std::signbit(want)) << h;
      } else {
        ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << d << " " << h;
      }
    }
}

void expect_narrow(xhal_dtype_t d, float f) {
  const uint16_t got = xhal::cpu::narrow(d, f);
  const uint16_t want = xhal::conf::narrow::narrow(d, f);
  ASSERT_EQ(got, want) << "dtype " << d << ", f32 0x" << std::hex << std::bit_cast<uint32_t>(f)
                       << " (" << f << ")";
}

TEST(NarrowConversions, NarrowAtValuesMidpointsAndNeighbours) {
  for (xhal_dtype_t d : kDtypes)
    for (uint32_t h = 0; h < 65536; ++h) {
      const float v = xhal::conf::narrow::widen(d, static_cast<uint16_t>(h));
      if (std::isnan(v)) {
        expect_narrow(d, v);
        continue;
      }
      const float next = h == 0x7fff || h == 0xffff
                             ? v
                             : xhal::conf::narrow::widen(d, static_cast<uint16_t>(h + 1));
      const float mid = std::isinf(v) || std::isinf(next) || std::isnan(next) ? v : (v + next) / 2;
      for (float c : {v, mid}) {
        const uint32_t b = std::bit_cast<uint32_t>(c);
        for (uint32_t k : {b - 1, b, b + 1}) expect_narrow(d, std::bit_cast<float>(k));
      }
    }
}

TEST(NarrowConversions, NarrowEdgesAndRandomPatterns) {
  for (xhal_dtype_t d : kDtypes) {
    for (float f :
         {65504.0f,        65519.99f,       65520.0f,  65536.0f,     0x1p-24f,     0x1p-25f,
          0x1.000002p-25f, 0x1.8p-24f,      0x1p-14f,  0x1.ffcp-15f, 0x1.ffep-15f, 0x1.fep127f,
          0x1.feffffp127f, 0x1.ff0000p127f, 0x1p-149f, 0x1p-133f,    0x1p-134f,    0x1.8p-133f,
          INFINITY,        -INFINITY,       NAN,       -NAN,         0.0f,         -0.0f})
      for (float s : {f, -f}) expect_narrow(d, s);
    std::mt19937_64 rng(12345);
    for (int i = 0; i < (1 << 22); ++i)
      expect_narrow(d, std::bit_cast<float>(static_cast<uint32_t>(rng())));
  }
}

TEST(NarrowConversions, NanIsTheQuietNanOfItsSign) {
  for (uint32_t payload : {0x7f800001u, 0x7fc00000u, 0x7fffffffu, 0x7fa0deadu}) {
    EXPECT_EQ(xhal::cpu::narrow_f16(std::bit_cast<float>(payload)), 0x7e00);
    EXPECT_EQ(xhal::cpu::narrow_f16(std::bit_cast<float>(payload | 0x80000000u)), 0x7e00);
    EXPECT_EQ(xhal::cpu::narrow_bf16(std::bit_cast<float>(payload)), 0x7fc0);
    EXPECT_EQ(xhal::cpu::narrow_bf16(std::bit_cast<float>(payload | 0x80000000u)), 0x7fc0);
  }
}

}  // namespace
