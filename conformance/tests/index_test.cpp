// index_select (gather) and index_add (scatter-add) through index plans.
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <type_traits>
#include <utility>

#include "check.h"
#include "reference/canonical.h"
#include "reference/f64.h"
#include "signed_zero.h"

namespace xhal::conf {
namespace {

class IndexSelectTest : public DeviceTest {};
class IndexAddTest : public DeviceTest {};

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng() | 1);  // never a zero byte
  return v;
}

// Gathers `idx` rows of width w of every dtype the device claims, through
// int32 and int64 plans; the result must equal the reference bytes.
void check_gather(xhal_device_t dev, const std::vector<int64_t>& idx, uint64_t num_rows,
                  int64_t w) {
  uint32_t dtypes = device_dtypes(dev, XHAL_OP_INDEX_SELECT);
  ASSERT_TRUE(dtypes >> XHAL_DTYPE_F32 & 1) << "index_select must support f32";
  for (int d = 1; d < XHAL_DTYPE_COUNT_; ++d) {
    if (!(dtypes >> d & 1)) continue;
    auto dtype = static_cast<xhal_dtype_t>(d);
    for (xhal_dtype_t index_dtype : {XHAL_DTYPE_I32, XHAL_DTYPE_I64}) {
      SCOPED_TRACE(std::string("dtype ") + xhal_dtype_name(dtype) + ", indices " +
                   xhal_dtype_name(index_dtype));
      size_t es = xhal_dtype_size(dtype);
      std::vector<uint8_t> src = random_bytes(num_rows * w * es, fresh_seed());
      BufferGuard g;
      PlanGuard p;
      p.plan = make_plan(dev, idx, num_rows, index_dtype);
      ASSERT_NE(p.plan, nullptr);
      xhal_buffer_t sb = g.add(upload(dev, src));
      uint64_t out_bytes = idx.size() * w * es;
      xhal_buffer_t ob = g.add(poisoned_buffer(dev, out_bytes + 64));  // 64 bytes of guard
      ASSERT_NE(ob, nullptr);
      xhal_tensor_t st = tensor(sb, dtype, {static_cast<int64_t>(num_rows), w});
      xhal_tensor_t ot = tensor(ob, dtype, {static_cast<int64_t>(idx.size()), w});
      std::vector<uint8_t> guard = download_bytes(ob, out_bytes, 64);
      xhal_counters_t before = counters(dev);
      ASSERT_EQ(xhal_index_select(dev, p.plan, &st, &ot), XHAL_OK) << xhal_last_error();
      ASSERT_EQ(xhal_device_synchronize(dev), XHAL_OK);
      xhal_counters_t after = counters(dev);
      XHAL_CONF_EXPECT_OP_COUNTERS(before, after, idx.empty() || w == 0 ? 0 : 1);
      std::vector<uint8_t> want = canon::index_select(src.data(), idx, w * es);
      std::string first;
      bool ok = same_bytes(download_bytes(ob, 0, out_bytes), want, &first);
      EXPECT_TRUE(ok) << first;
      EXPECT_TRUE(same_bytes(download_bytes(ob, out_bytes, 64), guard, &first))
          << "wrote past out: " << first;
      record_level(ok ? Level::kBitExact : Level::kNone);
    }
  }
}

TEST_P(IndexSelectTest, RepeatedIndicesEveryDtype) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_INDEX_SELECT);
  const uint64_t num_rows = 1000;
  std::vector<int64_t> idx = random_indices(5000, num_rows, fresh_seed());
  for (int i = 0; i < 50; ++i) idx[i * 7] = 999;  // one row many times
  idx[1] = idx[2] = idx[3] = 0;
  check_gather(dev, idx, num_rows, 37);
}

