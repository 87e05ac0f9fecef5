// A CSR matrix created from device buffers (xhal_csr_desc_t's
// row_ptr_buffer, col_idx_buffer, values_buffer) behaves exactly like the
// same matrix created from host arrays, whoever validates and analyses the
// pattern (the core after a read-back, or the plugin on the device): the
// same xhal_csr_read, bit-identical spmv, spmm, solves, solve backward and
// SpGEMM products, and for a bad pattern or a solve-time structure fault
// the same status and the same message text, naming the first offending
// row. Each pair is made from one host Csr (CsrDevicePatternTest); after
// creation the desc buffers must be unchanged, and they are then poisoned:
// the matrix may not depend on them any more. Outputs are poisoned before
// every call.
//
// Mutation checks (planted in this file for the buffer twin only, run on
// cpu with --require-bit-exact, then undone):
//  - two values of the longest row swapped in the buffer upload:
//    LongRowsSpmvSpmmMatchHostCreated, TriangularSolvesMatchHostCreated,
//    SpgemmOfDevicePatternMatrices and (its unit-diagonal solves)
//    TriangleAndDiagonalFaultsSameAsHost fail;
//  - one column of the longest row moved right into a gap in the buffer
//    upload: the same four fail (read-back, op bits, the fault message's
//    column);
//  - i64 indices narrowed to 32 bits for the buffer upload (a device
//    validator reading i64 as i32): BadPatternMessagesSameAsHost fails on
//    exactly its four 2^32 cases (status XHAL_OK, no message, a handle);
//  - the row-7 fault left out of the buffer copy of the first fault case:
//    TriangleAndDiagonalFaultsSameAsHost fails (the message names row 40);
//  - alpha -1 instead of 1 for the buffer twin's spmv/spmm:
//    EmptyAndDegenerate fails (-0 against +0 in the empty rows).
#include <regex>

#include "../reference/sparse_device_helpers.h"

