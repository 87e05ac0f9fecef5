// Kernel tests of the CPU plugin's sparse slots, called directly (no core):
// hand-computed results on a chain and a confluence, the segment-sum order
// on a long row, signed zeros, and the level-scheduled solves against a
// plain row-by-row walk on trees wide enough to run in parallel.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cpu_plugin.h"
#include "sparse_kernels.h"

namespace xhal::cpu {
namespace {

// Host-side pattern plus what the core would hand to csr_create.
struct TestMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> row_ptr, col_idx, row_idx, t_row_ptr, t_col_idx, t_perm;
  std::vector<float> values;
  CpuBuffer values_buffer;
  void* handle = nullptr;
  CpuDevice device;

  TestMatrix(int64_t r, int64_t c, std::vector<int64_t> rp, std::vector<int64_t> ci,
             std::vector<float> v)
      : rows(r), cols(c), row_ptr(std::move(rp)), col_idx(std::move(ci)), values(std::move(v)) {
    const int64_t nnz = static_cast<int64_t>(col_idx.size());
    row_idx.resize(nnz);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t e = row_ptr[i]; e < row_ptr[i + 1]; ++e) row_idx[e] = i;
    t_row_ptr.assign(cols + 1, 0);
    for (int64_t e = 0; e < nnz; ++e) ++t_row_ptr[col_idx[e] + 1];
    for (int64_t j = 0; j < cols; ++j) t_row_ptr[j + 1] += t_row_ptr[j];
    t_col_idx.resize(nnz);
    t_perm.resize(nnz);
    std::vector<int64_t> next(t_row_ptr.begin(), t_row_ptr.end() - 1);
    for (int64_t e = 0; e < nnz; ++e) {
      const int64_t slot = next[col_idx[e]]++;
      t_col_idx[slot] = row_idx[e];
      t_perm[slot] = e;
    }
    values_buffer.data = reinterpret_cast<std::byte*>(values.data());
    values_buffer.size = values.size() * sizeof(float);
    xhal_plugin_csr_desc_t d{};
    d.rows = rows;
    d.cols = cols;
    d.nnz = nnz;
    d.row_ptr = row_ptr.data();
    d.col_idx = col_idx.data();
    d.row_idx = row_idx.data();
    d.t_row_ptr = t_row_ptr.data();
    d.t_col_idx = t_col_idx.data();
    d.t_perm = t_perm.data();
    d.values_buffer = &values_buffer;
    EXPECT_EQ(csr_create(&device, &d, &handle), XHAL_OK);
  }
  ~TestMatrix() { csr_destroy(&device, handle); }
  TestMatrix(const TestMatrix&) = delete;
  TestMatrix& operator=(const TestMatrix&) = delete;
};

// A host vector wrapped as a plugin tensor ([n] or [n, k], contiguous).
struct TestTensor {
  std::vector<float> data;
  CpuBuffer buffer;
  xhal_plugin_tensor_t t{};

  TestTensor(std::vector<float> v, int64_t n, int64_t k, bool rank2) : data(std::move(v)) {
    buffer.data = reinterpret_cast<std::byte*>(data.data());
    buffer.size = data.size() * sizeof(float);
    t.buffer = &buffer;
    t.dtype = XHAL_DTYPE_F32;
    t.rank = rank2 ? 2 : 1;
    t.shape[0] = n;
    t.strides[0] = rank2 ? k : 1;
    if (rank2) {
      t.shape[1] = k;
      t.strides[1] = 1;
    }
  }
};

TestTensor vec(std::vector<float> v) {
  const auto n = static_cast<int64_t>(v.size());
  return TestTensor(std::move(v), n, 1, false);
}
TestTensor cols(std::vector<float> v, int64_t k) {
  const auto n = static_cast<int64_t>(v.size()) / k;
  return TestTensor(std::move(v), n, k, true);
}

