// SpMV / SpMM conformance: op = A and A^T, alpha/beta (beta == 0 never reads
// a NaN-poisoned y), hub rows and hub columns longer than one 32-term chunk,
// empty rows, chains and confluences, the adjoint identity.
#include "../reference/sparse_device_helpers.h"

#include <cmath>
#include <limits>

namespace xhal::conf::sparse {
namespace {

class SpmvTest : public SparseOpTest<XHAL_OP_SPMV> {};
class SpmmTest : public SparseOpTest<XHAL_OP_SPMM> {};

struct NamedMatrix {
  std::string name;
  Csr a;
};

// Every shape a row or column sum can take: empty rows, a single term,
// repeated rows (confluence), hubs of several chunks on both A and A^T.
std::vector<NamedMatrix> test_matrices(Rng& rng) {
  std::vector<NamedMatrix> m;
  m.push_back({"random 700x500 with hubs", random_matrix(700, 500, rng)});
  m.push_back({"wide 40x1200 (hub rows of 19 chunks)", random_matrix(40, 1200, rng)});
  // Rows of more than 1024 terms (several 32-chunk subtrees: a backend may
  // split a row there, the cuda plugin does): hub rows of A, every row of A^T.
  m.push_back({"wide 12x5000 (hub rows of 79 chunks)", random_matrix(12, 5000, rng)});
  m.push_back({"tall 5000x12 (A^T rows of 40-100 chunks)", random_matrix(5000, 12, rng)});
  m.push_back({"chain 300", chain(300, rng)});
  m.push_back({"confluence 300", confluence(300, rng)});
  m.push_back({"river 3000", river_tree(3000, rng)});
  return m;
}

struct AlphaBeta {
  float alpha, beta;
};
constexpr AlphaBeta kAlphaBeta[] = {{1.0f, 0.0f}, {-1.5f, 0.0f}, {0.75f, -1.25f}, {1.0f, 1.0f}};

// One spmv/spmm call checked against both references. y is NaN-poisoned
// when beta == 0 (it must not be read).
void check_case(xhal_device_t dev, const Csr& a, xhal_dtype_t index_dtype, xhal_transpose_t trans,
                AlphaBeta ab, int64_t k, bool spmv, LevelTracker& level, Rng& rng,
                const std::string& label) {
  SCOPED_TRACE(label);
  BufferGuard g;
  Matrix m;
  ASSERT_EQ(create_from_host(dev, a, index_dtype, m), XHAL_OK) << xhal_last_error();
  const int64_t rows = op_rows(a, trans), cols = op_cols(a, trans);
  const auto x = random_values(rng, cols * k);
  const auto y0 = ab.beta == 0.0f ? std::vector<float>() : random_values(rng, rows * k);
  const xhal_tensor_t xt = dense(dev, g, x, dense_shape(cols, k, spmv));
  const xhal_tensor_t yt = ab.beta == 0.0f ? poisoned(dev, g, rows * k, dense_shape(rows, k, spmv))
                                           : dense(dev, g, y0, dense_shape(rows, k, spmv));
  auto call = [&] {
    return spmv ? xhal_spmv(dev, m.get(), trans, ab.alpha, &xt, ab.beta, &yt)
                : xhal_spmm(dev, m.get(), trans, ab.alpha, &xt, ab.beta, &yt);
  };
  ASSERT_EQ(run_on_device(dev, call), XHAL_OK);
  const auto got = read(yt);
  expect_within("y vs float64", got,
                spmm_f64(a, trans, ab.alpha, to_f64(x), ab.beta, to_f64(y0), k),
                spmm_bound(a, trans, ab.alpha, x, ab.beta, y0, k));
  level.compare("y", got, spmm_canonical(a, trans, ab.alpha, x, ab.beta, y0, k), [&] {
    if (ab.beta == 0.0f) poison(yt.buffer);
    else rewrite(yt, y0);
    EXPECT_EQ(call(), XHAL_OK);
    return read(yt);
  });
}

std::string label_of(const std::string& name, xhal_dtype_t idx, xhal_transpose_t t, AlphaBeta ab,
                     int64_t k) {
  return name + ", " + index_name(idx) + ", op " + trans_name(t) + ", alpha " +
         std::to_string(ab.alpha) + ", beta " + std::to_string(ab.beta) + ", k " +
         std::to_string(k);
}

TEST_P(SpmvTest, AlphaBetaBothOpsAgainstReferences) {
  LevelTracker level(XHAL_OP_SPMV);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  int variant = 0;
  for (const auto& nm : test_matrices(rng))
    for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
      for (const auto ab : kAlphaBeta) {
        const auto idx = (variant++ % 2) ? XHAL_DTYPE_I32 : XHAL_DTYPE_I64;
        check_case(dev, nm.a, idx, trans, ab, 1, true, level, rng,
                   label_of(nm.name, idx, trans, ab, 1));
      }
}

TEST_P(SpmmTest, AlphaBetaBothOpsAgainstReferences) {
  LevelTracker level(XHAL_OP_SPMM);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  int variant = 0;
  for (const auto& nm : test_matrices(rng))
    for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
      for (int64_t k : {1, 3, 8, 33, 64})
        for (const auto ab : {kAlphaBeta[1], kAlphaBeta[2]}) {
          const auto idx = (variant++ % 2) ? XHAL_DTYPE_I32 : XHAL_DTYPE_I64;
          check_case(dev, nm.a, idx, trans, ab, k, false, level, rng,
                     label_of(nm.name, idx, trans, ab, k));
        }
}

// An all-empty matrix: every row sum is +0.0, so y = alpha * +0 (-0 for a
// negative alpha) and a NaN y must still not leak.
TEST_P(SpmvTest, EmptyRowsGiveSignedZero) {
  LevelTracker level(XHAL_OP_SPMV);
  Csr a;
  a.rows = 5;
  a.cols = 4;
  a.row_ptr.assign(6, 0);
  BufferGuard g;
  Matrix m;
  ASSERT_EQ(create_from_host(dev, a, XHAL_DTYPE_I64, m), XHAL_OK) << xhal_last_error();
  const xhal_tensor_t xt = dense(dev, g, {1.f, 2.f, 3.f, 4.f}, {4});
  const xhal_tensor_t yt = poisoned(dev, g, 5, {5});
  ASSERT_EQ(
      run_on_device(
          dev, [&] { return xhal_spmv(dev, m.get(), XHAL_TRANSPOSE_NONE, -2.0f, &xt, 0.0f, &yt); }),
      XHAL_OK);
  const auto got = read(yt);
  for (float v : got) EXPECT_EQ(bits(v), bits(-0.0f)) << describe(v);
}

// Rows and columns whose products are all -0 (values -0, x positive): a
// sum from +0 is +0 there, so y = alpha * +0 (+ beta * y); a backend whose
// compiler drops the +0 (0 + t -> t) gives -0 and flips y's sign. Both ops,
// k = 1 (spmv) and 3 (spmm), rows of one chunk and of several.
TEST_P(SpmvTest, SignedZeroProducts) {
  XHAL_CONF_REQUIRE_ALSO(XHAL_OP_SPMM);
  LevelTracker level(XHAL_OP_SPMV);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  Csr a = random_matrix(400, 300, rng);
  std::vector<bool> zero_row(a.rows), zero_col(a.cols);
  for (int64_t i = 0; i < a.rows; ++i) zero_row[i] = rng.chance(0.3);
  for (int64_t j = 0; j < a.cols; ++j) zero_col[j] = rng.chance(0.3);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e)
      if (zero_row[i] || zero_col[a.col_idx[e]]) a.values[e] = -0.0f;
  BufferGuard g;
  Matrix m;
  ASSERT_EQ(create_from_host(dev, a, XHAL_DTYPE_I32, m), XHAL_OK) << xhal_last_error();
  for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
    for (int64_t k : {1, 3})
      for (const auto ab : {kAlphaBeta[0], kAlphaBeta[2]}) {
        SCOPED_TRACE(label_of("signed-zero products 400x300", XHAL_DTYPE_I32, trans, ab, k));
        const int64_t rows = op_rows(a, trans), cols = op_cols(a, trans);
        auto x = random_values(rng, cols * k);
        for (auto& v : x) v = std::fabs(v);
        const auto y0 = ab.beta == 0.0f ? std::vector<float>() : random_values(rng, rows * k);
        const bool spmv = k == 1;
        const xhal_tensor_t xt = dense(dev, g, x, dense_shape(cols, k, spmv));
        const xhal_tensor_t yt = ab.beta == 0.0f
                                     ? poisoned(dev, g, rows * k, dense_shape(rows, k, spmv))
                                     : dense(dev, g, y0, dense_shape(rows, k, spmv));
        auto call = [&] {
          return spmv ? xhal_spmv(dev, m.get(), trans, ab.alpha, &xt, ab.beta, &yt)
                      : xhal_spmm(dev, m.get(), trans, ab.alpha, &xt, ab.beta, &yt);
        };
        ASSERT_EQ(run_on_device(dev, call), XHAL_OK);
        level.compare("y", read(yt), spmm_canonical(a, trans, ab.alpha, x, ab.beta, y0, k), [&] {
          if (ab.beta == 0.0f) poison(yt.buffer);
          else rewrite(yt, y0);
          EXPECT_EQ(call(), XHAL_OK);
          return read(yt);
        });
      }
}

// A matrix with no rows: A x writes nothing (y is empty) and A^T x is all
// +0.0 (alpha = 1, beta = 0) over the NaN-poisoned y.
TEST_P(SpmvTest, ZeroRowMatrix) {
  LevelTracker level(XHAL_OP_SPMV);
  Csr a;
  a.rows = 0;
  a.cols = 4;
  BufferGuard g;
  Matrix m;
  ASSERT_EQ(create_from_host(dev, a, XHAL_DTYPE_I32, m), XHAL_OK) << xhal_last_error();
  const xhal_tensor_t x4 = dense(dev, g, {1.f, 2.f, 3.f, 4.f}, {4});
  const xhal_tensor_t y0 = poisoned(dev, g, 1, {0});
  ASSERT_EQ(
      run_on_device(
          dev, [&] { return xhal_spmv(dev, m.get(), XHAL_TRANSPOSE_NONE, 1.0f, &x4, 0.0f, &y0); },
          false, 0),  // y is empty: the core returns before the plugin
      XHAL_OK);
  EXPECT_TRUE(is_poison(download<float>(y0.buffer, 1)[0])) << "an empty y was written";
  const xhal_tensor_t x0 = poisoned(dev, g, 1, {0});
  const xhal_tensor_t y4 = poisoned(dev, g, 4, {4});
  ASSERT_EQ(run_on_device(
                dev, [&] { return xhal_spmv(dev, m.get(), XHAL_TRANSPOSE, 1.0f, &x0, 0.0f, &y4); }),
            XHAL_OK);
  for (float v : read(y4)) EXPECT_EQ(bits(v), bits(+0.0f)) << describe(v);
}

// One hub row and one hub column of 300,000 terms (9,375 chunks of 32,
// combined by a tree padded to 16,384): the canonical order must survive
// whatever splitting of a long row a backend does.
TEST_P(SpmvTest, HubOf300000Terms) {
  LevelTracker level(XHAL_OP_SPMV);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  constexpr int64_t kHub = 300000;
  std::vector<std::vector<int64_t>> rows(3);
  for (int64_t j = 0; j < kHub; ++j) rows[1].push_back(j);
  rows[0] = {5, kHub - 1};
  Csr a = from_row_lists(3, kHub, std::move(rows));
  a.values = random_values(rng, a.nnz());
  for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
    for (const auto ab : {kAlphaBeta[0], kAlphaBeta[2]})
      check_case(dev, a, XHAL_DTYPE_I32, trans, ab, 1, true, level, rng,
                 label_of("hub 3x300000", XHAL_DTYPE_I32, trans, ab, 1));
}

// Rows on both sides of 4096 terms (128 chunks, where a backend may switch
// from one warp to a block per row: the cuda plugin does), of every
// power-of-two padding from 256 to 4096 chunks, with short rows between
// them, on both ops (A^T turns the hubs into many short columns and the
// short rows into a few long ones).
TEST_P(SpmvTest, RowsAroundBlockPerRowThreshold) {
  LevelTracker level(XHAL_OP_SPMV);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  constexpr int64_t kCols = 131100;
  const int64_t lengths[] = {3,    4096, 7,    4097,  4127, 4128,  4129,   0,
                             5000, 8192, 8193, 16385, 33,   65537, 131072, 2};
  std::vector<std::vector<int64_t>> rows;
  for (int64_t len : lengths) {
    std::vector<int64_t> cols;
    // Evenly spread columns, starting at a row-dependent offset.
    const int64_t step = len ? kCols / len : 1, first = rows.size() % (step ? step : 1);
    for (int64_t j = 0; j < len; ++j) cols.push_back(first + j * step);
    rows.push_back(std::move(cols));
  }
  const auto n = static_cast<int64_t>(rows.size());  // before rows is moved
  Csr a = from_row_lists(n, kCols, std::move(rows));
  a.values = random_values(rng, a.nnz());
  for (size_t e = 0; e < a.values.size(); e += 3) a.values[e] = -a.values[e];
  for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
    for (const auto ab : {kAlphaBeta[0], kAlphaBeta[2]})
      check_case(dev, a, XHAL_DTYPE_I32, trans, ab, 1, true, level, rng,
                 label_of("rows around 4096 terms", XHAL_DTYPE_I32, trans, ab, 1));
}

// Rows of more than 32 terms (some of more than 1024) between short rows,
// 0 to 6 of them in each group of 256 consecutive rows, where a backend may
// process a group of rows together (the cuda plugin's tiles skip up to 4
// such rows' terms and load all of them past that); the same matrix called
// twice with new x, so that state a backend keeps between calls (the cuda
// plugin's per-row counters of a split row) is checked too.
TEST_P(SpmvTest, LongRowsAmongShortOnesCalledTwice) {
  LevelTracker level(XHAL_OP_SPMV);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  constexpr int64_t kCols = 5000, kGroup = 256;
  const int64_t long_lengths[] = {33, 1025, 100, 3000, 2049, 40, 1024};
  std::vector<std::vector<int64_t>> rows;
  for (int64_t g = 0; g <= 6; ++g)
    for (int64_t i = 0; i < kGroup; ++i) {
      // Positions 7, 48, 89, ...: the first g of them are long in group g.
      const bool is_long = i % 41 == 7 && i / 41 < g;
      const int64_t len = is_long ? long_lengths[(g + i / 41) % 7] : rng.integer(0, 19);
      std::vector<int64_t> cols;
      const int64_t step = len && kCols / len > 1 ? kCols / len : 1;
      for (int64_t j = 0, c = rng.integer(0, step - 1); j < len && c < kCols; ++j, c += step)
        cols.push_back(is_long ? c : rng.integer(j * (kCols / 20), (j + 1) * (kCols / 20) - 1));
      rows.push_back(std::move(cols));
    }
  const auto n = static_cast<int64_t>(rows.size());
  Csr a = from_row_lists(n, kCols, std::move(rows));
  a.values = random_values(rng, a.nnz());
  for (size_t e = 0; e < a.values.size(); e += 3) a.values[e] = -a.values[e];
  for (auto idx : {XHAL_DTYPE_I32, XHAL_DTYPE_I64})
    for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE}) {
      SCOPED_TRACE(std::string(index_name(idx)) + ", op " + trans_name(trans));
      Matrix m;
      ASSERT_EQ(create_from_host(dev, a, idx, m), XHAL_OK) << xhal_last_error();
      const int64_t rows_out = op_rows(a, trans), cols_in = op_cols(a, trans);
      for (int call_no = 0; call_no < 2; ++call_no) {
        SCOPED_TRACE("call " + std::to_string(call_no + 1));
        BufferGuard g;
        const auto x = random_values(rng, cols_in), y0 = random_values(rng, rows_out);
        const xhal_tensor_t xt = dense(dev, g, x, {cols_in}), yt = dense(dev, g, y0, {rows_out});
        auto call = [&] { return xhal_spmv(dev, m.get(), trans, 0.75f, &xt, -1.25f, &yt); };
        ASSERT_EQ(run_on_device(dev, call), XHAL_OK);
        level.compare("y", read(yt), spmm_canonical(a, trans, 0.75f, x, -1.25f, y0, 1), [&] {
          rewrite(yt, y0);
          EXPECT_EQ(call(), XHAL_OK);
          return read(yt);
        });
      }
    }
}

