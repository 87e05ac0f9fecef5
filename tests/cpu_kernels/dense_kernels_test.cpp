// Kernel tests of the CPU plugin's dense ops, called directly (no core):
// every result is compared bit for bit with a scalar transcription of
// docs/semantics.md written here (plain loops, canonical.h's tree_sum and
// canonical_exp), on sizes that hit full chunks, ragged tails, odd block
// counts and the hub path of index_add; each test runs once per ISA build
// of the inner loops this CPU supports (sse2, avx2, avx512f).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "canonical.h"
#include "cpu_plugin.h"
#include "dense_ops.h"
#include "index_kernels.h"
#include "index_plan.h"
#include "isa_kernels.h"
#include "row_kernels.h"

namespace xhal::cpu {
namespace {

// ---- plumbing ---------------------------------------------------------------
struct HostTensor {
  std::vector<float> data;
  CpuBuffer buffer;
  xhal_plugin_tensor_t t{};
  HostTensor(std::vector<int64_t> shape, std::vector<float> values) : data(std::move(values)) {
    buffer.data = reinterpret_cast<std::byte*>(data.data());
    buffer.size = data.size() * sizeof(float);
    t.buffer = &buffer;
    t.dtype = XHAL_DTYPE_F32;
    t.rank = static_cast<uint32_t>(shape.size());
    int64_t stride = 1;
    for (int k = static_cast<int>(shape.size()) - 1; k >= 0; --k) {
      t.shape[k] = shape[k];
      t.strides[k] = stride;
      stride *= shape[k];
    }
  }
};

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -3.0f, float hi = 3.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Equal bits, or both NaN.
void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want,
                      const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
        << what << " at " << i << ": got " << got[i] << " want " << want[i];
  }
}

// ---- scalar transcription of the spec ----------------------------------------
float ref_tree(std::vector<float> v) {
  size_t p = 1;
  while (p < v.size()) p <<= 1;
  v.resize(std::max<size_t>(p, 1), 0.0f);
  return tree_sum(v.data(), v.size() == 0 ? 0 : v.size());
}

template <class Term>
float ref_rowsum(int64_t n, Term term) {
  std::vector<float> chunks;
  for (int64_t c = 0; c * 1024 < n; ++c) {
    std::vector<float> a(128, 0.0f);
    for (int t = 0; t < 8; ++t)
      for (int l = 0; l < 128; ++l) {
        const int64_t i = c * 1024 + t * 128 + l;
        a[l] = a[l] + (i < n ? term(i) : 0.0f);
      }
    chunks.push_back(ref_tree(a));
  }
  return ref_tree(chunks);
}

float ref_max(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return NAN;
  return a > b ? a : b;
}

std::pair<float, float> ref_combine(std::pair<float, float> a, std::pair<float, float> b) {
  const float m = ref_max(a.first, b.first);
  if (m == -INFINITY) return {m, 0.0f};
  return {m, a.second * canonical_exp(a.first - m) + b.second * canonical_exp(b.first - m)};
}

std::vector<float> ref_softmax_row(const float* x, int64_t n) {
  std::vector<std::pair<float, float>> stats;
  for (int64_t c = 0; c * 1024 < n; ++c) {
    float m = -INFINITY;
    for (int64_t i = c * 1024; i < std::min(n, c * 1024 + 1024); ++i) m = ref_max(m, x[i]);
    std::vector<float> a(128, 0.0f);
    for (int t = 0; t < 8; ++t)
      for (int l = 0; l < 128; ++l) {
        const int64_t i = c * 1024 + t * 128 + l;
        if (i < n) a[l] = a[l] + canonical_exp(x[i] - m);
      }
    stats.push_back({m, m == -INFINITY ? 0.0f : ref_tree(a)});
  }
  std::vector<float> chunk_max;
  for (auto& st : stats) chunk_max.push_back(st.first);
  size_t p = 1;
  while (p < stats.size()) p <<= 1;
  stats.resize(p, {-INFINITY, 0.0f});
  for (size_t w = p; w > 1; w >>= 1)
    for (size_t i = 0; i < w / 2; ++i) stats[i] = ref_combine(stats[2 * i], stats[2 * i + 1]);
  // Amended 3.3: each chunk reuses its exponentials, scaled once.
  const float inv = 1.0f / stats[0].second;
  std::vector<float> y(n);
  for (int64_t i = 0; i < n; ++i) {
    const float m = chunk_max[i / 1024];
    const float e = m == -INFINITY ? 0.0f : canonical_exp(x[i] - m);
    y[i] = e * (canonical_exp(m - stats[0].first) * inv);
  }
  return y;
}

