// CSR matrix life cycle: creation from host arrays and from device buffers
// (i32 and i64 indices), reading back, values replaced on a fixed pattern
// from the host and from a device tensor (no host transfer) after which the
// ops give the new answers, and a matrix used on the wrong device.
#include "../reference/sparse_device_helpers.h"

namespace xhal::conf::sparse {
namespace {

// Each test states the ops it calls: a device without them reports the test
// "unsupported" (xhal_csr_create is XHAL_UNSUPPORTED on a device without
// sparse ops).
class CsrCreateTest : public DeviceTest {};

// xhal_csr_read returns exactly the pattern and values of `a`.
void expect_reads_back(xhal_csr_t m, const Csr& a, xhal_dtype_t idx) {
  int64_t rows = -1, cols = -1, nnz = -1;
  ASSERT_EQ(xhal_csr_get_shape(m, &rows, &cols, &nnz), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(rows, a.rows);
  EXPECT_EQ(cols, a.cols);
  EXPECT_EQ(nnz, a.nnz());
  const size_t isz = idx == XHAL_DTYPE_I32 ? 4 : 8;
  std::vector<uint8_t> rp((a.rows + 1) * isz), ci(std::max<size_t>(a.nnz(), 1) * isz);
  std::vector<float> v(std::max<int64_t>(a.nnz(), 1));
  ASSERT_EQ(xhal_csr_read(m, rp.data(), ci.data(), v.data()), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(rp, index_bytes(a.row_ptr, idx)) << "row_ptr read back differs";
  ci.resize(a.nnz() * isz);
  v.resize(a.nnz());
  EXPECT_EQ(ci, index_bytes(a.col_idx, idx)) << "col_idx read back differs";
  EXPECT_TRUE(same_bits(v, a.values)) << "values read back: " << first_difference(v, a.values);
}

// y = A x on the device matches the canonical result for a's current values.
void expect_spmv_matches(xhal_device_t dev, xhal_csr_t m, const Csr& a, Rng& rng,
                         LevelTracker& level, const std::string& what,
                         xhal_transpose_t trans = XHAL_TRANSPOSE_NONE) {
  BufferGuard g;
  const int64_t rows = op_rows(a, trans), cols = op_cols(a, trans);
  const auto x = random_values(rng, cols);
  const xhal_tensor_t xt = dense(dev, g, x, {cols});
  const xhal_tensor_t yt = poisoned(dev, g, rows, {rows});
  auto call = [&] { return xhal_spmv(dev, m, trans, 1.0f, &xt, 0.0f, &yt); };
  ASSERT_EQ(run_on_device(dev, call), XHAL_OK);
  const auto y = read(yt);
  expect_within(what + " vs float64", y, spmm_f64(a, trans, 1.0, to_f64(x), 0.0, {}, 1),
                spmm_bound(a, trans, 1.0f, x, 0.0f, {}, 1));
  level.compare(what, y, spmm_canonical(a, trans, 1.0f, x, 0.0f, {}, 1), [&] {
    poison(yt.buffer);
    EXPECT_EQ(call(), XHAL_OK);
    return read(yt);
  });
}

// x = solve(A, b) on the device matches the canonical result.
void expect_solve_matches(xhal_device_t dev, xhal_csr_t m, const Csr& a, Rng& rng,
                          LevelTracker& level, const std::string& what,
                          xhal_transpose_t trans = XHAL_TRANSPOSE_NONE) {
  BufferGuard g;
  const auto b = random_values(rng, a.rows);
  const xhal_tensor_t bt = dense(dev, g, b, {a.rows});
  const xhal_tensor_t xt = poisoned(dev, g, a.rows, {a.rows});
  auto call = [&] {
    return xhal_csr_solve(dev, m, trans, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, &bt, &xt);
  };
  ASSERT_EQ(run_on_device(dev, call), XHAL_OK);
  const auto x = read(xt);
  expect_solve_residual(what, a, trans, XHAL_DIAGONAL_STORED, x, b, 1);
  level.compare(what, x, solve_canonical(a, trans, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, b, 1),
                [&] {
                  poison(xt.buffer);
                  EXPECT_EQ(call(), XHAL_OK);
                  return read(xt);
                });
}

TEST_P(CsrCreateTest, CreateFromHostArrays) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SPMV);
  LevelTracker level(XHAL_OP_SPMV);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  for (auto idx : {XHAL_DTYPE_I32, XHAL_DTYPE_I64}) {
    SCOPED_TRACE(index_name(idx));
    const Csr a = random_matrix(200, 150, rng);
    Matrix m;
    ASSERT_EQ(create_from_host(dev, a, idx, m), XHAL_OK) << xhal_last_error();
    expect_reads_back(m.get(), a, idx);
    expect_spmv_matches(dev, m.get(), a, rng, level, "A x");
  }
}

TEST_P(CsrCreateTest, CreateFromDeviceBuffers) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SPMV);
  LevelTracker level(XHAL_OP_SPMV);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  for (auto idx : {XHAL_DTYPE_I32, XHAL_DTYPE_I64}) {
    SCOPED_TRACE(index_name(idx));
    const Csr a = random_matrix(150, 220, rng);
    BufferGuard g;
    Matrix m;
    ASSERT_EQ(create_from_buffers(dev, a, idx, g, m), XHAL_OK) << xhal_last_error();
    expect_reads_back(m.get(), a, idx);
    expect_spmv_matches(dev, m.get(), a, rng, level, "A x");
  }
}

