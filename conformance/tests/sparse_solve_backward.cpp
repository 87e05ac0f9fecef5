// Triangular solve backward conformance: gb = solve(op(A)^T, dx) and ga on
// A's pattern, against central finite differences of the float64 solve
// (small sizes), against the canonical reference bit for bit, within the
// float64 bounds, with k > 32 right-hand sides (ga's segsum spans chunks),
// without ga, and on a ~200,000-reach river.
#include "../reference/sparse_device_helpers.h"

namespace xhal::conf::sparse {
namespace {

class CsrSolveBackwardTest : public SparseOpTest<XHAL_OP_CSR_SOLVE_BACKWARD> {};

struct Grads {
  std::vector<float> gb, ga;
};

// Runs the backward on the device (ga omitted when with_ga is false) and
// checks gb's residual, ga against float64 from the device's gb, and both
// against the canonical bits.
Grads check_backward(xhal_device_t dev, const Csr& a, xhal_dtype_t idx, xhal_transpose_t trans,
                     xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                     const std::vector<float>& x, const std::vector<float>& dx, int64_t k,
                     bool as_vector, bool with_ga, LevelTracker& level) {
  Grads out;
  BufferGuard g;
  Matrix m;
  EXPECT_EQ(create_from_host(dev, a, idx, m), XHAL_OK) << xhal_last_error();
  if (!m.get()) return out;
  const int64_t n = a.rows;
  const auto shape = dense_shape(n, k, as_vector);
  const xhal_tensor_t xt = dense(dev, g, x, shape), dxt = dense(dev, g, dx, shape);
  const xhal_tensor_t gbt = poisoned(dev, g, n * k, shape);
  const xhal_tensor_t gat = poisoned(dev, g, std::max<int64_t>(a.nnz(), 1), {a.nnz()});
  auto call = [&] {
    return xhal_csr_solve_backward(dev, m.get(), trans, triangle, diagonal, &xt, &dxt, &gbt,
                                   with_ga ? &gat : nullptr);
  };
  if (run_on_device(dev, call) != XHAL_OK) return out;
  out.gb = read(gbt);
  EXPECT_TRUE(same_bits(read(xt), x) && same_bits(read(dxt), dx)) << "an input was modified";
  expect_solve_residual("gb", a, flip(trans), diagonal, out.gb, dx, k);
  const auto canonical = solve_backward_canonical(a, trans, triangle, diagonal, x, dx, k);
  level.compare("gb", out.gb, canonical.gb, [&] {
    poison(gbt.buffer);
    EXPECT_EQ(call(), XHAL_OK);
    return read(gbt);
  });
  if (with_ga) {
    out.ga = read(gat);
    std::vector<double> mag;
    const auto ga64 = solve_ga_f64(a, trans, diagonal, to_f64(out.gb), to_f64(x), k, &mag);
    for (auto& v : mag) v *= double(k + 2) * 0x1p-23;
    expect_within("ga vs float64 (from the device's gb)", out.ga, ga64, mag);
    level.compare("ga", out.ga, canonical.ga, [&] {
      poison(gat.buffer);
      EXPECT_EQ(call(), XHAL_OK);
      return read(gat);
    });
  } else {
    // ga omitted: its buffer stays untouched.
    EXPECT_TRUE(is_poison(read(gat)[0])) << "ga was written although NULL was passed";
  }
  return out;
}

// L(A, b) = <dx, x(A, b)> in float64; dL/db = gb and dL/dA = ga.
double loss(const Csr& a, const std::vector<double>& values, xhal_transpose_t trans,
            xhal_triangle_t triangle, xhal_diagonal_t diagonal, const std::vector<double>& b,
            const std::vector<double>& dx, int64_t k) {
  const auto x = solve_f64(a, values, trans, triangle, diagonal, b, k);
  double l = 0;
  for (size_t i = 0; i < x.size(); ++i) l += dx[i] * x[i];
  return l;
}

void expect_near_fd(const std::string& what, const std::vector<float>& got,
                    const std::vector<double>& fd) {
  ASSERT_EQ(got.size(), fd.size()) << what;
  double scale = 0;
  for (double v : fd) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < fd.size(); ++i)
    EXPECT_LE(std::fabs(double(got[i]) - fd[i]), 1e-4 * std::fabs(fd[i]) + 2e-5 * scale)
        << what << "[" << i << "]: device " << describe(got[i]) << ", finite difference " << fd[i];
}

TEST_P(CsrSolveBackwardTest, FiniteDifferencesOfFloat64Solve) {
  LevelTracker level(XHAL_OP_CSR_SOLVE_BACKWARD);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  int variant = 0;
  for (auto triangle : {XHAL_TRIANGLE_LOWER, XHAL_TRIANGLE_UPPER})
    for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
      for (auto diagonal : {XHAL_DIAGONAL_STORED, XHAL_DIAGONAL_UNIT})
        for (int64_t k : {1, 3}) {
          const auto idx = (variant++ % 2) ? XHAL_DTYPE_I32 : XHAL_DTYPE_I64;
          SCOPED_TRACE(std::string("op ") + trans_name(trans) + ", " + tri_name(triangle) + ", " +
                       diag_name(diagonal) + ", k " + std::to_string(k) + ", " + index_name(idx));
          const Csr a = random_triangular(12, rng, triangle, 2.0);
          const int64_t n = a.rows;
          const auto b = random_values(rng, n * k), dx = random_values(rng, n * k);
          // x from the float64 solve, rounded: the point the gradient is taken at.
          const auto x64 = solve_f64(a, trans, triangle, diagonal, to_f64(b), k);
          const std::vector<float> x(x64.begin(), x64.end());
          const Grads got =
              check_backward(dev, a, idx, trans, triangle, diagonal, x, dx, k, k == 1, true, level);
          if (got.gb.empty()) continue;
          const auto vals = to_f64(a.values), dxd = to_f64(dx);
          auto bd = to_f64(b);
          std::vector<double> fd_gb(n * k), fd_ga(a.nnz());
          for (int64_t i = 0; i < n * k; ++i) {
            const double h = 1e-6, keep = bd[i];
            bd[i] = keep + h;
            const double up = loss(a, vals, trans, triangle, diagonal, bd, dxd, k);
            bd[i] = keep - h;
            const double down = loss(a, vals, trans, triangle, diagonal, bd, dxd, k);
            bd[i] = keep;
            fd_gb[i] = (up - down) / (2 * h);
          }
          for (int64_t e = 0; e < a.nnz(); ++e) {
            auto v = vals;
            const double h = 1e-6 * std::max(1.0, std::fabs(vals[e]));
            v[e] = vals[e] + h;
            const double up = loss(a, v, trans, triangle, diagonal, bd, dxd, k);
            v[e] = vals[e] - h;
            const double down = loss(a, v, trans, triangle, diagonal, bd, dxd, k);
            fd_ga[e] = (up - down) / (2 * h);
          }
          expect_near_fd("gb", got.gb, fd_gb);
          expect_near_fd("ga", got.ga, fd_ga);
          if (diagonal == XHAL_DIAGONAL_UNIT)
            for (int64_t r = 0; r < n; ++r)
              for (int64_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e)
                if (a.col_idx[e] == r) {
                  EXPECT_EQ(bits(got.ga[e]), bits(+0.0f)) << "unit diagonal ga[" << e << "]";
                }
        }
}

TEST_P(CsrSolveBackwardTest, EveryVariantBitExactAndBounded) {
  LevelTracker level(XHAL_OP_CSR_SOLVE_BACKWARD);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  int variant = 0;
  for (auto triangle : {XHAL_TRIANGLE_LOWER, XHAL_TRIANGLE_UPPER})
    for (auto diagonal : {XHAL_DIAGONAL_STORED, XHAL_DIAGONAL_UNIT}) {
      const Csr a = random_triangular(400, rng, triangle, 3.0);
      for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
        for (int64_t k : {1, 5, 40}) {
          const auto idx = (variant++ % 2) ? XHAL_DTYPE_I32 : XHAL_DTYPE_I64;
          SCOPED_TRACE(std::string("op ") + trans_name(trans) + ", " + tri_name(triangle) + ", " +
                       diag_name(diagonal) + ", k " + std::to_string(k) + ", " + index_name(idx));
          const auto x = random_values(rng, a.rows * k), dx = random_values(rng, a.rows * k);
          check_backward(dev, a, idx, trans, triangle, diagonal, x, dx, k, k == 1, true, level);
        }
    }
}

TEST_P(CsrSolveBackwardTest, ConfluenceRowsRepeat) {
  LevelTracker level(XHAL_OP_CSR_SOLVE_BACKWARD);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr a = confluence(2000, rng);
  for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE}) {
    SCOPED_TRACE(std::string("op ") + trans_name(trans));
    const auto x = random_values(rng, a.rows * 2), dx = random_values(rng, a.rows * 2);
    check_backward(dev, a, XHAL_DTYPE_I32, trans, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, x, dx,
                   2, false, true, level);
  }
}