// colsum (3.5) of term(r, j).
template <class Term>
std::vector<float> ref_colsum(int64_t rows, int64_t n, Term term) {
  std::vector<float> out(n);
  for (int64_t j = 0; j < n; ++j) {
    std::vector<float> blocks;
    for (int64_t b = 0; b * 32 < rows; ++b) {
      float p = 0.0f;
      for (int64_t r = b * 32; r < std::min(rows, b * 32 + 32); ++r) p = p + term(r, j);
      blocks.push_back(p);
    }
    out[j] = ref_tree(blocks);
  }
  return out;
}

float ref_segsum(const std::vector<float>& terms) {
  std::vector<float> chunks;
  for (size_t c = 0; c < terms.size(); c += 32) {
    float s = 0.0f;
    for (size_t k = c; k < std::min(terms.size(), c + 32); ++k) s = s + terms[k];
    chunks.push_back(s);
  }
  return ref_tree(chunks);
}

CpuDevice g_device;

// Runs `body` with each kernel table this CPU can execute.
template <class F>
void for_each_isa(F&& body) {
  for (const IsaKernels* table : supported_isas()) {
    force_isa(table);
    SCOPED_TRACE(std::string("isa ") + table->name);
    body();
    if (::testing::Test::HasFatalFailure()) break;
  }
  force_isa(nullptr);
}

// ---- xhal_exp -----------------------------------------------------------------
TEST(CpuDense, VectorExpMatchesScalarBits) {
  for_each_isa([&] {
    std::vector<float> x = random_floats(1 << 16, 1, -110.0f, 95.0f);
    // clang-format off
    const float specials[] = {0.0f, -0.0f, 88.72283f, 0x1.62e42ep+6f, 0x1.62e430p+6f,
                              -0x1.9fe368p+6f, -0x1.9fe36ap+6f, -87.5f, -100.0f, -103.9f,
                              INFINITY, -INFINITY, NAN, 1e-30f, -1e-40f, 0.5f};
    // clang-format on
    x.insert(x.begin(), std::begin(specials), std::end(specials));
    while (x.size() % 16) x.push_back(1.0f);
    for (size_t i = 0; i < x.size(); i += 16) {
      float out[16];
      isa().exp16(x.data() + i, out);
      for (int l = 0; l < 16; ++l) {
        const float want = canonical_exp(x[i + l]);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(out[l]));
          continue;
        }
        ASSERT_EQ(std::bit_cast<uint32_t>(out[l]), std::bit_cast<uint32_t>(want))
            << "x=" << x[i + l];
      }
    }
  });
}

// ---- row ops --------------------------------------------------------------------
class RowSizes : public ::testing::TestWithParam<std::pair<int64_t, int64_t>> {};

TEST_P(RowSizes, SoftmaxForwardBackwardMatchSpec) {
  for_each_isa([&] {
    const int64_t rows = GetParam().first,
                  n = GetParam().second;  // clang 14: lambdas cannot capture structured bindings
    HostTensor x({rows, n}, random_floats(rows * n, 2, -20.0f, 20.0f));
    // Row 0 gets special entries: -inf, huge and tiny values, ties.
    x.data[0] = -INFINITY;
    if (n > 3) x.data[1] = 80.0f, x.data[2] = 80.0f, x.data[3] = -1e30f;
    HostTensor y({rows, n}, std::vector<float>(rows * n));
    ASSERT_EQ(softmax_forward(&g_device, &x.t, &y.t), XHAL_OK);
    std::vector<float> want;
    for (int64_t r = 0; r < rows; ++r) {
      auto row = ref_softmax_row(x.data.data() + r * n, n);
      want.insert(want.end(), row.begin(), row.end());
    }
    expect_same_bits(y.data, want, "softmax y");

    HostTensor dy({rows, n}, random_floats(rows * n, 3));
    HostTensor dx({rows, n}, std::vector<float>(rows * n));
    ASSERT_EQ(softmax_backward(&g_device, &y.t, &dy.t, &dx.t), XHAL_OK);
    std::vector<float> want_dx(rows * n);
    for (int64_t r = 0; r < rows; ++r) {
      const float* yr = y.data.data() + r * n;
      const float* dyr = dy.data.data() + r * n;
      const float d = ref_rowsum(n, [&](int64_t i) { return yr[i] * dyr[i]; });
      for (int64_t i = 0; i < n; ++i) want_dx[r * n + i] = yr[i] * (dyr[i] - d);
    }
    expect_same_bits(dx.data, want_dx, "softmax dx");
  });
}