bool same_bits(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

// Chain 0 <- 1 <- 2 <- 3: A = 2 I - (subdiagonal of 1s), lower.
TestMatrix chain4() {
  return TestMatrix(4, 4, {0, 1, 3, 5, 7}, {0, 0, 1, 1, 2, 2, 3}, {2, -1, 2, -1, 2, -1, 2});
}

TEST(SparseKernels, SpmvRowsAndTransposeByHand) {
  // A = [[1 0 2], [0 0 0], [3 4 0]] (an empty row), x = [1 2 3].
  TestMatrix a(3, 3, {0, 2, 2, 4}, {0, 2, 0, 1}, {1, 2, 3, 4});
  auto x = vec({1, 2, 3});
  auto y = vec({100, 100, 100});
  ASSERT_EQ(spmv(&a.device, a.handle, XHAL_TRANSPOSE_NONE, 2.0f, &x.t, 0.0f, &y.t), XHAL_OK);
  EXPECT_EQ(y.data, (std::vector<float>{14, 0, 22}));
  // A^T x = [1*1+3*3, 4*3, 2*1] ; y = 1*t + 0.5*y.
  y.data = {2, 4, 6};
  ASSERT_EQ(spmv(&a.device, a.handle, XHAL_TRANSPOSE, 1.0f, &x.t, 0.5f, &y.t), XHAL_OK);
  EXPECT_EQ(y.data, (std::vector<float>{11, 14, 5}));
  EXPECT_EQ(a.device.kernel_launches.load(), 2u);
}

TEST(SparseKernels, SpmvBetaZeroDoesNotReadY) {
  TestMatrix a(1, 1, {0, 1}, {0}, {3});
  auto x = vec({2});
  auto y = vec({NAN});
  ASSERT_EQ(spmv(&a.device, a.handle, XHAL_TRANSPOSE_NONE, 1.0f, &x.t, 0.0f, &y.t), XHAL_OK);
  EXPECT_EQ(y.data[0], 6.0f);
}

TEST(SparseKernels, SegsumStartsAtPositiveZero) {
  // One product -0: the row sum is +0 + -0 = +0, not -0.
  TestMatrix a(1, 1, {0, 1}, {0}, {-1});
  auto x = vec({0});
  auto y = vec({7});
  ASSERT_EQ(spmv(&a.device, a.handle, XHAL_TRANSPOSE_NONE, 1.0f, &x.t, 0.0f, &y.t), XHAL_OK);
  EXPECT_TRUE(same_bits(y.data[0], +0.0f)) << y.data[0];
}

TEST(SparseKernels, LongRowSumsChunksOf32ThenTree) {
  // 64 terms: 2^24 then 63 ones. Left to right every 1 is lost (2^24); in
  // chunks the second chunk's 32 survives: 2^24 + 32.
  const int64_t m = 64;
  std::vector<int64_t> col(m);
  for (int64_t j = 0; j < m; ++j) col[j] = j;
  std::vector<float> v(m, 1.0f);
  v[0] = 16777216.0f;
  TestMatrix a(1, m, {0, m}, col, v);
  TestMatrix at(
      m, 1,
      [&] {
        std::vector<int64_t> rp(m + 1);
        for (int64_t i = 0; i <= m; ++i) rp[i] = i;
        return rp;
      }(),
      std::vector<int64_t>(m, 0), v);
  auto x = vec(std::vector<float>(m, 1.0f));
  auto y = vec({0});
  ASSERT_EQ(spmv(&a.device, a.handle, XHAL_TRANSPOSE_NONE, 1.0f, &x.t, 0.0f, &y.t), XHAL_OK);
  EXPECT_EQ(y.data[0], 16777216.0f + 32.0f);
  // The same sum as a column of A^T.
  auto y1 = vec({0});
  ASSERT_EQ(spmv(&at.device, at.handle, XHAL_TRANSPOSE, 1.0f, &x.t, 0.0f, &y1.t), XHAL_OK);
  EXPECT_EQ(y1.data[0], 16777216.0f + 32.0f);
}

TEST(SparseKernels, SpmmColumnsAreIndependentSpmvs) {
  TestMatrix a(2, 2, {0, 2, 3}, {0, 1, 1}, {1, 2, 3});
  auto x = cols({1, 10, 2, 20}, 2);  // columns [1 2] and [10 20]
  auto y = cols({0, 0, 0, 0}, 2);
  ASSERT_EQ(spmm(&a.device, a.handle, XHAL_TRANSPOSE_NONE, 1.0f, &x.t, 0.0f, &y.t), XHAL_OK);
  EXPECT_EQ(y.data, (std::vector<float>{5, 50, 6, 60}));
}

TEST(SparseKernels, ChainLowerSolveByHand) {
  TestMatrix a = chain4();
  auto b = cols({2, 2, 2, 2}, 1);
  auto x = cols({0, 0, 0, 0}, 1);
  ASSERT_EQ(csr_solve(&a.device, a.handle, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                      XHAL_DIAGONAL_STORED, &b.t, &x.t),
            XHAL_OK);
  EXPECT_EQ(x.data, (std::vector<float>{1, 1.5f, 1.75f, 1.875f}));
  // In place, unit diagonal: x[k] = b[k] + x[k-1].
  ASSERT_EQ(csr_solve(&a.device, a.handle, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                      XHAL_DIAGONAL_UNIT, &b.t, &b.t),
            XHAL_OK);
  EXPECT_EQ(b.data, (std::vector<float>{2, 4, 6, 8}));
}

TEST(SparseKernels, ChainTransposedSolveRunsDescending) {
  // A^T upper: x[3] = 2/2, x[k] = (2 + x[k+1]) / 2.
  TestMatrix a = chain4();
  auto b = cols({2, 2, 2, 2}, 1);
  auto x = cols({0, 0, 0, 0}, 1);
  ASSERT_EQ(csr_solve(&a.device, a.handle, XHAL_TRANSPOSE, XHAL_TRIANGLE_LOWER,
                      XHAL_DIAGONAL_STORED, &b.t, &x.t),
            XHAL_OK);
  EXPECT_EQ(x.data, (std::vector<float>{1.875f, 1.75f, 1.5f, 1}));
}

TEST(SparseKernels, ConfluenceSumsTributariesInRowOrder) {
  // Reaches 1 and 2 flow into 0, 3 into 1. A = I - W, W[i, down(i)] = w.
  TestMatrix a(4, 4, {0, 1, 3, 5, 7}, {0, 0, 1, 0, 2, 1, 3}, {1, -0.5f, 1, -0.25f, 1, -2, 1});
  // A^T x = b (upstream accumulation, descending): x3 = 1; x2 = 1;
  // x1 = 1 + 2*x3 = 3; x0 = 1 + (0.5*x1 + 0.25*x2) = 2.75.
  auto b = cols({1, 1, 1, 1}, 1);
  auto x = cols({0, 0, 0, 0}, 1);
  ASSERT_EQ(csr_solve(&a.device, a.handle, XHAL_TRANSPOSE, XHAL_TRIANGLE_LOWER,
                      XHAL_DIAGONAL_STORED, &b.t, &x.t),
            XHAL_OK);
  EXPECT_EQ(x.data, (std::vector<float>{2.75f, 3, 1, 1}));
}

TEST(SparseKernels, UnitDiagonalIgnoresStoredDiagonal) {
  TestMatrix a(2, 2, {0, 1, 3}, {0, 0, 1}, {4, 3, 8});
  auto b = cols({1, 10, 5, 50}, 2);
  auto x = cols({0, 0, 0, 0}, 2);
  ASSERT_EQ(csr_solve(&a.device, a.handle, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                      XHAL_DIAGONAL_UNIT, &b.t, &x.t),
            XHAL_OK);
  EXPECT_EQ(x.data, (std::vector<float>{1, 10, 2, 20}));
}

TEST(SparseKernels, SolveBackwardByHand) {
  // A = [[2 0], [1 4]], x solves A x = b. gb = A^-T dx; ga[e] = -gb[i] x[j].
  TestMatrix a(2, 2, {0, 1, 3}, {0, 0, 1}, {2, 1, 4});
  auto x = vec({1, 3});
  auto dx = vec({4, 8});
  auto gb = vec({0, 0});
  auto ga = vec({9, 9, 9});
  // A^T = [[2 1], [0 4]]: gb1 = 8/4 = 2, gb0 = (4 - 1*2)/2 = 1.
  ASSERT_EQ(csr_solve_backward(&a.device, a.handle, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                               XHAL_DIAGONAL_STORED, &x.t, &dx.t, &gb.t, &ga.t),
            XHAL_OK);
  EXPECT_EQ(gb.data, (std::vector<float>{1, 2}));
  // entries (0,0), (1,0), (1,1): -gb0*x0, -gb1*x0, -gb1*x1.
  EXPECT_EQ(ga.data, (std::vector<float>{-1, -2, -6}));
  // op = A^T: gb = A^-1 dx = [2, (8-2)/4]; (i, j) = (col, row).
  ASSERT_EQ(csr_solve_backward(&a.device, a.handle, XHAL_TRANSPOSE, XHAL_TRIANGLE_LOWER,
                               XHAL_DIAGONAL_UNIT, &x.t, &dx.t, &gb.t, &ga.t),
            XHAL_OK);
  // Unit: gb = [4, 8 - 4] ; ga(1,0) = -gb[0]*x[1] = -12; diagonal +0.
  EXPECT_EQ(gb.data, (std::vector<float>{4, 4}));
  EXPECT_TRUE(same_bits(ga.data[0], +0.0f));
  EXPECT_EQ(ga.data[1], -12.0f);
  EXPECT_TRUE(same_bits(ga.data[2], +0.0f));
  // A -0 product: -segsum(-0) = -(+0 + -0) = -0 (not -(-0) = +0).
  auto xz = vec({1, -0.0f});
  ASSERT_EQ(csr_solve_backward(&a.device, a.handle, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                               XHAL_DIAGONAL_STORED, &xz.t, &dx.t, &gb.t, &ga.t),
            XHAL_OK);
  EXPECT_TRUE(same_bits(ga.data[2], -0.0f)) << ga.data[2];
}

TEST(SparseKernels, SpgemmAddsProductsInAscendingK) {
  // C = A B with A = [[1 2]], B = [[3], [4]]: C = [11].
  TestMatrix a(1, 2, {0, 2}, {0, 1}, {1, 2});
  TestMatrix b(2, 1, {0, 1, 2}, {0, 0}, {3, 4});
  TestMatrix c(1, 1, {0, 1}, {0}, {-7});
  ASSERT_EQ(spgemm_numeric(&a.device, a.handle, b.handle, c.handle), XHAL_OK);
  EXPECT_EQ(c.values[0], 11.0f);
  // Order matters: 2^24 + 1 + 1 left to right stays 2^24.
  TestMatrix a2(1, 3, {0, 3}, {0, 1, 2}, {16777216.0f, 1, 1});
  TestMatrix b2(3, 1, {0, 1, 2, 3}, {0, 0, 0}, {1, 1, 1});
  ASSERT_EQ(spgemm_numeric(&a2.device, a2.handle, b2.handle, c.handle), XHAL_OK);
  EXPECT_EQ(c.values[0], 16777216.0f);
  // Each row starts again from +0: A = [[1], [2]], B = [[3]].
  TestMatrix a3(2, 1, {0, 1, 2}, {0, 0}, {1, 2});
  TestMatrix b3(1, 1, {0, 1}, {0}, {3});
  TestMatrix c3(2, 1, {0, 1, 2}, {0, 0}, {0, 0});
  ASSERT_EQ(spgemm_numeric(&a3.device, a3.handle, b3.handle, c3.handle), XHAL_OK);
  EXPECT_EQ(c3.values, (std::vector<float>{3, 6}));
}

// ---- schedules: the wavefront against a plain walk ----

// Random tree of n reaches numbered so that each reach drains to a lower
// number within `window` (depth about 2n/window levels).
TestMatrix random_tree(int64_t n, int64_t window, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> rp{0}, ci;
  std::vector<float> v;
  std::uniform_real_distribution<float> w(0.1f, 0.9f);
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) {
      const int64_t back = std::min<int64_t>(i, 1 + static_cast<int64_t>(rng() % window));
      ci.push_back(i - back);
      v.push_back(-w(rng));
    }
    ci.push_back(i);
    v.push_back(1.0f + w(rng));
    rp.push_back(static_cast<int64_t>(ci.size()));
  }
  return TestMatrix(n, n, rp, ci, v);
}