// values NULL (host) or no values buffer: every value starts at +0.0.
TEST_P(CsrCreateTest, CreateWithoutValuesStartsAtZero) {
  if (!device_has_sparse_ops(dev)) XHAL_CONF_UNSUPPORTED("the device implements no sparse op");
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  Csr a = random_matrix(30, 20, rng);
  for (bool from_buffers : {false, true}) {
    SCOPED_TRACE(from_buffers ? "device buffers" : "host arrays");
    BufferGuard g;
    Matrix m;
    if (from_buffers) {
      ASSERT_EQ(create_from_buffers(dev, a, XHAL_DTYPE_I32, g, m, false), XHAL_OK)
          << xhal_last_error();
    } else {
      HostDesc h(a, XHAL_DTYPE_I64, false);
      ASSERT_EQ(xhal_csr_create(dev, &h.desc, m.out()), XHAL_OK) << xhal_last_error();
    }
    std::vector<float> v(a.nnz(), 1.0f);
    ASSERT_EQ(xhal_csr_read(m.get(), nullptr, nullptr, v.data()), XHAL_OK) << xhal_last_error();
    for (float x : v) EXPECT_EQ(bits(x), bits(+0.0f)) << describe(x);
  }
}

// Training changes values, not topology: replace the values from the host
// and the ops give the new answers; the pattern stays.
TEST_P(CsrCreateTest, SetValuesFromHostGivesNewAnswers) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_CSR_SOLVE);
  XHAL_CONF_REQUIRE_ALSO(XHAL_OP_SPMV);
  LevelTracker level(XHAL_OP_CSR_SOLVE);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  Csr a = random_triangular(300, rng, XHAL_TRIANGLE_LOWER, 3.0);
  Matrix m;
  ASSERT_EQ(create_from_host(dev, a, XHAL_DTYPE_I32, m), XHAL_OK) << xhal_last_error();
  expect_solve_matches(dev, m.get(), a, rng, level, "x before");
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    a.values = dominant_values(a, rng);
    ASSERT_EQ(xhal_csr_set_values(m.get(), a.values.data()), XHAL_OK) << xhal_last_error();
    expect_reads_back(m.get(), a, XHAL_DTYPE_I32);
    expect_solve_matches(dev, m.get(), a, rng, level, "x after set_values");
    expect_spmv_matches(dev, m.get(), a, rng, level, "A x after set_values");
    // A backend may keep A^T's values in its own order: new values reach it.
    expect_solve_matches(dev, m.get(), a, rng, level, "A^T x after set_values", XHAL_TRANSPOSE);
    expect_spmv_matches(dev, m.get(), a, rng, level, "A^T x after set_values", XHAL_TRANSPOSE);
  }
}