namespace xhal::conf::sparse {
namespace {

// Each test states the ops it calls; the bad-pattern test needs only CSR
// matrices (a device without any sparse op: unsupported).
class CsrDevicePatternTest : public DeviceTest {};

constexpr int64_t k2Pow32 = int64_t(1) << 32;

// One pattern as two matrices: from host arrays and from device buffers.
struct Twins {
  BufferGuard desc_buffers;
  Matrix host, from_buffers;
};

// The desc buffers hold what was uploaded: creation read them, never wrote.
void expect_desc_unchanged(const xhal_csr_desc_t& d, const Csr& a, xhal_dtype_t idx) {
  const auto rp = index_bytes(a.row_ptr, idx), ci = index_bytes(a.col_idx, idx);
  EXPECT_TRUE(download_bytes(d.row_ptr_buffer, 0, rp.size()) == rp)
      << "xhal_csr_create wrote into desc.row_ptr_buffer";
  if (d.col_idx_buffer) {
    EXPECT_TRUE(download_bytes(d.col_idx_buffer, 0, ci.size()) == ci)
        << "xhal_csr_create wrote into desc.col_idx_buffer";
  }
  if (d.values_buffer) {
    EXPECT_TRUE(same_bits(download<float>(d.values_buffer, a.values.size()), a.values))
        << "xhal_csr_create wrote into desc.values_buffer";
  }
}

// `edit` may change the buffers' desc (e.g. drop buffers of nnz = 0).
void create_twins(xhal_device_t dev, const Csr& a, xhal_dtype_t idx, Twins& t,
                  const std::function<void(xhal_csr_desc_t&)>& edit = {}) {
  ASSERT_EQ(create_from_host(dev, a, idx, t.host), XHAL_OK)
      << "from host arrays: " << xhal_last_error();
  xhal_csr_desc_t d = buffers_desc(dev, a, idx, t.desc_buffers);
  if (edit) edit(d);
  ASSERT_EQ(xhal_csr_create(dev, &d, t.from_buffers.out()), XHAL_OK)
      << "from device buffers: " << xhal_last_error();
  expect_desc_unchanged(d, a, idx);
  for (auto b : t.desc_buffers.bufs) poison(b);
}

// A matrix as xhal_csr_read gives it, indices in its own index dtype.
struct ReadBack {
  int64_t rows = -1, cols = -1, nnz = -1;
  xhal_dtype_t index_dtype = XHAL_DTYPE_INVALID;
  std::vector<uint8_t> row_ptr, col_idx;
  std::vector<float> values;
};

ReadBack read_back(xhal_csr_t m) {
  ReadBack r;
  if (xhal_csr_get_shape(m, &r.rows, &r.cols, &r.nnz) != XHAL_OK ||
      xhal_csr_get_index_dtype(m, &r.index_dtype) != XHAL_OK) {
    ADD_FAILURE() << "shape or index dtype: " << xhal_last_error();
    return r;
  }
  const size_t isz = r.index_dtype == XHAL_DTYPE_I64 ? 8 : 4;
  r.row_ptr.resize((r.rows + 1) * isz);
  r.col_idx.resize(r.nnz * isz);
  r.values.resize(r.nnz);
  EXPECT_EQ(xhal_csr_read(m, r.row_ptr.data(), r.col_idx.data(), r.values.data()), XHAL_OK)
      << xhal_last_error();
  return r;
}

ReadBack as_read(const Csr& a, xhal_dtype_t idx) {
  return {a.rows,  a.cols, a.nnz(), idx, index_bytes(a.row_ptr, idx), index_bytes(a.col_idx, idx),
          a.values};
}

// Same shape, index dtype and pattern; the same value bits too unless
// `values` is false.
void expect_same(const ReadBack& got, const ReadBack& want, const std::string& what,
                 bool values = true) {
  EXPECT_EQ(got.rows, want.rows) << what;
  EXPECT_EQ(got.cols, want.cols) << what;
  EXPECT_EQ(got.nnz, want.nnz) << what;
  EXPECT_EQ(got.index_dtype, want.index_dtype) << what;
  EXPECT_TRUE(got.row_ptr == want.row_ptr) << what << ": row_ptr differs";
  EXPECT_TRUE(got.col_idx == want.col_idx) << what << ": col_idx differs";
  if (values) {
    EXPECT_TRUE(same_bits(got.values, want.values))
        << what << ": values " << first_difference(got.values, want.values);
  }
}

void expect_twins_hold(const Twins& t, const Csr& a, xhal_dtype_t idx) {
  expect_same(read_back(t.host.get()), as_read(a, idx), "xhal_csr_read, from host arrays");
  expect_same(read_back(t.from_buffers.get()), as_read(a, idx),
              "xhal_csr_read, from device buffers");
}

std::vector<float> read_all(const std::vector<xhal_tensor_t>& outs) {
  std::vector<float> v;
  for (const auto& o : outs) {
    const auto part = read(o);
    v.insert(v.end(), part.begin(), part.end());
  }
  return v;
}

// Runs `op` with each twin (outputs poisoned first) on the device: no host
// transfer, `launches` kernel launches. The outputs (concatenated) from the
// matrix made of device buffers must have the bits of the host-created
// one's, which are returned; `level` compares those with `canonical` when
// given.
std::vector<float> run_twins(xhal_device_t dev, const Twins& t,
                             const std::vector<xhal_tensor_t>& outs,
                             const std::function<xhal_status_t(xhal_csr_t)>& op,
                             const std::string& what, LevelTracker* level = nullptr,
                             const std::vector<float>& canonical = {}, uint64_t launches = 1) {
  SCOPED_TRACE(what);
  auto once = [&](xhal_csr_t m) {
    for (const auto& o : outs) poison(o.buffer);
    return run_on_device(
               dev, [&] { return op(m); }, false, launches) == XHAL_OK
               ? read_all(outs)
               : std::vector<float>();
  };
  const auto want = once(t.host.get());
  const auto got = once(t.from_buffers.get());
  EXPECT_FALSE(any_poison(got)) << what << ": output not fully written (device buffers)";
  EXPECT_TRUE(same_bits(got, want))
      << what << ": the matrix from device buffers against the one from host arrays: "
      << first_difference(got, want);
  if (level)
    level->compare(what, want, canonical, [&] {
      for (const auto& o : outs) poison(o.buffer);
      EXPECT_EQ(op(t.host.get()), XHAL_OK) << xhal_last_error();
      return read_all(outs);
    });
  return want;
}

// `len` distinct entries of `pool` (which is reordered: a partial shuffle).
std::vector<int64_t> draw(Rng& rng, std::vector<int64_t>& pool, int64_t len) {
  len = std::min<int64_t>(len, static_cast<int64_t>(pool.size()));
  for (int64_t i = 0; i < len; ++i)
    std::swap(pool[i], pool[rng.integer(i, static_cast<int64_t>(pool.size()) - 1)]);
  return {pool.begin(), pool.begin() + len};
}

// 300 x 5000. Rows of 0, 1, 31, 32, 33, 1023, 1024, 1025 and 3000 entries
// (the edges of 32-term chunks and of 1024-entry blocks) among rows of 0-40
// entries plus column 7 in nine rows out of ten (an A^T row of ~270);
// columns 0, 1, 2500, 4999 and up to 20 random ones stay empty; 1% of the
// values are -0.
Csr long_rows_matrix(Rng& rng) {
  const int64_t rows = 300, cols = 5000;
  std::vector<char> empty(cols, 0);
  for (int64_t c : {0, 1, 2500, 4999}) empty[c] = 1;
  for (int i = 0; i < 20; ++i) empty[rng.integer(2, cols - 2)] = 1;
  std::vector<int64_t> pool;
  for (int64_t c = 0; c < cols; ++c)
    if (!empty[c] && c != 7) pool.push_back(c);
  const std::pair<int64_t, int64_t> special[] = {{0, 1025},   {17, 31},    {50, 32},    {51, 33},
                                                 {120, 1023}, {121, 1024}, {122, 3000}, {200, 1},
                                                 {250, 0},    {299, 0}};
  std::vector<int64_t> len(rows, -1);
  for (auto [row, n] : special) len[row] = n;
  std::vector<std::vector<int64_t>> lists(rows);
  for (int64_t i = 0; i < rows; ++i) {
    if (len[i] >= 0) {
      lists[i] = draw(rng, pool, len[i]);
      continue;
    }
    lists[i] = draw(rng, pool, rng.integer(0, 40));
    if (rng.chance(0.9)) lists[i].push_back(7);
  }
  Csr a = from_row_lists(rows, cols, std::move(lists));
  a.values = random_values(rng, a.nnz());
  for (auto& v : a.values)
    if (rng.chance(0.01)) v = -0.0f;
  return a;
}

// Row lists of an n x n triangular pattern with its diagonal: a fifth of
// the rows hold the diagonal only, most others 1-6 off-diagonal entries,
// rows 25, 75, 125, ... 33-200 (more than one 32-term chunk where the
// triangle leaves room).
std::vector<std::vector<int64_t>> triangular_rows(int64_t n, xhal_triangle_t triangle, Rng& rng) {
  const bool lower = triangle == XHAL_TRIANGLE_LOWER;
  std::vector<std::vector<int64_t>> rows(n);
  std::vector<int64_t> pool;
  for (int64_t i = 0; i < n; ++i) {
    pool.clear();
    for (int64_t j = lower ? 0 : i + 1; j < (lower ? i : n); ++j) pool.push_back(j);
    int64_t len = rng.chance(0.2) ? 0 : rng.integer(1, 6);
    if (i % 50 == 25) len = rng.integer(33, 200);
    rows[i] = draw(rng, pool, len);
    rows[i].push_back(i);
  }
  return rows;
}

Csr with_dominant_values(std::vector<std::vector<int64_t>> lists, Rng& rng) {
  const auto n = static_cast<int64_t>(lists.size());
  Csr a = from_row_lists(n, n, std::move(lists));
  a.values = dominant_values(a, rng);
  return a;
}

bool names_row(const std::string& msg, int64_t row) {
  return std::regex_search(msg, std::regex("\\b[Rr]ow " + std::to_string(row) + "\\b"));
}

TEST_P(CsrDevicePatternTest, LongRowsSpmvSpmmMatchHostCreated) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SPMV);
  XHAL_CONF_REQUIRE_ALSO(XHAL_OP_SPMM);
  LevelTracker level(XHAL_OP_SPMV);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const Csr a = long_rows_matrix(rng);
  for (auto idx : {XHAL_DTYPE_I32, XHAL_DTYPE_I64}) {
    SCOPED_TRACE(index_name(idx));
    Twins t;
    create_twins(dev, a, idx, t);
    if (HasFatalFailure()) return;
    expect_twins_hold(t, a, idx);
    for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
      for (int64_t k : {1, 8}) {
        const std::string what = std::string(k == 1 ? "spmv " : "spmm k 8 ") + trans_name(trans);
        const int64_t rows = op_rows(a, trans), cols = op_cols(a, trans);
        const float alpha = k == 1 ? 1.0f : -0.75f;
        const auto x = random_values(rng, cols * k);
        BufferGuard g;
        const xhal_tensor_t xt = dense(dev, g, x, dense_shape(cols, k, k == 1));
        const xhal_tensor_t yt = poisoned(dev, g, rows * k, dense_shape(rows, k, k == 1));
        auto op = [&](xhal_csr_t m) {
          return k == 1 ? xhal_spmv(dev, m, trans, alpha, &xt, 0.0f, &yt)
                        : xhal_spmm(dev, m, trans, alpha, &xt, 0.0f, &yt);
        };
        const auto y = run_twins(dev, t, {yt}, op, what, &level,
                                 spmm_canonical(a, trans, alpha, x, 0.0f, {}, k));
        expect_within(what + " vs float64", y, spmm_f64(a, trans, alpha, to_f64(x), 0.0, {}, k),
                      spmm_bound(a, trans, alpha, x, 0.0f, {}, k));
      }
  }
}