// Random lower-triangular matrix: up to 40 entries per row (long rows take
// the chunked sum), columns anywhere below the diagonal.
TestMatrix random_lower(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> w(-1.0f, 1.0f);
  std::vector<int64_t> rp{0}, ci;
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> c;
    const int64_t m = std::min<int64_t>(i, rng() % 41);
    for (int64_t t = 0; t < m; ++t) c.push_back(static_cast<int64_t>(rng() % i));
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    for (int64_t j : c) {
      ci.push_back(j);
      v.push_back(w(rng) / 8.0f);
    }
    ci.push_back(i);
    v.push_back(2.0f + w(rng));
    rp.push_back(static_cast<int64_t>(ci.size()));
  }
  return TestMatrix(n, n, rp, ci, v);
}

// Straight canonical walk (no schedule) of op(A) X = B, X [n, k].
std::vector<float> plain_solve(const TestMatrix& a, bool transposed, bool unit,
                               const std::vector<float>& b, int64_t k) {
  const int64_t n = a.rows;
  std::vector<std::vector<std::pair<int64_t, float>>> rows(n);  // op(A), ascending columns
  for (int64_t i = 0; i < n; ++i)
    for (int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
      if (transposed) rows[a.col_idx[e]].push_back({i, a.values[e]});
      else rows[i].push_back({a.col_idx[e], a.values[e]});
    }
  std::vector<float> x(n * k, 0.0f);
  for (int64_t step = 0; step < n; ++step) {
    const int64_t r = transposed ? n - 1 - step : step;
    for (int64_t c = 0; c < k; ++c) {
      std::vector<float> terms;
      float d = 0.0f;
      for (auto [j, val] : rows[r]) {
        if (j == r) d = val;
        else terms.push_back(val * x[j * k + c]);
      }
      const float s =
          segsum(static_cast<int64_t>(terms.size()), [&](int64_t t) { return terms[t]; });
      x[r * k + c] = unit ? b[r * k + c] - s : (b[r * k + c] - s) / d;
    }
  }
  return x;
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_TRUE(same_bits(got[i], want[i])) << "at " << i << ": " << got[i] << " vs " << want[i];
}

