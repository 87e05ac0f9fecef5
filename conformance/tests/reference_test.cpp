// Checks of the references themselves (no device): xhal_exp against
// std::exp, the canonical orders on hand-computed cases where the order
// changes the bits, the warp mapping of section 3.2 against the lane
// definition, and canonical float32 against float64 within the bounds.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "check.h"
#include "reference/canonical.h"
#include "reference/f64.h"
#include "tolerances.h"

namespace xhal::conf {
namespace {

using canon::xhal_exp;

// |got - exact| in float32 ulps of the exact value.
double ulp_error(float got, double exact) {
  if (exact == 0) return got == 0 ? 0 : std::fabs(got) / 0x1p-149;
  int e;
  std::frexp(exact, &e);  // exact = m * 2^e, m in [0.5, 1)
  double ulp = std::ldexp(1.0, std::max(e - 24, -149));
  return std::fabs(static_cast<double>(got) - exact) / ulp;
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

TEST(ReferenceExp, WithinTwoUlpOfStdExpOverSweep) {
  // Every 61st float32 bit pattern between the underflow and overflow
  // thresholds (about 35 million inputs, both signs).
  double worst = 0;
  float worst_x = 0;
  for (uint32_t b = 0; b < 0x7f800000u; b += 61) {
    for (float x : {std::bit_cast<float>(b), -std::bit_cast<float>(b)}) {
      if (x > 0x1.62e42ep+6f || x < -0x1.9fe368p+6f) continue;
      double err = ulp_error(xhal_exp(x), std::exp(static_cast<double>(x)));
      if (err > worst) {
        worst = err;
        worst_x = x;
      }
    }
  }
  EXPECT_LE(worst, tol::kExpMaxUlp) << "at x = " << worst_x;
  std::printf("  xhal_exp: max %.3f ulp (at x = %a)\n", worst, worst_x);
}

TEST(ReferenceExp, EdgeCases) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(bits(xhal_exp(0.0f)), bits(1.0f));
  EXPECT_EQ(bits(xhal_exp(-0.0f)), bits(1.0f));
  EXPECT_EQ(bits(xhal_exp(-inf)), bits(0.0f));
  EXPECT_EQ(xhal_exp(inf), inf);
  EXPECT_TRUE(std::isnan(xhal_exp(std::numeric_limits<float>::quiet_NaN())));
  // Overflow threshold: the largest input gives a finite value within 2 ulp,
  // the next float up gives +inf.
  float top = 0x1.62e42ep+6f;
  EXPECT_TRUE(std::isfinite(xhal_exp(top)));
  EXPECT_LE(ulp_error(xhal_exp(top), std::exp(static_cast<double>(top))), tol::kExpMaxUlp);
  EXPECT_EQ(xhal_exp(std::nextafter(top, inf)), inf);
  // Underflow threshold: below it +0; at it a subnormal close to exact.
  float bottom = -0x1.9fe368p+6f;
  EXPECT_EQ(bits(xhal_exp(std::nextafter(bottom, -inf))), bits(0.0f));
  EXPECT_LE(ulp_error(xhal_exp(bottom), std::exp(static_cast<double>(bottom))), tol::kExpMaxUlp);
  // Subnormal and near-normal results (k < -126 path), and large k > 127.
  for (float x : {-87.0f, -87.5f, -88.0f, -90.0f, -95.0f, -100.0f, -103.0f, 88.0f, 88.5f, 88.72f}) {
    double exact = std::exp(static_cast<double>(x));
    EXPECT_LE(ulp_error(xhal_exp(x), exact), tol::kExpMaxUlp) << "x = " << x;
  }
  EXPECT_LT(xhal_exp(-100.0f), 0x1p-126f);  // really subnormal
  EXPECT_GT(xhal_exp(-100.0f), 0.0f);
  EXPECT_LE(ulp_error(xhal_exp(1.0f), std::exp(1.0)), 1.0);
}

TEST(ReferenceExp, RandomInputsMatchTheSpecMeasurement) {
  // Section 2 states 1.09 ulp at most on random inputs in [-87, 88].
  std::vector<float> x = random_floats(300000, fresh_seed(), -87.0f, 88.0f);
  double worst = 0;
  for (float v : x)
    worst = std::max(worst, ulp_error(xhal_exp(v), std::exp(static_cast<double>(v))));
  EXPECT_LE(worst, 1.2);
}

// xhal_exp64 (docs/semantics.md 7.3) against expl in x87 long double
// (64-bit significand: its own error is about 2^-11 of a binary64 ulp).
double ulp_error64(double got, long double exact) {
  long double a = std::fabs(exact);
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  long double ulp = std::ldexp(1.0L, std::max(e - 53, -1074));
  return static_cast<double>(std::fabs(static_cast<long double>(got) - exact) / ulp);
}

TEST(ReferenceExp64, WithinTwoUlpOfLongDouble) {
  static_assert(std::numeric_limits<long double>::digits >= 64, "needs x87 long double");
  // 4 million random inputs: a quarter in the reduced range, a quarter in
  // [-40, 40], half over the whole range between the thresholds (with the
  // subnormal results below -708).
  std::mt19937_64 rng(fresh_seed());
  std::uniform_real_distribution<double> small(-0.35, 0.35), mid(-40.0, 40.0),
      all(-0x1.74910d52d3051p+9, 0x1.62e42fefa39efp+9);
  double worst = 0, worst_x = 0;
  for (int i = 0; i < 4000000; ++i) {
    const double x = i % 4 == 0 ? small(rng) : i % 4 == 1 ? mid(rng) : all(rng);
    const double err = ulp_error64(canon::xhal_exp64(x), std::exp(static_cast<long double>(x)));
    if (err > worst) {
      worst = err;
      worst_x = x;
    }
  }
  EXPECT_LE(worst, tol::kExp64MaxUlp) << "at x = " << worst_x;
  std::printf("  xhal_exp64: max %.3f ulp (at x = %a)\n", worst, worst_x);
}

TEST(ReferenceExp64, EdgeCases) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(std::bit_cast<uint64_t>(canon::xhal_exp64(0.0)), std::bit_cast<uint64_t>(1.0));
  EXPECT_EQ(std::bit_cast<uint64_t>(canon::xhal_exp64(-0.0)), std::bit_cast<uint64_t>(1.0));
  EXPECT_EQ(std::bit_cast<uint64_t>(canon::xhal_exp64(-inf)), 0u);
  EXPECT_EQ(canon::xhal_exp64(inf), inf);
  EXPECT_TRUE(std::isnan(canon::xhal_exp64(std::numeric_limits<double>::quiet_NaN())));
  const double top = 0x1.62e42fefa39efp+9, bottom = -0x1.74910d52d3051p+9;
  EXPECT_TRUE(std::isfinite(canon::xhal_exp64(top)));  // k = 1024: the (p * 2^1023) * 2 path
  EXPECT_LE(ulp_error64(canon::xhal_exp64(top), std::exp(static_cast<long double>(top))),
            tol::kExp64MaxUlp);
  EXPECT_EQ(canon::xhal_exp64(std::nextafter(top, inf)), inf);
  EXPECT_EQ(std::bit_cast<uint64_t>(canon::xhal_exp64(std::nextafter(bottom, -inf))), 0u);
  // Subnormal results (k < -1022: (p * 2^-600) * 2^(k + 600)) and the largest ones.
  for (double x : {-708.0, -708.5, -709.0, -720.0, -740.0, -745.0, bottom, 700.0, 709.0, 709.7}) {
    EXPECT_LE(ulp_error64(canon::xhal_exp64(x), std::exp(static_cast<long double>(x))),
              tol::kExp64MaxUlp)
        << "x = " << x;
  }
  EXPECT_LT(canon::xhal_exp64(-720.0), 0x1p-1022);  // really subnormal
  EXPECT_GT(canon::xhal_exp64(-720.0), 0.0);
}

TEST(ReferenceTree, PairwiseOrderOnHandCases) {
  // 1e8 has ulp 8: 1e8 + 1 rounds back to 1e8.
  // tree: (1e8 + 1) + (-1e8 + 1) = 1e8 - 1e8 = 0; left to right gives 1.
  EXPECT_EQ(bits(canon::tree({1e8f, 1.0f, -1e8f, 1.0f})), bits(0.0f));
  // Padding with +0: {1, 2, 3} -> (1 + 2) + (3 + 0).
  EXPECT_EQ(canon::tree({1.0f, 2.0f, 3.0f}), 6.0f);
  // Five values pad to eight: ((a+b)+(c+d)) + ((e+0)+(0+0)).
  EXPECT_EQ(bits(canon::tree({1.0f, 1e8f, -1e8f, 1.0f, 1.0f})), bits(1.0f));
  EXPECT_EQ(bits(canon::tree({})), bits(0.0f));
  // Padding makes -0 inputs sum to +0; without padding -0 + -0 stays -0.
  EXPECT_EQ(bits(canon::tree({-0.0f, -0.0f, -0.0f})), bits(0.0f));
  EXPECT_EQ(bits(canon::tree({-0.0f, -0.0f})), bits(-0.0f));
  EXPECT_EQ(bits(canon::tree({-0.0f})), bits(-0.0f));
}

TEST(ReferenceRowsum, LanesThenTree) {
  // x[0] and x[128] share lane 0 (steps 0 and 1): lane 0 = 1e8 + 1 = 1e8;
  // x[1] = -1e8 is lane 1. tree: 1e8 + -1e8 = 0. Left to right gives 1.
  std::vector<float> x(300, 0.0f);
  x[0] = 1e8f;
  x[1] = -1e8f;
  x[128] = 1.0f;
  EXPECT_EQ(bits(canon::rowsum(x.data(), x.size())), bits(0.0f));
  // Chunks combine by the tree: three chunks pad to four.
  std::vector<float> y(3000, 0.0f);
  y[0] = 1e8f;      // chunk 0
  y[1024] = 1.0f;   // chunk 1
  y[2048] = -1e8f;  // chunk 2: (1e8 + 1) + (-1e8 + 0) = 0
  EXPECT_EQ(bits(canon::rowsum(y.data(), y.size())), bits(0.0f));
  // Padding lanes add +0: an all -0 row sums to +0.
  std::vector<float> z(5, -0.0f);
  EXPECT_EQ(bits(canon::rowsum(z.data(), z.size())), bits(0.0f));
  EXPECT_EQ(bits(canon::rowsum(nullptr, 0)), bits(0.0f));
}

// The GPU mapping of section 3.2: a warp of 32 threads per chunk, thread l
// loads a float4 at c*1024 + t*128 + 4l, folds (a0+a1)+(a2+a3), then
// shfl_down by 1..16. It must equal the lane definition bit for bit.
float warp_rowsum(const float* x, size_t n) {
  std::vector<float> chunk_sums;
  for (size_t c = 0; c * 1024 < n; ++c) {
    float v[32];
    for (size_t l = 0; l < 32; ++l) {
      float a[4] = {0, 0, 0, 0};
      for (size_t t = 0; t < 8; ++t)
        for (size_t q = 0; q < 4; ++q) {
          size_t i = c * 1024 + t * 128 + 4 * l + q;
          a[q] = a[q] + (i < n ? x[i] : 0.0f);
        }
      v[l] = (a[0] + a[1]) + (a[2] + a[3]);
    }
    for (size_t d = 1; d < 32; d *= 2)
      for (size_t l = 0; l + d < 32; l += 2 * d) v[l] = v[l] + v[l + d];
    chunk_sums.push_back(v[0]);
  }
  return canon::tree(chunk_sums);
}

TEST(ReferenceRowsum, WarpMappingGivesTheSameBits) {
  for (size_t n : {1, 5, 127, 128, 1000, 1024, 1025, 4096, 5000, 70001}) {
    std::vector<float> x = random_floats(n, fresh_seed(), -1e4f, 1e4f);
    EXPECT_EQ(bits(canon::rowsum(x.data(), n)), bits(warp_rowsum(x.data(), n))) << "n = " << n;
  }
}

TEST(ReferenceSegsum, ChunksOf32ThenTree) {
  // Chunk 0: 1e8 then 31 ones (stays 1e8); chunk 1: -1e8 then 31 ones
  // (stays -1e8); tree: 0. Left to right gives 31.
  std::vector<float> t(64, 1.0f);
  t[0] = 1e8f;
  t[32] = -1e8f;
  EXPECT_EQ(bits(canon::segsum(t)), bits(0.0f));
  // Up to 32 terms: plain left to right from +0.
  std::vector<float> u = {1e8f, -1e8f, 1.0f};
  EXPECT_EQ(canon::segsum(u), 1.0f);
  EXPECT_EQ(bits(canon::segsum({-0.0f})), bits(0.0f));  // +0 + -0 = +0
  EXPECT_EQ(bits(canon::segsum({})), bits(0.0f));
}

TEST(ReferenceColsum, BlocksOf32ThenTree) {
  // Block 0 = 1e8 (+0.25s vanish), block 1 = -1e8 (+1s vanish): 0.
  // A sequential column sum gives 31.
  std::vector<float> t(64, 1.0f);
  for (int r = 1; r < 32; ++r) t[r] = 0.25f;
  t[0] = 1e8f;
  t[32] = -1e8f;
  EXPECT_EQ(bits(canon::colsum(t.data(), 64, 1)[0]), bits(0.0f));
}

TEST(ReferenceSoftmax, StatisticsOperator) {
  // Two chunks, maxima 0 and 1: S = 1024 * exp(0 - 1) + 1024 * exp(1 - 1).
  std::vector<float> x(2048, 0.0f);
  for (size_t i = 1024; i < 2048; ++i) x[i] = 1.0f;
  float m, s;
  canon::softmax_stats(x.data(), x.size(), &m, &s);
  EXPECT_EQ(m, 1.0f);
  float left = 1024.0f * xhal_exp(0.0f - 1.0f), right = 1024.0f * xhal_exp(0.0f);
  EXPECT_EQ(bits(s), bits(left + right));
  // All -inf: (-inf, +0) and every output NaN.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> all_ninf(3000, -inf), y(3000);
  canon::softmax_stats(all_ninf.data(), all_ninf.size(), &m, &s);
  EXPECT_EQ(m, -inf);
  EXPECT_EQ(bits(s), bits(0.0f));
  canon::softmax_forward(all_ninf.data(), 1, all_ninf.size(), y.data());
  for (float v : y) ASSERT_TRUE(std::isnan(v));
  // One finite entry among -inf: it gets exactly 1, the rest exactly 0.
  all_ninf[2500] = 3.0f;
  canon::softmax_forward(all_ninf.data(), 1, all_ninf.size(), y.data());
  EXPECT_EQ(y[2500], 1.0f);
  EXPECT_EQ(bits(y[0]), bits(0.0f));
}

// Canonical float32 results lie within the accurate-level bounds of the
// float64 reference (else the bounds or a reference are wrong).
TEST(ReferenceAgreement, CanonicalWithinFloat64Bounds) {
  const size_t rows = 37, n = 2500;
  std::vector<float> x = random_floats(rows * n, fresh_seed(), -8.0f, 8.0f);
  std::vector<float> dy = random_floats(rows * n, fresh_seed());
  std::vector<float> gamma = random_floats(n, fresh_seed(), 0.5f, 2.0f);
  std::vector<float> beta = random_floats(n, fresh_seed());
  std::vector<float> y(rows * n), dx(rows * n), dg(n), db(n), mean(rows), rstd(rows);

  canon::softmax_forward(x.data(), rows, n, y.data());
  AccuracyCompare c =
      compare_f64(y, ref64::softmax_forward(x.data(), rows, n), tol::kSoftmaxForward);
  EXPECT_TRUE(c.ok) << "softmax forward: " << c.first;
  canon::softmax_backward(y.data(), dy.data(), rows, n, dx.data());
  c = compare_f64(dx, ref64::softmax_backward(y.data(), dy.data(), rows, n), tol::kSoftmaxBackward);
  EXPECT_TRUE(c.ok) << "softmax backward: " << c.first;

  const float eps = 1e-5f;
  canon::rms_norm_forward(x.data(), gamma.data(), rows, n, eps, y.data(), rstd.data());
  auto rf = ref64::rms_norm_forward(x.data(), gamma.data(), rows, n, eps);
  EXPECT_TRUE(compare_f64(y, rf.y, tol::kNorm).ok);
  EXPECT_TRUE(compare_f64(rstd, rf.rstd, tol::kNorm).ok);
  canon::rms_norm_backward(x.data(), gamma.data(), rstd.data(), dy.data(), rows, n, dx.data(),
                           dg.data());
  auto rb = ref64::rms_norm_backward(x.data(), gamma.data(), rstd.data(), dy.data(), rows, n);
  c = compare_f64(dx, rb.dx, tol::kNorm);
  EXPECT_TRUE(c.ok) << "rms dx: " << c.first;
  c = compare_f64(dg, rb.dgamma, tol::kNorm);
  EXPECT_TRUE(c.ok) << "rms dgamma: " << c.first;

  canon::layer_norm_forward(x.data(), gamma.data(), beta.data(), rows, n, eps, y.data(),
                            mean.data(), rstd.data());
  auto lf = ref64::layer_norm_forward(x.data(), gamma.data(), beta.data(), rows, n, eps);
  EXPECT_TRUE(compare_f64(y, lf.y, tol::kNorm).ok);
  EXPECT_TRUE(compare_f64(mean, lf.mean, tol::kNorm).ok);
  EXPECT_TRUE(compare_f64(rstd, lf.rstd, tol::kNorm).ok);
  canon::layer_norm_backward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(), rows, n,
                             dx.data(), dg.data(), db.data());
  auto lb = ref64::layer_norm_backward(x.data(), gamma.data(), mean.data(), rstd.data(), dy.data(),
                                       rows, n);
  c = compare_f64(dx, lb.dx, tol::kNorm);
  EXPECT_TRUE(c.ok) << "layer dx: " << c.first;
  EXPECT_TRUE(compare_f64(dg, lb.dgamma, tol::kNorm).ok);
  EXPECT_TRUE(compare_f64(db, lb.dbeta, tol::kNorm).ok);