TEST_P(CsrDevicePatternTest, TriangularSolvesMatchHostCreated) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_CSR_SOLVE);
  XHAL_CONF_REQUIRE_ALSO(XHAL_OP_CSR_SOLVE_BACKWARD);
  LevelTracker level(XHAL_OP_CSR_SOLVE);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const int64_t n = 600;
  for (auto triangle : {XHAL_TRIANGLE_LOWER, XHAL_TRIANGLE_UPPER}) {
    const auto idx = triangle == XHAL_TRIANGLE_LOWER ? XHAL_DTYPE_I32 : XHAL_DTYPE_I64;
    SCOPED_TRACE(std::string(tri_name(triangle)) + ", " + index_name(idx));
    const Csr a = with_dominant_values(triangular_rows(n, triangle, rng), rng);
    Twins t;
    create_twins(dev, a, idx, t);
    if (HasFatalFailure()) return;
    expect_twins_hold(t, a, idx);
    for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
      for (auto diagonal : {XHAL_DIAGONAL_STORED, XHAL_DIAGONAL_UNIT})
        for (int64_t k : {1, 3}) {
          const std::string what = std::string(trans_name(trans)) + ", " + diag_name(diagonal) +
                                   " diagonal, k " + std::to_string(k);
          const auto shape = dense_shape(n, k, k == 1);
          const auto b = random_values(rng, n * k);
          const auto x = random_values(rng, n * k), dx = random_values(rng, n * k);
          BufferGuard g;
          const xhal_tensor_t bt = dense(dev, g, b, shape), xin = dense(dev, g, x, shape),
                              dxt = dense(dev, g, dx, shape);
          const xhal_tensor_t xt = poisoned(dev, g, n * k, shape),
                              gbt = poisoned(dev, g, n * k, shape),
                              gat = poisoned(dev, g, a.nnz(), {a.nnz()});
          const auto solved = run_twins(
              dev, t, {xt},
              [&](xhal_csr_t m) {
                return xhal_csr_solve(dev, m, trans, triangle, diagonal, &bt, &xt);
              },
              "solve " + what, &level, solve_canonical(a, trans, triangle, diagonal, b, k));
          if (solved.size() == b.size())
            expect_solve_residual("solve " + what, a, trans, diagonal, solved, b, k);
          const auto grads = run_twins(
              dev, t, {gbt, gat},
              [&](xhal_csr_t m) {
                return xhal_csr_solve_backward(dev, m, trans, triangle, diagonal, &xin, &dxt, &gbt,
                                               &gat);
              },
              "solve_backward " + what);
          if (grads.size() == dx.size() + a.values.size()) {
            const std::vector<float> gb(grads.begin(), grads.begin() + dx.size());
            expect_solve_residual("solve_backward gb " + what, a, flip(trans), diagonal, gb, dx, k);
          }
        }
  }
}

