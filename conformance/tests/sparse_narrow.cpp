// f16 and bf16 CSR matrices (docs/semantics.md 7.2): spmv and spmm with the
// matrix's values, x and y in one narrow dtype, every product and sum in f32
// in the canonical order of 3.7, y narrowed once. Bit-exact against the
// canonical f32 reference of the widened inputs, narrowed; accurate against
// the float64 reference with the f32 bound plus one narrow rounding (7.5).
// Besides random matrices with hub rows and a river network: rows whose f32
// sum changes when a partial sum is narrowed (1 followed by many terms below
// half an ulp of 1 in the narrow type), f16 products past 65504 (infinity)
// and in the subnormal range. Also the dtype rules around narrow matrices:
// typed values round trip, mixed tensors, and the ops that refuse them.
#include <algorithm>
#include <cstddef>

#include "../reference/narrow.h"
#include "../reference/sparse_device_helpers.h"

namespace xhal::conf::sparse {
namespace {

// What an unwritten narrow y holds: a negative NaN no conforming write makes.
constexpr uint16_t kPoison16 = 0xFFFF;
using Bits = std::vector<uint16_t>;

// Each test names its op and dtype with XHAL_CONF_REQUIRE_OP_DTYPE in its
// own body (the skip must return from the test): "unsupported" on a device
// without the op_dtypes bit.
class SpmvNarrowTest : public DeviceTest {};
class SpmmNarrowTest : public DeviceTest {};

// A narrow matrix through the desc's values_dtype and values_data.
xhal_status_t create_narrow(xhal_device_t dev, const Csr& pattern, xhal_dtype_t dtype,
                            const Bits& values, xhal_dtype_t index_dtype, Matrix& m) {
  HostDesc h(with_values(pattern, std::vector<float>()), index_dtype, false);
  h.desc.values_dtype = dtype;
  h.desc.values_data = values.empty() ? nullptr : values.data();
  return xhal_csr_create(dev, &h.desc, m.out());
}

struct AlphaBeta {
  float alpha, beta;
};
constexpr AlphaBeta kAlphaBeta[] = {{1.0f, 0.0f}, {-1.5f, 0.0f}, {0.75f, -1.25f}, {1.0f, 1.0f}};

// One matrix case: a pattern, its narrow values and the x values' range.
struct Case {
  std::string name;
  Csr pattern;
  Bits values;
  float x_lo = -1.0f, x_hi = 1.0f;
  bool x_ones = false;  // x all 1 (the partial-sum rows)
};

int64_t longest_op_row(const Csr& a, xhal_transpose_t trans) {
  const Csr m = trans == XHAL_TRANSPOSE ? transpose(a) : a;
  int64_t len = 0;
  for (int64_t i = 0; i < m.rows; ++i) len = std::max(len, m.row_ptr[i + 1] - m.row_ptr[i]);
  return len;
}

void check_multiply(xhal_device_t dev, xhal_dtype_t dt, const Case& cs, xhal_dtype_t index_dtype,
                    xhal_transpose_t trans, AlphaBeta ab, int64_t k, bool spmv) {
  const std::string label = cs.name + ", " + xhal_dtype_name(dt) + ", " + index_name(index_dtype) +
                            ", op " + trans_name(trans) + ", alpha " + std::to_string(ab.alpha) +
                            ", beta " + std::to_string(ab.beta) + ", k " + std::to_string(k);
  SCOPED_TRACE(label);
  BufferGuard g;
  Matrix m;
  ASSERT_EQ(create_narrow(dev, cs.pattern, dt, cs.values, index_dtype, m), XHAL_OK)
      << xhal_last_error();
  xhal_dtype_t values_dtype = XHAL_DTYPE_INVALID;
  ASSERT_EQ(xhal_csr_get_values_dtype(m.get(), &values_dtype), XHAL_OK);
  EXPECT_EQ(values_dtype, dt);
  const Csr& a = cs.pattern;
  const int64_t out_rows = op_rows(a, trans), in_rows = op_cols(a, trans);
  const size_t out_count = static_cast<size_t>(out_rows * k);
  const Bits x = cs.x_ones ? Bits(in_rows * k, narrow::narrow(dt, 1.0f))
                           : narrow::random_narrow(dt, in_rows * k, fresh_seed(), cs.x_lo, cs.x_hi);
  const Bits y0 = ab.beta == 0.0f ? Bits(out_count, kPoison16)
                                  : narrow::random_narrow(dt, out_count, fresh_seed(), -2.0f, 2.0f);
  const xhal_buffer_t xb = g.add(upload(dev, x));
  const xhal_tensor_t xt = tensor(xb, dt, dense_shape(in_rows, k, spmv));
  auto run = [&]() -> Bits {
    const xhal_buffer_t yb = g.add(upload(dev, y0));
    const xhal_tensor_t yt = tensor(yb, dt, dense_shape(out_rows, k, spmv));
    const xhal_status_t s = spmv ? xhal_spmv(dev, m.get(), trans, ab.alpha, &xt, ab.beta, &yt)
                                 : xhal_spmm(dev, m.get(), trans, ab.alpha, &xt, ab.beta, &yt);
    EXPECT_EQ(s, XHAL_OK) << xhal_last_error();
    return download<uint16_t>(yb, out_count);
  };
  const Bits got = run(), again = run();

  // Canonical: the f32 op on the widened inputs, each output narrowed once.
  const Csr aw = with_values(a, narrow::widen(dt, cs.values));
  const std::vector<float> xw = narrow::widen(dt, x);
  const std::vector<float> yw = ab.beta == 0.0f ? std::vector<float>() : narrow::widen(dt, y0);
  const Bits canonical =
      narrow::narrow(dt, spmm_canonical<float>(aw, trans, ab.alpha, xw, ab.beta, yw, k));
  // float64 reference of the widened inputs; the f32 bound of the longest
  // row (section 5: (terms + 2) 2^-23 of the magnitude) plus one rounding.
  ref64::Values ref;
  const std::vector<double> y64 = ab.beta == 0.0f ? std::vector<double>() : to_f64(yw);
  ref.v = spmm_f64(aw, trans, ab.alpha, to_f64(xw), ab.beta, y64, k);
  std::vector<int64_t> terms;
  ref.scale = spmm_magnitude(aw, trans, ab.alpha, to_f64(xw), ab.beta, y64, k, &terms);
  const tol::Bound f32_bound{double(longest_op_row(a, trans) + 2) * 0x1p-23, tol::kFloatMin};
  Grader grader;
  grader.output_narrow("y", dt, got, again, canonical, ref, f32_bound, kPoison16);
  grader.finish();
}

// Random values in [lo, hi] with random signs, representable in `dt`.
Bits signed_values(xhal_dtype_t dt, size_t n, float lo, float hi, Rng& rng) {
  Bits v = narrow::random_narrow(dt, n, fresh_seed(), lo, hi);
  for (auto& b : v)
    if (rng.uniform(0.0, 1.0) < 0.5) b ^= 0x8000u;
  return v;
}

// Rows of 70 entries (three chunks of 32): 1, then terms between a quarter
// and a half of an ulp of 1 in `dt`. In f32 they add up to several ulps of
// the narrow type; narrowed after each step they vanish.
Case partial_sum_case(xhal_dtype_t dt) {
  std::vector<std::vector<int64_t>> rows(24);
  for (auto& r : rows)
    for (int64_t c = 0; c < 70; ++c) r.push_back(c);
  Case cs{"partial-sum rows 24x70", from_row_lists(24, 70, rows), {}, 0, 0, true};
  const float quarter = dt == XHAL_DTYPE_BF16 ? 0x1p-9f : 0x1p-12f;
  cs.values = narrow::random_narrow(dt, cs.pattern.nnz(), fresh_seed(), quarter, 2 * quarter);
  for (int64_t i = 0; i < 24; ++i) {
    // The 1 sits in a different chunk for different rows.
    const int64_t at = (i * 29) % 70;
    cs.values[cs.pattern.row_ptr[i] + at] = narrow::narrow(dt, 1.0f);
  }
  return cs;
}

// f16 only: products past 65504 in some rows (infinity, either sign) and
// products in the subnormal range in others.
Case f16_range_case(Rng& rng) {
  Csr p = random_matrix(300, 200, rng);
  Case cs{"f16 overflow and subnormal rows 300x200", p, {}, 0.5f, 2.0f};
  cs.values = signed_values(XHAL_DTYPE_F16, p.nnz(), 0.25f, 2.0f, rng);
  for (int64_t i = 0; i < p.rows; ++i)
    for (int64_t e = p.row_ptr[i]; e < p.row_ptr[i + 1]; ++e) {
      if (i % 7 == 0)  // huge: |a x| up to 2 * 60000
        cs.values[e] = narrow::narrow(XHAL_DTYPE_F16, (i % 2 ? -1.0f : 1.0f) * 50000.0f);
      if (i % 7 == 3)  // tiny: sums below 2^-14, the f16 subnormal range
        cs.values[e] = narrow::narrow(XHAL_DTYPE_F16, float(rng.uniform(0x1p-22, 0x1p-19)));
    }
  return cs;
}

std::vector<Case> cases(xhal_dtype_t dt, Rng& rng) {
  std::vector<Case> out;
  Csr hubs = random_matrix(700, 500, rng);
  out.push_back(
      {"random 700x500 with hubs", hubs, signed_values(dt, hubs.nnz(), 0.25f, 2.0f, rng)});
  Csr wide = random_matrix(40, 1200, rng);
  out.push_back({"wide 40x1200 (hub rows of 19 chunks)", wide,
                 signed_values(dt, wide.nnz(), 0.25f, 2.0f, rng)});
  Csr river = river_tree(3000, rng);
  out.push_back({"river 3000", river, signed_values(dt, river.nnz(), 0.25f, 2.0f, rng)});
  // Rows either side of 4096 terms (where the cuda plugin gives a row a
  // block instead of a warp), between short ones.
  std::vector<std::vector<int64_t>> hub_rows;
  for (int64_t len : {5, 4097, 9000, 0, 4096, 130}) {
    std::vector<int64_t> cols;
    for (int64_t j = 0; j < len; ++j)
      cols.push_back(j * 2 + static_cast<int64_t>(hub_rows.size() % 2));
    hub_rows.push_back(std::move(cols));
  }
  Csr hubs_around = from_row_lists(6, 18002, std::move(hub_rows));
  out.push_back({"rows around 4096 terms 6x18002", hubs_around,
                 signed_values(dt, hubs_around.nnz(), 0.25f, 2.0f, rng)});
  out.push_back(partial_sum_case(dt));
  if (dt == XHAL_DTYPE_F16) out.push_back(f16_range_case(rng));
  return out;
}

void spmv_body(xhal_device_t dev, xhal_dtype_t dt) {
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  int variant = 0;
  for (const Case& cs : cases(dt, rng))
    for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
      for (const auto ab : kAlphaBeta) {
        const auto idx = (variant++ % 2) ? XHAL_DTYPE_I32 : XHAL_DTYPE_I64;
        check_multiply(dev, dt, cs, idx, trans, ab, 1, true);
      }
}

void spmm_body(xhal_device_t dev, xhal_dtype_t dt) {
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  int variant = 0;
  for (const Case& cs : cases(dt, rng))
    for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
      for (int64_t k : {1, 3, 8}) {
        const AlphaBeta ab = kAlphaBeta[variant % 4];
        const auto idx = (variant++ % 2) ? XHAL_DTYPE_I32 : XHAL_DTYPE_I64;
        check_multiply(dev, dt, cs, idx, trans, ab, k, false);
      }
}

TEST_P(SpmvNarrowTest, AlphaBetaBothOpsBf16) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_SPMV, XHAL_DTYPE_BF16);
  spmv_body(dev, XHAL_DTYPE_BF16);
}
TEST_P(SpmvNarrowTest, AlphaBetaBothOpsF16) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_SPMV, XHAL_DTYPE_F16);
  spmv_body(dev, XHAL_DTYPE_F16);
}
TEST_P(SpmmNarrowTest, BothOpsBf16) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_SPMM, XHAL_DTYPE_BF16);
  spmm_body(dev, XHAL_DTYPE_BF16);
}
TEST_P(SpmmNarrowTest, BothOpsF16) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_SPMM, XHAL_DTYPE_F16);
  spmm_body(dev, XHAL_DTYPE_F16);
}

