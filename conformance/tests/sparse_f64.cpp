// f64 CSR matrices (docs/semantics.md 7.3): spmv/spmm, the triangular solve
// and its backward, and SpGEMM in binary64 with the f32 canonical orders.
// Each result is checked bit for bit against the canonical reference in
// double and within the section 5 bound (unit 2^-52) of the same order run in
// long double. The values carry full 53-bit significands, so a backend that
// computes in f32, or in another order, cannot match the bits.
#include <cstddef>

#include "../reference/sparse_device_helpers.h"

namespace xhal::conf::sparse {
namespace {

using Long = long double;

// A test of op `Op` on f64 matrices: "unsupported" unless the device claims
// f64 for it.
template <xhal_op_t Op>
class SparseF64Test : public DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (HasFatalFailure()) return;
    XHAL_CONF_REQUIRE_OP_DTYPE(Op, XHAL_DTYPE_F64);
  }
};
class SpmvF64Test : public SparseF64Test<XHAL_OP_SPMV> {};
class SpmmF64Test : public SparseF64Test<XHAL_OP_SPMM> {};
class CsrSolveF64Test : public SparseF64Test<XHAL_OP_CSR_SOLVE> {};
class CsrSolveBackwardF64Test : public SparseF64Test<XHAL_OP_CSR_SOLVE_BACKWARD> {};
class SpgemmF64Test : public SparseF64Test<XHAL_OP_SPGEMM> {};

// v widened and scaled by 1 + u, |u| < 2^-20: the f32 test data's shape
// (signs, dominance) with random low bits in all 53.
std::vector<double> jittered(const std::vector<float>& v, Rng& rng) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = double(v[i]) * (1.0 + rng.uniform(-0x1p-20, 0x1p-20));
  return out;
}
std::vector<double> random64(Rng& rng, size_t n) { return jittered(random_values(rng, n), rng); }

Csr64 jittered(const Csr& a, Rng& rng) { return with_values(a, jittered(a.values, rng)); }

template <class T>
std::vector<Long> to_long(const std::vector<T>& v) {
  return std::vector<Long>(v.begin(), v.end());
}
template <class T>
std::vector<Long> abs_long(const std::vector<T>& v) {
  std::vector<Long> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = std::fabs(Long(v[i]));
  return out;
}
CsrOf<Long> to_long(const Csr64& a) { return with_values(a, to_long(a.values)); }
CsrOf<Long> abs_long(const Csr64& a) { return with_values(a, abs_long(a.values)); }

// An f64 matrix through the desc's values_dtype and values_data.
xhal_status_t create64(xhal_device_t dev, const Csr64& a, xhal_dtype_t index_dtype, Matrix& m) {
  HostDesc h(with_values(a, std::vector<float>()), index_dtype, false);
  h.desc.values_dtype = XHAL_DTYPE_F64;
  h.desc.values_data = a.values.empty() ? nullptr : a.values.data();
  return xhal_csr_create(dev, &h.desc, m.out());
}

// |got - ref| <= bound elementwise (ref and bound in long double).
void expect_within64(const std::string& what, const std::vector<double>& got,
                     const std::vector<Long>& ref, const std::vector<Long>& bound) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const Long err = std::fabs(Long(got[i]) - ref[i]);
    if (!(err <= bound[i]) && reported++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << describe(got[i]) << " reference "
                    << double(ref[i]) << " error " << double(err) << " > bound "
                    << double(bound[i]);
  }
}

// Row lengths of op(A).
std::vector<int64_t> op_row_lengths(const Csr64& a, xhal_transpose_t trans) {
  const Csr64 m = trans == XHAL_TRANSPOSE ? transpose(a) : a;
  std::vector<int64_t> len(m.rows);
  for (int64_t i = 0; i < m.rows; ++i) len[i] = m.row_ptr[i + 1] - m.row_ptr[i];
  return len;
}

struct AlphaBeta {
  float alpha, beta;
};
constexpr AlphaBeta kAlphaBeta[] = {{1.0f, 0.0f}, {-1.5f, 0.0f}, {0.75f, -1.25f}, {1.0f, 1.0f}};