TEST_P(CsrSolveBackwardTest, WithoutGa) {
  LevelTracker level(XHAL_OP_CSR_SOLVE_BACKWARD);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr a = random_triangular(200, rng, XHAL_TRIANGLE_UPPER, 3.0);
  const auto x = random_values(rng, a.rows), dx = random_values(rng, a.rows);
  check_backward(dev, a, XHAL_DTYPE_I64, XHAL_TRANSPOSE, XHAL_TRIANGLE_UPPER, XHAL_DIAGONAL_STORED,
                 x, dx, 1, true, false, level);
}

// gb is a solve with op(A)^T: on few_term_columns (see CsrSolveTest.
// TransposedColumnsOfFewTerms) with op = A it walks A^T's short rows.
TEST_P(CsrSolveBackwardTest, ColumnsOfFewTerms) {
  LevelTracker level(XHAL_OP_CSR_SOLVE_BACKWARD);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr a = few_term_columns(6000, rng);
  for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
    for (auto diagonal : {XHAL_DIAGONAL_STORED, XHAL_DIAGONAL_UNIT}) {
      SCOPED_TRACE(std::string("op ") + trans_name(trans) + ", " + diag_name(diagonal));
      const auto x = random_values(rng, a.rows), dx = random_values(rng, a.rows);
      check_backward(dev, a, XHAL_DTYPE_I32, trans, XHAL_TRIANGLE_LOWER, diagonal, x, dx, 1, true,
                     true, level);
    }
}

TEST_P(CsrSolveBackwardTest, RiverTree200000Reaches) {
  LevelTracker level(XHAL_OP_CSR_SOLVE_BACKWARD);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr a = river_tree(200000, rng);
  for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE}) {
    SCOPED_TRACE(std::string("op ") + trans_name(trans));
    // x from an actual forward solve, as training would pass it.
    const auto b = random_values(rng, a.rows), dx = random_values(rng, a.rows);
    const auto x = solve_canonical(a, trans, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, b, 1);
    check_backward(dev, a, XHAL_DTYPE_I64, trans, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, x, dx,
                   1, true, true, level);
  }
}

XHAL_CONF_INSTANTIATE(CsrSolveBackwardTest);

}  // namespace
}  // namespace xhal::conf::sparse
