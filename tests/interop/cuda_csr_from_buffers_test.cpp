// xhal_csr_create from device buffers on a cuda device (skipped where no
// CUDA device is found): the pattern is validated and analysed on the
// device (plugin ABI 1.9 slot csr_create_from_buffers). Creation moves no
// host-to-device bytes and reads back one status block, never the pattern
// (also for an invalid one, whose message is the host path's); the matrix
// gives the same bits as the host-created one in spmv (A, A^T) and in the
// solves (A, A^T).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "xhal/xhal.h"

namespace {

constexpr uint64_t kStatusBlockBytes = 152;  // docs/plugin-guide.md, "Counters"

class CudaCsrFromBuffersTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    xhal_runtime_options_t o{};
    o.struct_size = sizeof o;
    o.device_selector = "cuda";
    const xhal_status_t s = xhal_runtime_init(&o);
    ASSERT_TRUE(s == XHAL_OK || s == XHAL_BUSY) << xhal_last_error();
  }
  void SetUp() override {
    if (xhal_device_open("cuda:0", &dev) != XHAL_OK) GTEST_SKIP() << xhal_last_error();
  }
  void TearDown() override {
    for (xhal_csr_t m : matrices) xhal_csr_release(m);
    for (xhal_buffer_t b : buffers) xhal_buffer_release(b);
    if (dev) {
      EXPECT_EQ(xhal_device_release(dev), XHAL_OK) << xhal_last_error();
    }
  }
  xhal_buffer_t upload(const void* data, uint64_t bytes) {
    xhal_buffer_t b = nullptr;
    EXPECT_EQ(xhal_buffer_allocate(dev, bytes ? bytes : 4, &b), XHAL_OK) << xhal_last_error();
    if (data && bytes) {
      EXPECT_EQ(xhal_buffer_write(b, 0, data, bytes), XHAL_OK) << xhal_last_error();
    }
    buffers.push_back(b);
    return b;
  }
  xhal_counters_t counters() {
    EXPECT_EQ(xhal_device_synchronize(dev), XHAL_OK) << xhal_last_error();
    xhal_counters_t c{};
    EXPECT_EQ(xhal_device_get_counters(dev, &c), XHAL_OK) << xhal_last_error();
    return c;
  }
  // A lower-triangular n x n pattern with a stored diagonal: rows of 0 to
  // 40 off-diagonal entries, every 97th row 1,500 (pieces of 1,024, the
  // sync-free solve's long rows), values that keep the solve bounded.
  struct Host {
    int64_t n = 0;
    std::vector<int64_t> rp, ci;
    std::vector<float> v;
  };
  static Host lower(int64_t n, uint64_t seed) {
    Host h;
    h.n = n;
    std::mt19937_64 rng(seed);
    h.rp.push_back(0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t want = i % 97 == 96 ? 1500 : static_cast<int64_t>(rng() % 41);
      const int64_t k = std::min(want, i);
      // k distinct columns below i: a stride walk from a random start.
      std::vector<int64_t> cols;
      for (int64_t t = 0; t < k; ++t)
        cols.push_back((i - 1 - t * (i / std::max<int64_t>(k, 1))) % i);
      std::sort(cols.begin(), cols.end());
      cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
      for (int64_t c : cols) {
        h.ci.push_back(c);
        h.v.push_back(0.5f / static_cast<float>(cols.size() + 1) * (rng() % 2 ? 1.0f : -1.0f));
      }
      h.ci.push_back(i);
      h.v.push_back(1.0f + static_cast<float>(rng() % 8) / 8.0f);
      h.rp.push_back(static_cast<int64_t>(h.ci.size()));
    }
    return h;
  }
  template <class T>
  static std::vector<T> as(const std::vector<int64_t>& v) {
    return std::vector<T>(v.begin(), v.end());
  }
  xhal_csr_desc_t buffers_desc(const Host& h, xhal_dtype_t idx) {
    xhal_csr_desc_t d{};
    d.struct_size = sizeof d;
    d.rows = d.cols = h.n;
    d.nnz = static_cast<int64_t>(h.ci.size());
    d.index_dtype = idx;
    if (idx == XHAL_DTYPE_I32) {
      const auto rp = as<int32_t>(h.rp), ci = as<int32_t>(h.ci);
      d.row_ptr_buffer = upload(rp.data(), rp.size() * 4);
      d.col_idx_buffer = upload(ci.data(), ci.size() * 4);
    } else {
      d.row_ptr_buffer = upload(h.rp.data(), h.rp.size() * 8);
      d.col_idx_buffer = upload(h.ci.data(), h.ci.size() * 8);
    }
    d.values_buffer = upload(h.v.data(), h.v.size() * 4);
    return d;
  }
  // spmv and solve of m, A and A^T, on fixed inputs, as bytes.
  std::vector<uint32_t> run_ops(xhal_csr_t m, int64_t n) {
    std::vector<float> x(static_cast<size_t>(n));
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& f : x) f = u(rng);
    xhal_buffer_t xb = upload(x.data(), x.size() * 4), yb = upload(nullptr, n * 4 * 4);
    std::vector<uint32_t> out;
    for (int op = 0; op < 4; ++op) {
      const int64_t shape[1] = {n};
      xhal_tensor_t xt{}, yt{};
      EXPECT_EQ(xhal_tensor_init(xb, 0, XHAL_DTYPE_F32, 1, shape, &xt), XHAL_OK);
      EXPECT_EQ(xhal_tensor_init(yb, op * n * 4, XHAL_DTYPE_F32, 1, shape, &yt), XHAL_OK);
      const xhal_transpose_t t = op % 2 ? XHAL_TRANSPOSE : XHAL_TRANSPOSE_NONE;
      if (op < 2) {
        EXPECT_EQ(xhal_spmv(dev, m, t, 1.0f, &xt, 0.0f, &yt), XHAL_OK) << xhal_last_error();
      } else {
        EXPECT_EQ(xhal_csr_solve(dev, m, t, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, &xt, &yt),
                  XHAL_OK)
            << xhal_last_error();
      }
    }
    out.resize(static_cast<size_t>(4 * n));
    EXPECT_EQ(xhal_buffer_read(yb, 0, out.data(), out.size() * 4), XHAL_OK);
    return out;
  }
  xhal_device_t dev = nullptr;
  std::vector<xhal_buffer_t> buffers;
  std::vector<xhal_csr_t> matrices;
};