void check_multiply(xhal_device_t dev, const Csr64& a, xhal_dtype_t index_dtype,
                    xhal_transpose_t trans, AlphaBeta ab, int64_t k, bool spmv, LevelTracker& level,
                    Rng& rng, const std::string& label) {
  SCOPED_TRACE(label);
  BufferGuard g;
  Matrix m;
  ASSERT_EQ(create64(dev, a, index_dtype, m), XHAL_OK) << xhal_last_error();
  xhal_dtype_t values_dtype = XHAL_DTYPE_INVALID;
  ASSERT_EQ(xhal_csr_get_values_dtype(m.get(), &values_dtype), XHAL_OK);
  EXPECT_EQ(values_dtype, XHAL_DTYPE_F64);
  const int64_t rows = a.rows, cols = a.cols;
  const int64_t out_rows = trans == XHAL_TRANSPOSE ? cols : rows;
  const int64_t in_rows = trans == XHAL_TRANSPOSE ? rows : cols;
  const auto x = random64(rng, in_rows * k);
  const auto y0 = ab.beta == 0.0f ? std::vector<double>() : random64(rng, out_rows * k);
  const xhal_tensor_t xt = dense(dev, g, x, dense_shape(in_rows, k, spmv));
  const xhal_tensor_t yt =
      ab.beta == 0.0f ? poisoned<double>(dev, g, out_rows * k, dense_shape(out_rows, k, spmv))
                      : dense(dev, g, y0, dense_shape(out_rows, k, spmv));
  auto call = [&] {
    return spmv ? xhal_spmv(dev, m.get(), trans, ab.alpha, &xt, ab.beta, &yt)
                : xhal_spmm(dev, m.get(), trans, ab.alpha, &xt, ab.beta, &yt);
  };
  ASSERT_EQ(run_on_device(dev, call), XHAL_OK);
  const auto got = read<double>(yt);
  // Accuracy: the same order in long double; bound (terms + 2) 2^-52 times
  // |alpha| |op(A)| |x| + |beta y|.
  const auto ref =
      spmm_canonical<Long>(to_long(a), trans, ab.alpha, to_long(x), ab.beta, to_long(y0), k);
  auto bound = spmm_canonical<Long>(abs_long(a), trans, std::fabs(ab.alpha), abs_long(x),
                                    std::fabs(ab.beta), abs_long(y0), k);
  const auto len = op_row_lengths(a, trans);
  for (int64_t i = 0; i < out_rows; ++i)
    for (int64_t c = 0; c < k; ++c)
      bound[i * k + c] = bound[i * k + c] * Long(len[i] + 2) * 0x1p-52L + 0x1p-1022L;
  expect_within64("y vs long double", got, ref, bound);
  level.compare("y", got, spmm_canonical<double>(a, trans, ab.alpha, x, ab.beta, y0, k), [&] {
    if (ab.beta == 0.0f) poison(yt.buffer);
    else rewrite(yt, y0);
    EXPECT_EQ(call(), XHAL_OK);
    return read<double>(yt);
  });
}

struct NamedMatrix {
  std::string name;
  Csr a;
};

std::vector<NamedMatrix> multiply_matrices(Rng& rng) {
  return {{"random 700x500 with hubs", random_matrix(700, 500, rng)},
          {"wide 40x1200 (hub rows of 19 chunks)", random_matrix(40, 1200, rng)},
          {"wide 12x5000 (hub rows of 79 chunks)", random_matrix(12, 5000, rng)},
          {"tall 5000x12 (A^T rows of 40-100 chunks)", random_matrix(5000, 12, rng)},
          {"river 3000", river_tree(3000, rng)}};
}

std::string label_of(const std::string& name, xhal_dtype_t idx, xhal_transpose_t t, AlphaBeta ab,
                     int64_t k) {
  return name + ", f64, " + index_name(idx) + ", op " + trans_name(t) + ", alpha " +
         std::to_string(ab.alpha) + ", beta " + std::to_string(ab.beta) + ", k " +
         std::to_string(k);
}