// A plan is uploaded once, when it is created: that moves the host-to-device
// counters (at least one transfer, its bytes); using it moves none
// (docs/plugin-guide.md "Counters"). An empty plan may upload nothing.
TEST_P(IndexSelectTest, PlanUploadsOnceAtCreation) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_INDEX_SELECT);
  const uint64_t num_rows = 50;
  const std::vector<int64_t> idx = random_indices(4000, num_rows, fresh_seed());
  std::vector<float> src = random_floats(num_rows * 3, fresh_seed());
  BufferGuard g;
  xhal_buffer_t sb = g.add(upload(dev, src)), ob = g.add(poisoned_buffer(dev, idx.size() * 12));
  ASSERT_EQ(xhal_device_synchronize(dev), XHAL_OK);
  const xhal_counters_t c0 = counters(dev);
  PlanGuard p;
  p.plan = make_plan(dev, idx, num_rows);
  ASSERT_NE(p.plan, nullptr);
  ASSERT_EQ(xhal_device_synchronize(dev), XHAL_OK);
  const xhal_counters_t c1 = counters(dev);
  EXPECT_GE(c1.host_to_device_transfers, c0.host_to_device_transfers + 1)
      << "creating a plan of " << idx.size()
      << " indices moved no host-to-device transfer: the plan's upload must be counted";
  EXPECT_GT(c1.host_to_device_bytes, c0.host_to_device_bytes)
      << "creating a plan counted no uploaded bytes";
  xhal_tensor_t st = tensor(sb, XHAL_DTYPE_F32, {static_cast<int64_t>(num_rows), 3});
  xhal_tensor_t ot = tensor(ob, XHAL_DTYPE_F32, {static_cast<int64_t>(idx.size()), 3});
  {
    OpCounters work(dev, 2);
    ASSERT_EQ(xhal_index_select(dev, p.plan, &st, &ot), XHAL_OK) << xhal_last_error();
    ASSERT_EQ(xhal_index_select(dev, p.plan, &st, &ot), XHAL_OK) << xhal_last_error();
  }
  const std::vector<uint8_t> want =
      canon::index_select(reinterpret_cast<const uint8_t*>(src.data()), idx, 3 * sizeof(float));
  std::string first;
  const bool ok = same_bytes(download_bytes(ob, 0, want.size()), want, &first);
  EXPECT_TRUE(ok) << first;
  record_level(ok ? Level::kBitExact : Level::kNone);
}

TEST_P(IndexSelectTest, WideRowsAndSingleColumn) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_INDEX_SELECT);
  check_gather(dev, random_indices(300, 64, fresh_seed()), 64, 4099);
  check_gather(dev, random_indices(100000, 7, fresh_seed()), 7, 1);
}

TEST_P(IndexSelectTest, SingleRowAndEmpty) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_INDEX_SELECT);
  check_gather(dev, {0, 0, 0}, 1, 5);  // a one-row table
  check_gather(dev, {3}, 4, 1);        // a single index
  // No index: valid; out [0, w] writes nothing.
  BufferGuard g;
  PlanGuard p;
  p.plan = make_plan(dev, {}, 10);
  ASSERT_NE(p.plan, nullptr);
  std::vector<float> src = random_floats(10 * 3, fresh_seed());
  xhal_buffer_t sb = g.add(upload(dev, src)), ob = g.add(poisoned_buffer(dev, 16));
  xhal_tensor_t st = tensor(sb, XHAL_DTYPE_F32, {10, 3}), ot = tensor(ob, XHAL_DTYPE_F32, {0, 3});
  {
    OpCounters work(dev, 0);  // empty: the core returns before the plugin
    EXPECT_EQ(xhal_index_select(dev, p.plan, &st, &ot), XHAL_OK) << xhal_last_error();
  }
  EXPECT_TRUE(all_poison(download_f32(ob, 4)));
}

struct ScatterCase {
  uint64_t num_rows;
  int64_t w;
  std::vector<int64_t> idx;
  float alpha;
};