// The buffer b, uploaded from `host`, is unchanged outside y's elements
// [y_at, y_at + y_count).
void expect_only_y_written(xhal_buffer_t b, const std::vector<float>& host, int64_t y_at,
                           int64_t y_count) {
  const auto all = download<float>(b, host.size());
  for (size_t i = 0; i < host.size(); ++i) {
    if (i < size_t(y_at) || i >= size_t(y_at + y_count)) {
      ASSERT_EQ(bits(all[i]), bits(host[i])) << "element " << i << " outside y was written";
    }
  }
}

// Operands at byte offsets inside one shared buffer (disjoint ranges).
TEST_P(SpmvTest, OperandsAtOffsetsInOneBuffer) {
  LevelTracker level(XHAL_OP_SPMV);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr a = random_matrix(50, 30, rng);
  Matrix m;
  ASSERT_EQ(create_from_host(dev, a, XHAL_DTYPE_I64, m), XHAL_OK) << xhal_last_error();
  const auto x = random_values(rng, a.cols), y0 = random_values(rng, a.rows);
  std::vector<float> host(3 + a.cols + 5 + a.rows, 9.0f);
  std::copy(x.begin(), x.end(), host.begin() + 3);
  std::copy(y0.begin(), y0.end(), host.begin() + 3 + a.cols + 5);
  BufferGuard g;
  const xhal_buffer_t b = g.add(upload(dev, host));
  const xhal_tensor_t xt = tensor(b, XHAL_DTYPE_F32, {a.cols}, 3 * 4);
  const xhal_tensor_t yt = tensor(b, XHAL_DTYPE_F32, {a.rows}, (3 + a.cols + 5) * 4);
  auto call = [&] { return xhal_spmv(dev, m.get(), XHAL_TRANSPOSE_NONE, 0.75f, &xt, -1.25f, &yt); };
  ASSERT_EQ(run_on_device(dev, call), XHAL_OK);
  expect_only_y_written(b, host, 3 + a.cols + 5, a.rows);
  const auto got = read(yt);
  level.compare("y", got, spmm_canonical(a, XHAL_TRANSPOSE_NONE, 0.75f, x, -1.25f, y0, 1), [&] {
    rewrite(yt, y0);
    EXPECT_EQ(call(), XHAL_OK);
    return read(yt);
  });
}

