// permute: ranks 1..8, strided and permuted views, every dtype, sizes past
// the 65,535 x 32 grid limit, size-1 dims, the adjoint identity.
#include <cmath>
#include <numeric>
#include <random>

#include "check.h"
#include "reference/canonical.h"

namespace xhal::conf {
namespace {

class PermuteTest : public DeviceTest {};

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng() | 1);
  return v;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t k = shape.size(); k-- > 1;) s[k - 1] = s[k] * shape[k];
  return s;
}

// Permutes a view of `shape` cut out of a larger parent array (each dim
// extended by pad[k], starting at `start`), so strides exceed the shape.
// Checks the result bytes, the guard after dst, counters and determinism.
void check_permute(xhal_device_t dev, xhal_dtype_t dtype, const std::vector<int64_t>& shape,
                   const std::vector<uint32_t>& perm, const std::vector<int64_t>& pad = {},
                   const std::vector<int64_t>& start = {}) {
  const size_t rank = shape.size(), es = xhal_dtype_size(dtype);
  std::vector<int64_t> parent = shape;
  for (size_t k = 0; k < rank && k < pad.size(); ++k) parent[k] += pad[k];
  std::vector<int64_t> pstrides = row_major_strides(parent);
  int64_t start_elem = 0;
  for (size_t k = 0; k < rank && k < start.size(); ++k) start_elem += start[k] * pstrides[k];
  size_t parent_elems = 1, elems = 1;
  for (size_t k = 0; k < rank; ++k) {
    parent_elems *= parent[k];
    elems *= shape[k];
  }
  std::vector<uint8_t> host = random_bytes(parent_elems * es, fresh_seed());
  BufferGuard g;
  xhal_buffer_t sb = g.add(upload(dev, host));
  xhal_buffer_t d1 = g.add(poisoned_buffer(dev, elems * es + 64)),
                d2 = g.add(poisoned_buffer(dev, elems * es));
  ASSERT_NE(d2, nullptr);
  xhal_tensor_t src = tensor(sb, dtype, shape, start_elem * es);
  for (size_t k = 0; k < rank; ++k) src.strides[k] = pstrides[k];
  std::vector<int64_t> out_shape(rank);
  for (size_t k = 0; k < rank; ++k) out_shape[k] = shape[perm[k]];
  xhal_tensor_t o1 = tensor(d1, dtype, out_shape), o2 = tensor(d2, dtype, out_shape);
  std::vector<uint8_t> guard = download_bytes(d1, elems * es, 64);
  xhal_counters_t before = counters(dev);
  ASSERT_EQ(xhal_permute(dev, &src, perm.data(), &o1), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_permute(dev, &src, perm.data(), &o2), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_device_synchronize(dev), XHAL_OK);
  xhal_counters_t after = counters(dev);
  XHAL_CONF_EXPECT_NO_HOST_TRANSFER(before, after);
  std::vector<uint8_t> want = canon::permute(host.data() + start_elem * es, es, shape,
                                             std::vector<int64_t>(pstrides), perm);
  std::string first;
  bool ok = same_bytes(download_bytes(d1, 0, elems * es), want, &first);
  EXPECT_TRUE(ok) << "permute differs: " << first;
  EXPECT_TRUE(same_bytes(download_bytes(d2, 0, elems * es), want, &first))
      << "second run: " << first;
  EXPECT_TRUE(same_bytes(download_bytes(d1, elems * es, 64), guard, &first))
      << "wrote past dst: " << first;
  record_level(ok ? Level::kBitExact : Level::kNone);
}

TEST_P(PermuteTest, DocumentedSwapOfDims0And2) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_PERMUTE);
  // [2,3,4] holding 0..23, perm (2,1,0): dst [4,3,2], dst[1][0][0] = src[0][0][1] = 1.
  std::vector<float> x(24);
  std::iota(x.begin(), x.end(), 0.0f);
  BufferGuard g;
  xhal_buffer_t sb = g.add(upload(dev, x)), db = g.add(poisoned_buffer(dev, 24 * 4));
  xhal_tensor_t st = tensor(sb, XHAL_DTYPE_F32, {2, 3, 4}),
                dt = tensor(db, XHAL_DTYPE_F32, {4, 3, 2});
  uint32_t perm[3] = {2, 1, 0};
  {
    OpCounters work(dev, 1);  // a real permute: the plugin's slot runs
    ASSERT_EQ(xhal_permute(dev, &st, perm, &dt), XHAL_OK) << xhal_last_error();
  }
  std::vector<float> y = download_f32(db, 24);
  EXPECT_EQ(y[1 * 6 + 0 * 2 + 0], 1.0f) << "dst[1][0][0]";
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 2; ++c)
        EXPECT_EQ(y[a * 6 + b * 2 + c], x[c * 12 + b * 4 + a]) << a << b << c;
  record_level(Level::kBitExact);
}