TEST_F(CudaCsrFromBuffersTest, PatternStaysOnTheDeviceAndGivesTheHostMatrixsBits) {
  const Host h = lower(5000, 3);
  xhal_csr_desc_t hd{};
  hd.struct_size = sizeof hd;
  hd.rows = hd.cols = h.n;
  hd.nnz = static_cast<int64_t>(h.ci.size());
  hd.index_dtype = XHAL_DTYPE_I64;
  hd.row_ptr = h.rp.data();
  hd.col_idx = h.ci.data();
  hd.values = h.v.data();
  xhal_csr_t host = nullptr;
  ASSERT_EQ(xhal_csr_create(dev, &hd, &host), XHAL_OK) << xhal_last_error();
  matrices.push_back(host);
  const std::vector<uint32_t> want = run_ops(host, h.n);
  for (xhal_dtype_t idx : {XHAL_DTYPE_I32, XHAL_DTYPE_I64}) {
    SCOPED_TRACE(idx == XHAL_DTYPE_I32 ? "i32" : "i64");
    const xhal_csr_desc_t d = buffers_desc(h, idx);
    const xhal_counters_t c0 = counters();
    xhal_csr_t m = nullptr;
    ASSERT_EQ(xhal_csr_create(dev, &d, &m), XHAL_OK) << xhal_last_error();
    matrices.push_back(m);
    const xhal_counters_t c1 = counters();
    EXPECT_EQ(c1.host_to_device_bytes - c0.host_to_device_bytes, 0u);
    EXPECT_EQ(c1.device_to_host_transfers - c0.device_to_host_transfers, 1u);
    EXPECT_EQ(c1.device_to_host_bytes - c0.device_to_host_bytes, kStatusBlockBytes);
    EXPECT_TRUE(run_ops(m, h.n) == want) << "results differ from the host-created matrix's";
  }
}

TEST_F(CudaCsrFromBuffersTest, InvalidPatternReadsOnlyTheStatusAndNamesTheHostPathsRow) {
  Host h = lower(3000, 5);
  // Rows 2521 and 2909 (1,500 entries each) get a duplicate column; row
  // 2521 is the first.
  for (int64_t r : {2909, 2521}) {
    const int64_t b = h.rp[r];
    ASSERT_GE(h.rp[r + 1] - b, 3);
    h.ci[b + 1] = h.ci[b];
  }
  xhal_csr_desc_t hd{};
  hd.struct_size = sizeof hd;
  hd.rows = hd.cols = h.n;
  hd.nnz = static_cast<int64_t>(h.ci.size());
  hd.index_dtype = XHAL_DTYPE_I64;
  hd.row_ptr = h.rp.data();
  hd.col_idx = h.ci.data();
  xhal_csr_t none = nullptr;
  ASSERT_EQ(xhal_csr_create(dev, &hd, &none), XHAL_INVALID_STRUCTURE);
  const std::string want = xhal_last_error();
  // The host validator's text for this fault, written out: on cuda the
  // host arrays take the device route too, so this pins both.
  const int64_t dup = h.rp[2521] + 1;
  const std::string col = std::to_string(h.ci[dup]);
  EXPECT_EQ(want, "argument 'desc': row 2521: column " + col + " (entry " + std::to_string(dup) +
                      ") duplicates the previous column " + col +
                      " (columns must be sorted and unique)");
  const xhal_csr_desc_t d = buffers_desc(h, XHAL_DTYPE_I64);
  const xhal_counters_t c0 = counters();
  EXPECT_EQ(xhal_csr_create(dev, &d, &none), XHAL_INVALID_STRUCTURE);
  EXPECT_EQ(std::string(xhal_last_error()), want);
  EXPECT_EQ(none, nullptr);
  const xhal_counters_t c1 = counters();
  EXPECT_EQ(c1.device_to_host_bytes - c0.device_to_host_bytes, kStatusBlockBytes);
  // A wrong row pointer (past nnz in the middle): no kernel may index
  // through it; the device stays usable.
  std::vector<int64_t> rp = h.rp;
  rp[1000] = static_cast<int64_t>(h.ci.size()) + (int64_t{1} << 40);
  hd.row_ptr = rp.data();
  ASSERT_EQ(xhal_csr_create(dev, &hd, &none), XHAL_INVALID_STRUCTURE);
  const std::string want2 = xhal_last_error();
  EXPECT_EQ(want2, "argument 'desc': row 999: row_ptr[1000] = " + std::to_string(rp[1000]) +
                       " exceeds nnz = " + std::to_string(h.ci.size()));
  xhal_csr_desc_t d2 = d;
  d2.row_ptr_buffer = upload(rp.data(), rp.size() * 8);
  EXPECT_EQ(xhal_csr_create(dev, &d2, &none), XHAL_INVALID_STRUCTURE);
  EXPECT_EQ(std::string(xhal_last_error()), want2);
  EXPECT_EQ(xhal_device_synchronize(dev), XHAL_OK) << xhal_last_error();
}

}  // namespace