TEST_P(RowSizes, RmsNormForwardBackwardMatchSpec) {
  for_each_isa([&] {
    const int64_t rows = GetParam().first,
                  n = GetParam().second;  // clang 14: lambdas cannot capture structured bindings
    const float eps = 1e-5f;
    HostTensor x({rows, n}, random_floats(rows * n, 4));
    HostTensor gamma({n}, random_floats(n, 5));
    HostTensor y({rows, n}, std::vector<float>(rows * n));
    HostTensor rstd({rows}, std::vector<float>(rows));
    ASSERT_EQ(rms_norm_forward(&g_device, &x.t, &gamma.t, eps, &y.t, &rstd.t), XHAL_OK);
    std::vector<float> want_y(rows * n), want_rstd(rows);
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x.data.data() + r * n;
      const float ms = ref_rowsum(n, [&](int64_t i) { return xr[i] * xr[i]; }) / (float)n;
      want_rstd[r] = 1.0f / std::sqrt(ms + eps);
      for (int64_t i = 0; i < n; ++i) want_y[r * n + i] = (xr[i] * want_rstd[r]) * gamma.data[i];
    }
    expect_same_bits(rstd.data, want_rstd, "rms rstd");
    expect_same_bits(y.data, want_y, "rms y");

    HostTensor dy({rows, n}, random_floats(rows * n, 6));
    HostTensor dx({rows, n}, std::vector<float>(rows * n));
    HostTensor dgamma({n}, std::vector<float>(n));
    ASSERT_EQ(rms_norm_backward(&g_device, &x.t, &gamma.t, &rstd.t, &dy.t, &dx.t, &dgamma.t),
              XHAL_OK);
    auto xh = [&](int64_t r, int64_t i) { return x.data[r * n + i] * rstd.data[r]; };
    std::vector<float> want_dx(rows * n);
    for (int64_t r = 0; r < rows; ++r) {
      auto g = [&](int64_t i) { return dy.data[r * n + i] * gamma.data[i]; };
      const float c = ref_rowsum(n, [&](int64_t i) { return g(i) * xh(r, i); }) / (float)n;
      for (int64_t i = 0; i < n; ++i) want_dx[r * n + i] = (g(i) - xh(r, i) * c) * rstd.data[r];
    }
    expect_same_bits(dx.data, want_dx, "rms dx");
    expect_same_bits(
        dgamma.data,
        ref_colsum(rows, n, [&](int64_t r, int64_t j) { return dy.data[r * n + j] * xh(r, j); }),
        "rms dgamma");
  });
}

TEST_P(RowSizes, LayerNormForwardBackwardMatchSpec) {
  for_each_isa([&] {
    const int64_t rows = GetParam().first,
                  n = GetParam().second;  // clang 14: lambdas cannot capture structured bindings
    const float eps = 1e-5f;
    // An offset mean makes the two-pass variance matter.
    HostTensor x({rows, n}, random_floats(rows * n, 7, 99.0f, 101.0f));
    HostTensor gamma({n}, random_floats(n, 8));
    HostTensor beta({n}, random_floats(n, 9));
    HostTensor y({rows, n}, std::vector<float>(rows * n));
    HostTensor mean({rows}, std::vector<float>(rows));
    HostTensor rstd({rows}, std::vector<float>(rows));
    ASSERT_EQ(layer_norm_forward(&g_device, &x.t, &gamma.t, &beta.t, eps, &y.t, &mean.t, &rstd.t),
              XHAL_OK);
    std::vector<float> want_y(rows * n), want_mean(rows), want_rstd(rows);
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x.data.data() + r * n;
      const float mu = ref_rowsum(n, [&](int64_t i) { return xr[i]; }) / (float)n;
      const float var = ref_rowsum(n,
                                   [&](int64_t i) {
                                     float d = xr[i] - mu;
                                     return d * d;
                                   }) /
                        (float)n;
      want_mean[r] = mu;
      want_rstd[r] = 1.0f / std::sqrt(var + eps);
      for (int64_t i = 0; i < n; ++i)
        want_y[r * n + i] = ((xr[i] - mu) * want_rstd[r]) * gamma.data[i] + beta.data[i];
    }
    expect_same_bits(mean.data, want_mean, "ln mean");
    expect_same_bits(rstd.data, want_rstd, "ln rstd");
    expect_same_bits(y.data, want_y, "ln y");

    HostTensor dy({rows, n}, random_floats(rows * n, 10));
    HostTensor dx({rows, n}, std::vector<float>(rows * n));
    HostTensor dgamma({n}, std::vector<float>(n));
    HostTensor dbeta({n}, std::vector<float>(n));
    ASSERT_EQ(layer_norm_backward(&g_device, &x.t, &gamma.t, &mean.t, &rstd.t, &dy.t, &dx.t,
                                  &dgamma.t, &dbeta.t),
              XHAL_OK);
    auto xh = [&](int64_t r, int64_t i) {
      return (x.data[r * n + i] - mean.data[r]) * rstd.data[r];
    };
    std::vector<float> want_dx(rows * n);
    for (int64_t r = 0; r < rows; ++r) {
      auto g = [&](int64_t i) { return dy.data[r * n + i] * gamma.data[i]; };
      const float a = ref_rowsum(n, g) / (float)n;
      const float b = ref_rowsum(n, [&](int64_t i) { return g(i) * xh(r, i); }) / (float)n;
      for (int64_t i = 0; i < n; ++i)
        want_dx[r * n + i] = ((g(i) - a) - xh(r, i) * b) * rstd.data[r];
    }
    expect_same_bits(dx.data, want_dx, "ln dx");
    expect_same_bits(
        dgamma.data,
        ref_colsum(rows, n, [&](int64_t r, int64_t j) { return dy.data[r * n + j] * xh(r, j); }),
        "ln dgamma");
    expect_same_bits(dbeta.data,
                     ref_colsum(rows, n, [&](int64_t r, int64_t j) { return dy.data[r * n + j]; }),
                     "ln dbeta");
  });
}