// Same from a device tensor at a non-zero offset: device to device, no host
// transfer.
TEST_P(CsrCreateTest, SetValuesFromDeviceTensorWithoutHostTransfer) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_CSR_SOLVE);
  XHAL_CONF_REQUIRE_ALSO(XHAL_OP_SPMV);
  LevelTracker level(XHAL_OP_CSR_SOLVE);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  Csr a = random_triangular(300, rng, XHAL_TRIANGLE_LOWER, 3.0);
  Matrix m;
  ASSERT_EQ(create_from_host(dev, a, XHAL_DTYPE_I64, m), XHAL_OK) << xhal_last_error();
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    a.values = dominant_values(a, rng);
    std::vector<float> staged(4, 7.0f);
    staged.insert(staged.end(), a.values.begin(), a.values.end());
    BufferGuard g;
    const xhal_tensor_t vt = tensor(g.add(upload(dev, staged)), XHAL_DTYPE_F32, {a.nnz()}, 16);
    // A device-to-device copy the core makes: no transfer, no op slot.
    ASSERT_EQ(run_on_device(
                  dev, [&] { return xhal_csr_set_values_tensor(m.get(), &vt); }, false, 0),
              XHAL_OK);
    expect_reads_back(m.get(), a, XHAL_DTYPE_I64);
    expect_solve_matches(dev, m.get(), a, rng, level, "x after set_values_tensor");
    expect_spmv_matches(dev, m.get(), a, rng, level, "A x after set_values_tensor");
    expect_solve_matches(dev, m.get(), a, rng, level, "A^T x after set_values_tensor",
                         XHAL_TRANSPOSE);
    expect_spmv_matches(dev, m.get(), a, rng, level, "A^T x after set_values_tensor",
                        XHAL_TRANSPOSE);
  }
}

// The pattern is uploaded once, when the matrix is created: without values
// (no buffer_write by the core) creating it still moves the host-to-device
// counters; the ops on it move none (docs/plugin-guide.md "Counters").
TEST_P(CsrCreateTest, PatternUploadsOnceAtCreation) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SPMV);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr a = random_matrix(120, 90, rng);
  HostDesc h(a, XHAL_DTYPE_I64, false);
  Matrix m;
  ASSERT_EQ(xhal_device_synchronize(dev), XHAL_OK);
  const xhal_counters_t c0 = counters(dev);
  ASSERT_EQ(xhal_csr_create(dev, &h.desc, m.out()), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_device_synchronize(dev), XHAL_OK);
  const xhal_counters_t c1 = counters(dev);
  EXPECT_GE(c1.host_to_device_transfers, c0.host_to_device_transfers + 1)
      << "creating a " << a.rows << " x " << a.cols << " matrix of " << a.nnz()
      << " entries moved no host-to-device transfer: the pattern's upload must be counted";
  EXPECT_GT(c1.host_to_device_bytes, c0.host_to_device_bytes);
  BufferGuard g;
  const xhal_tensor_t xt = dense(dev, g, random_values(rng, a.cols), {a.cols});
  const xhal_tensor_t yt = poisoned(dev, g, a.rows, {a.rows});
  ASSERT_EQ(
      run_on_device(
          dev,
          [&] {
            const xhal_status_t s =
                xhal_spmv(dev, m.get(), XHAL_TRANSPOSE_NONE, 1.0f, &xt, 0.0f, &yt);
            return s != XHAL_OK ? s : xhal_spmv(dev, m.get(), XHAL_TRANSPOSE, 1.0f, &yt, 0.0f, &xt);
          },
          false, 2),
      XHAL_OK);
}

