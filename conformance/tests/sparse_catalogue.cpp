// Bad-input catalogue of the sparse API: every malformed pattern, missing or
// zero diagonal, wrong triangle, wrong shape, wrong dtype, aliasing output
// and null handle gets its specified status (docs/semantics.md section 4),
// a message naming the argument (the first offending row for a pattern),
// and writes nothing: every buffer involved is byte-identical afterwards.
//
// Mutation checks. Each bug was planted, the sparse tests run on cpu
// (--gtest_filter='*Sparse*'), the failing tests noted, the bug undone.
// "bits": fails with --require-bit-exact; without it the op's
// level drops to "accurate" in the report (checked for segsum chunk 16).
//  Canonical / float64 references (reference/sparse_reference.cpp):
//   segsum chunk 16 instead of 32           bits: Spmv, Spmm, Csr*, Solve, SolveBackward,
//                                           Spgemm usable
//   segsum without chunks                   bits: same set
//   tree_sum as a sequential sum            bits: Spmv, Spmm, Solve, SolveBackward (>= 4 chunks)
//   a CSR row summed in descending column   bits: Spmv, Spmm, Csr*, Spgemm usable
//   alpha * (t + (beta/alpha) * y)          bits: Spmv/Spmm AlphaBeta
//   A^T rows in descending A row            bits: Spmv, Spmm, Solve, SolveBackward (+ FD), Spgemm
//   upper solve in ascending rows           Solve (residual) and SolveBackward (FD) fail outright
//   x = (b - s) * (1 / diag)                bits: Solve*, SolveBackward*, Csr SetValues*
//   unit diagonal divides by the stored one Solve (residual), SolveBackward FD
//   ga = +segsum                            SolveBackward FD, bits
//   unit-diagonal ga by the formula, not +0 SolveBackward FD (exact +0 check), bits
//   ga's (i, j) not swapped for op = A^T    SolveBackward FD, bits
//   spgemm values by segsum, not sequential bits: Spgemm long inner products
//   spgemm drops a cancelled entry          Spgemm CancellationKeepsExplicitZero
//   float64 solve: upper in ascending rows  SolveBackward FD
//   float64 spmm ignores beta * y           Spmv/Spmm AlphaBeta (bound)
//  Device side (a private copy of plugins/cpu, run with --plugin):
//   spmv reads y when beta == 0 (NaN leaks) Spmv, Spmm, Csr*, EmptyRowsGiveSignedZero,
//                                           SolveThenMultiply
//   A^T without the entry permutation       Spmv, Spmm, Adjoint, SolveThenMultiply, Spgemm usable
//   ga's (i, j) not swapped for op = A^T    SolveBackward FD, bits, river
//   unit-diagonal ga by the formula         SolveBackward FD, bits
//   one device-to-host transfer in spmv     every test that runs spmv (counter check)
//  This file: expected statuses changed in a copy of each table
//   (INVALID_STRUCTURE -> SHAPE_MISMATCH, row -> row + 1, ALIASING -> OK,
//   SHAPE_MISMATCH -> INVALID_ARGUMENT, INVALID_ARGUMENT -> UNSUPPORTED):
//   the matching test fails; a case made valid (y [5] -> [6]) fails both
//   its status and "a buffer changed although the call failed".
#include <regex>

#include "../reference/sparse_device_helpers.h"
#include "raw_calls.h"

namespace xhal::conf::sparse {
namespace {

// A device without CSR matrices has no sparse catalogue to run.
class SparseBadInputTest : public DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (HasFatalFailure()) return;
    if (!device_supports(dev, XHAL_OP_SPMV) && !device_supports(dev, XHAL_OP_CSR_SOLVE))
      XHAL_CONF_UNSUPPORTED("the device implements no sparse op");
  }
};

// "row 3" as a word: the first offending row. Row-pointer faults may be
// named by the row_ptr slot instead ("row_ptr[4]").
bool names_row(const std::string& msg, int64_t row, bool row_ptr_slot_ok = false) {
  const std::string r = std::to_string(row);
  if (std::regex_search(msg, std::regex("\\b[Rr]ow " + r + "\\b"))) return true;
  if (!row_ptr_slot_ok) return false;
  return msg.find("row_ptr[" + r + "]") != std::string::npos ||
         msg.find("row_ptr[" + std::to_string(row + 1) + "]") != std::string::npos;
}

// Every byte of every buffer in `guard`, to prove an error wrote nothing.
std::vector<std::vector<uint8_t>> snapshot(const BufferGuard& guard) {
  std::vector<std::vector<uint8_t>> s;
  for (auto b : guard.bufs) {
    uint64_t size = 0;
    EXPECT_EQ(xhal_buffer_size(b, &size), XHAL_OK);
    s.push_back(download_bytes(b, 0, size));
  }
  return s;
}