// spmm with X and Y at every 4-byte offset of a 16-byte group inside one
// buffer, k a multiple of 4 and not: a backend that reads rows of X or
// writes rows of Y as wider vectors must fall back where they are not
// aligned (a misaligned vector access faults on a GPU), and nothing outside
// Y may change. Both ops, beta 0 (Y poisoned first) and not.
TEST_P(SpmmTest, OperandsAtEveryAlignment) {
  LevelTracker level(XHAL_OP_SPMM);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr a = random_matrix(70, 50, rng);
  Matrix m;
  ASSERT_EQ(create_from_host(dev, a, XHAL_DTYPE_I32, m), XHAL_OK) << xhal_last_error();
  for (int64_t k : {4, 8, 12, 6})
    for (int64_t shift : {0, 1, 2, 3})
      for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
        for (const auto ab : {kAlphaBeta[1], kAlphaBeta[2]}) {
          SCOPED_TRACE("k " + std::to_string(k) + ", elements of offset " + std::to_string(shift) +
                       ", op " + trans_name(trans) + ", beta " + std::to_string(ab.beta));
          const int64_t rows = op_rows(a, trans), cols = op_cols(a, trans);
          const auto x = random_values(rng, cols * k);
          const auto y0 = random_values(rng, rows * k);
          // [shift pad][x][pad][y][7 pad], y at the offset of x modulo 4.
          const int64_t x_at = shift, y_at = shift + cols * k + 8 - (cols * k) % 4 + 4;
          std::vector<float> host(static_cast<size_t>(y_at + rows * k + 7), 9.0f);
          std::copy(x.begin(), x.end(), host.begin() + x_at);
          std::copy(y0.begin(), y0.end(), host.begin() + y_at);
          BufferGuard g;
          const xhal_buffer_t b = g.add(upload(dev, host));
          const xhal_tensor_t xt = tensor(b, XHAL_DTYPE_F32, {cols, k}, x_at * 4);
          const xhal_tensor_t yt = tensor(b, XHAL_DTYPE_F32, {rows, k}, y_at * 4);
          if (ab.beta == 0.0f) {
            const std::vector<float> nan(static_cast<size_t>(rows * k),
                                         std::numeric_limits<float>::quiet_NaN());
            rewrite(yt, nan);
          }
          auto call = [&] { return xhal_spmm(dev, m.get(), trans, ab.alpha, &xt, ab.beta, &yt); };
          ASSERT_EQ(run_on_device(dev, call), XHAL_OK) << xhal_last_error();
          expect_only_y_written(b, host, y_at, rows * k);
          const std::vector<float> y_in = ab.beta == 0.0f ? std::vector<float>() : y0;
          level.compare("y", read(yt), spmm_canonical(a, trans, ab.alpha, x, ab.beta, y_in, k),
                        [&] {
                          rewrite(yt, y0);
                          EXPECT_EQ(call(), XHAL_OK);
                          return read(yt);
                        });
        }
}

