// Index plans whose cost follows the index list, not the table (issue 9,
// defect 4): the core's selection builder (both of its methods), the compact
// desc a plugin of ABI minor 1 receives ("reccompact"), the full row_ptr form
// a minor-0 plugin still receives ("recorder"), and plans into huge tables on
// the real cpu plugin. Its own runtime: recorder, reccompact and cpu.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "index_selection.h"
#include "recorder.h"
#include "xhal/xhal.h"

namespace xhal {
namespace {

constexpr uint64_t kTopRows = uint64_t(INT64_MAX) - 1;  // the largest num_rows accepted

// The transposed selection written the obvious way: rows ascending, sources
// ascending within a row.
struct Reference {
  std::vector<int64_t> rows, ptr{0}, sources;
  uint64_t max_sources = 0;
};
Reference reference(const std::vector<int64_t>& idx) {
  std::map<int64_t, std::vector<int64_t>> by_row;
  for (size_t i = 0; i < idx.size(); ++i) by_row[idx[i]].push_back(static_cast<int64_t>(i));
  Reference r;
  for (const auto& [row, list] : by_row) {
    r.rows.push_back(row);
    r.sources.insert(r.sources.end(), list.begin(), list.end());
    r.ptr.push_back(static_cast<int64_t>(r.sources.size()));
    r.max_sources = std::max<uint64_t>(r.max_sources, list.size());
  }
  return r;
}

// count indices into num_rows rows: a few rows hit many times, the rest spread.
std::vector<int64_t> random_indices(size_t count, uint64_t num_rows, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> idx(count);
  for (auto& v : idx)
    v = static_cast<int64_t>(rng() % 4 == 0 ? rng() % std::min<uint64_t>(num_rows, 3)
                                            : rng() % num_rows);
  return idx;
}

// ---- the builder itself ------------------------------------------------------
TEST(IndexSelection, SortAndCountingSortGiveTheReference) {
  struct Case {
    size_t count;
    uint64_t num_rows;
  };
  for (const Case c :
       {Case{0, 0}, Case{0, 5}, Case{1, 1}, Case{7, 5}, Case{1000, 10}, Case{1000, 4000},
        Case{1000, 4003}, Case{3000, 1u << 20}, Case{50000, 60000}}) {
    const std::vector<int64_t> idx = random_indices(c.count, c.num_rows ? c.num_rows : 1, 3);
    const Reference want = reference(idx);
    for (const SelectionMethod m :
         {SelectionMethod::kAuto, SelectionMethod::kSort, SelectionMethod::kCount}) {
      const CompactSelection s = build_selection(idx.data(), c.count, c.num_rows, m);
      const std::string what = "count " + std::to_string(c.count) + " rows " +
                               std::to_string(c.num_rows) + " method " +
                               std::to_string(static_cast<int>(m));
      EXPECT_EQ(s.rows, want.rows) << what;
      EXPECT_EQ(s.ptr, want.ptr) << what;
      EXPECT_EQ(s.sources, want.sources) << what;
      EXPECT_EQ(s.max_sources_per_row, want.max_sources) << what;
    }
  }
}

TEST(IndexSelection, SortedInputAndHugeRowNumbers) {
  // Already sorted (the sort is skipped) and with rows near the top of the range.
  const std::vector<int64_t> idx = {0, 1, 1, int64_t(kTopRows) - 1, int64_t(kTopRows) - 1};
  const CompactSelection s = build_selection(idx.data(), idx.size(), kTopRows);
  EXPECT_EQ(s.rows, (std::vector<int64_t>{0, 1, int64_t(kTopRows) - 1}));
  EXPECT_EQ(s.ptr, (std::vector<int64_t>{0, 1, 3, 5}));
  EXPECT_EQ(s.sources, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(IndexSelection, FullRowPtrCountsEveryRow) {
  const std::vector<int64_t> idx = {2, 0, 2, 2, 3, 2, 0};
  const CompactSelection s = build_selection(idx.data(), idx.size(), 6);
  EXPECT_EQ(full_row_ptr(s, 6), (std::vector<int64_t>{0, 2, 2, 6, 7, 7, 7}));
  const CompactSelection empty = build_selection(nullptr, 0, 3);
  EXPECT_EQ(full_row_ptr(empty, 3), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_THROW(full_row_ptr(s, kTopRows), std::bad_alloc);
}

// ---- through the core: recorder (ABI 1.0), reccompact (1.1), cpu -------------
recorder::State* state_of(const char* backend) {
  const std::string path = std::string(XHAL_RECORDER_DIR) + "/libxhal-" + backend + ".so";
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!handle) return nullptr;
  auto fn = reinterpret_cast<xhal_recorder_state_fn>(dlsym(handle, "xhal_recorder_state"));
  dlclose(handle);  // drops only the reference taken here
  return fn ? fn() : nullptr;
}

xhal_device_t open_device(const std::string& backend) {
  uint32_t n = 0;
  EXPECT_EQ(xhal_device_count(&n), XHAL_OK) << xhal_last_error();
  for (uint32_t i = 0; i < n; ++i) {
    xhal_device_info_t info{};
    info.struct_size = sizeof info;
    EXPECT_EQ(xhal_device_get_info(i, &info), XHAL_OK);
    if (backend == info.backend && info.backend_index == 0) {
      xhal_device_t d = nullptr;
      EXPECT_EQ(xhal_device_open_index(i, &d), XHAL_OK) << xhal_last_error();
      return d;
    }
  }
  ADD_FAILURE() << "no device " << backend << ":0";
  return nullptr;
}

bool message_has(const std::string& part) {
  return std::string(xhal_last_error()).find(part) != std::string::npos;
}

class PlanTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = XHAL_RECORDER_DIR;
    const std::string path =
        dir + "/libxhal-recorder.so:" + dir + "/libxhal-reccompact.so:" + XHAL_CPU_PLUGIN;
    xhal_runtime_options_t o{};
    o.struct_size = sizeof o;
    o.device_selector = "";
    o.plugin_path = path.c_str();
    o.plugin_path_only = 1;
    const xhal_status_t s = xhal_runtime_init(&o);
    ASSERT_TRUE(s == XHAL_OK || s == XHAL_BUSY) << xhal_last_error();
  }
  void SetUp() override {
    old_dev = open_device("recorder");
    compact_dev = open_device("reccompact");
    cpu = open_device("cpu");
    ASSERT_TRUE(old_dev && compact_dev && cpu);
    old_rec = state_of("recorder");
    compact_rec = state_of("reccompact");
    ASSERT_TRUE(old_rec && compact_rec) << dlerror();
    old_rec->clear();
    compact_rec->clear();
  }
  void TearDown() override {
    for (xhal_index_plan_t p : plans) EXPECT_EQ(xhal_index_plan_release(p), XHAL_OK);
    for (xhal_buffer_t b : buffers) EXPECT_EQ(xhal_buffer_release(b), XHAL_OK);
    for (xhal_device_t d : {old_dev, compact_dev, cpu}) {
      if (d) {
        EXPECT_EQ(xhal_device_release(d), XHAL_OK) << xhal_last_error();
      }
    }
  }

  xhal_status_t make_plan(xhal_device_t d, const std::vector<int64_t>& idx, uint64_t num_rows,
                          xhal_index_plan_t* out) {
    *out = nullptr;
    const xhal_status_t s =
        xhal_index_plan_create(d, idx.data(), XHAL_DTYPE_I64, idx.size(), num_rows, out);
    if (s == XHAL_OK) plans.push_back(*out);
    return s;
  }
  xhal_tensor_t f32(xhal_device_t d, std::vector<int64_t> shape, const std::vector<float>& data) {
    xhal_buffer_t b = nullptr;
    EXPECT_EQ(xhal_buffer_allocate(d, data.size() * 4, &b), XHAL_OK) << xhal_last_error();
    buffers.push_back(b);
    EXPECT_EQ(xhal_buffer_write(b, 0, data.data(), data.size() * 4), XHAL_OK);
    xhal_tensor_t t{};
    EXPECT_EQ(xhal_tensor_init(b, 0, XHAL_DTYPE_F32, static_cast<uint32_t>(shape.size()),
                               shape.data(), &t),
              XHAL_OK)
        << xhal_last_error();
    return t;
  }
  std::vector<float> read(const xhal_tensor_t& t, size_t n) {
    std::vector<float> v(n);
    EXPECT_EQ(xhal_buffer_read(t.buffer, 0, v.data(), n * 4), XHAL_OK) << xhal_last_error();
    return v;
  }

  xhal_device_t old_dev = nullptr, compact_dev = nullptr, cpu = nullptr;
  recorder::State* old_rec = nullptr;
  recorder::State* compact_rec = nullptr;
  std::vector<xhal_index_plan_t> plans;
  std::vector<xhal_buffer_t> buffers;
};

TEST_F(PlanTest, MinorOnePluginGetsOnlyTheTouchedRows) {
  // Row 2 is a hub (sources 0, 2, 3, 5); rows 1 and 4 are untouched.
  const std::vector<int64_t> idx = {2, 0, 2, 2, 3, 2, 0};
  xhal_index_plan_t p;
  ASSERT_EQ(make_plan(compact_dev, idx, 5, &p), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(compact_rec->plans.size(), 1u);
  const recorder::Plan& got = compact_rec->plans[0];
  EXPECT_TRUE(got.row_ptr_null);
  EXPECT_EQ(got.count, 7u);
  EXPECT_EQ(got.num_rows, 5u);
  EXPECT_EQ(got.indices, idx);
  EXPECT_EQ(got.touched_count, 3u);
  EXPECT_EQ(got.touched_rows, (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(got.touched_ptr, (std::vector<int64_t>{0, 2, 6, 7}));
  EXPECT_EQ(got.row_sources, (std::vector<int64_t>{1, 6, 0, 2, 3, 5, 4}));
  EXPECT_EQ(got.max_sources_per_row, 4u);
}

TEST_F(PlanTest, MinorOneDescMatchesTheReferenceForBothBuildMethods) {
  // num_rows close to count takes the counting sort, far above it the sort.
  for (const uint64_t num_rows : {uint64_t{40}, uint64_t{3000}, uint64_t{1} << 20}) {
    const std::vector<int64_t> idx = random_indices(2000, num_rows, 11);
    const Reference want = reference(idx);
    compact_rec->clear();
    xhal_index_plan_t p;
    ASSERT_EQ(make_plan(compact_dev, idx, num_rows, &p), XHAL_OK) << xhal_last_error();
    const recorder::Plan& got = compact_rec->plans.at(0);
    EXPECT_TRUE(got.row_ptr_null);
    EXPECT_EQ(got.touched_count, want.rows.size()) << num_rows;
    EXPECT_EQ(got.touched_rows, want.rows) << num_rows;
    EXPECT_EQ(got.touched_ptr, want.ptr) << num_rows;
    EXPECT_EQ(got.row_sources, want.sources) << num_rows;
    EXPECT_EQ(got.max_sources_per_row, want.max_sources) << num_rows;
  }
}

TEST_F(PlanTest, MinorOnePluginGetsHugeTablesInCompactForm) {
  for (const uint64_t num_rows : {uint64_t{1} << 40, (uint64_t{1} << 62) - 1, kTopRows}) {
    const std::vector<int64_t> idx = {int64_t(num_rows - 1), 7, int64_t(num_rows - 1)};
    compact_rec->clear();
    xhal_index_plan_t p;
    ASSERT_EQ(make_plan(compact_dev, idx, num_rows, &p), XHAL_OK) << xhal_last_error();
    const recorder::Plan& got = compact_rec->plans.at(0);
    EXPECT_EQ(got.num_rows, num_rows);
    EXPECT_EQ(got.touched_rows, (std::vector<int64_t>{7, int64_t(num_rows - 1)}));
    EXPECT_EQ(got.touched_ptr, (std::vector<int64_t>{0, 1, 3}));
    EXPECT_EQ(got.row_sources, (std::vector<int64_t>{1, 0, 2}));
  }
}

TEST_F(PlanTest, EmptyPlanHasNoTouchedRows) {
  xhal_index_plan_t p;
  ASSERT_EQ(make_plan(compact_dev, {}, 0, &p), XHAL_OK) << xhal_last_error();
  const recorder::Plan& got = compact_rec->plans.at(0);
  EXPECT_TRUE(got.row_ptr_null);
  EXPECT_EQ(got.touched_count, 0u);
  EXPECT_EQ(got.touched_ptr, (std::vector<int64_t>{0}));
}

TEST_F(PlanTest, MinorZeroPluginStillGetsTheFullForm) {
  const std::vector<int64_t> idx = {2, 0, 2, 2, 3, 2, 0};
  xhal_index_plan_t p;
  ASSERT_EQ(make_plan(old_dev, idx, 6, &p), XHAL_OK) << xhal_last_error();
  const recorder::Plan& got = old_rec->plans.at(0);
  EXPECT_FALSE(got.row_ptr_null);
  EXPECT_EQ(got.row_ptr, (std::vector<int64_t>{0, 2, 2, 6, 7, 7, 7}));
  EXPECT_EQ(got.row_sources, (std::vector<int64_t>{1, 6, 0, 2, 3, 5, 4}));
  EXPECT_EQ(got.max_sources_per_row, 4u);
  // The full form is O(num_rows), so a huge table is still out of memory
  // for such a plugin, reported as before and without reaching it.
  old_rec->clear();
  EXPECT_EQ(make_plan(old_dev, {1}, (uint64_t{1} << 62) - 1, &p), XHAL_OUT_OF_MEMORY);
  EXPECT_TRUE(message_has("host memory exhausted")) << xhal_last_error();
  EXPECT_TRUE(old_rec->plans.empty());
}

// ---- the cpu plugin ------------------------------------------------------------
TEST_F(PlanTest, CpuPlanIntoHugeTablesValidatesShapesAgainstItsRows) {
  for (const uint64_t num_rows : {uint64_t{1} << 40, (uint64_t{1} << 62) - 1}) {
    const std::vector<int64_t> idx = {5, int64_t(num_rows - 1), 5};
    xhal_index_plan_t p;
    ASSERT_EQ(make_plan(cpu, idx, num_rows, &p), XHAL_OK) << num_rows << ": " << xhal_last_error();
    const std::string rows = std::to_string(num_rows);
    const xhal_tensor_t src = f32(cpu, {3, 4}, std::vector<float>(12, 1.0f));
    const xhal_tensor_t small = f32(cpu, {8, 4}, std::vector<float>(32, 2.0f));
    EXPECT_EQ(xhal_index_add(cpu, p, 1.0f, &src, &small), XHAL_SHAPE_MISMATCH);
    EXPECT_TRUE(message_has("argument 'dst': shape [8, 4] but expected [" + rows + ", 4]"))
        << xhal_last_error();
    EXPECT_EQ(read(small, 32), std::vector<float>(32, 2.0f));
    const xhal_tensor_t out = f32(cpu, {3, 4}, std::vector<float>(12, 3.0f));
    EXPECT_EQ(xhal_index_select(cpu, p, &small, &out), XHAL_SHAPE_MISMATCH);
    EXPECT_TRUE(message_has("argument 'src': shape [8, 4] but expected [" + rows + ", 4]"))
        << xhal_last_error();
    EXPECT_EQ(read(out, 12), std::vector<float>(12, 3.0f));
  }
}

// docs/semantics.md 3.7: chunks of 32 summed from +0, then the pairwise tree
// over the chunk sums padded with +0 to a power of two.
float segsum(const std::vector<float>& t) {
  std::vector<float> chunks;
  for (size_t b = 0; b < t.size(); b += 32) {
    float c = 0.0f;
    for (size_t k = b; k < std::min(t.size(), b + 32); ++k) c = c + t[k];
    chunks.push_back(c);
  }
  size_t n = 1;
  while (n < chunks.size()) n *= 2;
  chunks.resize(n, 0.0f);
  for (; n > 1; n /= 2)
    for (size_t i = 0; i < n / 2; ++i) chunks[i] = chunks[2 * i] + chunks[2 * i + 1];
  return chunks[0];
}

TEST_F(PlanTest, CpuIndexAddIntoAMillionRowsChangesOnlyTheSelectedRows) {
  const int64_t rows = 1000000, w = 8;
  // 1000 spread indices with repeats, and a hub row of 2100 sources (the
  // cpu plugin's parallel path) interleaved with them.
  std::vector<int64_t> idx = random_indices(1000, rows, 5);
  for (int k = 0; k < 2100; ++k) idx.insert(idx.begin() + (k * 7) % idx.size(), 424242);
  const int64_t count = static_cast<int64_t>(idx.size());
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> s(count * w), d(rows * w);
  for (auto& v : s) v = dist(rng) * (rng() % 5 == 0 ? 1e5f : 1.0f);
  for (auto& v : d) v = dist(rng);
  d[999999 * w] = NAN;  // an untouched row must keep even its NaN
  xhal_index_plan_t p;
  ASSERT_EQ(make_plan(cpu, idx, rows, &p), XHAL_OK) << xhal_last_error();
  const xhal_tensor_t src = f32(cpu, {count, w}, s), dst = f32(cpu, {rows, w}, d);
  const float alpha = 0.625f;
  ASSERT_EQ(xhal_index_add(cpu, p, alpha, &src, &dst), XHAL_OK) << xhal_last_error();
  std::vector<float> want = d;
  const Reference sel = reference(idx);
  ASSERT_EQ(std::find(sel.rows.begin(), sel.rows.end(), 999999), sel.rows.end())
      << "row 999999 must stay untouched for the NaN check";
  for (size_t k = 0; k < sel.rows.size(); ++k)
    for (int64_t j = 0; j < w; ++j) {
      std::vector<float> terms;
      for (int64_t e = sel.ptr[k]; e < sel.ptr[k + 1]; ++e)
        terms.push_back(s[sel.sources[e] * w + j]);
      const int64_t at = sel.rows[k] * w + j;
      want[at] = d[at] + alpha * segsum(terms);
    }
  const std::vector<float> got = read(dst, rows * w);
  size_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i)
    differ += std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i]);
  EXPECT_EQ(differ, 0u) << "of " << got.size() << " elements";
}

}  // namespace
}  // namespace xhal