struct ErrorCase {
  std::string name;
  xhal_status_t expected;
  std::function<xhal_status_t()> call;
  std::string must_mention;  // substring of the message ("" = any non-empty)
};

// Runs each case: status, a message, and every buffer unchanged.
void run_cases(const std::vector<ErrorCase>& cases, const BufferGuard& guard) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto before = snapshot(guard);
    const xhal_status_t st = c.call();
    const std::string msg = st == XHAL_OK ? "" : xhal_last_error();
    EXPECT_EQ(st, c.expected) << "got " << xhal_status_name(st) << " (" << msg << "), want "
                              << xhal_status_name(c.expected);
    if (st != XHAL_OK) {
      EXPECT_FALSE(msg.empty()) << "no message";
      if (!c.must_mention.empty()) {
        EXPECT_NE(msg.find(c.must_mention), std::string::npos)
            << "message '" << msg << "' does not mention '" << c.must_mention << "'";
      }
    }
    EXPECT_TRUE(snapshot(guard) == before) << "a buffer changed although the call failed";
  }
}

// A 6x6 lower-triangular matrix with a full diagonal:
// row 0 {0}, 1 {0,1}, 2 {0,2}, 3 {1,2,3}, 4 {3,4}, 5 {0,4,5}.
Csr base_lower(Rng& rng) {
  Csr a = from_row_lists(6, 6, {{0}, {0, 1}, {0, 2}, {1, 2, 3}, {3, 4}, {0, 4, 5}});
  a.values = dominant_values(a, rng);
  return a;
}

struct BadPattern {
  std::string name;
  int64_t rows, cols;
  std::vector<int64_t> row_ptr, col_idx;
  int64_t nnz;
  int64_t row;  // first offending row
  bool row_ptr_fault;
};

std::vector<BadPattern> bad_patterns() {
  const std::vector<int64_t> rp = {0, 1, 3, 5, 8, 10, 13};
  const std::vector<int64_t> ci = {0, 0, 1, 0, 2, 1, 2, 3, 3, 4, 0, 4, 5};
  std::vector<BadPattern> p;
  // Each case changes the columns of one row of the valid pattern.
  auto with_row = [&](std::string name, int64_t row, std::vector<int64_t> cols) {
    auto c = ci;
    std::copy(cols.begin(), cols.end(), c.begin() + rp[row]);
    p.push_back({std::move(name), 6, 6, rp, c, 13, row, false});
  };
  with_row("unsorted columns in row 3", 3, {2, 1, 3});
  with_row("duplicate column in row 4", 4, {4, 4});
  with_row("column out of range in row 2", 2, {0, 6});
  with_row("negative column in row 5", 5, {-1, 4, 5});
  // Only the row pointers are wrong; every row's columns stay sorted.
  p.push_back(
      {"non-monotone row_ptr at row 1", 3, 10, {0, 4, 2, 6}, {0, 1, 2, 3, 4, 5}, 6, 1, true});
  p.push_back({"row_ptr[0] != 0", 6, 6, {1, 1, 3, 5, 8, 10, 13}, ci, 13, 0, true});
  p.push_back({"row_ptr[rows] < nnz", 6, 6, {0, 1, 3, 5, 8, 10, 12}, ci, 13, 5, true});
  p.push_back({"row_ptr[rows] > nnz", 6, 6, {0, 1, 3, 5, 8, 10, 14}, ci, 13, 5, true});
  return p;
}

TEST_P(SparseBadInputTest, BadPatternsRejectedAtCreate) {
  for (const auto& bp : bad_patterns())
    for (auto idx : {XHAL_DTYPE_I32, XHAL_DTYPE_I64})
      for (bool from_buffers : {false, true}) {
        SCOPED_TRACE(bp.name + ", " + index_name(idx) +
                     (from_buffers ? ", device buffers" : ", host arrays"));
        const auto rp = index_bytes(bp.row_ptr, idx);
        auto ci = index_bytes(bp.col_idx, idx);
        std::vector<float> values(bp.col_idx.size(), 1.5f);
        xhal_csr_desc_t d{};
        d.struct_size = sizeof(d);
        d.rows = bp.rows;
        d.cols = bp.cols;
        d.nnz = bp.nnz;
        d.index_dtype = idx;
        BufferGuard g;
        if (from_buffers) {
          d.row_ptr_buffer = g.add(upload(dev, rp.data(), rp.size()));
          d.col_idx_buffer = g.add(upload(dev, ci.data(), ci.size()));
          d.values_buffer = g.add(upload(dev, values));
        } else {
          d.row_ptr = rp.data();
          d.col_idx = ci.data();
          d.values = values.data();
        }
        xhal_csr_t m = nullptr;
        const xhal_status_t st = xhal_csr_create(dev, &d, &m);
        const std::string msg = st == XHAL_OK ? "" : xhal_last_error();
        EXPECT_EQ(st, XHAL_INVALID_STRUCTURE) << xhal_status_name(st) << ": " << msg;
        EXPECT_TRUE(names_row(msg, bp.row, bp.row_ptr_fault))
            << "message '" << msg << "' does not name row " << bp.row;
        EXPECT_EQ(m, nullptr) << "a matrix handle was returned";
        if (m) xhal_csr_release(m);
      }
}