bool solves_run_in_parallel(const TestMatrix& a) {
  return with_patterns(*static_cast<const CsrMatrix*>(a.handle), [](const auto& ps) {
    return ps.a.ascending.team > 1 && ps.at.descending.team > 1;
  });
}

void expect_solves_match_plain_walk(TestMatrix& a, int64_t k) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> bh(a.rows * k);
  for (auto& e : bh) e = u(rng);
  for (bool transposed : {false, true}) {
    const std::vector<float> want = plain_solve(a, transposed, false, bh, k);
    // The first call runs on the team, the second on one thread (TeamChoice
    // tries both), the third on whichever was faster: the same bits each time.
    for (int call = 0; call < 3; ++call) {
      auto b = cols(bh, k);
      auto x = cols(std::vector<float>(bh.size(), 0.0f), k);
      ASSERT_EQ(csr_solve(&a.device, a.handle, transposed ? XHAL_TRANSPOSE : XHAL_TRANSPOSE_NONE,
                          XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, &b.t, &x.t),
                XHAL_OK);
      expect_same_bits(x.data, want);
    }
  }
}

TEST(SparseKernels, WavefrontMatchesPlainWalkOnRiverTrees) {
  // Window 64: parents mostly in the block before, so members wait on each
  // other all the time; window 4096: wide levels.
  for (int64_t window : {64, 4096}) {
    TestMatrix a = random_tree(200000, window, 7);
    ASSERT_TRUE(solves_run_in_parallel(a)) << window;
    expect_solves_match_plain_walk(a, 1);
  }
}