// A matrix, or an operand, of one device used on another: XHAL_WRONG_DEVICE
// and nothing written.
TEST_P(CsrCreateTest, WrongDeviceRejected) {
  if (!device_supports(dev, XHAL_OP_SPMV) || !device_supports(dev, XHAL_OP_CSR_SOLVE))
    XHAL_CONF_UNSUPPORTED("the test calls spmv and csr_solve; the device lacks one of them");
  uint32_t count = 0;
  ASSERT_EQ(xhal_device_count(&count), XHAL_OK);
  uint32_t other_index = count;
  for (uint32_t i = 0; i < count; ++i)
    if (i != GetParam().index) {
      other_index = i;
      break;
    }
  if (other_index == count)
    GTEST_SKIP() << "needs two devices; only " << count
                 << " visible (run with a selector that lists two, e.g. XHAL_DEVICE=cpu,vulkan)";
  xhal_device_t other = nullptr;
  ASSERT_EQ(xhal_device_open_index(other_index, &other), XHAL_OK) << xhal_last_error();
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  {
    const Csr a = random_triangular(20, rng, XHAL_TRIANGLE_LOWER, 2.0);
    BufferGuard g;
    Matrix m, m_other, c;
    ASSERT_EQ(create_from_host(dev, a, XHAL_DTYPE_I32, m), XHAL_OK) << xhal_last_error();
    // The other device may lack sparse ops; only spgemm needs its matrix.
    const bool other_has_csr = create_from_host(other, a, XHAL_DTYPE_I32, m_other) == XHAL_OK;
    const auto v = random_values(rng, a.rows);
    const xhal_tensor_t x_here = dense(dev, g, v, {a.rows});
    const xhal_tensor_t y_here = poisoned(dev, g, a.rows, {a.rows});
    const xhal_tensor_t x_there = dense(other, g, v, {a.rows});
    const xhal_tensor_t y_there = poisoned(other, g, a.rows, {a.rows});
    EXPECT_EQ(xhal_spmv(other, m.get(), XHAL_TRANSPOSE_NONE, 1.0f, &x_there, 0.0f, &y_there),
              XHAL_WRONG_DEVICE)
        << "matrix of another device";
    EXPECT_EQ(xhal_spmv(dev, m.get(), XHAL_TRANSPOSE_NONE, 1.0f, &x_there, 0.0f, &y_here),
              XHAL_WRONG_DEVICE)
        << "x of another device";
    EXPECT_EQ(xhal_csr_solve(dev, m.get(), XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                             XHAL_DIAGONAL_STORED, &x_here, &y_there),
              XHAL_WRONG_DEVICE)
        << "x of another device";
    if (other_has_csr) {
      EXPECT_EQ(xhal_spgemm(dev, m.get(), m_other.get(), c.out()), XHAL_WRONG_DEVICE);
      EXPECT_EQ(c.get(), nullptr);
    }
    // A descriptor whose buffers live on the other device.
    {
      const auto rp = index_bytes(a.row_ptr, XHAL_DTYPE_I32),
                 ci = index_bytes(a.col_idx, XHAL_DTYPE_I32);
      xhal_csr_desc_t d{};
      d.struct_size = sizeof(d);
      d.rows = a.rows;
      d.cols = a.cols;
      d.nnz = a.nnz();
      d.index_dtype = XHAL_DTYPE_I32;
      d.row_ptr_buffer = g.add(upload(other, rp.data(), rp.size()));
      d.col_idx_buffer = g.add(upload(other, ci.data(), ci.size()));
      d.values_buffer = g.add(upload(other, a.values));
      Matrix wrong;
      EXPECT_EQ(xhal_csr_create(dev, &d, wrong.out()), XHAL_WRONG_DEVICE)
          << "desc buffers of another device";
      EXPECT_EQ(wrong.get(), nullptr);
    }
    const xhal_tensor_t values_there = dense(other, g, random_values(rng, a.nnz()), {a.nnz()});
    EXPECT_EQ(xhal_csr_set_values_tensor(m.get(), &values_there), XHAL_WRONG_DEVICE)
        << "values of another device";
    expect_reads_back(m.get(), a, XHAL_DTYPE_I32);
    for (auto t : {y_here, y_there})
      for (float f : read(t)) EXPECT_TRUE(is_poison(f)) << "output written after an error";
  }
  ASSERT_EQ(xhal_device_release(other), XHAL_OK) << xhal_last_error();
}

XHAL_CONF_INSTANTIATE(CsrCreateTest);

}  // namespace
}  // namespace xhal::conf::sparse