// Full chunks, ragged tails, a single element, odd block counts (3 blocks of
// 32 rows with a short last one), one long row past 200,000 columns, and an
// output big enough for the streaming-store path.
INSTANTIATE_TEST_SUITE_P(
    Shapes, RowSizes,
    ::testing::Values(std::pair<int64_t, int64_t>{1, 1}, std::pair<int64_t, int64_t>{3, 5},
                      std::pair<int64_t, int64_t>{70, 1024}, std::pair<int64_t, int64_t>{33, 1025},
                      std::pair<int64_t, int64_t>{65, 3000}, std::pair<int64_t, int64_t>{2, 200001},
                      // Few blocks, long rows: the norm
                      // backwards split columns (3 blocks,
                      // a short last row group and slab).
                      std::pair<int64_t, int64_t>{70, 20003},
                      // >= 8 MiB of output: streaming stores,
                      // rows starting off a 64-byte line.
                      std::pair<int64_t, int64_t>{2050, 1025}));

// The templated row and index kernels (row_kernels.h, index_kernels.h) that
// run the f64 ops follow the same order as the per-ISA f32 loops: their
// float instantiation gives the same bits, row by row, on every ISA.
TEST(CpuDense, TemplatedKernelsAtFloatMatchEveryIsa) {
  for_each_isa([&] {
    const IsaKernels& k = isa();
    for (int64_t n : {1, 7, 128, 1000, 1024, 1025, 3000, 9000}) {
      std::vector<float> x = random_floats(n, 11 + n, -30.0f, 30.0f), g = random_floats(n, 12),
                         b = random_floats(n, 13), dy = random_floats(n, 14);
      x[0] = -INFINITY;
      std::vector<float> y1(n), y2(n), s1(softmax_scratch_floats(n)), s2(s1.size());
      k.softmax_row(x.data(), y1.data(), n, s1.data(), false);
      rows::softmax_row<float>(x.data(), y2.data(), n, s2.data(), false);
      expect_same_bits(y1, y2, "softmax_row");
      x[0] = 0.5f;
      k.softmax_backward_row(y1.data(), dy.data(), s1.data(), n, false);
      rows::softmax_backward_row<float>(y1.data(), dy.data(), s2.data(), n, false);
      s1.resize(n);
      s2.resize(n);
      expect_same_bits(s1, s2, "softmax_backward_row");
      const float r1 = k.rms_norm_row(x.data(), g.data(), 1e-5f, y1.data(), n, false);
      const float r2 = rows::rms_norm_row<float>(x.data(), g.data(), 1e-5f, y2.data(), n, false);
      expect_same_bits(y1, y2, "rms_norm_row y");
      EXPECT_EQ(std::bit_cast<uint32_t>(r1), std::bit_cast<uint32_t>(r2)) << "rstd, n = " << n;
      std::vector<float> p1(n, 0.25f), p2(n, 0.25f), q1(n, -0.5f), q2(n, -0.5f);
      k.rms_norm_backward_row(x.data(), g.data(), r1, dy.data(), y1.data(), p1.data(), n, false);
      rows::rms_norm_backward_row<float>(x.data(), g.data(), r1, dy.data(), y2.data(), p2.data(), n,
                                         false);
      expect_same_bits(y1, y2, "rms_norm_backward_row dx");
      expect_same_bits(p1, p2, "rms_norm_backward_row partial");
      float m1 = 0, m2 = 0, rs1 = 0, rs2 = 0;
      k.layer_norm_row(x.data(), g.data(), b.data(), 1e-5f, y1.data(), n, &m1, &rs1, false);
      rows::layer_norm_row<float>(x.data(), g.data(), b.data(), 1e-5f, y2.data(), n, &m2, &rs2,
                                  false);
      expect_same_bits(y1, y2, "layer_norm_row y");
      EXPECT_EQ(std::bit_cast<uint32_t>(m1), std::bit_cast<uint32_t>(m2)) << "mean, n = " << n;
      EXPECT_EQ(std::bit_cast<uint32_t>(rs1), std::bit_cast<uint32_t>(rs2)) << "rstd, n = " << n;
      k.layer_norm_backward_row(x.data(), g.data(), m1, rs1, dy.data(), y1.data(), p1.data(),
                                q1.data(), n, false);
      rows::layer_norm_backward_row<float>(x.data(), g.data(), m1, rs1, dy.data(), y2.data(),
                                           p2.data(), q2.data(), n, false);
      expect_same_bits(y1, y2, "layer_norm_backward_row dx");
      expect_same_bits(p1, p2, "layer_norm_backward_row dgamma partial");
      expect_same_bits(q1, q2, "layer_norm_backward_row dbeta partial");
    }
    // index_add: one row's segsum (several chunks, a padded subtree) and a small row.
    const int64_t w = 300, m = 200;
    std::vector<float> src = random_floats(m * w, 21);
    std::vector<int64_t> sources(m);
    for (int64_t i = 0; i < m; ++i) sources[i] = (i * 37) % m;
    std::vector<float> st1(kIndexTreeDepth * kIndexTile), st2(st1.size()), o1(kIndexTile),
        o2(kIndexTile);
    for (int height : {0, 4}) {
      k.segsum_chunks(src.data(), w, sources.data(), m, 1, 7, height, 40, 200, st1.data(),
                      o1.data());
      rows::segsum_chunks<float>(src.data(), w, sources.data(), m, 1, 7, height, 40, 200,
                                 st2.data(), o2.data());
      expect_same_bits(o1, o2, "segsum_chunks");
    }
    std::vector<float> d1 = random_floats(w, 22), d2 = d1;
    k.add_small_row(d1.data(), src.data(), w, sources.data(), 29, -0.375f);
    rows::add_small_row<float>(d2.data(), src.data(), w, sources.data(), 29, -0.375f);
    expect_same_bits(d1, d2, "add_small_row");
  });
}