TEST(SparseKernels, WavefrontMatchesPlainWalkOnRandomLower) {
  for (int64_t k : {1, 3}) {
    TestMatrix a = random_lower(30000, 5);
    ASSERT_TRUE(solves_run_in_parallel(a));
    expect_solves_match_plain_walk(a, k);
  }
}

// Backward against a plain walk: gb = op(A)^-T dx, then
// ga[e] = -segsum_c(gb[i,c] * x[j,c]) on A's pattern, unit diagonals +0.
// One vector takes the solve that writes ga as it goes; three columns the
// separate pass. Three calls: team, one thread, the faster.
void expect_backward_matches_plain_walk(TestMatrix& a, int64_t k) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> xh(a.rows * k), dxh(a.rows * k);
  for (auto& e : xh) e = u(rng);
  for (auto& e : dxh) e = u(rng);
  for (bool op_transposed : {false, true})
    for (bool unit : {false, true}) {
      const std::vector<float> gb_want = plain_solve(a, !op_transposed, unit, dxh, k);
      std::vector<float> ga_want(a.col_idx.size());
      for (int64_t r = 0; r < a.rows; ++r)
        for (int64_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) {
          const int64_t i = op_transposed ? a.col_idx[e] : r;
          const int64_t j = op_transposed ? r : a.col_idx[e];
          const float g = -segsum(k, [&](int64_t c) { return gb_want[i * k + c] * xh[j * k + c]; });
          ga_want[e] = unit && a.col_idx[e] == r ? 0.0f : g;
        }
      for (int call = 0; call < 3; ++call) {
        auto x = k == 1 ? vec(xh) : cols(xh, k);
        auto dx = k == 1 ? vec(dxh) : cols(dxh, k);
        auto gb = k == 1 ? vec(std::vector<float>(xh.size(), 7.0f))
                         : cols(std::vector<float>(xh.size(), 7.0f), k);
        auto ga = vec(std::vector<float>(a.col_idx.size(), 7.0f));
        ASSERT_EQ(csr_solve_backward(
                      &a.device, a.handle, op_transposed ? XHAL_TRANSPOSE : XHAL_TRANSPOSE_NONE,
                      XHAL_TRIANGLE_LOWER, unit ? XHAL_DIAGONAL_UNIT : XHAL_DIAGONAL_STORED, &x.t,
                      &dx.t, &gb.t, &ga.t),
                  XHAL_OK);
        expect_same_bits(gb.data, gb_want);
        expect_same_bits(ga.data, ga_want);
      }
    }
}