// One structure fault case of the solves: the pattern, the solve's
// triangle and diagonal, and the row the message must name.
struct SolveFault {
  std::string name;
  std::vector<std::vector<int64_t>> lists;
  xhal_triangle_t triangle;
  std::vector<xhal_diagonal_t> diagonals;
  int64_t row;
  bool unit_solves = false;  // only a stored diagonal is missing
};

TEST_P(CsrDevicePatternTest, TriangleAndDiagonalFaultsSameAsHost) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_CSR_SOLVE);
  XHAL_CONF_REQUIRE_ALSO(XHAL_OP_CSR_SOLVE_BACKWARD);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  const int64_t n = 800;
  const auto L = XHAL_TRIANGLE_LOWER, U = XHAL_TRIANGLE_UPPER;
  const auto S = XHAL_DIAGONAL_STORED, D1 = XHAL_DIAGONAL_UNIT;
  const auto lower = triangular_rows(n, L, rng), upper = triangular_rows(n, U, rng);
  auto edited = [](auto lists, const std::function<void(std::vector<std::vector<int64_t>>&)>& f) {
    f(lists);
    return lists;
  };
  auto drop_diagonal = [](std::vector<int64_t>& row, int64_t i) {
    row.erase(std::find(row.begin(), row.end(), i));
  };
  std::vector<SolveFault> cases = {
      {"entries above the diagonal in rows 7 (columns 9, 12) and 40",
       edited(lower,
              [&](auto& l) {
                l[7].insert(l[7].end(), {9, 12});
                l[40].push_back(n - 1);
              }),
       L,
       {S, D1},
       7},
      {"entries below the diagonal in rows 7 (columns 0, 3) and 40",
       edited(upper,
              [&](auto& l) {
                l[7].insert(l[7].end(), {0, 3});
                l[40].push_back(39);
              }),
       U,
       {S, D1},
       7},
      {"no diagonal entry in rows 7 and 40",
       edited(lower,
              [&](auto& l) {
                drop_diagonal(l[7], 7);
                drop_diagonal(l[40], 40);
              }),
       L,
       {S},
       7,
       true},
      // A long row (600 entries before the fault at its end), then a short one.
      {"entries above the diagonal at the end of row 650 (601 entries) and in 651",
       edited(lower,
              [&](auto& l) {
                std::vector<int64_t> pool(650);
                for (int64_t j = 0; j < 650; ++j) pool[j] = j;
                l[650] = draw(rng, pool, 600);
                l[650].insert(l[650].end(), {650, 700});
                l[651].push_back(652);
              }),
       L,
       {S, D1},
       650},
      // The triangle is checked before the diagonal.
      {"no diagonal in row 40, an entry above it in row 300",
       edited(lower,
              [&](auto& l) {
                drop_diagonal(l[40], 40);
                l[300].push_back(301);
              }),
       L,
       {S, D1},
       300},
      {"no diagonal in row 799 (the last)",
       edited(lower, [&](auto& l) { drop_diagonal(l[n - 1], n - 1); }),
       L,
       {S},
       n - 1,
       true},
  };
  // A lower pattern solved as upper: its first row with an off-diagonal entry.
  int64_t first_off = 0;
  while (lower[first_off].size() == 1) ++first_off;
  cases.push_back({"a lower pattern solved as upper", lower, U, {S, D1}, first_off});
  int variant = 0;
  for (const auto& c : cases) {
    const Csr a = with_dominant_values(c.lists, rng);
    const auto idx = (variant++ % 2) ? XHAL_DTYPE_I32 : XHAL_DTYPE_I64;
    SCOPED_TRACE(c.name + ", " + index_name(idx));
    Twins t;
    create_twins(dev, a, idx, t);
    if (HasFatalFailure()) return;
    for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
      for (auto diagonal : c.diagonals)
        for (bool backward : {false, true}) {
          SCOPED_TRACE(std::string(backward ? "solve_backward " : "solve ") + trans_name(trans) +
                       ", " + tri_name(c.triangle) + ", " + diag_name(diagonal) + " diagonal");
          BufferGuard g;
          const xhal_tensor_t bt = dense(dev, g, random_values(rng, n), {n}),
                              dxt = dense(dev, g, random_values(rng, n), {n});
          const xhal_tensor_t xt = poisoned(dev, g, n, {n}), gbt = poisoned(dev, g, n, {n}),
                              gat = poisoned(dev, g, a.nnz(), {a.nnz()});
          std::string msg[2];
          xhal_status_t st[2];
          const xhal_csr_t ms[2] = {t.host.get(), t.from_buffers.get()};
          for (int w = 0; w < 2; ++w) {
            st[w] = backward ? xhal_csr_solve_backward(dev, ms[w], trans, c.triangle, diagonal, &bt,
                                                       &dxt, &gbt, &gat)
                             : xhal_csr_solve(dev, ms[w], trans, c.triangle, diagonal, &bt, &xt);
            msg[w] = st[w] == XHAL_OK ? "" : xhal_last_error();
            for (const auto& out : {xt, gbt, gat})
              for (float v : read(out))
                ASSERT_TRUE(is_poison(v)) << (w ? "device buffers" : "host arrays")
                                          << ": an output was written although the call failed";
          }
          EXPECT_EQ(st[0], XHAL_INVALID_STRUCTURE)
              << "host arrays: " << xhal_status_name(st[0]) << ": " << msg[0];
          EXPECT_TRUE(names_row(msg[0], c.row))
              << "host arrays: message '" << msg[0] << "' does not name row " << c.row;
          EXPECT_EQ(st[1], st[0]) << "device buffers: " << xhal_status_name(st[1]) << ": "
                                  << msg[1];
          EXPECT_EQ(msg[1], msg[0]) << "message from device buffers vs host arrays";
        }
    // A unit diagonal needs none stored: both matrices solve, to the same bits.
    if (c.unit_solves) {
      BufferGuard g;
      const xhal_tensor_t bt = dense(dev, g, random_values(rng, n), {n});
      const xhal_tensor_t xt = poisoned(dev, g, n, {n});
      run_twins(
          dev, t, {xt},
          [&](xhal_csr_t m) {
            return xhal_csr_solve(dev, m, XHAL_TRANSPOSE, c.triangle, D1, &bt, &xt);
          },
          "unit-diagonal solve A^T");
    }
  }
}

