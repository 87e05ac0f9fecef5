// The GPU plugins' xhal_exp64 (plugins/gpu/exp64.h, docs/semantics.md 7.3)
// on the host, bit for bit against the cpu plugin's canonical_exp64
// (plugins/cpu/canonical.h): both forms (the one-branch fast path the
// kernels call and the literal sequence) over edges, every range of
// results (overflow, normal, subnormal, underflow to +0), infinities, NaNs
// and random bit patterns. The device build runs the same code with
// __d*_rn intrinsics, one correctly rounded operation each.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "../../plugins/cpu/canonical.h"
#include "exp64.h"

namespace {

uint64_t bits_of(double v) {
  uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}
double of_bits(uint64_t u) {
  double v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

// Counts inputs where either form differs from the cpu plugin; prints the
// first few.
int mismatches(const std::vector<double>& xs) {
  int bad = 0;
  for (double x : xs) {
    const uint64_t want = bits_of(xhal::cpu::canonical_exp64(x));
    const uint64_t fast = bits_of(xhal::gpu::f64::exp64(x));
    const uint64_t slow = bits_of(xhal::gpu::f64::exp64_slow(x));
    if (fast != want || slow != want) {
      if (++bad <= 5)
        ADD_FAILURE() << std::hexfloat << "x = " << x << ": cpu " << of_bits(want) << ", gpu "
                      << of_bits(fast) << ", gpu literal " << of_bits(slow);
    }
  }
  return bad;
}

// x and its 3 neighbours on each side.
void around(std::vector<double>& xs, double x) {
  double lo = x, hi = x;
  xs.push_back(x);
  for (int i = 0; i < 3; ++i) {
    lo = std::nextafter(lo, -INFINITY);
    hi = std::nextafter(hi, INFINITY);
    xs.push_back(lo);
    xs.push_back(hi);
  }
}

TEST(GpuExp64, EdgesMatchCpuBitForBit) {
  std::vector<double> xs;
  const double inf = std::numeric_limits<double>::infinity();
  for (double e : {0.0,
                   708.0,
                   -708.0,
                   0x1.62e42fefa39efp+9,
                   -0x1.74910d52d3051p+9,
                   -0x1.6232bdd7abcd2p+9,  // exp(x) = 2^-1022, the smallest normal
                   -0x1.625p+9,
                   -0x1.628p+9,
                   0x1.62ep+9,
                   709.0,
                   -709.0,
                   -740.0,
                   -745.0,
                   0.5 * 0x1.62e42fefa39efp-1,
                   -0.5 * 0x1.62e42fefa39efp-1,
                   1.0,
                   -1.0,
                   0x1p-1022,
                   -0x1p-1022,
                   0x1p-1074,
                   -0x1p-1074,
                   1e300,
                   -1e300})
    around(xs, e);
  for (double e :
       {inf, -inf, -0.0, std::numeric_limits<double>::quiet_NaN(),
        -std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::signaling_NaN(),
        of_bits(0x7ff0000000000001ull), of_bits(0xfff8000000000123ull),
        std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest()})
    xs.push_back(e);
  // Every k where the scaling changes form: k in [-1080, 1030], x = k ln 2
  // and halfway points (where the rounding of t to k flips).
  for (int k = -1080; k <= 1030; ++k) {
    around(xs, k * 0x1.62e42fefa39efp-1);
    around(xs, (k + 0.5) * 0x1.62e42fefa39efp-1);
  }
  EXPECT_EQ(mismatches(xs), 0);
  // The special values really are what 7.3 says.
  EXPECT_EQ(bits_of(xhal::gpu::f64::exp64(-inf)), bits_of(0.0));
  EXPECT_EQ(xhal::gpu::f64::exp64(inf), inf);
  EXPECT_EQ(xhal::gpu::f64::exp64(1000.0), inf);
  EXPECT_TRUE(std::isnan(xhal::gpu::f64::exp64(std::nan(""))));
  EXPECT_EQ(xhal::gpu::f64::exp64(0.0), 1.0);
  const double sub = xhal::gpu::f64::exp64(-740.0);
  EXPECT_GT(sub, 0.0);
  EXPECT_LT(sub, 0x1p-1022);  // a subnormal result
}

TEST(GpuExp64, RandomRangesMatchCpuBitForBit) {
  std::mt19937_64 rng(20261202);
  std::vector<double> xs;
  const struct {
    double lo, hi;
  } ranges[] = {{-0.35, 0.35}, {-40.0, 40.0}, {-750.0, 712.0}, {-746.0, -708.0}, {700.0, 710.0}};
  for (auto r : ranges) {
    std::uniform_real_distribution<double> u(r.lo, r.hi);
    for (int i = 0; i < (1 << 20); ++i) xs.push_back(u(rng));
  }
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(of_bits(rng()));  // any pattern
  for (int i = 0; i < (1 << 18); ++i)  // |x| below 1: tiny and subnormal inputs too
    xs.push_back(of_bits(rng() & 0xbfefffffffffffffull));
  EXPECT_EQ(mismatches(xs), 0);
}

}  // namespace