TEST(SparseKernels, BackwardMatchesPlainWalkOnRiverTrees) {
  TestMatrix a = random_tree(200000, 64, 9);
  ASSERT_TRUE(solves_run_in_parallel(a));
  expect_backward_matches_plain_walk(a, 1);
}

TEST(SparseKernels, BackwardMatchesPlainWalkOnRandomLower) {
  for (int64_t k : {1, 3}) {
    TestMatrix a = random_lower(30000, 13);
    ASSERT_TRUE(solves_run_in_parallel(a));
    expect_backward_matches_plain_walk(a, k);
  }
}

TEST(SparseKernels, TransposedSpmvMatchesColumnSegsums) {
  // Low columns hold hundreds of entries (chunked sums), the rest a few;
  // the team splits the columns.
  TestMatrix a = random_lower(30000, 9);
  std::vector<std::vector<float>> terms(a.cols);
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> xh(a.rows), yh(a.cols);
  for (auto& e : xh) e = u(rng);
  for (auto& e : yh) e = u(rng);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e)
      terms[a.col_idx[e]].push_back(a.values[e] * xh[i]);
  std::vector<float> want(a.cols);
  size_t longest = 0;
  for (int64_t j = 0; j < a.cols; ++j) {
    const float t =
        segsum(static_cast<int64_t>(terms[j].size()), [&](int64_t q) { return terms[j][q]; });
    want[j] = (0.5f * t) + (-2.0f * yh[j]);
    longest = std::max(longest, terms[j].size());
  }
  ASSERT_GT(longest, 64u);
  for (int call = 0; call < 3; ++call) {  // team, one thread, the faster
    auto x = vec(xh);
    auto y = vec(yh);
    ASSERT_EQ(spmv(&a.device, a.handle, XHAL_TRANSPOSE, 0.5f, &x.t, -2.0f, &y.t), XHAL_OK);
    expect_same_bits(y.data, want);
  }
}