// Runs index_add twice on identical inputs and grades against both
// references; rows without sources hold the poison pattern and must keep it.
// T: float (f32) or double (f64, docs/semantics.md 7.3: the f64 segsum, alpha
// widened exactly). src and dst: the given values (dst's untouched rows are
// poisoned here), or random ones when empty.
template <class T = float>
void check_scatter(xhal_device_t dev, const ScatterCase& c,
                   xhal_dtype_t index_dtype = XHAL_DTYPE_I64, std::vector<T> src = {},
                   std::vector<T> dst = {}) {
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  const Bits poison_bits = sizeof(T) == 8 ? Bits(0x7fc0dead7fc0deadull) : Bits(0x7fc0deadu);
  constexpr xhal_dtype_t kDtype = dtype_of<T>();
  const size_t count = c.idx.size(), w = static_cast<size_t>(c.w);
  if constexpr (sizeof(T) == 8) {
    if (src.empty()) src = random_doubles(count * w, fresh_seed());
    if (dst.empty()) dst = random_doubles(c.num_rows * w, fresh_seed());
  } else {
    if (src.empty()) src = random_floats(count * w, fresh_seed());
    if (dst.empty()) dst = random_floats(c.num_rows * w, fresh_seed());
  }
  std::vector<uint64_t> sources(c.num_rows, 0);
  for (int64_t r : c.idx) ++sources[r];
  const T poison_value = std::bit_cast<T>(poison_bits);
  for (size_t r = 0; r < c.num_rows; ++r)
    if (!sources[r])
      for (size_t j = 0; j < w; ++j) dst[r * w + j] = poison_value;
  BufferGuard g;
  PlanGuard p;
  p.plan = make_plan(dev, c.idx, c.num_rows, index_dtype);
  ASSERT_NE(p.plan, nullptr);
  xhal_buffer_t sb = g.add(upload(dev, src));
  xhal_buffer_t d1 = g.add(upload(dev, dst)), d2 = g.add(upload(dev, dst));
  ASSERT_NE(d2, nullptr);
  xhal_tensor_t st = tensor(sb, kDtype, {static_cast<int64_t>(count), c.w});
  xhal_tensor_t t1 = tensor(d1, kDtype, {static_cast<int64_t>(c.num_rows), c.w});
  xhal_tensor_t t2 = tensor(d2, kDtype, {static_cast<int64_t>(c.num_rows), c.w});
  xhal_counters_t before = counters(dev);
  ASSERT_EQ(xhal_index_add(dev, p.plan, c.alpha, &st, &t1), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_index_add(dev, p.plan, c.alpha, &st, &t2), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_device_synchronize(dev), XHAL_OK);
  xhal_counters_t after = counters(dev);
  XHAL_CONF_EXPECT_OP_COUNTERS(before, after, c.idx.empty() || c.w == 0 ? 0 : 2);
  std::vector<T> got = download<T>(d1, c.num_rows * w), again = download<T>(d2, c.num_rows * w);

  std::vector<T> canonical = dst;
  canon::index_add(canonical.data(), c.num_rows, src.data(), c.idx, w, c.alpha);
  ref64::Values r64 = ref64::index_add(dst.data(), c.num_rows, src.data(), c.idx, w, c.alpha);
  // Untouched rows: the poison bits, exactly. Graded: the touched rows.
  std::vector<T> g_t, a_t, c_t;
  ref64::Values r_t;
  uint64_t max_sources = 0;
  size_t untouched_changed = 0;
  for (size_t r = 0; r < c.num_rows; ++r) {
    max_sources = std::max(max_sources, sources[r]);
    for (size_t j = 0; j < w; ++j) {
      size_t k = r * w + j;
      if (!sources[r]) {
        untouched_changed += std::bit_cast<Bits>(got[k]) != poison_bits;
        continue;
      }
      g_t.push_back(got[k]);
      a_t.push_back(again[k]);
      c_t.push_back(canonical[k]);
      r_t.v.push_back(r64.v[k]);
      r_t.scale.push_back(r64.scale[k]);
    }
  }
  EXPECT_EQ(untouched_changed, 0u) << "rows without sources were rewritten";
  Grader grader;
  grader.output("dst", g_t, a_t, c_t, r_t,
                tol::for_dtype<T>(tol::index_add(max_sources), tol::index_add64(max_sources)));
  grader.finish();
}

TEST_P(IndexAddTest, DuplicatesAndUntouchedRows) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_INDEX_ADD);
  // Sources land in rows [0, 400); rows [400, 500) are untouched.
  std::vector<int64_t> idx = random_indices(3000, 400, fresh_seed());
  for (int i = 0; i < 40; ++i) idx[10 + i] = 5;  // a run of duplicates
  check_scatter(dev, {500, 19, idx, 1.0f});
  check_scatter(dev, {500, 19, idx, -0.375f}, XHAL_DTYPE_I32);
  // Rows of whole pairs of four-float units (a GPU thread may own two).
  check_scatter(dev, {500, 8, idx, 0.25f});
}