// Descriptor faults other than the pattern: short device buffers
// (XHAL_OUT_OF_RANGE naming the buffer), missing arrays, negative sizes,
// a struct_size too small for the fields.
TEST_P(SparseBadInputTest, BadDescriptorsRejectedAtCreate) {
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr a = base_lower(rng);
  const auto rp = index_bytes(a.row_ptr, XHAL_DTYPE_I64),
             ci = index_bytes(a.col_idx, XHAL_DTYPE_I64);
  BufferGuard g;
  const xhal_buffer_t rp_buf = g.add(upload(dev, rp.data(), rp.size()));
  const xhal_buffer_t ci_buf = g.add(upload(dev, ci.data(), ci.size()));
  const xhal_buffer_t v_buf = g.add(upload(dev, a.values));
  const xhal_buffer_t rp_short = g.add(upload(dev, rp.data(), rp.size() - 8));
  const xhal_buffer_t ci_short = g.add(upload(dev, ci.data(), ci.size() - 8));
  const xhal_buffer_t v_short = g.add(upload(dev, a.values.data(), (a.values.size() - 1) * 4));
  auto desc = [&](xhal_buffer_t r, xhal_buffer_t c, xhal_buffer_t v) {
    xhal_csr_desc_t d{};
    d.struct_size = sizeof(d);
    d.rows = a.rows;
    d.cols = a.cols;
    d.nnz = a.nnz();
    d.index_dtype = XHAL_DTYPE_I64;
    d.row_ptr_buffer = r;
    d.col_idx_buffer = c;
    d.values_buffer = v;
    return d;
  };
  struct Case {
    std::string name;
    xhal_csr_desc_t d;
    xhal_status_t expected;
    std::string mention;
  };
  std::vector<Case> cases = {
      {"row_ptr_buffer one index short", desc(rp_short, ci_buf, v_buf), XHAL_OUT_OF_RANGE,
       "row_ptr"},
      {"col_idx_buffer one index short", desc(rp_buf, ci_short, v_buf), XHAL_OUT_OF_RANGE,
       "col_idx"},
      {"values_buffer one value short", desc(rp_buf, ci_buf, v_short), XHAL_OUT_OF_RANGE, "values"},
      {"no col_idx at all", desc(rp_buf, nullptr, v_buf), XHAL_INVALID_ARGUMENT, "col_idx"},
      {"no row_ptr at all", desc(nullptr, ci_buf, v_buf), XHAL_INVALID_ARGUMENT, "row_ptr"},
  };
  cases.push_back({"negative rows", desc(rp_buf, ci_buf, v_buf), XHAL_INVALID_ARGUMENT, "rows"});
  cases.back().d.rows = -6;
  cases.push_back(
      {"struct_size 0", desc(rp_buf, ci_buf, v_buf), XHAL_INVALID_ARGUMENT, "struct_size"});
  cases.back().d.struct_size = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto before = snapshot(g);
    xhal_csr_t m = nullptr;
    const xhal_status_t st = xhal_csr_create(dev, &c.d, &m);
    const std::string msg = st == XHAL_OK ? "" : xhal_last_error();
    EXPECT_EQ(st, c.expected) << xhal_status_name(st) << ": " << msg;
    EXPECT_NE(msg.find(c.mention), std::string::npos)
        << "message '" << msg << "' does not mention '" << c.mention << "'";
    EXPECT_EQ(m, nullptr);
    if (m) xhal_csr_release(m);
    EXPECT_TRUE(snapshot(g) == before);
  }
}

// Runs solve and backward with a stored diagonal on `a` and expects
// XHAL_INVALID_STRUCTURE naming `row`, with x, gb and ga untouched.
void expect_solve_rejected(xhal_device_t dev, xhal_csr_t m, const Csr& a, xhal_transpose_t trans,
                           xhal_triangle_t triangle, xhal_diagonal_t diagonal, int64_t row,
                           Rng& rng) {
  BufferGuard g;
  const int64_t n = a.rows;
  const xhal_tensor_t bt = dense(dev, g, random_values(rng, n), {n});
  const xhal_tensor_t xt = poisoned(dev, g, n, {n});
  const xhal_tensor_t dxt = dense(dev, g, random_values(rng, n), {n});
  const xhal_tensor_t gbt = poisoned(dev, g, n, {n});
  const xhal_tensor_t gat = poisoned(dev, g, a.nnz(), {a.nnz()});
  for (bool backward : {false, true}) {
    SCOPED_TRACE(backward ? "solve_backward" : "solve");
    const auto before = snapshot(g);
    const xhal_status_t st =
        backward ? xhal_csr_solve_backward(dev, m, trans, triangle, diagonal, &bt, &dxt, &gbt, &gat)
                 : xhal_csr_solve(dev, m, trans, triangle, diagonal, &bt, &xt);
    const std::string msg = st == XHAL_OK ? "" : xhal_last_error();
    EXPECT_EQ(st, XHAL_INVALID_STRUCTURE) << xhal_status_name(st) << ": " << msg;
    EXPECT_TRUE(names_row(msg, row)) << "message '" << msg << "' does not name row " << row;
    EXPECT_TRUE(snapshot(g) == before) << "written although rejected";
  }
}