// A bad pattern made from a valid one, and the row its message must name.
struct BadCase {
  std::string name;
  std::function<void(Csr&)> plant;
  int64_t row;
  bool i64_only = false;  // an index that needs more than 32 bits
};

TEST_P(CsrDevicePatternTest, BadPatternMessagesSameAsHost) {
  if (!device_has_sparse_ops(dev)) XHAL_CONF_UNSUPPORTED("the device implements no sparse op");
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  // 64 x 3000: rows 5 and 20 of 1500 and 1100 entries, 30-35 empty, the
  // others 6-40.
  const int64_t rows = 64, cols = 3000;
  std::vector<int64_t> pool(cols);
  for (int64_t j = 0; j < cols; ++j) pool[j] = j;
  std::vector<std::vector<int64_t>> lists(rows);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t len = i == 5                 ? 1500
                        : i == 20              ? 1100
                        : (i >= 30 && i <= 35) ? 0
                                               : rng.integer(6, 40);
    lists[i] = draw(rng, pool, len);
  }
  Csr base = from_row_lists(rows, cols, std::move(lists));
  base.values = random_values(rng, base.nnz());
  const int64_t nnz = base.nnz();
  // Entry `pos` of row `i` (pos < 0: from the row's end).
  auto at = [](Csr& a, int64_t i, int64_t pos) -> int64_t& {
    return a.col_idx[pos >= 0 ? a.row_ptr[i] + pos : a.row_ptr[i + 1] + pos];
  };
  const std::vector<BadCase> cases = {
      {"unsorted columns in row 3", [&](Csr& a) { std::swap(at(a, 3, 0), at(a, 3, 1)); }, 3},
      {"duplicate column in row 4", [&](Csr& a) { at(a, 4, 1) = at(a, 4, 0); }, 4},
      {"column == cols at the end of row 9", [&](Csr& a) { at(a, 9, -1) = cols; }, 9},
      {"column 2^31 - 1 at the end of row 9", [&](Csr& a) { at(a, 9, -1) = INT32_MAX; }, 9},
      {"column -1 at the start of row 0", [&](Csr& a) { at(a, 0, 0) = -1; }, 0},
      {"column -2^31 at the end of row 12 (below its previous, and out of range)",
       [&](Csr& a) { at(a, 12, -1) = INT32_MIN; }, 12},
      {"row 13: column past cols at entry 1, unsorted at entry 3",
       [&](Csr& a) {
         at(a, 13, 1) = cols + 1;
         at(a, 13, 3) = at(a, 13, 0);
       },
       13},
      {"long row 5: unsorted at entry 1400, past cols at 1450; row 9 negative",
       [&](Csr& a) {
         at(a, 5, 1400) = at(a, 5, 1398);
         at(a, 5, 1450) = cols + 5;
         at(a, 9, 0) = -3;
       },
       5},
      {"long row 20: past cols at its last entry; row 21 negative",
       [&](Csr& a) {
         at(a, 20, -1) = cols;
         at(a, 21, 0) = -1;
       },
       20},
      {"row 4: duplicate at its end; long row 5 negative at entry 10",
       [&](Csr& a) {
         at(a, 4, -1) = at(a, 4, -2);
         at(a, 5, 10) = -2;
       },
       4},
      {"row 36 after the empty rows 30-35: negative first column; row 40 duplicate",
       [&](Csr& a) {
         at(a, 36, 0) = -7;
         at(a, 40, 1) = at(a, 40, 0);
       },
       36},
      {"last row: past cols at its last entry", [&](Csr& a) { at(a, rows - 1, -1) = cols + 100; },
       rows - 1},
      {"row_ptr[0] = 1", [&](Csr& a) { a.row_ptr[0] = 1; }, 0},
      {"row_ptr[0] = -1", [&](Csr& a) { a.row_ptr[0] = -1; }, 0},
      {"non-monotone row_ptr at row 5", [&](Csr& a) { a.row_ptr[6] = a.row_ptr[5] - 1; }, 5},
      {"negative row_ptr[41]", [&](Csr& a) { a.row_ptr[41] = -5; }, 40},
      {"row_ptr[rows] < nnz", [&](Csr& a) { a.row_ptr[rows] = nnz - 1; }, rows - 1},
      {"row_ptr[rows] > nnz", [&](Csr& a) { a.row_ptr[rows] = nnz + 1; }, rows - 1},
      {"row_ptr[21] past nnz (middle)", [&](Csr& a) { a.row_ptr[21] = nnz + 7; }, 20},
      {"row_ptr[21] = 2^31 - 1", [&](Csr& a) { a.row_ptr[21] = INT32_MAX; }, 20},
      // The row pointers are checked before any column.
      {"negative column in row 2, non-monotone row_ptr at row 50",
       [&](Csr& a) {
         at(a, 2, 0) = -1;
         a.row_ptr[51] = a.row_ptr[50] - 1;
       },
       50},
      // Valid once narrowed to 32 bits.
      {"i64 column 2^32 + c at the end of row 11", [&](Csr& a) { at(a, 11, -1) += k2Pow32; }, 11,
       true},
      {"i64 column c - 2^32 at the start of row 11", [&](Csr& a) { at(a, 11, 0) -= k2Pow32; }, 11,
       true},
      {"i64 row_ptr[21] + 2^32", [&](Csr& a) { a.row_ptr[21] += k2Pow32; }, 20, true},
      {"i64 row_ptr[rows] = nnz + 2^32", [&](Csr& a) { a.row_ptr[rows] = nnz + k2Pow32; }, rows - 1,
       true},
  };
  auto check = [&](const Csr& bad, xhal_dtype_t idx, int64_t row) {
    Matrix mh, mb;
    const xhal_status_t sh = create_from_host(dev, bad, idx, mh);
    const std::string msg_h = sh == XHAL_OK ? "" : xhal_last_error();
    BufferGuard g;
    const xhal_csr_desc_t d = buffers_desc(dev, bad, idx, g);
    const xhal_status_t sb = xhal_csr_create(dev, &d, mb.out());
    const std::string msg_b = sb == XHAL_OK ? "" : xhal_last_error();
    EXPECT_EQ(sh, XHAL_INVALID_STRUCTURE)
        << "host arrays: " << xhal_status_name(sh) << ": " << msg_h;
    EXPECT_TRUE(names_row(msg_h, row))
        << "host arrays: message '" << msg_h << "' does not name row " << row;
    EXPECT_EQ(sb, sh) << "device buffers: " << xhal_status_name(sb) << ": " << msg_b;
    EXPECT_EQ(msg_b, msg_h) << "message from device buffers vs host arrays";
    EXPECT_EQ(mh.get(), nullptr) << "host arrays: a matrix handle was returned";
    EXPECT_EQ(mb.get(), nullptr) << "device buffers: a matrix handle was returned";
    expect_desc_unchanged(d, bad, idx);
  };
  for (const auto& c : cases)
    for (auto idx : {XHAL_DTYPE_I32, XHAL_DTYPE_I64}) {
      if (c.i64_only && idx == XHAL_DTYPE_I32) continue;
      SCOPED_TRACE(c.name + ", " + index_name(idx));
      Csr bad = base;
      c.plant(bad);
      check(bad, idx, c.row);
    }
  // No entries at all, yet row_ptr ends at 1 (col_idx is a 0-byte buffer).
  Csr none;
  none.rows = 4;
  none.cols = 4;
  none.row_ptr = {0, 0, 0, 0, 1};
  for (auto idx : {XHAL_DTYPE_I32, XHAL_DTYPE_I64}) {
    SCOPED_TRACE(std::string("nnz 0, row_ptr[rows] = 1, ") + index_name(idx));
    check(none, idx, 3);
  }
}