// The dtype rules around a narrow matrix, on a device that multiplies it:
// typed values round trip; f32 values calls, tensors of another dtype, the
// solves and SpGEMM are XHAL_INVALID_ARGUMENT naming the argument, and write
// nothing.
void rules_body(xhal_device_t dev, xhal_dtype_t dt) {
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const xhal_dtype_t other = dt == XHAL_DTYPE_BF16 ? XHAL_DTYPE_F16 : XHAL_DTYPE_BF16;
  Csr a = random_triangular(40, rng, XHAL_TRIANGLE_LOWER);
  const Bits v = signed_values(dt, a.nnz(), 0.5f, 2.0f, rng);
  Matrix m;
  ASSERT_EQ(create_narrow(dev, a, dt, v, XHAL_DTYPE_I32, m), XHAL_OK) << xhal_last_error();
  Bits back(v.size(), 0);
  ASSERT_EQ(xhal_csr_read_values(m.get(), dt, back.data()), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(back, v);
  const Bits v2 = signed_values(dt, a.nnz(), 0.5f, 2.0f, rng);
  ASSERT_EQ(xhal_csr_set_values_typed(m.get(), dt, v2.data()), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_csr_read_values(m.get(), dt, back.data()), XHAL_OK);
  EXPECT_EQ(back, v2);
  auto refused = [](xhal_status_t s, const char* needle) {
    EXPECT_EQ(s, XHAL_INVALID_ARGUMENT) << xhal_last_error();
    EXPECT_NE(std::string(xhal_last_error()).find(needle), std::string::npos) << xhal_last_error();
  };
  std::vector<float> f32(a.nnz(), 1.0f);
  refused(xhal_csr_set_values(m.get(), f32.data()), "'values'");
  refused(xhal_csr_set_values_typed(m.get(), other, v.data()), "'dtype'");
  refused(xhal_csr_read_values(m.get(), XHAL_DTYPE_F32, f32.data()), "'dtype'");
  refused(xhal_csr_read(m.get(), nullptr, nullptr, f32.data()), "'out_values'");

  BufferGuard g;
  const int64_t n = a.rows;
  const xhal_buffer_t xb = g.add(upload(dev, Bits(n, narrow::narrow(dt, 1.0f))));
  const xhal_buffer_t yb = g.add(upload(dev, Bits(n, kPoison16)));
  const xhal_buffer_t xf = g.add(upload(dev, std::vector<float>(n, 1.0f)));
  const xhal_buffer_t yo = g.add(upload(dev, Bits(n, kPoison16)));
  const xhal_tensor_t x = tensor(xb, dt, {n}), y = tensor(yb, dt, {n});
  const xhal_tensor_t x32 = tensor(xf, XHAL_DTYPE_F32, {n}), y_other = tensor(yo, other, {n});
  refused(xhal_spmv(dev, m.get(), XHAL_TRANSPOSE_NONE, 1.0f, &x32, 0.0f, &y), "'x'");
  refused(xhal_spmv(dev, m.get(), XHAL_TRANSPOSE_NONE, 1.0f, &x, 0.0f, &y_other), "'y'");
  // The solves and SpGEMM take f32/f64 matrices only (7.2): the matrix is
  // the argument named, whatever the tensors hold.
  refused(xhal_csr_solve(dev, m.get(), XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                         XHAL_DIAGONAL_STORED, &x, &y),
          "'a'");
  refused(xhal_csr_solve(dev, m.get(), XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                         XHAL_DIAGONAL_STORED, &x32, &x32),
          "'a'");
  refused(xhal_csr_solve_backward(dev, m.get(), XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                  XHAL_DIAGONAL_STORED, &x, &x, &y, nullptr),
          "'a'");
  Matrix c;
  refused(xhal_spgemm(dev, m.get(), m.get(), c.out()), "'a'");
  EXPECT_EQ(c.get(), nullptr);
  EXPECT_EQ(download<uint16_t>(yb, n), Bits(n, kPoison16)) << "a refused call wrote y";
  EXPECT_EQ(download<uint16_t>(yo, n), Bits(n, kPoison16)) << "a refused call wrote y";
}

TEST_P(SpmvNarrowTest, DtypeRulesBf16) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_SPMV, XHAL_DTYPE_BF16);
  rules_body(dev, XHAL_DTYPE_BF16);
}
TEST_P(SpmvNarrowTest, DtypeRulesF16) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_SPMV, XHAL_DTYPE_F16);
  rules_body(dev, XHAL_DTYPE_F16);
}

