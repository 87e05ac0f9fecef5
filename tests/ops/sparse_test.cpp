// Sparse front end: CSR validation (first offending row), the analysed
// pattern handed to the plugin (row_idx, transpose), value replacement,
// op shape checks, the triangle/diagonal checks of the solve and the host
// symbolic phase of spgemm.
#include <cstddef>

#include "ops_test_support.h"
#include "raw_calls.h"

namespace xhal::ops_test {
namespace {

using V = std::vector<int64_t>;

class SparseTest : public OpsTest {
 protected:
  xhal_csr_desc_t desc(int64_t rows, int64_t cols, const V& row_ptr, const V& col_idx) {
    xhal_csr_desc_t d{};
    d.struct_size = sizeof d;
    d.rows = rows;
    d.cols = cols;
    d.nnz = static_cast<int64_t>(col_idx.size());
    d.index_dtype = XHAL_DTYPE_I64;
    d.row_ptr = row_ptr.data();
    d.col_idx = col_idx.data();
    return d;
  }
  // A generated pattern of rows x cols (32 entries a row, some empty) whose
  // analysed transpose and row_idx must be the sequential ones.
  void check_large_transpose(int64_t rows, int64_t cols);
  // 3 x 4: row 0 {0, 2}, row 1 {3}, row 2 {0, 1, 2}.
  const V rp = {0, 2, 3, 6};
  const V ci = {0, 2, 3, 0, 1, 2};
  const std::vector<float> vals = {1, 2, 3, 4, 5, 6};
};

TEST_F(SparseTest, AnalysedPatternReachesThePlugin) {
  xhal_csr_t m = csr(3, 4, rp, ci, vals);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(rec->matrices.size(), 1u);
  const auto& p = rec->matrices[0];
  EXPECT_EQ(p.rows, 3);
  EXPECT_EQ(p.cols, 4);
  EXPECT_EQ(p.nnz, 6);
  EXPECT_EQ(p.row_ptr, rp);
  EXPECT_EQ(p.col_idx, ci);
  EXPECT_EQ(p.row_idx, (V{0, 0, 1, 2, 2, 2}));
  EXPECT_EQ(p.t_row_ptr, (V{0, 2, 3, 5, 6}));
  EXPECT_EQ(p.t_col_idx, (V{0, 2, 2, 0, 2, 1}));
  EXPECT_EQ(p.t_perm, (V{0, 3, 4, 1, 5, 2}));
  EXPECT_EQ(rec->live_matrices, 1);
  // The values live in a plugin buffer of nnz floats, written once.
  const auto* w = rec->last("buffer_write");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dst, p.values_buffer);
  EXPECT_EQ(w->size, 24u);
  int64_t rows = 0, cols = 0, nnz = 0;
  ASSERT_EQ(xhal_csr_get_shape(m, &rows, &cols, &nnz), XHAL_OK);
  EXPECT_EQ(rows * 100 + cols * 10 + nnz, 346);
  std::vector<float> got(6);
  V rp_back(4), ci_back(6);
  ASSERT_EQ(xhal_csr_read(m, rp_back.data(), ci_back.data(), got.data()), XHAL_OK);
  EXPECT_EQ(got, vals);
  EXPECT_EQ(rp_back, rp);
  EXPECT_EQ(ci_back, ci);
}

// A plugin that sets XHAL_PLUGIN_CSR_OWN_TRANSPOSE (ABI 1.8) builds A^T
// itself: the core skips its host transposition and passes the three
// transpose fields as NULL; the rest of the analysed pattern arrives as
// always, and a plugin without the flag still gets the transpose.
TEST_F(SparseTest, PluginThatBuildsItsOwnTransposeGetsNone) {
  xhal_device_t own = open("recownt", 0);
  ASSERT_NE(own, nullptr);
  recorder::State* st = state_of("recownt");
  ASSERT_NE(st, nullptr);
  st->clear();
  xhal_csr_t m = csr(3, 4, rp, ci, vals, own);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(st->matrices.size(), 1u);
  const auto& p = st->matrices[0];
  EXPECT_TRUE(p.transpose_fields_null);
  EXPECT_EQ(p.row_ptr, rp);
  EXPECT_EQ(p.col_idx, ci);
  EXPECT_EQ(p.row_idx, (V{0, 0, 1, 2, 2, 2}));
  xhal_csr_t other = csr(3, 4, rp, ci, vals);
  ASSERT_NE(other, nullptr);
  ASSERT_EQ(rec->matrices.size(), 1u);
  EXPECT_TRUE(rec->matrices[0].transpose_given);
  EXPECT_EQ(rec->matrices[0].t_perm, (V{0, 3, 4, 1, 5, 2}));
  // spgemm's C is made inside the op, where the plugin may not read the
  // device back: it comes with the core's transpose.
  xhal_csr_t b = csr(4, 2, {0, 1, 1, 2, 3}, {0, 1, 0}, {}, own), c = nullptr;
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(xhal_spgemm(own, m, b, &c), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(st->matrices.size(), 3u);
  EXPECT_TRUE(st->matrices[1].transpose_fields_null);
  EXPECT_TRUE(st->matrices[2].transpose_given);
  EXPECT_EQ(st->matrices[2].t_row_ptr.size(), 3u);
  for (xhal_csr_t x : {c, b, m}) EXPECT_EQ(xhal_csr_release(x), XHAL_OK);
  forget(b);
  forget(m);
  EXPECT_EQ(st->live_matrices, 0);
  EXPECT_EQ(xhal_device_release(own), XHAL_OK);
}

TEST_F(SparseTest, TransposeOfAHubColumnListsRowsAscending) {
  // Every row has an entry in column 2; row 3 also in 0.
  xhal_csr_t m = csr(5, 3, {0, 1, 2, 3, 5, 6}, {2, 2, 2, 0, 2, 2});
  ASSERT_NE(m, nullptr);
  const auto& p = rec->matrices.back();
  EXPECT_EQ(p.t_row_ptr, (V{0, 1, 1, 6}));
  EXPECT_EQ(p.t_col_idx, (V{3, 0, 1, 2, 3, 4}));
  EXPECT_EQ(p.t_perm, (V{3, 0, 1, 2, 4, 5}));
}

// 2^22 entries in 2^17 columns: the core splits the transposition over
// threads (one per 2^20 entries, up to the machine's count). The result
// must be the sequential counting sort's, entry for entry: each column's
// rows ascending, t_perm pointing back at the entry.
void SparseTest::check_large_transpose(int64_t kRows, int64_t kCols) {
  constexpr int64_t kPerRow = 32;
  V row_ptr(kRows + 1), col_idx;
  col_idx.reserve(kRows * kPerRow);
  uint64_t state = 88172645463325252u;  // xorshift: any spread of columns
  for (int64_t i = 0; i < kRows; ++i) {
    row_ptr[i] = static_cast<int64_t>(col_idx.size());
    // Rows of uneven length (a few empty) so that the thread ranges do not
    // fall on a regular grid.
    const int64_t len = (i % 97 == 0) ? 0 : kPerRow + (i % 7) - 3;
    int64_t c = static_cast<int64_t>(state % 64);
    for (int64_t k = 0; k < len && c < kCols; ++k) {
      col_idx.push_back(c);
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      c += 1 + static_cast<int64_t>(state % (2 * kCols / kPerRow));
    }
  }
  row_ptr[kRows] = static_cast<int64_t>(col_idx.size());
  xhal_csr_t m = csr(kRows, kCols, row_ptr, col_idx);
  ASSERT_NE(m, nullptr);
  const auto& p = rec->matrices.back();
  const int64_t nnz = row_ptr[kRows];
  ASSERT_GE(nnz, int64_t{1} << 21) << "large enough for more than one thread";
  V t_row_ptr(kCols + 1, 0), t_col_idx(nnz), t_perm(nnz);
  for (int64_t c : col_idx) ++t_row_ptr[c + 1];
  for (int64_t c = 0; c < kCols; ++c) t_row_ptr[c + 1] += t_row_ptr[c];
  V next(t_row_ptr.begin(), t_row_ptr.end() - 1);
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t k = row_ptr[i]; k < row_ptr[i + 1]; ++k) {
      const int64_t q = next[col_idx[k]]++;
      t_col_idx[q] = i;
      t_perm[q] = k;
    }
  EXPECT_TRUE(p.t_row_ptr == t_row_ptr);
  EXPECT_TRUE(p.t_col_idx == t_col_idx);
  EXPECT_TRUE(p.t_perm == t_perm);
  // row_idx is filled by row ranges side by side too.
  V row_idx(nnz);
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t k = row_ptr[i]; k < row_ptr[i + 1]; ++k) row_idx[k] = i;
  EXPECT_TRUE(p.row_idx == row_idx);
}