TEST_P(SpmvF64Test, AlphaBetaBothOpsAgainstReferences) {
  LevelTracker level(XHAL_OP_SPMV);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  int variant = 0;
  for (const auto& nm : multiply_matrices(rng)) {
    const Csr64 a = jittered(nm.a, rng);
    for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
      for (const auto ab : kAlphaBeta) {
        const auto idx = (variant++ % 2) ? XHAL_DTYPE_I32 : XHAL_DTYPE_I64;
        check_multiply(dev, a, idx, trans, ab, 1, true, level, rng,
                       label_of(nm.name, idx, trans, ab, 1));
      }
  }
}

TEST_P(SpmmF64Test, BothOpsAgainstReferences) {
  LevelTracker level(XHAL_OP_SPMM);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  int variant = 0;
  for (const auto& nm : multiply_matrices(rng)) {
    const Csr64 a = jittered(nm.a, rng);
    for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
      for (int64_t k : {3, 33}) {
        const auto ab = kAlphaBeta[variant % 2 ? 2 : 1];
        const auto idx = (variant++ % 2) ? XHAL_DTYPE_I32 : XHAL_DTYPE_I64;
        check_multiply(dev, a, idx, trans, ab, k, false, level, rng,
                       label_of(nm.name, idx, trans, ab, k));
      }
  }
}

// op(A) x in long double with the diagonal as the solve sees it (unit: 1);
// absolute: |op(A)| |x| instead.
std::vector<Long> apply_long(const Csr64& a, xhal_transpose_t trans, xhal_diagonal_t diagonal,
                             const std::vector<double>& x, int64_t k, bool absolute) {
  const Csr64 m = trans == XHAL_TRANSPOSE ? transpose(a) : a;
  std::vector<Long> out(m.rows * k, 0.0L);
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t c = 0; c < k; ++c) {
      Long s = 0.0L;
      bool diagonal_seen = false;
      for (int64_t e = m.row_ptr[i]; e < m.row_ptr[i + 1]; ++e) {
        const int64_t j = m.col_idx[e];
        Long v = m.values[e];
        if (j == i) {
          diagonal_seen = true;
          if (diagonal == XHAL_DIAGONAL_UNIT) v = 1.0L;
        }
        const Long t = v * Long(x[j * k + c]);
        s += absolute ? std::fabs(t) : t;
      }
      if (!diagonal_seen && diagonal == XHAL_DIAGONAL_UNIT) {
        const Long t = Long(x[i * k + c]);
        s += absolute ? std::fabs(t) : t;
      }
      out[i * k + c] = s;
    }
  return out;
}

// Section 5's residual check in binary64: |op(A) x - b| <= 1e-13 (|op(A)||x|
// + |b|) (the f32 bound 1e-5 scaled by the ratio of the units, 2^-29).
void expect_residual64(const std::string& what, const Csr64& a, xhal_transpose_t trans,
                       xhal_diagonal_t diagonal, const std::vector<double>& x,
                       const std::vector<double>& b, int64_t k) {
  const auto ax = apply_long(a, trans, diagonal, x, k, false);
  const auto mag = apply_long(a, trans, diagonal, x, k, true);
  int reported = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    const Long r = std::fabs(ax[i] - Long(b[i]));
    const Long bound = 1e-13L * (mag[i] + std::fabs(Long(b[i])));
    if (!(r <= bound) && reported++ < 5)
      ADD_FAILURE() << what << ": residual [" << i << "] " << double(r) << " > " << double(bound)
                    << " (x = " << describe(x[i]) << ")";
  }
}

struct SolveCase {
  xhal_transpose_t trans;
  xhal_triangle_t triangle;
  xhal_diagonal_t diagonal;
  int64_t k;
  xhal_dtype_t index_dtype;
};