TEST(SparseKernels, ChainRunsOnOneThreadAndMatchesPlainWalk) {
  TestMatrix a = random_tree(50000, 1, 11);  // window 1: a single chain
  EXPECT_FALSE(with_patterns(*static_cast<const CsrMatrix*>(a.handle),
                             [](const auto& ps) { return ps.a.ascending.team > 1; }));
  std::vector<float> bh(a.rows, 0.25f);
  auto b = cols(bh, 1);
  ASSERT_EQ(csr_solve(&a.device, a.handle, XHAL_TRANSPOSE, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_UNIT,
                      &b.t, &b.t),
            XHAL_OK);
  expect_same_bits(b.data, plain_solve(a, true, true, bh, 1));
}

// The transposed solves keep A's values in A^T's order once two calls in a
// row see the same version of them (TransposedValues): values rewritten
// between calls through buffer_write (as the core does), in the last entry
// only, everywhere, or back to old ones, must never give the bits of the
// old values.
TEST(SparseKernels, TransposedSolveSeesChangedValues) {
  TestMatrix a = random_lower(30000, 17);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> bh(a.rows);
  for (auto& e : bh) e = u(rng);
  const std::vector<float> first = a.values;
  auto expect_solve = [&](const char* what) {
    const std::vector<float> want = plain_solve(a, true, false, bh, 1);
    auto b = vec(bh);
    auto x = vec(std::vector<float>(bh.size(), 0.0f));
    ASSERT_EQ(csr_solve(&a.device, a.handle, XHAL_TRANSPOSE, XHAL_TRIANGLE_LOWER,
                        XHAL_DIAGONAL_STORED, &b.t, &x.t),
              XHAL_OK)
        << what;
    SCOPED_TRACE(what);
    expect_same_bits(x.data, want);
  };
  auto rewrite = [&](const std::vector<float>& v) {
    ASSERT_EQ(buffer_write(&a.device, &a.values_buffer, 0, v.data(), v.size() * sizeof(float)),
              XHAL_OK);
  };
  for (int call = 0; call < 3; ++call) expect_solve("same values");
  std::vector<float> next = a.values;
  next.back() = 4.0f;  // the last stored entry (the last row's diagonal)
  rewrite(next);
  expect_solve("last entry changed");
  expect_solve("last entry changed, again");
  for (int step = 0; step < 20; ++step) {  // a matrix updated every step
    for (auto& v : next) v *= 0.999f;
    rewrite(next);
    expect_solve("every entry changed");
  }
  rewrite(first);  // the first values again
  for (int call = 0; call < 3; ++call) expect_solve("first values again");
}

TEST(SparseKernels, WrongTriangleIsRefused) {
  TestMatrix a = chain4();
  auto b = cols({1, 1, 1, 1}, 1);
  auto x = cols({5, 5, 5, 5}, 1);
  EXPECT_EQ(csr_solve(&a.device, a.handle, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_UPPER,
                      XHAL_DIAGONAL_STORED, &b.t, &x.t),
            XHAL_INVALID_STRUCTURE);
  EXPECT_EQ(x.data, (std::vector<float>{5, 5, 5, 5}));
}

}  // namespace
}  // namespace xhal::cpu