  // index_add with a hub: 40,000 of 50,000 sources on row 3.
  const size_t num_rows = 100, count = 50000, w = 3;
  std::vector<int64_t> idx = random_indices(count, num_rows, fresh_seed());
  for (size_t i = 0; i < count; i += 5) idx[i] = idx[i + 1] = idx[i + 2] = idx[i + 3] = 3;
  std::vector<float> src = random_floats(count * w, fresh_seed());
  std::vector<float> dst = random_floats(num_rows * w, fresh_seed());
  std::vector<float> out = dst;
  canon::index_add(out.data(), num_rows, src.data(), idx, w, -0.75f);
  c = compare_f64(out, ref64::index_add(dst.data(), num_rows, src.data(), idx, w, -0.75f),
                  tol::index_add(count));
  EXPECT_TRUE(c.ok) << "index_add: " << c.first;
}

// The float64 backward formulas against central finite differences of the
// float64 forward (so the references themselves are right).
TEST(ReferenceAgreement, BackwardMatchesFiniteDifferences) {
  const size_t rows = 3, n = 7;
  std::vector<float> xf = random_floats(rows * n, fresh_seed(), -2.0f, 2.0f);
  std::vector<float> dyf = random_floats(rows * n, fresh_seed());
  std::vector<float> gf = random_floats(n, fresh_seed(), 0.5f, 2.0f);
  std::vector<float> bf = random_floats(n, fresh_seed());
  std::vector<double> x(xf.begin(), xf.end()), dy(dyf.begin(), dyf.end()), g(gf.begin(), gf.end()),
      b(bf.begin(), bf.end());
  const float eps = 1e-5f;
  auto fd = [&](auto loss, std::vector<double>& v, size_t i) {
    double h = 1e-5 * std::max(1.0, std::fabs(v[i]));
    double keep = v[i];
    v[i] = keep + h;
    double up = loss();
    v[i] = keep - h;
    double down = loss();
    v[i] = keep;
    return (up - down) / (2 * h);
  };
  // softmax
  std::vector<float> y(rows * n);
  canon::softmax_forward(xf.data(), rows, n, y.data());
  auto sb = ref64::softmax_backward(y.data(), dyf.data(), rows, n);
  auto sm_loss = [&] { return ref64::softmax_loss(x, dy, rows, n); };
  for (size_t i = 0; i < rows * n; ++i)
    EXPECT_NEAR(sb.v[i], fd(sm_loss, x, i), tol::kFiniteDifferenceRel * (sb.scale[i] + 1e-3))
        << "softmax " << i;
  // rms norm: rstd from the float64 forward
  auto rf = ref64::rms_norm_forward(xf.data(), gf.data(), rows, n, eps);
  std::vector<float> rstd(rf.rstd.v.begin(), rf.rstd.v.end());
  auto rb = ref64::rms_norm_backward(xf.data(), gf.data(), rstd.data(), dyf.data(), rows, n);
  auto rms_loss = [&] { return ref64::rms_norm_loss(x, g, dy, rows, n, eps); };
  for (size_t i = 0; i < rows * n; ++i)
    EXPECT_NEAR(rb.dx.v[i], fd(rms_loss, x, i), tol::kFiniteDifferenceRel * (rb.dx.scale[i] + 1e-3))
        << "rms dx " << i;
  for (size_t j = 0; j < n; ++j)
    EXPECT_NEAR(rb.dgamma.v[j], fd(rms_loss, g, j),
                tol::kFiniteDifferenceRel * (rb.dgamma.scale[j] + 1e-3))
        << "rms dgamma " << j;
  // layer norm
  auto lf = ref64::layer_norm_forward(xf.data(), gf.data(), bf.data(), rows, n, eps);
  std::vector<float> mean(lf.mean.v.begin(), lf.mean.v.end()),
      lrstd(lf.rstd.v.begin(), lf.rstd.v.end());
  auto lb = ref64::layer_norm_backward(xf.data(), gf.data(), mean.data(), lrstd.data(), dyf.data(),
                                       rows, n);
  auto ln_loss = [&] { return ref64::layer_norm_loss(x, g, b, dy, rows, n, eps); };
  for (size_t i = 0; i < rows * n; ++i)
    EXPECT_NEAR(lb.dx.v[i], fd(ln_loss, x, i), tol::kFiniteDifferenceRel * (lb.dx.scale[i] + 1e-3))
        << "layer dx " << i;
  for (size_t j = 0; j < n; ++j) {
    EXPECT_NEAR(lb.dgamma.v[j], fd(ln_loss, g, j),
                tol::kFiniteDifferenceRel * (lb.dgamma.scale[j] + 1e-3))
        << "layer dgamma " << j;
    EXPECT_NEAR(lb.dbeta.v[j], fd(ln_loss, b, j),
                tol::kFiniteDifferenceRel * (lb.dbeta.scale[j] + 1e-3))
        << "layer dbeta " << j;
  }
}

}  // namespace
}  // namespace xhal::conf