TEST_P(PermuteTest, EveryRankWithStridedViews) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_PERMUTE);
  std::mt19937_64 rng(fresh_seed());
  for (size_t rank = 1; rank <= XHAL_MAX_RANK; ++rank) {
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<int64_t> shape(rank), pad(rank), start(rank);
      for (size_t k = 0; k < rank; ++k) {
        shape[k] = 1 + static_cast<int64_t>(rng() % (rank <= 3 ? 9 : 4));
        pad[k] = trial == 0 ? 0 : static_cast<int64_t>(rng() % 3);
        start[k] = pad[k] ? static_cast<int64_t>(rng() % (pad[k] + 1)) : 0;
      }
      std::vector<uint32_t> perm(rank);
      std::iota(perm.begin(), perm.end(), 0u);
      std::shuffle(perm.begin(), perm.end(), rng);
      std::string what =
          "rank " + std::to_string(rank) + " trial " + std::to_string(trial) + " shape";
      for (auto d : shape) what += " " + std::to_string(d);
      what += " perm";
      for (auto p : perm) what += " " + std::to_string(p);
      SCOPED_TRACE(what);
      check_permute(dev, XHAL_DTYPE_F32, shape, perm, pad, start);
    }
  }
}

TEST_P(PermuteTest, EveryDtypeTheDeviceClaims) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_PERMUTE);
  uint32_t dtypes = device_dtypes(dev, XHAL_OP_PERMUTE);
  ASSERT_TRUE(dtypes >> XHAL_DTYPE_F32 & 1) << "permute must support f32";
  for (int d = 1; d < XHAL_DTYPE_COUNT_; ++d) {
    if (!(dtypes >> d & 1)) continue;
    SCOPED_TRACE(xhal_dtype_name(static_cast<xhal_dtype_t>(d)));
    check_permute(dev, static_cast<xhal_dtype_t>(d), {33, 65, 7}, {1, 0, 2}, {1, 2, 0}, {1, 1, 0});
    check_permute(dev, static_cast<xhal_dtype_t>(d), {5, 129, 67}, {0, 2, 1});
    check_permute(dev, static_cast<xhal_dtype_t>(d), {3, 4, 5, 6}, {3, 1, 0, 2}, {2, 0, 1, 3});
  }
}

TEST_P(PermuteTest, ViewFromTensorPermuteView) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_PERMUTE);
  // A metadata-only view (explicit strides, not row-major) permuted again.
  std::vector<float> x = random_floats(6 * 10 * 14, fresh_seed());
  BufferGuard g;
  xhal_buffer_t sb = g.add(upload(dev, x)), db = g.add(poisoned_buffer(dev, x.size() * 4));
  xhal_tensor_t st = tensor(sb, XHAL_DTYPE_F32, {6, 10, 14}), view{};
  uint32_t vperm[3] = {2, 0, 1};
  ASSERT_EQ(xhal_tensor_permute_view(&st, vperm, &view), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(view.shape[0], 14);
  EXPECT_EQ(view.shape[1], 6);
  EXPECT_EQ(view.shape[2], 10);
  uint32_t perm[3] = {1, 0, 2};  // of the view: dst [6, 14, 10]
  xhal_tensor_t dt = tensor(db, XHAL_DTYPE_F32, {6, 14, 10});
  {
    OpCounters work(dev, 1);
    ASSERT_EQ(xhal_permute(dev, &view, perm, &dt), XHAL_OK) << xhal_last_error();
  }
  std::vector<float> y = download_f32(db, x.size());
  // dst[a][c][b] = x[a][b][c]
  size_t bad = 0;
  for (int a = 0; a < 6; ++a)
    for (int b = 0; b < 10; ++b)
      for (int c = 0; c < 14; ++c) bad += y[(a * 14 + c) * 10 + b] != x[(a * 10 + b) * 14 + c];
  EXPECT_EQ(bad, 0u);
  record_level(bad ? Level::kNone : Level::kBitExact);
}