TEST_P(CsrDevicePatternTest, SpgemmOfDevicePatternMatrices) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SPGEMM);
  LevelTracker level(XHAL_OP_SPGEMM);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  RandomShape hubs;
  hubs.hub_row_fill = 0.8;
  hubs.hub_col_fill = 0.9;
  const Csr a = random_matrix(90, 70, rng, hubs), b = random_matrix(70, 110, rng, hubs);
  const Csr r = random_matrix(120, 80, rng);
  struct Product {
    std::string name;
    const Csr *a, *b;
    xhal_dtype_t idx_a, idx_b;
  };
  const Csr rt = transpose(r);
  const Product products[] = {
      {"90x70 * 70x110 with hubs, i32", &a, &b, XHAL_DTYPE_I32, XHAL_DTYPE_I32},
      {"90x70 * 70x110 with hubs, i64", &a, &b, XHAL_DTYPE_I64, XHAL_DTYPE_I64},
      {"R R^T, i32 * i64", &r, &rt, XHAL_DTYPE_I32, XHAL_DTYPE_I64},
      {"R^T R, i64 * i32", &rt, &r, XHAL_DTYPE_I64, XHAL_DTYPE_I32}};
  for (const auto& p : products) {
    SCOPED_TRACE(p.name);
    Twins ta, tb;
    create_twins(dev, *p.a, p.idx_a, ta);
    create_twins(dev, *p.b, p.idx_b, tb);
    if (HasFatalFailure()) return;
    // C's pattern may be uploaded, nothing may come back, except that the
    // first product of a matrix from device buffers may read its pattern to
    // the host, once (docs/semantics.md, "Sparse (CSR)").
    auto product = [&](xhal_csr_t ma, xhal_csr_t mb, Matrix& c, bool first_use) {
      if (first_use) {
        EXPECT_EQ(xhal_spgemm(dev, ma, mb, c.out()), XHAL_OK) << xhal_last_error();
      } else {
        EXPECT_EQ(run_on_device(
                      dev, [&] { return xhal_spgemm(dev, ma, mb, c.out()); }, true),
                  XHAL_OK);
      }
    };
    Matrix c_host, c_first, c_buffers, c_mixed;
    product(ta.host.get(), tb.host.get(), c_host, false);
    product(ta.from_buffers.get(), tb.from_buffers.get(), c_first, true);
    product(ta.from_buffers.get(), tb.from_buffers.get(), c_buffers, false);
    product(ta.from_buffers.get(), tb.host.get(), c_mixed, false);
    if (!c_host.get() || !c_first.get() || !c_buffers.get() || !c_mixed.get()) continue;
    const ReadBack want = read_back(c_host.get());
    expect_same(read_back(c_first.get()), want, "C of A and B from device buffers (first use)");
    expect_same(read_back(c_buffers.get()), want, "C of A and B from device buffers (again)");
    expect_same(read_back(c_mixed.get()), want, "C of A from device buffers, B from host arrays");
    const Csr canonical = spgemm_canonical(*p.a, *p.b);
    expect_same(want, as_read(canonical, want.index_dtype), "C of host-created A and B", false);
    level.compare("C values", want.values, canonical.values, [&] {
      Matrix again;
      EXPECT_EQ(xhal_spgemm(dev, ta.host.get(), tb.host.get(), again.out()), XHAL_OK)
          << xhal_last_error();
      return again.get() ? read_back(again.get()).values : std::vector<float>();
    });
  }
}

