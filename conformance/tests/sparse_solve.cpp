// Triangular solve conformance: lower/upper, unit/stored diagonal, op = A
// and A^T, one and k right-hand sides, in place (x == b), chains, confluences,
// a 100,000-reach chain and a ~200,000-reach river tree; solve then
// multiply returns b.
#include "../reference/sparse_device_helpers.h"

namespace xhal::conf::sparse {
namespace {

class CsrSolveTest : public SparseOpTest<XHAL_OP_CSR_SOLVE> {};

struct SolveCase {
  xhal_transpose_t trans;
  xhal_triangle_t triangle;
  xhal_diagonal_t diagonal;
  int64_t k;
  bool as_vector;  // b and x of shape [n] (k == 1)
  bool in_place;   // x is b
  xhal_dtype_t index_dtype;
  bool signed_zeros = false;  // 1% of b is -0
};

std::string label_of(const std::string& name, const SolveCase& c) {
  return name + ": op " + trans_name(c.trans) + ", " + tri_name(c.triangle) + ", " +
         diag_name(c.diagonal) + " diagonal, k " + std::to_string(c.k) +
         (c.as_vector ? " (vector)" : "") + (c.in_place ? ", in place" : "") + ", " +
         index_name(c.index_dtype);
}

// Solves on the device and checks the residual bound and the canonical bits.
void check_solve(xhal_device_t dev, const Csr& a, const SolveCase& c, LevelTracker& level, Rng& rng,
                 const std::string& name) {
  SCOPED_TRACE(label_of(name, c));
  BufferGuard g;
  Matrix m;
  ASSERT_EQ(create_from_host(dev, a, c.index_dtype, m), XHAL_OK) << xhal_last_error();
  const int64_t n = a.rows;
  auto b = random_values(rng, n * c.k);
  if (c.signed_zeros)
    for (auto& v : b)
      if (rng.chance(0.01)) v = -0.0f;
  const auto shape = dense_shape(n, c.k, c.as_vector);
  const xhal_tensor_t bt = dense(dev, g, b, shape);
  const xhal_tensor_t xt = c.in_place ? bt : poisoned(dev, g, n * c.k, shape);
  auto call = [&] {
    return xhal_csr_solve(dev, m.get(), c.trans, c.triangle, c.diagonal, &bt, &xt);
  };
  ASSERT_EQ(run_on_device(dev, call), XHAL_OK);
  const auto x = read(xt);
  if (!c.in_place) {
    EXPECT_TRUE(same_bits(read(bt), b)) << "b was modified";
  }
  expect_solve_residual("x", a, c.trans, c.diagonal, x, b, c.k);
  level.compare("x", x, solve_canonical(a, c.trans, c.triangle, c.diagonal, b, c.k), [&] {
    rewrite(bt, b);
    if (!c.in_place) poison(xt.buffer);
    EXPECT_EQ(call(), XHAL_OK);
    return read(xt);
  });
}

TEST_P(CsrSolveTest, EveryVariantAgainstReferences) {
  LevelTracker level(XHAL_OP_CSR_SOLVE);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  int variant = 0;
  for (auto triangle : {XHAL_TRIANGLE_LOWER, XHAL_TRIANGLE_UPPER})
    for (auto diagonal : {XHAL_DIAGONAL_STORED, XHAL_DIAGONAL_UNIT}) {
      // A unit solve ignores a stored diagonal and needs none: try both.
      for (bool with_diag : {true, false}) {
        if (!with_diag && diagonal == XHAL_DIAGONAL_STORED) continue;
        const Csr a = random_triangular(300, rng, triangle, 3.0, with_diag);
        for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
          for (auto [k, as_vector] :
               {std::pair<int64_t, bool>{1, true}, {1, false}, {4, false}, {40, false}})
            for (bool in_place : {false, true}) {
              const auto idx = (variant++ % 2) ? XHAL_DTYPE_I32 : XHAL_DTYPE_I64;
              check_solve(
                  dev, a, {trans, triangle, diagonal, k, as_vector, in_place, idx}, level, rng,
                  with_diag ? "random triangular 300" : "random triangular 300 without diagonal");
            }
      }
    }
}

TEST_P(CsrSolveTest, ChainsAndConfluences) {
  LevelTracker level(XHAL_OP_CSR_SOLVE);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr shapes[] = {chain(1000, rng), confluence(1000, rng)};
  const char* names[] = {"chain 1000", "confluence 1000"};
  for (int s = 0; s < 2; ++s)
    for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
      for (auto diagonal : {XHAL_DIAGONAL_STORED, XHAL_DIAGONAL_UNIT})
        check_solve(dev, shapes[s],
                    {trans, XHAL_TRIANGLE_LOWER, diagonal, 3, false, false, XHAL_DTYPE_I32}, level,
                    rng, names[s]);
}

TEST_P(CsrSolveTest, Chain100000Reaches) {
  LevelTracker level(XHAL_OP_CSR_SOLVE);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr a = chain(100000, rng);
  for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
    check_solve(dev, a,
                {trans, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, 1, true, false, XHAL_DTYPE_I32},
                level, rng, "chain 100000");
}

TEST_P(CsrSolveTest, RiverTree200000Reaches) {
  LevelTracker level(XHAL_OP_CSR_SOLVE);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr a = river_tree(200000, rng);
  const int64_t levels = dependency_levels(a);
  EXPECT_GE(levels, 1000) << "the generated river should be thousands of levels deep";
  std::printf("[ sparse   ] river tree: 200000 reaches, %lld levels\n", (long long)levels);
  for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
    for (auto diagonal : {XHAL_DIAGONAL_STORED, XHAL_DIAGONAL_UNIT})
      check_solve(dev, a, {trans, XHAL_TRIANGLE_LOWER, diagonal, 2, false, false, XHAL_DTYPE_I64},
                  level, rng, "river 200000");
}

// Columns of few terms (few_term_columns): a backend may add a column of at
// most two terms in any order, but not one of three or more. One vector
// right-hand side (the shape a backend is most likely to special-case), b
// with -0 entries; the small matrix keeps a CPU backend on one thread, the
// large one lets it use several.
TEST_P(CsrSolveTest, TransposedColumnsOfFewTerms) {
  LevelTracker level(XHAL_OP_CSR_SOLVE);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  for (int64_t n : {6000, 60000}) {
    const Csr lower = few_term_columns(n, rng);
    const Csr upper = transpose(lower);
    for (auto triangle : {XHAL_TRIANGLE_LOWER, XHAL_TRIANGLE_UPPER})
      for (auto trans : {XHAL_TRANSPOSE, XHAL_TRANSPOSE_NONE})
        for (auto diagonal : {XHAL_DIAGONAL_STORED, XHAL_DIAGONAL_UNIT})
          for (bool in_place : {false, true})
            check_solve(dev, triangle == XHAL_TRIANGLE_LOWER ? lower : upper,
                        {trans, triangle, diagonal, 1, true, in_place, XHAL_DTYPE_I32, true}, level,
                        rng, "few-term columns " + std::to_string(n));
  }
}

// Solve op(A) x = b on the device, multiply back with spmv on the device:
// op(A) x returns b within the solve's residual bound plus the spmv's.
TEST_P(CsrSolveTest, SolveThenMultiplyReturnsB) {
  XHAL_CONF_REQUIRE_ALSO(XHAL_OP_SPMV);
  LevelTracker level(XHAL_OP_CSR_SOLVE);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  for (auto triangle : {XHAL_TRIANGLE_LOWER, XHAL_TRIANGLE_UPPER})
    for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
      for (auto diagonal : {XHAL_DIAGONAL_STORED, XHAL_DIAGONAL_UNIT}) {
        SCOPED_TRACE(std::string(tri_name(triangle)) + ", op " + trans_name(trans) + ", " +
                     diag_name(diagonal));
        // Unit: no stored diagonal, so op(A) x + x is the product.
        const bool unit = diagonal == XHAL_DIAGONAL_UNIT;
        const Csr a = random_triangular(500, rng, triangle, 4.0, !unit);
        const int64_t n = a.rows;
        BufferGuard g;
        Matrix m;
        ASSERT_EQ(create_from_host(dev, a, XHAL_DTYPE_I64, m), XHAL_OK) << xhal_last_error();
        const auto b = random_values(rng, n);
        const xhal_tensor_t bt = dense(dev, g, b, {n});
        const xhal_tensor_t xt = poisoned(dev, g, n, {n});
        const xhal_tensor_t yt = poisoned(dev, g, n, {n});
        ASSERT_EQ(
            run_on_device(
                dev,
                [&] { return xhal_csr_solve(dev, m.get(), trans, triangle, diagonal, &bt, &xt); }),
            XHAL_OK);
        if (unit) {
          ASSERT_EQ(xhal_buffer_copy(xt.buffer, 0, yt.buffer, 0, n * sizeof(float)), XHAL_OK);
        }
        ASSERT_EQ(
            run_on_device(
                dev,
                [&] { return xhal_spmv(dev, m.get(), trans, 1.0f, &xt, unit ? 1.0f : 0.0f, &yt); }),
            XHAL_OK);
        const auto x = read(xt), y = read(yt);
        const auto mag = triangular_apply_f64(a, trans, diagonal, to_f64(x), 1, true);
        const auto spmv_bound = spmm_bound(a, trans, 1.0f, x, unit ? 1.0f : 0.0f, x, 1);
        for (int64_t i = 0; i < n; ++i) {
          const double bound = 1e-5 * (mag[i] + std::fabs(double(b[i]))) + spmv_bound[i];
          ASSERT_LE(std::fabs(double(y[i]) - double(b[i])), bound)
              << "row " << i << ": op(A) x = " << describe(y[i]) << ", b = " << describe(b[i]);
        }
      }
}

XHAL_CONF_INSTANTIATE(CsrSolveTest);

}  // namespace
}  // namespace xhal::conf::sparse