TEST_P(PermuteTest, TransposePastGridLimits) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_PERMUTE);
  // 2,200,000 rows > 65,535 x 32: a tiled transpose with one grid row per 32
  // rows needs more than 65,535 blocks in y.
  check_permute(dev, XHAL_DTYPE_F32, {2200000, 5}, {1, 0});
  check_permute(dev, XHAL_DTYPE_F32, {2, 1100000, 3}, {0, 2, 1});
  check_permute(dev, XHAL_DTYPE_F32, {3, 70000}, {1, 0});  // > 65,535 columns
}

TEST_P(PermuteTest, OnlySizeOneDimsMove) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_PERMUTE);
  check_permute(dev, XHAL_DTYPE_F32, {1, 5, 1, 7}, {2, 1, 0, 3});
  check_permute(dev, XHAL_DTYPE_F32, {1, 300, 1}, {2, 1, 0});
  check_permute(dev, XHAL_DTYPE_F32, {1, 300, 1}, {0, 2, 1}, {0, 3, 2}, {0, 1, 1});  // strided too
  check_permute(dev, XHAL_DTYPE_F32, {17, 23}, {0, 1});                              // identity
}

TEST_P(PermuteTest, EmptyAndSingleElement) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_PERMUTE);
  BufferGuard g;
  xhal_buffer_t sb = g.add(poisoned_buffer(dev, 16)), db = g.add(poisoned_buffer(dev, 16));
  xhal_tensor_t st = tensor(sb, XHAL_DTYPE_F32, {3, 0, 4}),
                dt = tensor(db, XHAL_DTYPE_F32, {4, 3, 0});
  uint32_t perm[3] = {2, 0, 1};
  {
    OpCounters work(dev, 0);  // empty: the core returns before the plugin
    EXPECT_EQ(xhal_permute(dev, &st, perm, &dt), XHAL_OK) << xhal_last_error();
  }
  EXPECT_TRUE(all_poison(download_f32(db, 4)));
  check_permute(dev, XHAL_DTYPE_F32, {1}, {0});
  check_permute(dev, XHAL_DTYPE_F32, {1, 1, 1}, {2, 0, 1});
}

// <P x, y> = <x, P^T y>: P^T is the permute by the inverse permutation.
TEST_P(PermuteTest, AdjointIdentity) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_PERMUTE);
  std::vector<int64_t> shape = {7, 5, 9, 4};
  std::vector<uint32_t> perm = {2, 0, 3, 1}, inv(4);
  for (uint32_t k = 0; k < 4; ++k) inv[perm[k]] = k;
  std::vector<int64_t> pshape(4);
  for (int k = 0; k < 4; ++k) pshape[k] = shape[perm[k]];
  size_t n = 7 * 5 * 9 * 4;
  std::vector<float> x = random_floats(n, fresh_seed()), y = random_floats(n, fresh_seed());
  BufferGuard g;
  xhal_buffer_t xb = g.add(upload(dev, x)), yb = g.add(upload(dev, y));
  xhal_buffer_t pxb = g.add(poisoned_buffer(dev, n * 4)), ptyb = g.add(poisoned_buffer(dev, n * 4));
  xhal_tensor_t xt = tensor(xb, XHAL_DTYPE_F32, shape), yt = tensor(yb, XHAL_DTYPE_F32, pshape);
  xhal_tensor_t pxt = tensor(pxb, XHAL_DTYPE_F32, pshape),
                ptyt = tensor(ptyb, XHAL_DTYPE_F32, shape);
  {
    OpCounters work(dev, 2);
    ASSERT_EQ(xhal_permute(dev, &xt, perm.data(), &pxt), XHAL_OK) << xhal_last_error();
    ASSERT_EQ(xhal_permute(dev, &yt, inv.data(), &ptyt), XHAL_OK) << xhal_last_error();
  }
  std::vector<float> px = download_f32(pxb, n), pty = download_f32(ptyb, n);
  double lhs = 0, rhs = 0, mag = 0;
  for (size_t k = 0; k < n; ++k) {
    lhs += static_cast<double>(px[k]) * y[k];
    rhs += static_cast<double>(x[k]) * pty[k];
    mag += std::fabs(static_cast<double>(x[k]) * pty[k]);
  }
  // Exact data movement: only the double sums' order differs.
  EXPECT_NEAR(lhs, rhs, 1e-12 * mag);
}

XHAL_CONF_INSTANTIATE(PermuteTest);

}  // namespace
}  // namespace xhal::conf