// On any device with sparse ops: a narrow matrix is created where the device
// claims the dtype for spmv or spmm, and is XHAL_UNSUPPORTED (never a
// silent f32 matrix) where it claims neither.
class CsrNarrowDescTest : public SparseOpTest<XHAL_OP_SPMV> {};

TEST_P(CsrNarrowDescTest, CreatedOrUnsupportedAsClaimed) {
  Rng rng(test_seed());
  const Csr a = random_matrix(30, 20, rng);
  for (xhal_dtype_t dt : {XHAL_DTYPE_F16, XHAL_DTYPE_BF16}) {
    SCOPED_TRACE(xhal_dtype_name(dt));
    const Bits v = signed_values(dt, a.nnz(), 0.5f, 2.0f, rng);
    Matrix m;
    const bool claimed =
        device_supports(dev, XHAL_OP_SPMV, dt) || device_supports(dev, XHAL_OP_SPMM, dt);
    const xhal_status_t s = create_narrow(dev, a, dt, v, XHAL_DTYPE_I64, m);
    if (claimed) {
      EXPECT_EQ(s, XHAL_OK) << xhal_last_error();
      xhal_dtype_t got = XHAL_DTYPE_INVALID;
      ASSERT_EQ(xhal_csr_get_values_dtype(m.get(), &got), XHAL_OK);
      EXPECT_EQ(got, dt);
    } else {
      EXPECT_EQ(s, XHAL_UNSUPPORTED) << xhal_last_error();
      EXPECT_EQ(m.get(), nullptr);
    }
  }
}

XHAL_CONF_INSTANTIATE(SpmvNarrowTest);
XHAL_CONF_INSTANTIATE(SpmmNarrowTest);
XHAL_CONF_INSTANTIATE(CsrNarrowDescTest);

}  // namespace
}  // namespace xhal::conf::sparse