std::string label_of(const std::string& name, const SolveCase& c) {
  return name + ", f64: op " + trans_name(c.trans) + ", " + tri_name(c.triangle) + ", " +
         diag_name(c.diagonal) + " diagonal, k " + std::to_string(c.k) + ", " +
         index_name(c.index_dtype);
}

// Triangular test matrices of one triangle, with well-conditioned values.
std::vector<NamedMatrix> triangular_matrices(Rng& rng, xhal_triangle_t triangle) {
  std::vector<NamedMatrix> out;
  out.push_back({"random triangular 600", random_triangular(600, rng, triangle)});
  if (triangle == XHAL_TRIANGLE_LOWER) {
    out.push_back({"river 2000", river_tree(2000, rng)});
    out.push_back({"confluence 300", confluence(300, rng)});
  } else {
    out.push_back({"river 2000 transposed", transpose(river_tree(2000, rng))});
  }
  return out;
}

std::vector<SolveCase> solve_cases(xhal_triangle_t triangle) {
  std::vector<SolveCase> cases;
  int variant = 0;
  for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
    for (auto diagonal : {XHAL_DIAGONAL_STORED, XHAL_DIAGONAL_UNIT})
      for (int64_t k : {1, 3}) {
        const auto idx = (variant++ % 2) ? XHAL_DTYPE_I32 : XHAL_DTYPE_I64;
        cases.push_back({trans, triangle, diagonal, k, idx});
      }
  return cases;
}

TEST_P(CsrSolveF64Test, EveryVariantAgainstReferences) {
  LevelTracker level(XHAL_OP_CSR_SOLVE);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  for (auto triangle : {XHAL_TRIANGLE_LOWER, XHAL_TRIANGLE_UPPER})
    for (const auto& nm : triangular_matrices(rng, triangle)) {
      const Csr64 a = jittered(nm.a, rng);
      for (const SolveCase& c : solve_cases(triangle)) {
        SCOPED_TRACE(label_of(nm.name, c));
        BufferGuard g;
        Matrix m;
        ASSERT_EQ(create64(dev, a, c.index_dtype, m), XHAL_OK) << xhal_last_error();
        const auto b = random64(rng, a.rows * c.k);
        const auto shape = dense_shape(a.rows, c.k, c.k == 1);
        const xhal_tensor_t bt = dense(dev, g, b, shape);
        const xhal_tensor_t xt = poisoned<double>(dev, g, a.rows * c.k, shape);
        auto call = [&] {
          return xhal_csr_solve(dev, m.get(), c.trans, c.triangle, c.diagonal, &bt, &xt);
        };
        ASSERT_EQ(run_on_device(dev, call), XHAL_OK);
        const auto x = read<double>(xt);
        EXPECT_TRUE(same_bits(read<double>(bt), b)) << "b was modified";
        expect_residual64("x", a, c.trans, c.diagonal, x, b, c.k);
        level.compare("x", x, solve_canonical<double>(a, c.trans, c.triangle, c.diagonal, b, c.k),
                      [&] {
                        poison(xt.buffer);
                        EXPECT_EQ(call(), XHAL_OK);
                        return read<double>(xt);
                      });
      }
    }
}