TEST_P(CsrDevicePatternTest, EmptyAndDegenerate) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SPMV);
  XHAL_CONF_REQUIRE_ALSO(XHAL_OP_SPMM);
  LevelTracker level(XHAL_OP_SPMV);
  Rng rng(test_seed());
  SCOPED_TRACE(seed_note(rng));
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{0, 0}, {5, 0}, {0, 5}, {7, 9}}) {
    Csr a;
    a.rows = rows;
    a.cols = cols;
    a.row_ptr.assign(rows + 1, 0);
    for (auto idx : {XHAL_DTYPE_I32, XHAL_DTYPE_I64})
      for (bool null_buffers : {false, true}) {
        SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols) + ", nnz 0, " +
                     index_name(idx) +
                     (null_buffers ? ", no col_idx and values buffers" : ", 0-byte buffers"));
        Twins t;
        create_twins(dev, a, idx, t, [&](xhal_csr_desc_t& d) {
          if (null_buffers) d.col_idx_buffer = d.values_buffer = nullptr;
        });
        if (HasFatalFailure()) return;
        expect_twins_hold(t, a, idx);
        for (auto trans : {XHAL_TRANSPOSE_NONE, XHAL_TRANSPOSE})
          for (int64_t k : {1, 3}) {
            const int64_t yn = op_rows(a, trans) * k, xn = op_cols(a, trans) * k;
            const auto x = random_values(rng, xn);
            BufferGuard g;
            // One element more than the tensors hold: an empty y stays poisoned.
            auto padded = x;
            padded.push_back(1.0f);
            const xhal_tensor_t xt = dense(dev, g, padded, dense_shape(xn / k, k, k == 1));
            const xhal_tensor_t yt = poisoned(dev, g, yn + 1, dense_shape(yn / k, k, k == 1));
            auto op = [&](xhal_csr_t m) {
              return k == 1 ? xhal_spmv(dev, m, trans, 1.0f, &xt, 0.0f, &yt)
                            : xhal_spmm(dev, m, trans, 1.0f, &xt, 0.0f, &yt);
            };
            const std::string what =
                std::string(k == 1 ? "spmv " : "spmm k 3 ") + trans_name(trans);
            // An empty y: the core returns before the plugin.
            run_twins(dev, t, {yt}, op, what, &level,
                      spmm_canonical(a, trans, 1.0f, x, 0.0f, {}, k), yn > 0 ? 1 : 0);
            EXPECT_TRUE(is_poison(download<float>(yt.buffer, 1, uint64_t(yn) * 4)[0]))
                << what << ": written past y";
          }
      }
  }
}

XHAL_CONF_INSTANTIATE(CsrDevicePatternTest);

}  // namespace
}  // namespace xhal::conf::sparse
