// SpGEMM conformance: C = A B has every structural product in its pattern
// (explicit zeros from cancellation stay), values bit-exact against the
// canonical sequential sum or within the float64 bound and deterministic,
// and C is a valid matrix for the other ops.
#include "../reference/sparse_device_helpers.h"

namespace xhal::conf::sparse {
namespace {

class SpgemmTest : public SparseOpTest<XHAL_OP_SPGEMM> {};

// C's pattern and values read back in `idx` (C takes its inputs' index dtype).
Csr read_matrix(xhal_csr_t m, xhal_dtype_t idx) {
  Csr c;
  int64_t nnz = 0;
  EXPECT_EQ(xhal_csr_get_shape(m, &c.rows, &c.cols, &nnz), XHAL_OK) << xhal_last_error();
  const size_t isz = idx == XHAL_DTYPE_I32 ? 4 : 8;
  std::vector<uint8_t> rp((c.rows + 1) * isz), ci(std::max<int64_t>(nnz, 1) * isz);
  c.values.resize(std::max<int64_t>(nnz, 1));
  EXPECT_EQ(xhal_csr_read(m, rp.data(), ci.data(), c.values.data()), XHAL_OK) << xhal_last_error();
  c.values.resize(nnz);
  auto decode = [&](const std::vector<uint8_t>& bytes, size_t count) {
    std::vector<int64_t> out(count);
    for (size_t i = 0; i < count; ++i) {
      if (isz == 4) {
        int32_t v;
        std::memcpy(&v, bytes.data() + 4 * i, 4);
        out[i] = v;
      } else {
        std::memcpy(&out[i], bytes.data() + 8 * i, 8);
      }
    }
    return out;
  };
  c.row_ptr = decode(rp, c.rows + 1);
  c.col_idx = decode(ci, nnz);
  return c;
}

void check_product(xhal_device_t dev, const Csr& a, const Csr& b, xhal_dtype_t idx,
                   LevelTracker& level, const std::string& what) {
  SCOPED_TRACE(what + ", " + index_name(idx));
  Matrix ma, mb, mc;
  ASSERT_EQ(create_from_host(dev, a, idx, ma), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(create_from_host(dev, b, idx, mb), XHAL_OK) << xhal_last_error();
  // The symbolic phase may upload C's pattern; nothing may come back.
  ASSERT_EQ(run_on_device(
                dev, [&] { return xhal_spgemm(dev, ma.get(), mb.get(), mc.out()); }, true),
            XHAL_OK);
  const Csr got = read_matrix(mc.get(), idx);
  const Csr want = spgemm_canonical(a, b);
  ASSERT_EQ(got.rows, want.rows);
  ASSERT_EQ(got.cols, want.cols);
  ASSERT_EQ(got.row_ptr, want.row_ptr) << "C's row pointers";
  ASSERT_EQ(got.col_idx, want.col_idx) << "C's columns";
  std::vector<double> mag;
  std::vector<int64_t> terms;
  const auto ref = spgemm_f64(a, b, &mag, &terms);
  for (size_t e = 0; e < mag.size(); ++e) mag[e] *= double(terms[e] + 1) * 0x1p-23;
  expect_within("C values vs float64", got.values, ref, mag);
  level.compare("C values", got.values, want.values, [&] {
    Matrix again;
    EXPECT_EQ(xhal_spgemm(dev, ma.get(), mb.get(), again.out()), XHAL_OK) << xhal_last_error();
    return again.get() ? read_matrix(again.get(), idx).values : std::vector<float>();
  });
}

TEST_P(SpgemmTest, PatternAndValues) {
  LevelTracker level(XHAL_OP_SPGEMM);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  RandomShape dense_hubs;
  dense_hubs.hub_row_fill = 0.8;
  dense_hubs.hub_col_fill = 0.9;
  {
    const Csr a = random_matrix(90, 70, rng, dense_hubs),
              b = random_matrix(70, 110, rng, dense_hubs);
    check_product(dev, a, b, XHAL_DTYPE_I32, level, "random 90x70 * 70x110 with hubs");
    check_product(dev, a, b, XHAL_DTYPE_I64, level, "random 90x70 * 70x110 with hubs");
  }
  {
    const Csr a = random_matrix(120, 80, rng);
    check_product(dev, a, transpose(a), XHAL_DTYPE_I64, level, "A A^T");
    check_product(dev, transpose(a), a, XHAL_DTYPE_I32, level, "A^T A");
  }
  {
    const Csr c = chain(400, rng), r = river_tree(400, rng), f = confluence(400, rng);
    check_product(dev, c, r, XHAL_DTYPE_I32, level, "chain * river");
    check_product(dev, f, f, XHAL_DTYPE_I64, level, "confluence^2");
  }
  {
    // Long inner products (> 32 terms): sequential, not segsum.
    RandomShape full;
    full.mean_per_row = 150;  // ~60 terms per inner product
    full.empty_row_fraction = 0.2;
    const Csr a = random_matrix(30, 200, rng, full), b = random_matrix(200, 30, rng, full);
    check_product(dev, a, b, XHAL_DTYPE_I32, level, "long inner products");
  }
}

// 1*2 + 2*(-1) = +0 exactly: the entry stays in C's pattern as +0.0.
TEST_P(SpgemmTest, CancellationKeepsExplicitZero) {
  LevelTracker level(XHAL_OP_SPGEMM);
  Csr a = from_row_lists(2, 2, {{0, 1}, {1}});
  a.values = {1.0f, 2.0f, 3.0f};
  Csr b = from_row_lists(2, 2, {{0, 1}, {0}});
  b.values = {2.0f, 5.0f, -1.0f};
  // C = [[1*2 + 2*(-1), 1*5], [3*(-1), 0 (absent)]]
  check_product(dev, a, b, XHAL_DTYPE_I32, level, "cancellation");
  Matrix ma, mb, mc;
  ASSERT_EQ(create_from_host(dev, a, XHAL_DTYPE_I64, ma), XHAL_OK);
  ASSERT_EQ(create_from_host(dev, b, XHAL_DTYPE_I64, mb), XHAL_OK);
  ASSERT_EQ(xhal_spgemm(dev, ma.get(), mb.get(), mc.out()), XHAL_OK) << xhal_last_error();
  const Csr c = read_matrix(mc.get(), XHAL_DTYPE_I64);
  ASSERT_EQ(c.col_idx, (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(bits(c.values[0]), bits(+0.0f)) << describe(c.values[0]);
  EXPECT_EQ(c.values[1], 5.0f);
  EXPECT_EQ(c.values[2], -3.0f);
}

// C is a validated matrix like any other: spmv with it gives the canonical
// answer for the canonical C.
TEST_P(SpgemmTest, ProductIsUsableByOtherOps) {
  XHAL_CONF_REQUIRE_ALSO(XHAL_OP_SPMV);
  LevelTracker level(XHAL_OP_SPGEMM);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr a = random_matrix(80, 60, rng), b = random_matrix(60, 50, rng);
  Matrix ma, mb, mc;
  ASSERT_EQ(create_from_host(dev, a, XHAL_DTYPE_I32, ma), XHAL_OK);
  ASSERT_EQ(create_from_host(dev, b, XHAL_DTYPE_I32, mb), XHAL_OK);
  ASSERT_EQ(xhal_spgemm(dev, ma.get(), mb.get(), mc.out()), XHAL_OK) << xhal_last_error();
  const Csr want = spgemm_canonical(a, b);
  BufferGuard g;
  const auto x = random_values(rng, want.rows);
  const xhal_tensor_t xt = dense(dev, g, x, {want.rows});
  const xhal_tensor_t yt = poisoned(dev, g, want.cols, {want.cols});
  auto call = [&] { return xhal_spmv(dev, mc.get(), XHAL_TRANSPOSE, 1.0f, &xt, 0.0f, &yt); };
  ASSERT_EQ(run_on_device(dev, call), XHAL_OK);
  const auto y = read(yt);
  expect_within("C^T x vs float64", y, spmm_f64(want, XHAL_TRANSPOSE, 1.0, to_f64(x), 0.0, {}, 1),
                spmm_bound(want, XHAL_TRANSPOSE, 1.0f, x, 0.0f, {}, 1));
  level.compare("C^T x", y, spmm_canonical(want, XHAL_TRANSPOSE, 1.0f, x, 0.0f, {}, 1), [&] {
    poison(yt.buffer);
    EXPECT_EQ(call(), XHAL_OK);
    return read(yt);
  });
}

XHAL_CONF_INSTANTIATE(SpgemmTest);

}  // namespace
}  // namespace xhal::conf::sparse