TEST_P(IndexAddTest, HubRowWithMostSources) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_INDEX_ADD);
  // 150,000 of 200,000 sources on row 0 (4,688 chunks of 32), the rest spread.
  std::vector<int64_t> idx = random_indices(200000, 1000, fresh_seed());
  std::mt19937_64 rng(fresh_seed());
  for (auto& i : idx)
    if (rng() % 4 != 0) i = 0;
  check_scatter(dev, {1000, 4, idx, 0.5f});
  // Widths of two and three four-float units (whole pairs of units, and not).
  check_scatter(dev, {1000, 8, idx, -1.5f});
  check_scatter(dev, {1000, 12, idx, 0.5f});
  // Every source on one row, width 1.
  check_scatter(dev, {3, 1, std::vector<int64_t>(120000, 1), 2.0f});
}

TEST_P(IndexAddTest, SingleRowAndEmpty) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_INDEX_ADD);
  check_scatter(dev, {1, 8, {0, 0, 0, 0, 0}, 1.0f});
  check_scatter(dev, {2, 1, {1}, 3.0f});
  // No source: dst unchanged bit for bit.
  BufferGuard g;
  PlanGuard p;
  p.plan = make_plan(dev, {}, 6);
  ASSERT_NE(p.plan, nullptr);
  std::vector<float> dst = random_floats(6 * 2, fresh_seed());
  xhal_buffer_t sb = g.add(poisoned_buffer(dev, 8)), db = g.add(upload(dev, dst));
  xhal_tensor_t st = tensor(sb, XHAL_DTYPE_F32, {0, 2}), dt = tensor(db, XHAL_DTYPE_F32, {6, 2});
  {
    OpCounters work(dev, 0);  // no source: the core returns before the plugin
    EXPECT_EQ(xhal_index_add(dev, p.plan, 1.0f, &st, &dt), XHAL_OK) << xhal_last_error();
  }
  EXPECT_TRUE(compare_bits(download_f32(db, 12), dst).equal);
}

// f64: duplicates, untouched rows (poison kept bit for bit), alpha != 1, a hub
// row cut into chunk subtrees, a row with one source, wide and odd widths.
TEST_P(IndexAddTest, F64DuplicatesHubAndUntouchedRows) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_INDEX_ADD, XHAL_DTYPE_F64);
  std::vector<int64_t> idx = random_indices(3000, 400, fresh_seed());
  for (int i = 0; i < 40; ++i) idx[10 + i] = 5;
  check_scatter<double>(dev, {500, 19, idx, 1.0f});
  check_scatter<double>(dev, {500, 19, idx, -0.375f}, XHAL_DTYPE_I32);
  std::vector<int64_t> hub = random_indices(100000, 1000, fresh_seed());
  std::mt19937_64 rng(fresh_seed());
  for (auto& i : hub)
    if (rng() % 4 != 0) i = 0;
  check_scatter<double>(dev, {1000, 5, hub, 0.5f});
  check_scatter<double>(dev, {3, 300, {1, 1, 1, 2}, 0.1f});  // alpha not exact in f32
  check_scatter<double>(dev, {2, 1, {1}, 3.0f});
}

