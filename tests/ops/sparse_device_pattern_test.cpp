// CSR patterns given in device buffers (plugin ABI 1.9): a plugin with
// csr_create_from_buffers (recdev) gets the core's copies of the pattern and
// the core never reads them at creation; its faults get the host path's
// messages and its facts drive the solve checks exactly as the host
// analysis does; xhal_csr_read and spgemm work from the kept copies; and a
// pattern from buffers is treated alike on both paths (no diagonal value
// check).
#include "ops_test_support.h"

namespace xhal::ops_test {
namespace {

using V = std::vector<int64_t>;

class DevicePatternTest : public OpsTest {
 protected:
  void SetUp() override {
    OpsTest::SetUp();
    if (HasFatalFailure()) return;
    devp = open("recdev", 0);
    ASSERT_NE(devp, nullptr);
    st = state_of("recdev");
    ASSERT_NE(st, nullptr);
    st->clear();
  }
  void TearDown() override {
    for (xhal_csr_t m : own_) EXPECT_EQ(xhal_csr_release(m), XHAL_OK);
    OpsTest::TearDown();  // also the buffers of devp
    if (!st) return;
    EXPECT_EQ(st->live_matrices, 0);
    EXPECT_EQ(xhal_device_release(devp), XHAL_OK) << xhal_last_error();
  }
  // The pattern as buffers of `d` in `idx`; values from the host (when
  // given) or none.
  xhal_status_t create(xhal_device_t d, int64_t rows, int64_t cols, const V& row_ptr,
                       const V& col_idx, const std::vector<float>& values, xhal_dtype_t idx,
                       xhal_csr_t* out, xhal_buffer_t* rp_out = nullptr,
                       xhal_buffer_t* ci_out = nullptr) {
    xhal_csr_desc_t desc{};
    desc.struct_size = sizeof desc;
    desc.rows = rows;
    desc.cols = cols;
    desc.nnz = static_cast<int64_t>(col_idx.size());
    desc.index_dtype = idx;
    auto up = [&](const V& v) {
      if (idx == XHAL_DTYPE_I64) return upload(v, d);
      return upload(std::vector<int32_t>(v.begin(), v.end()), d);
    };
    desc.row_ptr_buffer = up(row_ptr);
    desc.col_idx_buffer = col_idx.empty() ? nullptr : up(col_idx);
    desc.values = values.empty() ? nullptr : values.data();
    if (rp_out) *rp_out = desc.row_ptr_buffer;
    if (ci_out) *ci_out = desc.col_idx_buffer;
    *out = nullptr;
    const xhal_status_t s = xhal_csr_create(d, &desc, out);
    if (*out) own_.push_back(*out);
    return s;
  }
  // The message of a solve of `m` (x on the matrix's device).
  std::string solve_message(xhal_device_t d, xhal_csr_t m, int64_t n, xhal_triangle_t tri,
                            xhal_diagonal_t diag, xhal_status_t* status) {
    const xhal_tensor_t b = f32({n}, d), x = f32({n}, d);
    *status = xhal_csr_solve(d, m, XHAL_TRANSPOSE_NONE, tri, diag, &b, &x);
    return *status == XHAL_OK ? "" : xhal_last_error();
  }
  xhal_device_t devp = nullptr;
  recorder::State* st = nullptr;
  std::vector<xhal_csr_t> own_;  // released in TearDown
};

TEST_F(DevicePatternTest, PluginAnalysesTheCoresCopyAndTheCoreReadsNothing) {
  // 3 x 4: row 0 {0, 2}, row 1 {3}, row 2 {0, 1, 2}.
  const V rp = {0, 2, 3, 6}, ci = {0, 2, 3, 0, 1, 2};
  const std::vector<float> vals = {1, 2, 3, 4, 5, 6};
  for (xhal_dtype_t idx : {XHAL_DTYPE_I32, XHAL_DTYPE_I64}) {
    SCOPED_TRACE(idx == XHAL_DTYPE_I32 ? "i32" : "i64");
    st->clear();
    xhal_csr_t m = nullptr;
    xhal_buffer_t rp_buf = nullptr, ci_buf = nullptr;
    ASSERT_EQ(create(devp, 3, 4, rp, ci, vals, idx, &m, &rp_buf, &ci_buf), XHAL_OK)
        << xhal_last_error();
    EXPECT_EQ(st->count("csr_create_from_buffers"), 1u);
    EXPECT_EQ(st->count("csr_create"), 0u);
    EXPECT_EQ(st->count("buffer_read"), 0u) << "the core read the pattern back";
    ASSERT_EQ(st->matrices.size(), 1u);
    EXPECT_EQ(st->matrices[0].row_ptr, rp);
    EXPECT_EQ(st->matrices[0].col_idx, ci);
    const auto* call = st->last("csr_create_from_buffers");
    ASSERT_NE(call, nullptr);
    EXPECT_EQ(call->index_dtype, static_cast<int>(idx));
    // The plugin got copies the matrix owns: the app's buffers may change.
    const size_t isz = idx == XHAL_DTYPE_I32 ? 4 : 8;
    std::vector<unsigned char> junk(ci.size() * isz, 0x7f);
    ASSERT_EQ(xhal_buffer_write(ci_buf, 0, junk.data(), junk.size()), XHAL_OK);
    std::vector<unsigned char> rp_back(rp.size() * isz), ci_back(ci.size() * isz);
    std::vector<float> v_back(vals.size());
    ASSERT_EQ(xhal_csr_read(m, rp_back.data(), ci_back.data(), v_back.data()), XHAL_OK)
        << xhal_last_error();
    auto as_v = [&](const std::vector<unsigned char>& b) {
      V v(b.size() / isz);
      for (size_t i = 0; i < v.size(); ++i) {
        if (isz == 4) {
          int32_t x;
          std::memcpy(&x, b.data() + 4 * i, 4);
          v[i] = x;
        } else {
          std::memcpy(&v[i], b.data() + 8 * i, 8);
        }
      }
      return v;
    };
    EXPECT_EQ(as_v(rp_back), rp);
    EXPECT_EQ(as_v(ci_back), ci);
    EXPECT_EQ(v_back, vals);
  }
}

// A planted fault comes back with the message the host path writes for a
// pattern with that fault; nothing is left behind.
TEST_F(DevicePatternTest, FaultGetsTheHostPathsMessage) {
  // Row 2's columns {0, 1, 1}: entry 5 duplicates column 1.
  const V rp = {0, 2, 3, 6}, bad = {0, 2, 3, 0, 1, 1};
  xhal_csr_desc_t h{};
  h.struct_size = sizeof h;
  h.rows = 3;
  h.cols = 4;
  h.nnz = 6;
  h.index_dtype = XHAL_DTYPE_I64;
  h.row_ptr = rp.data();
  h.col_idx = bad.data();
  xhal_csr_t none = nullptr;
  ASSERT_EQ(xhal_csr_create(dev, &h, &none), XHAL_INVALID_STRUCTURE);
  const std::string host_message = xhal_last_error();
  EXPECT_NE(host_message.find("row 2"), std::string::npos) << host_message;

  st->csr_fault_status = XHAL_INVALID_STRUCTURE;
  st->csr_fault = {XHAL_PLUGIN_CSR_FAULT_COLUMN_ORDER, 2, 5, 1, 1};
  xhal_csr_t m = nullptr;
  EXPECT_EQ(create(devp, 3, 4, rp, bad, {}, XHAL_DTYPE_I64, &m), XHAL_INVALID_STRUCTURE);
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(std::string(xhal_last_error()), host_message);
  EXPECT_EQ(st->live_matrices, 0);
  EXPECT_EQ(st->count("buffer_read"), 0u);

  // Each fault kind against the host path's text for the same fault.
  struct Case {
    const char* name;
    V rp, ci;
    xhal_plugin_csr_fault_t fault;
  };
  const std::vector<Case> cases = {
      {"row_ptr[0]",
       {1, 2, 3, 6},
       {0, 2, 3, 0, 1, 2},
       {XHAL_PLUGIN_CSR_FAULT_FIRST_OFFSET, 0, 0, 1, 0}},
      {"not monotone",
       {0, 4, 3, 6},
       {0, 2, 3, 0, 1, 2},
       {XHAL_PLUGIN_CSR_FAULT_NOT_MONOTONE, 1, 0, 3, 4}},
      {"past nnz",
       {0, 2, 7, 6},
       {0, 2, 3, 0, 1, 2},
       {XHAL_PLUGIN_CSR_FAULT_OFFSET_PAST_NNZ, 1, 0, 7, 0}},
      {"end", {0, 2, 3, 5}, {0, 2, 3, 0, 1, 2}, {XHAL_PLUGIN_CSR_FAULT_LAST_OFFSET, 2, 0, 5, 0}},
      {"range", {0, 2, 3, 6}, {0, 2, 4, 0, 1, 2}, {XHAL_PLUGIN_CSR_FAULT_COLUMN_RANGE, 1, 2, 4, 0}},
      {"order", {0, 2, 3, 6}, {0, 2, 3, 0, 2, 1}, {XHAL_PLUGIN_CSR_FAULT_COLUMN_ORDER, 2, 5, 1, 2}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    h.row_ptr = c.rp.data();
    h.col_idx = c.ci.data();
    ASSERT_EQ(xhal_csr_create(dev, &h, &none), XHAL_INVALID_STRUCTURE);
    const std::string want = xhal_last_error();
    st->csr_fault_status = XHAL_INVALID_STRUCTURE;
    st->csr_fault = c.fault;
    EXPECT_EQ(create(devp, 3, 4, c.rp, c.ci, {}, XHAL_DTYPE_I64, &m), XHAL_INVALID_STRUCTURE);
    EXPECT_EQ(std::string(xhal_last_error()), want);
  }
}

// A plugin that says "invalid" without a fault it can name, or with a kind
// this core does not know, is a plugin error, not a message about the
// app's pattern.
TEST_F(DevicePatternTest, FaultWithoutAKnownKindIsAPluginError) {
  const V rp = {0, 1}, ci = {0};
  for (uint32_t kind : {0u, 99u}) {
    st->csr_fault_status = XHAL_INVALID_STRUCTURE;
    st->csr_fault = {kind, 0, 0, 0, 0};
    xhal_csr_t m = nullptr;
    EXPECT_EQ(create(devp, 1, 1, rp, ci, {}, XHAL_DTYPE_I64, &m), XHAL_PLUGIN_ERROR) << kind;
    EXPECT_EQ(m, nullptr);
  }
  EXPECT_EQ(st->live_matrices, 0);
}

// The plugin's facts give the solve checks the host analysis's answers.
TEST_F(DevicePatternTest, SolveChecksFromThePluginsFacts) {
  struct Case {
    const char* name;
    V rp, ci;
    xhal_triangle_t tri;
    xhal_diagonal_t diag;
  };
  // 4 x 4 patterns.
  const std::vector<Case> cases = {
      {"entry above in row 2",
       {0, 1, 2, 4, 5},
       {0, 1, 2, 3, 3},
       XHAL_TRIANGLE_LOWER,
       XHAL_DIAGONAL_UNIT},
      {"entry below in row 1",
       {0, 1, 3, 4, 5},
       {0, 0, 1, 2, 3},
       XHAL_TRIANGLE_UPPER,
       XHAL_DIAGONAL_UNIT},
      {"row 2 without its diagonal",
       {0, 1, 3, 4, 6},
       {0, 0, 1, 1, 2, 3},
       XHAL_TRIANGLE_LOWER,
       XHAL_DIAGONAL_STORED},
      {"valid lower",
       {0, 1, 3, 5, 7},
       {0, 0, 1, 1, 2, 2, 3},
       XHAL_TRIANGLE_LOWER,
       XHAL_DIAGONAL_STORED},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<float> ones(c.ci.size(), 1.0f);
    xhal_csr_t host = csr(4, 4, c.rp, c.ci, ones);
    ASSERT_NE(host, nullptr);
    xhal_csr_t m = nullptr;
    ASSERT_EQ(create(devp, 4, 4, c.rp, c.ci, ones, XHAL_DTYPE_I32, &m), XHAL_OK)
        << xhal_last_error();
    xhal_status_t sh = XHAL_OK, sd = XHAL_OK;
    const std::string want = solve_message(dev, host, 4, c.tri, c.diag, &sh);
    const std::string got = solve_message(devp, m, 4, c.tri, c.diag, &sd);
    EXPECT_EQ(sd, sh);
    EXPECT_EQ(got, want);
  }
}

// A pattern from buffers is treated alike whether the plugin analyses it
// (recdev) or the core reads it back (recorder): a zero stored diagonal
// from host values is not refused, since only the host path could see it.
TEST_F(DevicePatternTest, BufferPatternsSkipTheZeroDiagonalCheckOnEveryPath) {
  const V rp = {0, 1, 3}, ci = {0, 0, 1};
  const std::vector<float> vals = {1, 2, 0};  // row 1's diagonal is 0
  xhal_csr_t host = csr(2, 2, rp, ci, vals);
  xhal_status_t s = XHAL_OK;
  const std::string msg =
      solve_message(dev, host, 2, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, &s);
  EXPECT_EQ(s, XHAL_INVALID_STRUCTURE) << "host arrays: the zero diagonal is refused";
  EXPECT_NE(msg.find("row 1"), std::string::npos) << msg;
  for (xhal_device_t d : {dev, devp}) {
    xhal_csr_t m = nullptr;
    ASSERT_EQ(create(d, 2, 2, rp, ci, vals, XHAL_DTYPE_I64, &m), XHAL_OK) << xhal_last_error();
    solve_message(d, m, 2, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, &s);
    EXPECT_EQ(s, XHAL_OK) << (d == devp ? "device path" : "read-back path");
    // New host values do not bring the check back.
    ASSERT_EQ(xhal_csr_set_values(m, vals.data()), XHAL_OK);
    solve_message(d, m, 2, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, &s);
    EXPECT_EQ(s, XHAL_OK);
  }
}

// spgemm's symbolic phase runs on the host: a device pattern comes to it
// once (one read per array), and C is the same as from host patterns.
TEST_F(DevicePatternTest, SpgemmFetchesTheKeptPatternOnce) {
  const V a_rp = {0, 2, 3, 6}, a_ci = {0, 2, 3, 0, 1, 2};  // 3 x 4
  const V b_rp = {0, 1, 1, 2, 3}, b_ci = {0, 1, 0};        // 4 x 2
  xhal_csr_t a = nullptr, b = nullptr, c = nullptr;
  ASSERT_EQ(create(devp, 3, 4, a_rp, a_ci, {}, XHAL_DTYPE_I32, &a), XHAL_OK);
  ASSERT_EQ(create(devp, 4, 2, b_rp, b_ci, {}, XHAL_DTYPE_I32, &b), XHAL_OK);
  st->clear();
  ASSERT_EQ(xhal_spgemm(devp, a, b, &c), XHAL_OK) << xhal_last_error();
  own_.push_back(c);
  EXPECT_EQ(st->count("buffer_read"), 4u) << "row pointers and columns of A and B";
  ASSERT_EQ(xhal_spgemm(devp, a, b, &c), XHAL_OK) << xhal_last_error();
  own_.push_back(c);
  EXPECT_EQ(st->count("buffer_read"), 4u) << "the fetched pattern is kept";
  // C's pattern against the host path's C.
  xhal_csr_t ha = csr(3, 4, a_rp, a_ci), hb = csr(4, 2, b_rp, b_ci), hc = nullptr;
  ASSERT_EQ(xhal_spgemm(dev, ha, hb, &hc), XHAL_OK) << xhal_last_error();
  own_.push_back(hc);
  int64_t nnz = 0, hnnz = 0;
  ASSERT_EQ(xhal_csr_get_shape(c, nullptr, nullptr, &nnz), XHAL_OK);
  ASSERT_EQ(xhal_csr_get_shape(hc, nullptr, nullptr, &hnnz), XHAL_OK);
  ASSERT_EQ(nnz, hnnz);
  // C keeps i32 indices from i32 inputs; the host inputs were i64.
  std::vector<int32_t> rp(4), ci(static_cast<size_t>(nnz));
  V hrp(4), hci(static_cast<size_t>(nnz));
  ASSERT_EQ(xhal_csr_read(c, rp.data(), ci.data(), nullptr), XHAL_OK);
  ASSERT_EQ(xhal_csr_read(hc, hrp.data(), hci.data(), nullptr), XHAL_OK);
  EXPECT_EQ(V(rp.begin(), rp.end()), hrp);
  EXPECT_EQ(V(ci.begin(), ci.end()), hci);
  EXPECT_EQ(hrp, (V{0, 2, 3, 5}));
}

// Host arrays on a plugin that validates on the device go up as given and
// through csr_create_from_buffers too; the core keeps its host copy, so
// xhal_csr_read and spgemm read nothing back, the zero-diagonal check
// works as on the host path, and the uploaded copies are freed.
TEST_F(DevicePatternTest, HostArraysAreValidatedOnTheDeviceAndKeptOnTheHost) {
  const V rp = {0, 1, 3, 5}, ci = {0, 0, 1, 1, 2};  // 3 x 3 lower
  const std::vector<float> vals = {1, 2, 0, 4, 5};  // row 1's diagonal is 0
  const int64_t buffers_before = st->live_buffers;
  xhal_csr_t m = csr(3, 3, rp, ci, vals, devp);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(st->count("csr_create_from_buffers"), 1u);
  EXPECT_EQ(st->count("csr_create"), 0u);
  ASSERT_EQ(st->matrices.size(), 1u);
  EXPECT_EQ(st->matrices[0].row_ptr, rp);
  EXPECT_EQ(st->matrices[0].col_idx, ci);
  EXPECT_EQ(st->live_buffers, buffers_before + 1) << "only the values buffer stays";
  xhal_status_t s = XHAL_OK;
  const std::string msg = solve_message(devp, m, 3, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, &s);
  EXPECT_EQ(s, XHAL_INVALID_STRUCTURE);
  EXPECT_NE(msg.find("row 1 has a zero diagonal value"), std::string::npos) << msg;
  const std::vector<float> fixed = {1, 2, 3, 4, 5};
  ASSERT_EQ(xhal_csr_set_values(m, fixed.data()), XHAL_OK);
  solve_message(devp, m, 3, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, &s);
  EXPECT_EQ(s, XHAL_OK);
  st->clear();
  V rp_back(4), ci_back(5);
  ASSERT_EQ(xhal_csr_read(m, rp_back.data(), ci_back.data(), nullptr), XHAL_OK);
  EXPECT_EQ(rp_back, rp);
  EXPECT_EQ(ci_back, ci);
  xhal_csr_t c = nullptr;
  ASSERT_EQ(xhal_spgemm(devp, m, m, &c), XHAL_OK) << xhal_last_error();
  own_.push_back(c);
  EXPECT_EQ(st->count("buffer_read"), 0u) << "the core holds the host pattern";
  // A planted fault reads as the host path's message here too.
  const V bad = {0, 0, 1, 2, 2};
  xhal_csr_desc_t h{};
  h.struct_size = sizeof h;
  h.rows = h.cols = 3;
  h.nnz = 5;
  h.index_dtype = XHAL_DTYPE_I64;
  h.row_ptr = rp.data();
  h.col_idx = bad.data();
  xhal_csr_t none = nullptr;
  ASSERT_EQ(xhal_csr_create(dev, &h, &none), XHAL_INVALID_STRUCTURE);
  const std::string want = xhal_last_error();
  st->csr_fault_status = XHAL_INVALID_STRUCTURE;
  st->csr_fault = {XHAL_PLUGIN_CSR_FAULT_COLUMN_ORDER, 2, 4, 2, 2};
  EXPECT_EQ(xhal_csr_create(devp, &h, &none), XHAL_INVALID_STRUCTURE);
  EXPECT_EQ(std::string(xhal_last_error()), want);
  EXPECT_EQ(none, nullptr);
}

}  // namespace
}  // namespace xhal::ops_test