TEST(CpuDense, SoftmaxAllMinusInfRowIsNanAndInPlaceWorks) {
  for_each_isa([&] {
    const int64_t n = 2048;
    HostTensor x({2, n}, random_floats(2 * n, 11));
    for (int64_t i = 0; i < n; ++i) x.data[i] = -INFINITY;
    std::vector<float> want = ref_softmax_row(x.data.data(), n);
    auto row1 = ref_softmax_row(x.data.data() + n, n);
    want.insert(want.end(), row1.begin(), row1.end());
    ASSERT_EQ(softmax_forward(&g_device, &x.t, &x.t), XHAL_OK);  // y == x
    EXPECT_TRUE(std::isnan(x.data[0]));
    expect_same_bits(x.data, want, "in-place softmax");
  });
}

// Whole 1024-chunks holding NaN, +inf, -inf only, finite values whose
// running sum overflows, and mixed-sign zeros: the one-pass max/min fast path must hand
// each to the NaN-propagating pass and still give the spec's bits.
TEST(CpuDense, SoftmaxChunksWithNanInfOverflowAndZeros) {
  for_each_isa([&] {
    const int64_t n = 4096, rows = 6;
    HostTensor x({rows, n}, random_floats(rows * n, 12, -20.0f, 20.0f));
    x.data[0 * n + 1024 + 500] = NAN;     // mid-chunk NaN
    x.data[1 * n + 2048 + 7] = INFINITY;  // +inf in a chunk
    for (int64_t i = 0; i < 1024; ++i)    // finite, but the sum overflows
      x.data[2 * n + i] = (i % 2 ? 3e38f : 2.9e38f);
    for (int64_t i = 0; i < 1024; ++i)  // only zeros of both signs
      x.data[3 * n + 3072 + i] = (i % 3 ? -0.0f : 0.0f);
    x.data[4 * n + 1023] = NAN;         // NaN in the last lane of a chunk
    for (int64_t i = 0; i < 1024; ++i)  // a whole chunk of -inf: e = +0
      x.data[5 * n + 1024 + i] = -INFINITY;
    HostTensor y({rows, n}, std::vector<float>(rows * n));
    ASSERT_EQ(softmax_forward(&g_device, &x.t, &y.t), XHAL_OK);
    std::vector<float> want;
    for (int64_t r = 0; r < rows; ++r) {
      auto row = ref_softmax_row(x.data.data() + r * n, n);
      want.insert(want.end(), row.begin(), row.end());
    }
    expect_same_bits(y.data, want, "softmax special chunks");
  });
}

// ---- index ops -------------------------------------------------------------------
// The descs a core hands index_plan_create: kCompact as a 1.1 core does
// (touched rows only, row_ptr NULL); kFull as a 1.0 core does (row_ptr over
// every row, and no touched_* fields: poisoned here so reading them shows).
enum class Form { kCompact, kFull };