// Destination rows whose sources are all -0 (signed_zero.h): their segsum
// is +0, so dst = dst + alpha * (+0) keeps dst -0 at -0 only for alpha < 0;
// a backend whose chunk sums start from -0 or fold `0 + t` into `t` flips
// those elements. Rows of 1 to 32 sources (one chunk), 33 and 64 (two),
// 1,024, 4,096 and 65,536 (32, 128 and 2,048 chunks: the chunk tree joins
// -0 partials with no +0 padding), 65, 1,025 and 5,000 (padded); rows with
// -0 sources in some columns only; dst -0 and +0; alpha of both signs;
// widths 19 and 8 (rows of whole vec4s).
template <class T>
void signed_zero_sums(xhal_device_t dev) {
  struct Call {
    int64_t w;
    float alpha;
    xhal_dtype_t index_dtype;
  };
  for (const Call call : {Call{19, 1.0f, XHAL_DTYPE_I64}, Call{19, -0.375f, XHAL_DTYPE_I32},
                          Call{8, 0.5f, XHAL_DTYPE_I32}, Call{8, -2.0f, XHAL_DTYPE_I64},
                          Call{16, -0.0f, XHAL_DTYPE_I32}, Call{19, -0.0f, XHAL_DTYPE_I64}}) {
    SCOPED_TRACE("w " + std::to_string(call.w) + ", alpha " + std::to_string(call.alpha));
    signed_zero::Scatter<T> s = signed_zero::scatter<T>(call.w);
    check_scatter<T>(dev, {s.num_rows, call.w, s.idx, call.alpha}, call.index_dtype,
                     std::move(s.src), std::move(s.dst));
  }
}

TEST_P(IndexAddTest, SignedZeroSums) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_INDEX_ADD);
  signed_zero_sums<float>(dev);
}

TEST_P(IndexAddTest, F64SignedZeroSums) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_INDEX_ADD, XHAL_DTYPE_F64);
  signed_zero_sums<double>(dev);
}

// <S x, y> = <x, S^T y> with S the selection of the plan: gather gives S x,
// index_add into d0 gives d0 + S^T y. Sums in double on downloaded results.
TEST_P(IndexAddTest, AdjointIdentityWithGather) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_INDEX_ADD);
  XHAL_CONF_REQUIRE_ALSO(XHAL_OP_INDEX_SELECT);
  const int64_t num_rows = 300, w = 9;
  std::vector<int64_t> idx = random_indices(2000, num_rows, fresh_seed());
  std::vector<float> x = random_floats(num_rows * w, fresh_seed());
  std::vector<float> y = random_floats(idx.size() * w, fresh_seed());
  std::vector<float> d0 = random_floats(num_rows * w, fresh_seed());
  BufferGuard g;
  PlanGuard p;
  p.plan = make_plan(dev, idx, num_rows);
  ASSERT_NE(p.plan, nullptr);
  int64_t count = static_cast<int64_t>(idx.size());
  xhal_buffer_t xb = g.add(upload(dev, x)), yb = g.add(upload(dev, y)), db = g.add(upload(dev, d0));
  xhal_buffer_t sxb = g.add(poisoned_buffer(dev, count * w * 4));
  xhal_tensor_t xt = tensor(xb, XHAL_DTYPE_F32, {num_rows, w}),
                yt = tensor(yb, XHAL_DTYPE_F32, {count, w});
  xhal_tensor_t dt = tensor(db, XHAL_DTYPE_F32, {num_rows, w}),
                sxt = tensor(sxb, XHAL_DTYPE_F32, {count, w});
  {
    OpCounters work(dev, 2);
    ASSERT_EQ(xhal_index_select(dev, p.plan, &xt, &sxt), XHAL_OK) << xhal_last_error();
    ASSERT_EQ(xhal_index_add(dev, p.plan, 1.0f, &yt, &dt), XHAL_OK) << xhal_last_error();
  }
  std::vector<float> sx = download_f32(sxb, count * w), sty = download_f32(db, num_rows * w);
  double lhs = 0, rhs = 0, mag = 0;
  for (size_t k = 0; k < sx.size(); ++k) {
    lhs += static_cast<double>(sx[k]) * y[k];
    mag += std::fabs(static_cast<double>(sx[k]) * y[k]);
  }
  for (size_t k = 0; k < sty.size(); ++k)
    rhs += static_cast<double>(x[k]) * (static_cast<double>(sty[k]) - d0[k]);
  // S^T y went through float32 sums and the add to d0: a few ulps per entry.
  EXPECT_NEAR(lhs, rhs, 1e-5 * mag) << "<Sx,y> = " << lhs << ", <x,S^T y> = " << rhs;
}

XHAL_CONF_INSTANTIATE(IndexSelectTest);
XHAL_CONF_INSTANTIATE(IndexAddTest);

}  // namespace
}  // namespace xhal::conf