TEST_F(SparseTest, TransposeOfALargePatternIsTheSequentialOne) {
  check_large_transpose(1 << 17, 1 << 17);
}

// Columns enough (2^20 + 3) that the prefix over (column, thread) is itself
// split into column blocks on a machine of two threads or more.
TEST_F(SparseTest, TransposeWithManyColumnsIsTheSequentialOne) {
  check_large_transpose(1 << 17, (1 << 20) + 3);
}

// 2^22 entries: the core checks the columns of row ranges side by side
// (one thread per 2^20 entries, up to the machine's count). The message
// must still name the pattern's first bad row, whichever range holds it.
TEST_F(SparseTest, MalformedLargePatternNamesTheFirstOffendingRow) {
  constexpr int64_t kRows = 1 << 17, kPerRow = 32, kCols = 4 * kPerRow;
  V row_ptr(kRows + 1), col_idx(kRows * kPerRow);
  for (int64_t i = 0; i <= kRows; ++i) row_ptr[i] = i * kPerRow;
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t k = 0; k < kPerRow; ++k) col_idx[i * kPerRow + k] = 4 * k + i % 4;
  xhal_csr_t m = nullptr;
  // A duplicate late in the pattern (another range than row 3000's on a
  // machine of two threads or more).
  col_idx[100000 * kPerRow + 7] = col_idx[100000 * kPerRow + 6];
  xhal_csr_desc_t d = desc(kRows, kCols, row_ptr, col_idx);
  EXPECT_REJECTED(xhal_csr_create(dev, &d, &m), XHAL_INVALID_STRUCTURE,
                  "row 100000: column 24 (entry 3200007) duplicates the previous column 24");
  col_idx[3000 * kPerRow + 31] = kCols;  // now an earlier bad row
  d = desc(kRows, kCols, row_ptr, col_idx);
  EXPECT_REJECTED(xhal_csr_create(dev, &d, &m), XHAL_INVALID_STRUCTURE,
                  "row 3000: column 128 (entry 96031) is outside [0, 128)");
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(rec->live_matrices, 0);
}