TEST_P(SparseBadInputTest, SolveStructureRejected) {
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  {
    SCOPED_TRACE("missing diagonal in row 3");
    Csr a = from_row_lists(6, 6, {{0}, {0, 1}, {0, 2}, {1, 2}, {3, 4}, {0, 4, 5}});
    a.values = dominant_values(a, rng);
    Matrix m;
    ASSERT_EQ(create_from_host(dev, a, XHAL_DTYPE_I32, m), XHAL_OK) << xhal_last_error();
    expect_solve_rejected(dev, m.get(), a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                          XHAL_DIAGONAL_STORED, 3, rng);
    expect_solve_rejected(dev, m.get(), a, XHAL_TRANSPOSE, XHAL_TRIANGLE_LOWER,
                          XHAL_DIAGONAL_STORED, 3, rng);
    // A unit diagonal needs none.
    BufferGuard g;
    const xhal_tensor_t bt = dense(dev, g, random_values(rng, 6), {6});
    const xhal_tensor_t xt = poisoned(dev, g, 6, {6});
    EXPECT_EQ(xhal_csr_solve(dev, m.get(), XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                             XHAL_DIAGONAL_UNIT, &bt, &xt),
              XHAL_OK)
        << xhal_last_error();
  }
  {
    SCOPED_TRACE("zero diagonal from host values");
    Csr a = base_lower(rng);
    a.values[9] = 0.0f;  // (4, 4)
    Matrix m;
    ASSERT_EQ(create_from_host(dev, a, XHAL_DTYPE_I64, m), XHAL_OK) << xhal_last_error();
    expect_solve_rejected(dev, m.get(), a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                          XHAL_DIAGONAL_STORED, 4, rng);
    // set_values from the host: -0.0 on row 2 is zero too.
    a.values[9] = 1.25f;
    a.values[4] = -0.0f;  // (2, 2)
    ASSERT_EQ(xhal_csr_set_values(m.get(), a.values.data()), XHAL_OK) << xhal_last_error();
    expect_solve_rejected(dev, m.get(), a, XHAL_TRANSPOSE, XHAL_TRIANGLE_LOWER,
                          XHAL_DIAGONAL_STORED, 2, rng);
    // Fixed values: accepted again.
    a.values[4] = 1.5f;
    ASSERT_EQ(xhal_csr_set_values(m.get(), a.values.data()), XHAL_OK) << xhal_last_error();
    BufferGuard g;
    const xhal_tensor_t bt = dense(dev, g, random_values(rng, 6), {6});
    const xhal_tensor_t xt = poisoned(dev, g, 6, {6});
    EXPECT_EQ(xhal_csr_solve(dev, m.get(), XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                             XHAL_DIAGONAL_STORED, &bt, &xt),
              XHAL_OK)
        << xhal_last_error();
  }
  {
    SCOPED_TRACE("no entries at all: row 0 lacks its diagonal");
    Csr a;
    a.rows = a.cols = 4;
    a.row_ptr.assign(5, 0);
    Matrix m;
    ASSERT_EQ(create_from_host(dev, a, XHAL_DTYPE_I64, m), XHAL_OK) << xhal_last_error();
    expect_solve_rejected(dev, m.get(), a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_UPPER,
                          XHAL_DIAGONAL_STORED, 0, rng);
    // Unit diagonal: x = b exactly.
    BufferGuard g;
    const auto b = random_values(rng, 4);
    const xhal_tensor_t bt = dense(dev, g, b, {4});
    const xhal_tensor_t xt = poisoned(dev, g, 4, {4});
    EXPECT_EQ(xhal_csr_solve(dev, m.get(), XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_UPPER,
                             XHAL_DIAGONAL_UNIT, &bt, &xt),
              XHAL_OK)
        << xhal_last_error();
    EXPECT_TRUE(same_bits(read(xt), b));
  }
  {
    SCOPED_TRACE("not triangular");
    Csr a = from_row_lists(6, 6, {{0}, {0, 1, 3}, {0, 2}, {1, 2, 3}, {3, 4}, {0, 4, 5}});
    a.values = dominant_values(a, rng);
    Matrix m;
    ASSERT_EQ(create_from_host(dev, a, XHAL_DTYPE_I32, m), XHAL_OK) << xhal_last_error();
    expect_solve_rejected(dev, m.get(), a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                          XHAL_DIAGONAL_STORED, 1, rng);
    expect_solve_rejected(dev, m.get(), a, XHAL_TRANSPOSE, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_UNIT,
                          1, rng);
    // The lower base asked to be upper: row 1 holds (1, 0).
    const Csr lower = base_lower(rng);
    Matrix ml;
    ASSERT_EQ(create_from_host(dev, lower, XHAL_DTYPE_I64, ml), XHAL_OK) << xhal_last_error();
    expect_solve_rejected(dev, ml.get(), lower, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_UPPER,
                          XHAL_DIAGONAL_STORED, 1, rng);
    expect_solve_rejected(dev, ml.get(), lower, XHAL_TRANSPOSE, XHAL_TRIANGLE_UPPER,
                          XHAL_DIAGONAL_UNIT, 1, rng);
  }
}