struct Plan {
  std::vector<int64_t> idx, row_ptr, sources, touched, touched_ptr;
  void* handle = nullptr;
  Plan(std::vector<int64_t> indices, int64_t num_rows, Form form = Form::kCompact)
      : idx(std::move(indices)) {
    // Sources grouped by row, rows ascending, positions ascending.
    std::map<int64_t, std::vector<int64_t>> by_row;
    for (size_t i = 0; i < idx.size(); ++i) by_row[idx[i]].push_back(static_cast<int64_t>(i));
    touched_ptr.push_back(0);
    for (const auto& [r, list] : by_row) {
      touched.push_back(r);
      sources.insert(sources.end(), list.begin(), list.end());
      touched_ptr.push_back(static_cast<int64_t>(sources.size()));
    }
    xhal_plugin_index_plan_desc_t desc{};
    desc.count = idx.size();
    desc.num_rows = num_rows;
    desc.indices = idx.data();
    desc.row_sources = sources.data();
    if (form == Form::kCompact) {
      desc.touched_count = touched.size();
      desc.touched_rows = touched.data();
      desc.touched_ptr = touched_ptr.data();
    } else {
      row_ptr.assign(num_rows + 1, 0);
      for (int64_t i : idx) ++row_ptr[i + 1];
      for (int64_t r = 0; r < num_rows; ++r) row_ptr[r + 1] += row_ptr[r];
      desc.row_ptr = row_ptr.data();
      desc.touched_count = UINT64_MAX;
    }
    EXPECT_EQ(index_plan_create(&g_device, &desc, &handle), XHAL_OK);
  }
  ~Plan() { index_plan_destroy(&g_device, handle); }
};

TEST(CpuDense, IndexSelectGathersRepeatedRowsOfEveryWidth) {
  for_each_isa([&] {
    for (const int64_t w : {1, 2, 3, 64, 257}) {
      const int64_t rows = 50;
      HostTensor src({rows, w}, random_floats(rows * w, 12));
      std::vector<int64_t> idx = {3, 3, 0, 49, 7, 3, 49};
      Plan plan(idx, rows);
      HostTensor out({static_cast<int64_t>(idx.size()), w}, std::vector<float>(idx.size() * w));
      ASSERT_EQ(index_select(&g_device, plan.handle, &src.t, &out.t), XHAL_OK);
      std::vector<float> want;
      for (int64_t i : idx)
        want.insert(want.end(), src.data.begin() + i * w, src.data.begin() + (i + 1) * w);
      expect_same_bits(out.data, want, "gather");
    }
  });
}

TEST(CpuDense, IndexSelectMovesOneAndEightByteElements) {
  for_each_isa([&] {
    std::vector<uint8_t> bytes(40);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
    CpuBuffer sb{reinterpret_cast<std::byte*>(bytes.data()), bytes.size()};
    std::vector<uint8_t> out_bytes(3 * 4, 0);
    CpuBuffer ob{reinterpret_cast<std::byte*>(out_bytes.data()), out_bytes.size()};
    xhal_plugin_tensor_t s{&sb, 0, XHAL_DTYPE_U8, 2, {10, 4}, {4, 1}};
    xhal_plugin_tensor_t o{&ob, 0, XHAL_DTYPE_U8, 2, {3, 4}, {4, 1}};
    Plan plan({9, 0, 9}, 10);
    ASSERT_EQ(index_select(&g_device, plan.handle, &s, &o), XHAL_OK);
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(out_bytes[k], bytes[36 + k]);
      EXPECT_EQ(out_bytes[4 + k], bytes[k]);
      EXPECT_EQ(out_bytes[8 + k], bytes[36 + k]);
    }
    std::vector<int64_t> wide = {10, -20, 30, INT64_MIN};
    CpuBuffer wb{reinterpret_cast<std::byte*>(wide.data()), 32};
    std::vector<int64_t> wide_out(2);
    CpuBuffer wob{reinterpret_cast<std::byte*>(wide_out.data()), 16};
    xhal_plugin_tensor_t ws{&wb, 0, XHAL_DTYPE_I64, 2, {4, 1}, {1, 1}};
    xhal_plugin_tensor_t wo{&wob, 0, XHAL_DTYPE_I64, 2, {2, 1}, {1, 1}};
    Plan wplan({3, 1}, 4);
    ASSERT_EQ(index_select(&g_device, wplan.handle, &ws, &wo), XHAL_OK);
    EXPECT_EQ(wide_out[0], INT64_MIN);
    EXPECT_EQ(wide_out[1], -20);
  });
}