TEST_P(CsrSolveBackwardF64Test, GbAndGaAgainstReferences) {
  LevelTracker level(XHAL_OP_CSR_SOLVE_BACKWARD);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  for (auto triangle : {XHAL_TRIANGLE_LOWER, XHAL_TRIANGLE_UPPER})
    for (const auto& nm : triangular_matrices(rng, triangle)) {
      const Csr64 a = jittered(nm.a, rng);
      for (const SolveCase& c : solve_cases(triangle)) {
        SCOPED_TRACE(label_of(nm.name, c));
        BufferGuard g;
        Matrix m;
        ASSERT_EQ(create64(dev, a, c.index_dtype, m), XHAL_OK) << xhal_last_error();
        const int64_t n = a.rows;
        const auto x = random64(rng, n * c.k);
        const auto dx = random64(rng, n * c.k);
        const auto shape = dense_shape(n, c.k, c.k == 1);
        const xhal_tensor_t xt = dense(dev, g, x, shape), dxt = dense(dev, g, dx, shape);
        const xhal_tensor_t gbt = poisoned<double>(dev, g, n * c.k, shape);
        const xhal_tensor_t gat = poisoned<double>(dev, g, a.nnz(), {a.nnz()});
        auto call = [&] {
          return xhal_csr_solve_backward(dev, m.get(), c.trans, c.triangle, c.diagonal, &xt, &dxt,
                                         &gbt, &gat);
        };
        ASSERT_EQ(run_on_device(dev, call), XHAL_OK);
        const auto gb = read<double>(gbt), ga = read<double>(gat);
        // gb solves op(A)^T gb = dx.
        expect_residual64("gb", a, flip(c.trans), c.diagonal, gb, dx, c.k);
        // ga from the device's gb in long double: (k + 1) 2^-52 sum |gb x|.
        const auto canonical =
            solve_backward_canonical<double>(a, c.trans, c.triangle, c.diagonal, x, dx, c.k);
        std::vector<Long> ga_ref(a.nnz()), ga_bound(a.nnz());
        for (int64_t r = 0; r < a.rows; ++r)
          for (int64_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) {
            const int64_t col = a.col_idx[e];
            const int64_t i = c.trans == XHAL_TRANSPOSE_NONE ? r : col;
            const int64_t j = c.trans == XHAL_TRANSPOSE_NONE ? col : r;
            Long s = 0.0L, mag = 0.0L;
            if (!(c.diagonal == XHAL_DIAGONAL_UNIT && col == r))
              for (int64_t q = 0; q < c.k; ++q) {
                const Long t = Long(gb[i * c.k + q]) * Long(x[j * c.k + q]);
                s += t;
                mag += std::fabs(t);
              }
            ga_ref[e] = -s;
            ga_bound[e] = mag * Long(c.k + 1) * 0x1p-52L + 0x1p-1022L;
          }
        expect_within64("ga vs long double", ga, ga_ref, ga_bound);
        auto rerun = [&] {
          poison(gbt.buffer);
          poison(gat.buffer);
          EXPECT_EQ(call(), XHAL_OK);
        };
        level.compare("gb", gb, canonical.gb, [&] {
          rerun();
          return read<double>(gbt);
        });
        level.compare("ga", ga, canonical.ga, [&] {
          rerun();
          return read<double>(gat);
        });
      }
    }
}