TEST_P(SparseBadInputTest, WrongShapes) {
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr rect = random_matrix(6, 4, rng);  // spmv / spmm
  const Csr tri = base_lower(rng);            // solve
  Matrix mr, mt;
  ASSERT_EQ(create_from_host(dev, rect, XHAL_DTYPE_I32, mr), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(create_from_host(dev, tri, XHAL_DTYPE_I64, mt), XHAL_OK) << xhal_last_error();
  BufferGuard g;
  auto in = [&](std::vector<int64_t> shape) {
    int64_t n = 1;
    for (auto s : shape) n *= s;
    return dense(dev, g, random_values(rng, n), std::move(shape));
  };
  auto out = [&](std::vector<int64_t> shape) {
    int64_t n = 1;
    for (auto s : shape) n *= s;
    return poisoned(dev, g, n, std::move(shape));
  };
  const auto x4 = in({4}), x5 = in({5}), x6 = in({6}), x41 = in({4, 1}), x43 = in({4, 3}),
             x63 = in({6, 3}), b7 = in({7}), b62 = in({6, 2}), x6v = in({6});
  const auto y6 = out({6}), y5 = out({5}), y62 = out({6, 2}), y43 = out({4, 3}), o6 = out({6}),
             o62 = out({6, 2}), o63 = out({6, 3}), o7 = out({7}), ga = out({tri.nnz()}),
             ga_long = out({tri.nnz() + 1}), ga_short = out({tri.nnz() - 1}),
             vals_long = out({tri.nnz() + 1});
  const auto N = XHAL_TRANSPOSE_NONE, T = XHAL_TRANSPOSE;
  const auto L = XHAL_TRIANGLE_LOWER;
  const auto S = XHAL_DIAGONAL_STORED;
  const Matrix& R = mr;
  const Matrix& M = mt;
  const xhal_status_t SM = XHAL_SHAPE_MISMATCH;
  std::vector<ErrorCase> cases = {
      {"spmv x [5] for 4 columns", SM, [&] { return xhal_spmv(dev, R.get(), N, 1, &x5, 0, &y6); },
       "'x'"},
      {"spmv y [5] for 6 rows", SM, [&] { return xhal_spmv(dev, R.get(), N, 1, &x4, 0, &y5); },
       "'y'"},
      {"spmv x of rank 2", SM, [&] { return xhal_spmv(dev, R.get(), N, 1, &x41, 0, &y6); }, "'x'"},
      {"spmv A^T with A's shapes", SM, [&] { return xhal_spmv(dev, R.get(), T, 1, &x4, 0, &y6); },
       ""},
      {"spmv A^T y [6] for 4 columns", SM,
       [&] { return xhal_spmv(dev, R.get(), T, 1, &x6, 0, &y6); }, "'y'"},
      {"spmm k of X 3, of Y 2", SM, [&] { return xhal_spmm(dev, R.get(), N, 1, &x43, 0, &y62); },
       ""},
      {"spmm X [6, 3] for 4 columns", SM,
       [&] { return xhal_spmm(dev, R.get(), N, 1, &x63, 0, &y43); }, "'x'"},
      {"solve b [7] for 6 rows", SM,
       [&] { return xhal_csr_solve(dev, M.get(), N, L, S, &b7, &o7); }, "'b'"},
      {"solve x [6] for b [6, 2]", SM,
       [&] { return xhal_csr_solve(dev, M.get(), N, L, S, &b62, &o6); }, "'x'"},
      {"solve x [6, 3] for b [6, 2]", SM,
       [&] { return xhal_csr_solve(dev, M.get(), N, L, S, &b62, &o63); }, "'x'"},
      {"solve of a 6x4 matrix", SM,
       [&] { return xhal_csr_solve(dev, R.get(), N, L, S, &x6v, &o6); }, ""},
      {"backward dx [7] for x [6]", SM,
       [&] { return xhal_csr_solve_backward(dev, M.get(), N, L, S, &x6v, &b7, &o6, &ga); }, "'dx'"},
      {"backward gb [6, 2] for x [6]", SM,
       [&] { return xhal_csr_solve_backward(dev, M.get(), N, L, S, &x6v, &x6, &o62, &ga); },
       "'gb'"},
      {"backward ga [nnz + 1]", SM,
       [&] { return xhal_csr_solve_backward(dev, M.get(), N, L, S, &x6v, &x6, &o6, &ga_long); },
       "'ga'"},
      {"backward ga [nnz - 1]", SM,
       [&] { return xhal_csr_solve_backward(dev, M.get(), N, L, S, &x6v, &x6, &o6, &ga_short); },
       "'ga'"},
      {"set_values_tensor [nnz + 1]", SM,
       [&] { return xhal_csr_set_values_tensor(M.get(), &vals_long); }, ""},
  };
  // Layout faults: a strided x (contiguity required) and bytes past the end.
  xhal_tensor_t strided = x4;
  strided.strides[0] = 2;
  xhal_tensor_t past_end = y6;
  past_end.offset = 4;
  cases.push_back({"spmv x strided", XHAL_INVALID_ARGUMENT,
                   [&] { return xhal_spmv(dev, R.get(), N, 1, &strided, 0, &y6); }, "'x'"});
  cases.push_back({"spmv y past the end of its buffer", XHAL_OUT_OF_RANGE,
                   [&] { return xhal_spmv(dev, R.get(), N, 1, &x4, 0, &past_end); }, "'y'"});
  run_cases(cases, g);
  // The failed set_values_tensor left the values alone.
  std::vector<float> v(tri.nnz());
  ASSERT_EQ(xhal_csr_read(mt.get(), nullptr, nullptr, v.data()), XHAL_OK);
  EXPECT_TRUE(same_bits(v, tri.values)) << first_difference(v, tri.values);
}

TEST_P(SparseBadInputTest, WrongDtypes) {
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr tri = base_lower(rng);
  Matrix mt;
  ASSERT_EQ(create_from_host(dev, tri, XHAL_DTYPE_I32, mt), XHAL_OK) << xhal_last_error();
  BufferGuard g;
  // 8 bytes per element covers every dtype used below.
  auto typed = [&](xhal_dtype_t dtype, int64_t n) {
    xhal_buffer_t b = g.add(upload(dev, random_values(rng, 2 * n)));
    return tensor(b, dtype, {n});
  };
  const auto x6 = typed(XHAL_DTYPE_F32, 6), y6 = typed(XHAL_DTYPE_F32, 6),
             xi32 = typed(XHAL_DTYPE_I32, 6), yf64 = typed(XHAL_DTYPE_F64, 6),
             xf16 = typed(XHAL_DTYPE_F16, 6), gb = typed(XHAL_DTYPE_F32, 6),
             ga = typed(XHAL_DTYPE_F32, tri.nnz()), ga64 = typed(XHAL_DTYPE_F64, tri.nnz()),
             vi32 = typed(XHAL_DTYPE_I32, tri.nnz());
  xhal_tensor_t xm = x6, ym = y6;  // [6, 1] for spmm
  xm.rank = ym.rank = 2;
  xm.shape[1] = ym.shape[1] = 1;
  xhal_tensor_t xm64 = xm;
  xm64.dtype = XHAL_DTYPE_I64;
  const auto N = XHAL_TRANSPOSE_NONE;
  const auto L = XHAL_TRIANGLE_LOWER;
  const auto S = XHAL_DIAGONAL_STORED;
  const xhal_status_t IA = XHAL_INVALID_ARGUMENT;
  const xhal_csr_t M = mt.get();
  std::vector<ErrorCase> cases = {
      {"spmv x i32", IA, [&] { return xhal_spmv(dev, M, N, 1, &xi32, 0, &y6); }, "i32"},
      {"spmv y f64", IA, [&] { return xhal_spmv(dev, M, N, 1, &x6, 0, &yf64); }, "f64"},
      {"spmm X i64", IA, [&] { return xhal_spmm(dev, M, N, 1, &xm64, 0, &ym); }, "i64"},
      {"solve b i32", IA, [&] { return xhal_csr_solve(dev, M, N, L, S, &xi32, &y6); }, "i32"},
      {"solve x f16", IA, [&] { return xhal_csr_solve(dev, M, N, L, S, &x6, &xf16); }, "f16"},
      {"backward dx i32", IA,
       [&] { return xhal_csr_solve_backward(dev, M, N, L, S, &x6, &xi32, &gb, &ga); }, "i32"},
      {"backward ga f64", IA,
       [&] { return xhal_csr_solve_backward(dev, M, N, L, S, &x6, &y6, &gb, &ga64); }, "f64"},
      {"set_values_tensor i32", IA, [&] { return xhal_csr_set_values_tensor(M, &vi32); }, "i32"},
  };
  run_cases(cases, g);
  // Index dtypes other than i32 / i64.
  for (auto bad : {XHAL_DTYPE_F32, XHAL_DTYPE_U8, XHAL_DTYPE_INVALID}) {
    SCOPED_TRACE(std::string("index dtype ") + xhal_dtype_name(bad));
    HostDesc h(tri, XHAL_DTYPE_I32);
    h.desc.index_dtype = bad;
    xhal_csr_t m = nullptr;
    EXPECT_EQ(xhal_csr_create(dev, &h.desc, &m), XHAL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(xhal_last_error()).find("index_dtype"), std::string::npos)
        << "message '" << xhal_last_error() << "' does not name index_dtype";
    EXPECT_EQ(m, nullptr);
  }
}

TEST_P(SparseBadInputTest, AliasingOutputs) {
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr tri = base_lower(rng);
  Matrix mt;
  ASSERT_EQ(create_from_host(dev, tri, XHAL_DTYPE_I64, mt), XHAL_OK) << xhal_last_error();
  BufferGuard g;
  // One buffer of 32 floats; views at element offsets.
  xhal_buffer_t shared = g.add(upload(dev, random_values(rng, 32)));
  auto view = [&](int64_t elem_offset, std::vector<int64_t> shape) {
    return tensor(shared, XHAL_DTYPE_F32, std::move(shape), uint64_t(elem_offset) * 4);
  };
  const auto v0 = view(0, {6}), v1 = view(1, {6}), v6 = view(6, {6}), v7 = view(7, {6}),
             v12 = view(12, {6}), v18 = view(18, {6}), m0 = view(0, {6, 2}), m3 = view(3, {6, 2}),
             ga_on_gb = view(14, {tri.nnz()});
  const auto other = dense(dev, g, random_values(rng, 6), {6});
  const auto ga = dense(dev, g, random_values(rng, tri.nnz()), {tri.nnz()});
  const auto N = XHAL_TRANSPOSE_NONE;
  const auto L = XHAL_TRIANGLE_LOWER;
  const auto S = XHAL_DIAGONAL_STORED;
  const xhal_status_t AL = XHAL_ALIASING;
  const xhal_csr_t M = mt.get();
  std::vector<ErrorCase> cases = {
      {"backward gb is x", AL,
       [&] { return xhal_csr_solve_backward(dev, M, N, L, S, &v0, &v6, &v0, &ga); }, ""},
      {"backward gb overlaps x", AL,
       [&] { return xhal_csr_solve_backward(dev, M, N, L, S, &v0, &v6, &v1, &ga); }, ""},
      {"backward gb overlaps dx", AL,
       [&] { return xhal_csr_solve_backward(dev, M, N, L, S, &v0, &v6, &v7, &ga); }, ""},
      {"backward ga overlaps gb", AL,
       [&] { return xhal_csr_solve_backward(dev, M, N, L, S, &v0, &v6, &v12, &ga_on_gb); }, ""},
      {"backward ga overlaps x", AL,
       [&] { return xhal_csr_solve_backward(dev, M, N, L, S, &v12, &v6, &other, &ga_on_gb); }, ""},
      {"solve x overlaps b (shifted)", AL,
       [&] { return xhal_csr_solve(dev, M, N, L, S, &v0, &v1); }, ""},
      {"solve [6,2] x overlaps b", AL, [&] { return xhal_csr_solve(dev, M, N, L, S, &m0, &m3); },
       ""},
      {"spmv y is x", AL, [&] { return xhal_spmv(dev, M, N, 1, &v18, 0, &v18); }, ""},
      {"spmv y overlaps x", AL, [&] { return xhal_spmv(dev, M, N, 1, &v0, 0.5f, &v1); }, ""},
      {"spmm Y overlaps X", AL, [&] { return xhal_spmm(dev, M, N, 1, &m0, 0, &m3); }, ""},
  };
  run_cases(cases, g);
}

TEST_P(SparseBadInputTest, NullHandles) {
  Rng rng(test_seed());
  const Csr tri = base_lower(rng);
  Matrix mt;
  ASSERT_EQ(create_from_host(dev, tri, XHAL_DTYPE_I32, mt), XHAL_OK) << xhal_last_error();
  BufferGuard g;
  const auto x = dense(dev, g, random_values(rng, 6), {6});
  const auto y = poisoned(dev, g, 6, {6});
  const auto ga = poisoned(dev, g, tri.nnz(), {tri.nnz()});
  const auto N = XHAL_TRANSPOSE_NONE;
  const auto L = XHAL_TRIANGLE_LOWER;
  const auto S = XHAL_DIAGONAL_STORED;
  const xhal_status_t IA = XHAL_INVALID_ARGUMENT;
  const xhal_csr_t M = mt.get();
  HostDesc h(tri, XHAL_DTYPE_I32);
  xhal_csr_t out = nullptr;
  int64_t r, c, n;
  std::vector<ErrorCase> cases = {
      {"spmv null device", IA, [&] { return xhal_spmv(nullptr, M, N, 1, &x, 0, &y); }, "device"},
      {"spmv null matrix", IA, [&] { return xhal_spmv(dev, nullptr, N, 1, &x, 0, &y); }, ""},
      {"spmv null x", IA, [&] { return xhal_spmv(dev, M, N, 1, nullptr, 0, &y); }, "'x'"},
      {"spmv null y", IA, [&] { return xhal_spmv(dev, M, N, 1, &x, 0, nullptr); }, "'y'"},
      {"spmm null matrix", IA, [&] { return xhal_spmm(dev, nullptr, N, 1, &x, 0, &y); }, ""},
      {"solve null matrix", IA, [&] { return xhal_csr_solve(dev, nullptr, N, L, S, &x, &y); }, ""},
      {"solve null b", IA, [&] { return xhal_csr_solve(dev, M, N, L, S, nullptr, &y); }, "'b'"},
      {"solve null x", IA, [&] { return xhal_csr_solve(dev, M, N, L, S, &x, nullptr); }, "'x'"},
      {"backward null x", IA,
       [&] { return xhal_csr_solve_backward(dev, M, N, L, S, nullptr, &x, &y, &ga); }, "'x'"},
      {"backward null dx", IA,
       [&] { return xhal_csr_solve_backward(dev, M, N, L, S, &x, nullptr, &y, &ga); }, "'dx'"},
      {"backward null gb", IA,
       [&] { return xhal_csr_solve_backward(dev, M, N, L, S, &x, &x, nullptr, &ga); }, "'gb'"},
      {"spgemm null a", IA, [&] { return xhal_spgemm(dev, nullptr, M, &out); }, ""},
      {"spgemm null out", IA, [&] { return xhal_spgemm(dev, M, M, nullptr); }, ""},
      {"create null device", IA, [&] { return xhal_csr_create(nullptr, &h.desc, &out); }, "device"},
      {"create null desc", IA, [&] { return xhal_csr_create(dev, nullptr, &out); }, ""},
      {"create null out", IA, [&] { return xhal_csr_create(dev, &h.desc, nullptr); }, ""},
      {"set_values null matrix", IA,
       [&] { return xhal_csr_set_values(nullptr, tri.values.data()); }, ""},
      {"set_values null values", IA, [&] { return xhal_csr_set_values(M, nullptr); }, ""},
      {"set_values_tensor null tensor", IA, [&] { return xhal_csr_set_values_tensor(M, nullptr); },
       ""},
      {"get_shape null matrix", IA, [&] { return xhal_csr_get_shape(nullptr, &r, &c, &n); }, ""},
      {"read null matrix", IA, [&] { return xhal_csr_read(nullptr, nullptr, nullptr, nullptr); },
       ""},
  };
  run_cases(cases, g);
  EXPECT_EQ(out, nullptr);
}

// Enum arguments outside their range.
TEST_P(SparseBadInputTest, BadEnumValues) {
  Rng rng(test_seed());
  const Csr tri = base_lower(rng);
  Matrix mt;
  ASSERT_EQ(create_from_host(dev, tri, XHAL_DTYPE_I64, mt), XHAL_OK) << xhal_last_error();
  BufferGuard g;
  const auto x = dense(dev, g, random_values(rng, 6), {6});
  const auto y = poisoned(dev, g, 6, {6});
  // Passed from C (raw_calls.c): in C++ an enum holding these is undefined.
  const uint32_t bad_t = 2, bad_tri = 5, bad_d = UINT32_MAX;
  const xhal_status_t IA = XHAL_INVALID_ARGUMENT;
  const xhal_csr_t M = mt.get();
  std::vector<ErrorCase> cases = {
      {"spmv trans 2", IA, [&] { return raw_spmv(dev, M, bad_t, 1, &x, 0, &y); }, "trans"},
      {"solve triangle 5", IA,
       [&] {
         return raw_csr_solve(dev, M, XHAL_TRANSPOSE_NONE, bad_tri, XHAL_DIAGONAL_STORED, &x, &y);
       },
       "triangle"},
      {"solve diagonal -1", IA,
       [&] {
         return raw_csr_solve(dev, M, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER, bad_d, &x, &y);
       },
       "diagonal"},
  };
  run_cases(cases, g);
}

XHAL_CONF_INSTANTIATE(SparseBadInputTest);

}  // namespace
}  // namespace xhal::conf::sparse