TEST_F(SparseTest, Int32IndicesAndNoValues) {
  const std::vector<int32_t> rp32 = {0, 2, 3, 6}, ci32 = {0, 2, 3, 0, 1, 2};
  xhal_csr_desc_t d = desc(3, 4, {}, {});
  d.nnz = 6;
  d.index_dtype = XHAL_DTYPE_I32;
  d.row_ptr = rp32.data();
  d.col_idx = ci32.data();
  xhal_csr_t m = nullptr;
  ASSERT_EQ(xhal_csr_create(dev, &d, &m), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(rec->matrices.back().col_idx, ci);
  EXPECT_EQ(rec->count("buffer_fill"), 1u) << "values start at zero";
  std::vector<int32_t> back(6);
  std::vector<float> v(6, 9.0f);
  ASSERT_EQ(xhal_csr_read(m, nullptr, back.data(), v.data()), XHAL_OK);
  EXPECT_EQ(back, ci32);
  EXPECT_EQ(v, std::vector<float>(6, 0.0f));
  EXPECT_EQ(xhal_csr_release(m), XHAL_OK);
  EXPECT_EQ(rec->live_matrices, 0);
}

TEST_F(SparseTest, FromDeviceBuffers) {
  xhal_buffer_t brp = upload(rp), bci = upload(ci), bv = upload(vals);
  xhal_csr_desc_t d = desc(3, 4, {}, {});
  d.nnz = 6;
  d.row_ptr = nullptr;
  d.col_idx = nullptr;
  d.row_ptr_buffer = brp;
  d.col_idx_buffer = bci;
  d.values_buffer = bv;
  xhal_csr_t m = nullptr;
  rec->clear();
  ASSERT_EQ(xhal_csr_create(dev, &d, &m), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(rec->count("buffer_read"), 2u) << "the pattern is read once";
  EXPECT_EQ(rec->count("buffer_copy"), 1u) << "values copied on the device";
  EXPECT_EQ(rec->matrices.back().t_perm, (V{0, 3, 4, 1, 5, 2}));
  std::vector<float> got(6);
  ASSERT_EQ(xhal_csr_read(m, nullptr, nullptr, got.data()), XHAL_OK);
  EXPECT_EQ(got, vals);
  EXPECT_EQ(xhal_csr_release(m), XHAL_OK);

  // A short buffer and a buffer of another device.
  d.col_idx_buffer = upload(V{0, 2, 3});
  EXPECT_REJECTED(xhal_csr_create(dev, &d, &m), XHAL_OUT_OF_RANGE, "col_idx_buffer", "24 bytes");
  d.col_idx_buffer = upload(ci, dev1);
  EXPECT_REJECTED(xhal_csr_create(dev, &d, &m), XHAL_WRONG_DEVICE, "col_idx_buffer");
}

TEST_F(SparseTest, StructSizeIsHonoured) {
  // A caller that knows only the host-array fields: the buffer fields past
  // its struct_size are not read even if the memory there holds garbage.
  xhal_csr_desc_t d = desc(3, 4, rp, ci);
  d.row_ptr = nullptr;
  d.row_ptr_buffer = reinterpret_cast<xhal_buffer_t>(uintptr_t{0xdead});
  d.struct_size = offsetof(xhal_csr_desc_t, row_ptr_buffer);
  xhal_csr_t m = nullptr;
  EXPECT_REJECTED(xhal_csr_create(dev, &d, &m), XHAL_INVALID_ARGUMENT,
                  "row_ptr and row_ptr_buffer are both NULL");
  d.struct_size = 8;
  EXPECT_REJECTED(xhal_csr_create(dev, &d, &m), XHAL_INVALID_ARGUMENT, "struct_size = 8");
}

TEST_F(SparseTest, MalformedPatternsNameTheFirstOffendingRow) {
  xhal_csr_t m = nullptr;
  struct Case {
    V row_ptr, col_idx;
    const char* message;
  };
  const Case cases[] = {
      {{1, 2, 3, 6}, ci, "row 0: row_ptr[0] = 1, expected 0"},
      {{0, 3, 2, 6}, ci, "row 1: row_ptr[2] = 2 is less than row_ptr[1] = 3"},
      {{0, 2, 7, 6}, ci, "row 1: row_ptr[2] = 7 exceeds nnz = 6"},
      {{0, 2, 3, 5}, ci, "row 2: row_ptr[3] = 5 (end of the last row) but nnz = 6"},
      {rp, {0, 2, 4, 0, 1, 2}, "row 1: column 4 (entry 2) is outside [0, 4)"},
      {rp, {0, 2, -1, 0, 1, 2}, "row 1: column -1"},
      {rp, {0, 2, 3, 0, 2, 1}, "row 2: column 1 (entry 5) is below the previous column 2"},
      {rp, {0, 0, 3, 0, 1, 2}, "row 0: column 0 (entry 1) duplicates the previous column 0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    xhal_csr_desc_t d = desc(3, 4, c.row_ptr, c.col_idx);
    EXPECT_REJECTED(xhal_csr_create(dev, &d, &m), XHAL_INVALID_STRUCTURE, c.message);
    EXPECT_EQ(m, nullptr);
  }
  xhal_csr_desc_t d = desc(-3, 4, rp, ci);
  EXPECT_REJECTED(xhal_csr_create(dev, &d, &m), XHAL_INVALID_ARGUMENT, "rows = -3");
  d = desc(3, 4, rp, ci);
  d.nnz = -1;
  EXPECT_REJECTED(xhal_csr_create(dev, &d, &m), XHAL_INVALID_ARGUMENT, "nnz = -1");
  d = desc(3, 4, rp, ci);
  d.index_dtype = XHAL_DTYPE_F32;
  EXPECT_REJECTED(xhal_csr_create(dev, &d, &m), XHAL_INVALID_ARGUMENT, "index_dtype f32");
  EXPECT_REJECTED(xhal_csr_create(dev, nullptr, &m), XHAL_INVALID_ARGUMENT, "'desc'");
  EXPECT_EQ(rec->live_matrices, 0);
}

TEST_F(SparseTest, ReplacingValues) {
  xhal_csr_t m = csr(3, 4, rp, ci, vals);
  const std::vector<float> next = {6, 5, 4, 3, 2, 1};
  rec->clear();
  ASSERT_EQ(xhal_csr_set_values(m, next.data()), XHAL_OK);
  EXPECT_EQ(rec->count("buffer_write"), 1u);
  EXPECT_TRUE(rec->matrices.empty()) << "no re-analysis";
  xhal_tensor_t t = tensor(upload(vals), XHAL_DTYPE_F32, {6});
  rec->clear();
  ASSERT_EQ(xhal_csr_set_values_tensor(m, &t), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(rec->count("buffer_copy"), 1u);
  EXPECT_EQ(rec->count("buffer_write") + rec->count("buffer_read"), 0u) << "no host round trip";
  std::vector<float> got(6);
  ASSERT_EQ(xhal_csr_read(m, nullptr, nullptr, got.data()), XHAL_OK);
  EXPECT_EQ(got, vals);

  xhal_tensor_t short_t = f32({5});
  EXPECT_REJECTED(xhal_csr_set_values_tensor(m, &short_t), XHAL_SHAPE_MISMATCH, "'values'",
                  "nnz = 6");
  xhal_tensor_t other = tensor(upload(vals, dev1), XHAL_DTYPE_F32, {6});
  EXPECT_REJECTED(xhal_csr_set_values_tensor(m, &other), XHAL_WRONG_DEVICE, "'values'");
  xhal_tensor_t ints = tensor(buffer(24), XHAL_DTYPE_I32, {6});
  EXPECT_REJECTED(xhal_csr_set_values_tensor(m, &ints), XHAL_INVALID_ARGUMENT, "'values'", "i32");
  EXPECT_REJECTED(xhal_csr_set_values(m, nullptr), XHAL_INVALID_ARGUMENT, "'values'");
  EXPECT_REJECTED(xhal_csr_set_values(nullptr, next.data()), XHAL_INVALID_ARGUMENT, "'matrix'");
}

TEST_F(SparseTest, SpmvAndSpmmShapesFollowOpA) {
  xhal_csr_t a = csr(3, 4, rp, ci, vals);
  xhal_tensor_t x4 = f32({4}), y3 = f32({3}), x3 = f32({3}), y4 = f32({4});
  rec->clear();
  ASSERT_EQ(xhal_spmv(dev, a, XHAL_TRANSPOSE_NONE, 2.0f, &x4, 0.5f, &y3), XHAL_OK)
      << xhal_last_error();
  const auto* c = rec->last("spmv");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->alpha, 2.0f);
  EXPECT_EQ(c->beta, 0.5f);
  EXPECT_EQ(c->trans, XHAL_TRANSPOSE_NONE);
  ASSERT_EQ(xhal_spmv(dev, a, XHAL_TRANSPOSE, 1.0f, &x3, 0.0f, &y4), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(rec->last("spmv")->trans, XHAL_TRANSPOSE);
  EXPECT_REJECTED(xhal_spmv(dev, a, XHAL_TRANSPOSE, 1.0f, &x4, 0.0f, &y3), XHAL_SHAPE_MISMATCH,
                  "argument 'x': shape [4] but expected [3]");
  EXPECT_REJECTED(raw_spmv(dev, a, 5, 1.0f, &x4, 0.0f, &y3), XHAL_INVALID_ARGUMENT, "'trans'", "5");

  xhal_tensor_t X = f32({4, 2}), Y = f32({3, 2}), Ybad = f32({3, 3});
  ASSERT_EQ(xhal_spmm(dev, a, XHAL_TRANSPOSE_NONE, 1.0f, &X, 0.0f, &Y), XHAL_OK)
      << xhal_last_error();
  EXPECT_REJECTED(xhal_spmm(dev, a, XHAL_TRANSPOSE_NONE, 1.0f, &X, 0.0f, &Ybad),
                  XHAL_SHAPE_MISMATCH, "argument 'y': shape [3, 3] but expected [3, 2]");

  xhal_buffer_t b = buffer(64);
  xhal_tensor_t xs = tensor(b, XHAL_DTYPE_F32, {4}), ys = tensor(b, XHAL_DTYPE_F32, {3}, 8);
  EXPECT_REJECTED(xhal_spmv(dev, a, XHAL_TRANSPOSE_NONE, 1.0f, &xs, 0.0f, &ys), XHAL_ALIASING,
                  "'y'");
  xhal_csr_t a1 = csr(3, 4, rp, ci, vals, dev1);
  EXPECT_REJECTED(xhal_spmv(dev, a1, XHAL_TRANSPOSE_NONE, 1.0f, &x4, 0.0f, &y3), XHAL_WRONG_DEVICE,
                  "'a'", "recorder:1");
  EXPECT_REJECTED(xhal_spmv(dev, nullptr, XHAL_TRANSPOSE_NONE, 1.0f, &x4, 0.0f, &y3),
                  XHAL_INVALID_ARGUMENT, "'a'");
}

class SolveTest : public SparseTest {
 protected:
  // Lower 4 x 4 with a full diagonal; row 2 has an off-diagonal in column 0.
  const V lrp = {0, 1, 3, 5, 7};
  const V lci = {0, 0, 1, 0, 2, 2, 3};
  const std::vector<float> lv = {2, 1, 3, 1, 4, 1, 5};
};

TEST_F(SolveTest, ValidSolveGetsColumnsView) {
  xhal_csr_t a = csr(4, 4, lrp, lci, lv);
  xhal_tensor_t b = f32({4}), x = f32({4});
  rec->clear();
  ASSERT_EQ(xhal_csr_solve(dev, a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED,
                           &b, &x),
            XHAL_OK)
      << xhal_last_error();
  const auto* c = rec->last("csr_solve");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->tensors[0].rank, 2u);
  EXPECT_EQ(c->tensors[0].shape[0], 4);
  EXPECT_EQ(c->tensors[0].shape[1], 1);
  EXPECT_EQ(c->triangle, XHAL_TRIANGLE_LOWER);
  // x may be b exactly; multi-RHS.
  ASSERT_EQ(
      xhal_csr_solve(dev, a, XHAL_TRANSPOSE, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, &b, &b),
      XHAL_OK);
  xhal_tensor_t B = f32({4, 3}), X = f32({4, 3});
  ASSERT_EQ(
      xhal_csr_solve(dev, a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_UNIT, &B, &X),
      XHAL_OK);
  EXPECT_EQ(rec->last("csr_solve")->tensors[1].shape[1], 3);
}

TEST_F(SolveTest, PatternOutsideTheTriangleNamesTheRow) {
  xhal_csr_t a = csr(4, 4, lrp, lci, lv);
  xhal_tensor_t b = f32({4}), x = f32({4});
  EXPECT_REJECTED(xhal_csr_solve(dev, a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_UPPER,
                                 XHAL_DIAGONAL_STORED, &b, &x),
                  XHAL_INVALID_STRUCTURE, "row 1 has an entry in column 0, below the diagonal",
                  "upper");
  xhal_csr_t u = csr(3, 3, {0, 2, 3, 5}, {0, 2, 1, 1, 2}, {1, 1, 1, 1, 1});
  xhal_tensor_t b3 = f32({3}), x3 = f32({3});
  EXPECT_REJECTED(xhal_csr_solve(dev, u, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                 XHAL_DIAGONAL_STORED, &b3, &x3),
                  XHAL_INVALID_STRUCTURE, "row 0 has an entry in column 2, above the diagonal");
}

TEST_F(SolveTest, StoredDiagonalMustBePresentAndNonZero) {
  // Row 2 lacks its diagonal.
  xhal_csr_t a = csr(3, 3, {0, 1, 3, 4}, {0, 0, 1, 0}, {1, 1, 1, 1});
  xhal_tensor_t b = f32({3}), x = f32({3});
  EXPECT_REJECTED(xhal_csr_solve(dev, a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                 XHAL_DIAGONAL_STORED, &b, &x),
                  XHAL_INVALID_STRUCTURE, "row 2 has no stored diagonal entry");
  EXPECT_EQ(
      xhal_csr_solve(dev, a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_UNIT, &b, &x),
      XHAL_OK)
      << "a unit diagonal needs no stored one: " << xhal_last_error();

  xhal_csr_t z = csr(4, 4, lrp, lci, {2, 1, 3, 1, 0, 1, 5});  // row 2's diagonal is 0
  xhal_tensor_t b4 = f32({4}), x4 = f32({4});
  EXPECT_REJECTED(xhal_csr_solve(dev, z, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                 XHAL_DIAGONAL_STORED, &b4, &x4),
                  XHAL_INVALID_STRUCTURE, "row 2 has a zero diagonal value");
  ASSERT_EQ(xhal_csr_set_values(z, lv.data()), XHAL_OK);
  EXPECT_EQ(xhal_csr_solve(dev, z, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED,
                           &b4, &x4),
            XHAL_OK)
      << xhal_last_error();
  const std::vector<float> zero_row3 = {2, 1, 3, 1, 4, 1, 0};
  ASSERT_EQ(xhal_csr_set_values(z, zero_row3.data()), XHAL_OK);
  EXPECT_REJECTED(xhal_csr_solve(dev, z, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                 XHAL_DIAGONAL_STORED, &b4, &x4),
                  XHAL_INVALID_STRUCTURE, "row 3 has a zero diagonal value");
  // Values from a device tensor are not inspected (docs/semantics.md).
  xhal_tensor_t t = tensor(upload(zero_row3), XHAL_DTYPE_F32, {7});
  ASSERT_EQ(xhal_csr_set_values_tensor(z, &t), XHAL_OK);
  EXPECT_EQ(xhal_csr_solve(dev, z, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED,
                           &b4, &x4),
            XHAL_OK);
}

TEST_F(SolveTest, ShapesAndAliasing) {
  xhal_csr_t a = csr(4, 4, lrp, lci, lv);
  xhal_csr_t rect = csr(3, 4, rp, ci, vals);
  xhal_tensor_t b = f32({4}), x = f32({4}), x5 = f32({5});
  EXPECT_REJECTED(xhal_csr_solve(dev, rect, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                 XHAL_DIAGONAL_UNIT, &b, &x),
                  XHAL_SHAPE_MISMATCH, "[3, 4] is not square");
  EXPECT_REJECTED(xhal_csr_solve(dev, a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                 XHAL_DIAGONAL_STORED, &b, &x5),
                  XHAL_SHAPE_MISMATCH, "argument 'x': shape [5] but expected [4]");
  xhal_buffer_t buf = buffer(64);
  xhal_tensor_t bb = tensor(buf, XHAL_DTYPE_F32, {4}), xb = tensor(buf, XHAL_DTYPE_F32, {4}, 4);
  EXPECT_REJECTED(xhal_csr_solve(dev, a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                 XHAL_DIAGONAL_STORED, &bb, &xb),
                  XHAL_ALIASING, "'x'", "'b'");
  EXPECT_REJECTED(raw_csr_solve(dev, a, XHAL_TRANSPOSE_NONE, 3, XHAL_DIAGONAL_STORED, &b, &x),
                  XHAL_INVALID_ARGUMENT, "'triangle'");
}

TEST_F(SolveTest, BackwardAliasingAndOptionalGa) {
  xhal_csr_t a = csr(4, 4, lrp, lci, lv);
  xhal_buffer_t buf = buffer(256);
  xhal_tensor_t x = tensor(buf, XHAL_DTYPE_F32, {4, 2}),
                dx = tensor(buf, XHAL_DTYPE_F32, {4, 2}, 32),
                gb = tensor(buf, XHAL_DTYPE_F32, {4, 2}, 64),
                ga = tensor(buf, XHAL_DTYPE_F32, {7}, 96);
  rec->clear();
  ASSERT_EQ(xhal_csr_solve_backward(dev, a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                    XHAL_DIAGONAL_STORED, &x, &dx, &gb, &ga),
            XHAL_OK)
      << xhal_last_error();
  ASSERT_EQ(xhal_csr_solve_backward(dev, a, XHAL_TRANSPOSE, XHAL_TRIANGLE_LOWER,
                                    XHAL_DIAGONAL_STORED, &x, &dx, &gb, nullptr),
            XHAL_OK)
      << xhal_last_error();
  EXPECT_EQ(rec->last("csr_solve_backward")->tensors[3].rank, 99u) << "ga passed as NULL";
  EXPECT_REJECTED(xhal_csr_solve_backward(dev, a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                          XHAL_DIAGONAL_STORED, &x, &dx, &dx, &ga),
                  XHAL_ALIASING, "'gb'", "'dx'");
  xhal_tensor_t ga_on_gb = tensor(buf, XHAL_DTYPE_F32, {7}, 80);
  EXPECT_REJECTED(xhal_csr_solve_backward(dev, a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                          XHAL_DIAGONAL_STORED, &x, &dx, &gb, &ga_on_gb),
                  XHAL_ALIASING, "'ga'", "'gb'");
  xhal_tensor_t ga6 = f32({6});
  EXPECT_REJECTED(xhal_csr_solve_backward(dev, a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                          XHAL_DIAGONAL_STORED, &x, &dx, &gb, &ga6),
                  XHAL_SHAPE_MISMATCH, "argument 'ga': shape [6] but expected [7]");
}

TEST_F(SparseTest, SpgemmSymbolicPhase) {
  // A 2x3: row 0 {0, 2}, row 1 {1}.  B 3x4: row 0 {1, 3}, row 1 {}, row 2 {0, 1}.
  xhal_csr_t a = csr(2, 3, {0, 2, 3}, {0, 2, 1}, {1, 2, 3});
  xhal_csr_t b = csr(3, 4, {0, 2, 2, 4}, {1, 3, 0, 1}, {1, 1, 1, 1});
  xhal_csr_t c = nullptr;
  rec->clear();
  ASSERT_EQ(xhal_spgemm(dev, a, b, &c), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(rec->matrices.size(), 1u);
  const auto& p = rec->matrices[0];
  EXPECT_EQ(p.rows, 2);
  EXPECT_EQ(p.cols, 4);
  EXPECT_EQ(p.row_ptr, (V{0, 3, 3}));
  EXPECT_EQ(p.col_idx, (V{0, 1, 3}));
  EXPECT_EQ(rec->count("spgemm_numeric"), 1u);
  EXPECT_EQ(rec->last("spgemm_numeric")->dst, rec->last("csr_create")->plan_or_matrix);
  int64_t rows = 0, cols = 0, nnz = 0;
  ASSERT_EQ(xhal_csr_get_shape(c, &rows, &cols, &nnz), XHAL_OK);
  EXPECT_EQ(nnz, 3);
  ASSERT_EQ(xhal_csr_release(c), XHAL_OK);

  EXPECT_REJECTED(xhal_spgemm(dev, a, a, &c), XHAL_SHAPE_MISMATCH, "'b'", "[2, 3]");
  xhal_csr_t b1 = csr(3, 4, {0, 2, 2, 4}, {1, 3, 0, 1}, {}, dev1);
  EXPECT_REJECTED(xhal_spgemm(dev, a, b1, &c), XHAL_WRONG_DEVICE, "'b'");
}

TEST_F(SparseTest, BackendWithoutSparseSlots) {
  xhal_csr_desc_t d = desc(3, 4, rp, ci);
  xhal_csr_t m = nullptr;
  EXPECT_EQ(xhal_csr_create(devmin, &d, &m), XHAL_UNSUPPORTED);
  EXPECT_TRUE(message_has({"recmin"}));
  EXPECT_TRUE(recmin->calls.empty());
}

TEST_F(SparseTest, PluginFailureAtCreationLeavesNothingBehind) {
  const int64_t buffers = rec->live_buffers;
  rec->fail_next_op = XHAL_OUT_OF_MEMORY;
  xhal_csr_desc_t d = desc(3, 4, rp, ci);
  xhal_csr_t m = nullptr;
  EXPECT_EQ(xhal_csr_create(dev, &d, &m), XHAL_OUT_OF_MEMORY);
  EXPECT_TRUE(message_has({"planted failure"}));
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(rec->live_buffers, buffers) << "the values buffer is freed";
  EXPECT_EQ(rec->live_matrices, 0);
  rec->fail_next_op = XHAL_PLUGIN_ERROR;
  const V idx = {0};
  xhal_index_plan_t p = nullptr;
  EXPECT_EQ(xhal_index_plan_create(dev, idx.data(), XHAL_DTYPE_I64, 1, 1, &p), XHAL_PLUGIN_ERROR);
  EXPECT_EQ(p, nullptr);
  // Neither failure left a live object on the device.
  EXPECT_EQ(xhal_device_release(dev), XHAL_OK) << xhal_last_error();
  dev = nullptr;
}

TEST_F(SparseTest, MatricesAndPlansCountAsLiveObjects) {
  xhal_csr_t m = csr(3, 4, rp, ci, vals);
  EXPECT_EQ(xhal_device_release(dev), XHAL_BUSY) << "a live matrix keeps the device";
  ASSERT_EQ(xhal_csr_release(m), XHAL_OK);
  forget(m);
  EXPECT_EQ(rec->count("csr_destroy"), 1u);
  EXPECT_EQ(rec->count("buffer_free"), 1u) << "the values buffer goes with the matrix";
  xhal_index_plan_t p = plan({0}, 1);
  EXPECT_EQ(xhal_device_release(dev), XHAL_BUSY) << "a live plan keeps the device";
  ASSERT_EQ(xhal_index_plan_release(p), XHAL_OK);
  forget(p);
}

}  // namespace
}  // namespace xhal::ops_test