// Duplicates, untouched rows (left exactly as they were, NaN included), and
// a hub row with enough sources to take the parallel subtree path.
TEST(CpuDense, IndexAddFollowsSegsumOrderIncludingHubs) {
  for_each_isa([&] {
    for (const Form form : {Form::kCompact, Form::kFull})
      for (const int64_t hub_sources : {int64_t{5}, int64_t{33}, int64_t{3000}, int64_t{40000}}) {
        const int64_t num_rows = 100, w = 300;
        std::mt19937 rng(13);
        std::vector<int64_t> idx;
        for (int64_t i = 0; i < hub_sources; ++i) idx.push_back(0);
        for (int64_t i = 0; i < 500; ++i) idx.push_back(1 + rng() % 60);  // rows 61..99 untouched
        std::shuffle(idx.begin(), idx.end(), rng);
        const int64_t count = static_cast<int64_t>(idx.size());
        Plan plan(idx, num_rows, form);
        // Magnitudes spread over many binades so that any change of order shows.
        HostTensor src({count, w}, random_floats(count * w, 14));
        for (size_t i = 0; i < src.data.size(); i += 7) src.data[i] *= 1e6f;
        HostTensor dst({num_rows, w}, random_floats(num_rows * w, 15));
        dst.data[99 * w] = NAN;
        const std::vector<float> before = dst.data;
        const float alpha = 0.75f;
        ASSERT_EQ(index_add(&g_device, plan.handle, alpha, &src.t, &dst.t), XHAL_OK);
        std::vector<float> want = before;
        for (int64_t r = 0; r < num_rows; ++r) {
          std::vector<int64_t> sources;
          for (int64_t i = 0; i < count; ++i)
            if (idx[i] == r) sources.push_back(i);
          if (sources.empty()) continue;
          for (int64_t j = 0; j < w; ++j) {
            std::vector<float> terms;
            for (int64_t i : sources) terms.push_back(src.data[i * w + j]);
            want[r * w + j] = before[r * w + j] + alpha * ref_segsum(terms);
          }
        }
        expect_same_bits(dst.data, want, "index_add");
      }
  });
}

// Both descs give the same plan: every touched row once, ascending, with its
// source range; untouched rows are not listed; a row past kHubSources is a hub.
TEST(CpuDense, IndexPlanListsOnlyTouchedRowsInBothForms) {
  std::vector<int64_t> idx = {5, 2, 5, 9, 2, 5};
  idx.insert(idx.end(), kHubSources + 1, 7);
  idx.push_back(9);
  const auto rows_of = [](const std::vector<TouchedRow>& v) {
    std::vector<std::vector<int64_t>> out;
    for (const TouchedRow& t : v) out.push_back({t.row, t.begin, t.end});
    return out;
  };
  for (const Form form : {Form::kCompact, Form::kFull}) {
    Plan plan(idx, 12, form);
    const auto& p = *static_cast<const IndexPlan*>(plan.handle);
    // Sources: row 2 {1, 4}, row 5 {0, 2, 5}, row 7 {6 ..}, row 9 {3, last}.
    EXPECT_EQ(rows_of(p.light_rows),
              (std::vector<std::vector<int64_t>>{
                  {2, 0, 2}, {5, 2, 5}, {9, kHubSources + 6, kHubSources + 8}}));
    EXPECT_EQ(rows_of(p.hub_rows), (std::vector<std::vector<int64_t>>{{7, 5, kHubSources + 6}}));
    EXPECT_EQ(p.row_sources[0], 1);
    EXPECT_EQ(p.row_sources[kHubSources + 7], static_cast<int64_t>(idx.size()) - 1);
  }
}

// A plan into 2^40 rows costs what its five indices cost, and index_add
// reads and writes only the rows they select. (The core would require a dst
// of 2^40 rows; this kernel reads no row the plan does not select, so a
// table of the first 64 rows stands in for it.)
TEST(CpuDense, IndexAddIntoAHugeTableTouchesOnlyItsRows) {
  for_each_isa([&] {
    const std::vector<int64_t> idx = {3, 0, 3, 63, 3};
    Plan plan(idx, int64_t{1} << 40);
    const int64_t w = 40, count = static_cast<int64_t>(idx.size());
    HostTensor src({count, w}, random_floats(count * w, 21));
    HostTensor dst({64, w}, random_floats(64 * w, 22));
    dst.data[10 * w + 3] = NAN;
    const std::vector<float> before = dst.data;
    ASSERT_EQ(index_add(&g_device, plan.handle, -1.5f, &src.t, &dst.t), XHAL_OK);
    std::vector<float> want = before;
    for (const int64_t r : {int64_t{0}, int64_t{3}, int64_t{63}})
      for (int64_t j = 0; j < w; ++j) {
        std::vector<float> terms;
        for (int64_t i = 0; i < count; ++i)
          if (idx[i] == r) terms.push_back(src.data[i * w + j]);
        want[r * w + j] = before[r * w + j] + -1.5f * ref_segsum(terms);
      }
    expect_same_bits(dst.data, want, "index_add into 2^40 rows");
  });
}