TEST_P(SpgemmF64Test, ValuesAgainstReferences) {
  LevelTracker level(XHAL_OP_SPGEMM);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr64 a = jittered(random_matrix(300, 200, rng), rng);
  const Csr64 b = jittered(random_matrix(200, 250, rng), rng);
  Matrix ma, mb, mc;
  ASSERT_EQ(create64(dev, a, XHAL_DTYPE_I32, ma), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(create64(dev, b, XHAL_DTYPE_I64, mb), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_spgemm(dev, ma.get(), mb.get(), mc.out()), XHAL_OK) << xhal_last_error();
  xhal_dtype_t values_dtype = XHAL_DTYPE_INVALID;
  ASSERT_EQ(xhal_csr_get_values_dtype(mc.get(), &values_dtype), XHAL_OK);
  EXPECT_EQ(values_dtype, XHAL_DTYPE_F64);
  const Csr64 want = spgemm_canonical<double>(a, b);
  int64_t rows = 0, cols = 0, nnz = 0;
  ASSERT_EQ(xhal_csr_get_shape(mc.get(), &rows, &cols, &nnz), XHAL_OK);
  ASSERT_EQ(nnz, want.nnz());
  std::vector<double> got(static_cast<size_t>(nnz));
  ASSERT_EQ(xhal_csr_read_values(mc.get(), XHAL_DTYPE_F64, got.data()), XHAL_OK)
      << xhal_last_error();
  // Accuracy: the same order in long double; bound (terms + 1) 2^-52 sum |A B|.
  const auto ref = spgemm_canonical<Long>(to_long(a), to_long(b));
  const auto mag = spgemm_canonical<Long>(abs_long(a), abs_long(b));
  std::vector<Long> bound(mag.values.size());
  for (int64_t i = 0; i < want.rows; ++i)
    for (int64_t e = want.row_ptr[i]; e < want.row_ptr[i + 1]; ++e)
      bound[e] = mag.values[e] * Long(a.row_ptr[i + 1] - a.row_ptr[i] + 1) * 0x1p-52L;
  expect_within64("C vs long double", got, ref.values, bound);
  level.compare("C values", got, want.values, [&] {
    Matrix again;
    EXPECT_EQ(xhal_spgemm(dev, ma.get(), mb.get(), again.out()), XHAL_OK);
    std::vector<double> v(static_cast<size_t>(nnz));
    EXPECT_EQ(xhal_csr_read_values(again.get(), XHAL_DTYPE_F64, v.data()), XHAL_OK);
    return v;
  });
}

// The f64 matrix API: value dtype, typed set/read, and what a mixed call
// gets (docs/semantics.md 7.4). Runs where f64 matrices exist.
TEST_P(SpmvF64Test, TypedValuesAndMixedDtypesAreRefused) {
  Rng rng(test_seed());
  const Csr64 a = jittered(random_matrix(50, 40, rng), rng);
  Matrix m;
  ASSERT_EQ(create64(dev, a, XHAL_DTYPE_I64, m), XHAL_OK) << xhal_last_error();
  std::vector<double> back(a.values.size());
  ASSERT_EQ(xhal_csr_read_values(m.get(), XHAL_DTYPE_F64, back.data()), XHAL_OK);
  EXPECT_TRUE(same_bits(back, a.values));
  std::vector<double> fresh = random64(rng, a.values.size());
  ASSERT_EQ(xhal_csr_set_values_typed(m.get(), XHAL_DTYPE_F64, fresh.data()), XHAL_OK);
  ASSERT_EQ(xhal_csr_read_values(m.get(), XHAL_DTYPE_F64, back.data()), XHAL_OK);
  EXPECT_TRUE(same_bits(back, fresh));

  // f32 entry points on an f64 matrix: refused, values unchanged.
  std::vector<float> f32(a.values.size(), 1.0f);
  EXPECT_EQ(xhal_csr_set_values(m.get(), f32.data()), XHAL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(xhal_last_error()).find("values"), std::string::npos) << xhal_last_error();
  EXPECT_EQ(xhal_csr_set_values_typed(m.get(), XHAL_DTYPE_F32, f32.data()), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_csr_read(m.get(), nullptr, nullptr, f32.data()), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_csr_read_values(m.get(), XHAL_DTYPE_F32, f32.data()), XHAL_INVALID_ARGUMENT);
  ASSERT_EQ(xhal_csr_read_values(m.get(), XHAL_DTYPE_F64, back.data()), XHAL_OK);
  EXPECT_TRUE(same_bits(back, fresh));

  // An f32 operand of an f64 matrix: INVALID_ARGUMENT naming it, y untouched.
  BufferGuard g;
  const xhal_tensor_t x32 = dense(dev, g, random_values(rng, a.cols), {a.cols});
  const xhal_tensor_t y64 = poisoned<double>(dev, g, a.rows, {a.rows});
  EXPECT_EQ(xhal_spmv(dev, m.get(), XHAL_TRANSPOSE_NONE, 1.0f, &x32, 0.0f, &y64),
            XHAL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(xhal_last_error()).find("'x'"), std::string::npos) << xhal_last_error();
  for (double v : read<double>(y64)) EXPECT_TRUE(is_poison(v)) << "y was written";

  // SpGEMM of an f64 and an f32 matrix: INVALID_ARGUMENT naming b.
  Matrix m32, c;
  const Csr b32 = random_matrix(40, 30, rng);
  ASSERT_EQ(create_from_host(dev, b32, XHAL_DTYPE_I64, m32), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(xhal_spgemm(dev, m.get(), m32.get(), c.out()), XHAL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(xhal_last_error()).find("'b'"), std::string::npos) << xhal_last_error();
  EXPECT_EQ(c.get(), nullptr);
}

// The desc's values_dtype at creation, on every device with sparse ops: a
// dtype other than f32/f64/f16/bf16, two host value arrays, f32 values with
// values_dtype f64 are INVALID_ARGUMENT; f64 is XHAL_UNSUPPORTED on a device
// that claims f64 for no sparse op; a desc whose struct_size ends before the
// field is an f32 desc.
class CsrF64DescTest : public SparseOpTest<XHAL_OP_SPMV> {};

TEST_P(CsrF64DescTest, ValuesDtypeRulesAtCreate) {
  Rng rng(test_seed());
  const Csr a = random_matrix(30, 20, rng);
  const auto v64 = jittered(a.values, rng);
  HostDesc h(a, XHAL_DTYPE_I64, false);
  Matrix m;
  auto refused = [&](xhal_status_t want, const char* needle) {
    EXPECT_EQ(xhal_csr_create(dev, &h.desc, m.out()), want) << xhal_last_error();
    EXPECT_NE(std::string(xhal_last_error()).find(needle), std::string::npos) << xhal_last_error();
    EXPECT_EQ(m.get(), nullptr);
  };
  h.desc.values_dtype = XHAL_DTYPE_I32;
  h.desc.values_data = v64.data();
  refused(XHAL_INVALID_ARGUMENT, "values_dtype");
  h.desc.values_dtype = XHAL_DTYPE_F64;
  h.desc.values = h.values.data();
  refused(XHAL_INVALID_ARGUMENT, "values_data");
  h.desc.values_data = nullptr;
  refused(XHAL_INVALID_ARGUMENT, "values_dtype is f64");

  h.desc.values = nullptr;
  h.desc.values_data = v64.data();
  bool has_f64 = false;
  for (xhal_op_t op :
       {XHAL_OP_SPMV, XHAL_OP_SPMM, XHAL_OP_CSR_SOLVE, XHAL_OP_CSR_SOLVE_BACKWARD, XHAL_OP_SPGEMM})
    has_f64 = has_f64 || device_supports(dev, op, XHAL_DTYPE_F64);
  if (has_f64) {
    ASSERT_EQ(xhal_csr_create(dev, &h.desc, m.out()), XHAL_OK) << xhal_last_error();
    std::vector<double> back(v64.size());
    ASSERT_EQ(xhal_csr_read_values(m.get(), XHAL_DTYPE_F64, back.data()), XHAL_OK);
    EXPECT_TRUE(same_bits(back, v64));
  } else {
    refused(XHAL_UNSUPPORTED, "f64");
  }

  // A caller built before the field: values_dtype and values_data are past
  // its struct_size, so whatever lies there is not read.
  h.desc.struct_size = offsetof(xhal_csr_desc_t, values_dtype);
  h.desc.values = h.values.data();
  ASSERT_EQ(xhal_csr_create(dev, &h.desc, m.out()), XHAL_OK) << xhal_last_error();
  xhal_dtype_t values_dtype = XHAL_DTYPE_INVALID;
  ASSERT_EQ(xhal_csr_get_values_dtype(m.get(), &values_dtype), XHAL_OK);
  EXPECT_EQ(values_dtype, XHAL_DTYPE_F32);
  std::vector<float> back(a.values.size());
  ASSERT_EQ(xhal_csr_read(m.get(), nullptr, nullptr, back.data()), XHAL_OK);
  EXPECT_TRUE(same_bits(back, a.values));
}

XHAL_CONF_INSTANTIATE(CsrF64DescTest);
XHAL_CONF_INSTANTIATE(SpmvF64Test);
XHAL_CONF_INSTANTIATE(SpmmF64Test);
XHAL_CONF_INSTANTIATE(CsrSolveF64Test);
XHAL_CONF_INSTANTIATE(CsrSolveBackwardF64Test);
XHAL_CONF_INSTANTIATE(SpgemmF64Test);

}  // namespace
}  // namespace xhal::conf::sparse