// <A x, y> = <x, A^T y>, both sides from device results, evaluated in
// float64, within the sum of the two products' spmv bounds.
TEST_P(SpmvTest, AdjointIdentity) {
  LevelTracker level(XHAL_OP_SPMV);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  for (const auto& nm : test_matrices(rng)) {
    SCOPED_TRACE(nm.name);
    const Csr& a = nm.a;
    BufferGuard g;
    Matrix m;
    ASSERT_EQ(create_from_host(dev, a, XHAL_DTYPE_I32, m), XHAL_OK) << xhal_last_error();
    const auto x = random_values(rng, a.cols), y = random_values(rng, a.rows);
    const xhal_tensor_t xt = dense(dev, g, x, {a.cols}), yt = dense(dev, g, y, {a.rows});
    const xhal_tensor_t ax = poisoned(dev, g, a.rows, {a.rows});
    const xhal_tensor_t aty = poisoned(dev, g, a.cols, {a.cols});
    ASSERT_EQ(
        run_on_device(
            dev,
            [&] { return xhal_spmv(dev, m.get(), XHAL_TRANSPOSE_NONE, 1.0f, &xt, 0.0f, &ax); }),
        XHAL_OK);
    ASSERT_EQ(
        run_on_device(
            dev, [&] { return xhal_spmv(dev, m.get(), XHAL_TRANSPOSE, 1.0f, &yt, 0.0f, &aty); }),
        XHAL_OK);
    const auto axv = read(ax), atyv = read(aty);
    const auto ax_bound = spmm_bound(a, XHAL_TRANSPOSE_NONE, 1.0f, x, 0.0f, {}, 1);
    const auto aty_bound = spmm_bound(a, XHAL_TRANSPOSE, 1.0f, y, 0.0f, {}, 1);
    double lhs = 0, rhs = 0, bound = 0, scale = 0;
    for (int64_t i = 0; i < a.rows; ++i) {
      lhs += double(axv[i]) * y[i];
      bound += std::fabs(double(y[i])) * ax_bound[i];
      scale += std::fabs(double(axv[i]) * y[i]);
    }
    for (int64_t j = 0; j < a.cols; ++j) {
      rhs += double(x[j]) * atyv[j];
      bound += std::fabs(double(x[j])) * aty_bound[j];
      scale += std::fabs(double(x[j]) * atyv[j]);
    }
    bound += 1e-12 * scale;  // the float64 dot products themselves
    EXPECT_LE(std::fabs(lhs - rhs), bound) << "<Ax,y> = " << lhs << ", <x,A^T y> = " << rhs;
    level.compare("A x", axv, spmm_canonical(a, XHAL_TRANSPOSE_NONE, 1.0f, x, 0.0f, {}, 1), [&] {
      poison(ax.buffer);
      EXPECT_EQ(xhal_spmv(dev, m.get(), XHAL_TRANSPOSE_NONE, 1.0f, &xt, 0.0f, &ax), XHAL_OK);
      return read(ax);
    });
    level.compare("A^T y", atyv, spmm_canonical(a, XHAL_TRANSPOSE, 1.0f, y, 0.0f, {}, 1), [&] {
      poison(aty.buffer);
      EXPECT_EQ(xhal_spmv(dev, m.get(), XHAL_TRANSPOSE, 1.0f, &yt, 0.0f, &aty), XHAL_OK);
      return read(aty);
    });
  }
}

XHAL_CONF_INSTANTIATE(SpmvTest);
XHAL_CONF_INSTANTIATE(SpmmTest);

}  // namespace
}  // namespace xhal::conf::sparse