// ---- permute ----------------------------------------------------------------------
// dst = src viewed with (shape, strides), walked in row-major dst order.
std::vector<float> ref_strided(const std::vector<float>& src, const std::vector<int64_t>& shape,
                               const std::vector<int64_t>& strides, int64_t offset) {
  int64_t total = 1;
  for (auto d : shape) total *= d;
  std::vector<float> out(total);
  for (int64_t o = 0; o < total; ++o) {
    int64_t rest = o, s = offset;
    for (int k = static_cast<int>(shape.size()) - 1; k >= 0; --k) {
      s += (rest % shape[k]) * strides[k];
      rest /= shape[k];
    }
    out[o] = src[s];
  }
  return out;
}

void run_permute(const std::vector<float>& data, std::vector<int64_t> shape,
                 std::vector<int64_t> strides, int64_t offset, const char* what) {
  std::vector<float> src_data = data;
  CpuBuffer sb{reinterpret_cast<std::byte*>(src_data.data()), src_data.size() * 4};
  xhal_plugin_tensor_t s{};
  s.buffer = &sb;
  s.offset = offset * 4;
  s.dtype = XHAL_DTYPE_F32;
  s.rank = static_cast<uint32_t>(shape.size());
  for (size_t k = 0; k < shape.size(); ++k) s.shape[k] = shape[k], s.strides[k] = strides[k];
  HostTensor d(shape, std::vector<float>(ref_strided(data, shape, strides, offset).size(), -7.0f));
  ASSERT_EQ(permute(&g_device, &s, &d.t), XHAL_OK);
  expect_same_bits(d.data, ref_strided(data, shape, strides, offset), what);
}

std::vector<float> iota(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

TEST(CpuDense, PermuteSwapOfOuterDimsPutsOneAtOneZeroZero) {
  for_each_isa([&] {
    // src [2,3,4] contiguous, perm (2,1,0): dst [4,3,2], dst[i][j][k] = src[k][j][i].
    std::vector<float> src = iota(24);
    std::vector<float> dst(24, -1.0f);
    CpuBuffer sb{reinterpret_cast<std::byte*>(src.data()), 96};
    HostTensor d({4, 3, 2}, dst);
    xhal_plugin_tensor_t s{&sb, 0, XHAL_DTYPE_F32, 3, {4, 3, 2}, {1, 4, 12}};
    ASSERT_EQ(permute(&g_device, &s, &d.t), XHAL_OK);
    EXPECT_EQ(d.data[1 * 6 + 0 * 2 + 0], 1.0f);   // dst[1][0][0] = src[0][0][1]
    EXPECT_EQ(d.data[0 * 6 + 0 * 2 + 1], 12.0f);  // dst[0][0][1] = src[1][0][0]
    EXPECT_EQ(d.data[3 * 6 + 2 * 2 + 1], 23.0f);
  });
}

TEST(CpuDense, PermuteTransposesRaggedTilesAndBatches) {
  for_each_isa([&] {
    // Last-two-dims transposes with sizes that are not tile multiples.
    for (auto [b, r, c] :
         {std::tuple<int64_t, int64_t, int64_t>{1, 1, 7}, {1, 130, 67}, {3, 65, 129}, {2, 5, 3}}) {
      const std::vector<float> data = iota(b * r * c);
      // dst [b, c, r] from src [b, r, c]
      run_permute(data, {b, c, r}, {r * c, 1, c}, 0, "transpose");
    }
  });
}

TEST(CpuDense, PermuteHandlesStridedViewsUpToRankEight) {
  for_each_isa([&] {
    const std::vector<float> data = iota(6000);
    // A stepped view without any unit stride, at an offset.
    run_permute(data, {5, 7, 9}, {700, 3, 70}, 11, "stepped view");
    // Rank 8, dims permuted and a broadcast (stride 0) dim.
    run_permute(data, {2, 2, 3, 2, 2, 1, 3, 2}, {1, 0, 900, 3, 60, 1, 240, 6}, 5, "rank 8");
    // Contiguous runs with permuted outer dims.
    run_permute(data, {4, 5, 30}, {30, 120, 1}, 0, "runs");
  });
}

TEST(CpuDense, PermuteEightByteElements) {
  for_each_isa([&] {
    std::vector<double> data(12);
    for (int i = 0; i < 12; ++i) data[i] = i + 0.5;
    std::vector<double> out(12, 0.0);
    CpuBuffer sb{reinterpret_cast<std::byte*>(data.data()), 96};
    CpuBuffer ob{reinterpret_cast<std::byte*>(out.data()), 96};
    xhal_plugin_tensor_t s{&sb, 0, XHAL_DTYPE_F64, 2, {4, 3}, {1, 4}};  // transpose of [3,4]
    xhal_plugin_tensor_t o{&ob, 0, XHAL_DTYPE_F64, 2, {4, 3}, {3, 1}};
    ASSERT_EQ(permute(&g_device, &s, &o), XHAL_OK);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_EQ(out[i * 3 + j], data[j * 4 + i]);
  });
}

}  // namespace
}  // namespace xhal::cpu
