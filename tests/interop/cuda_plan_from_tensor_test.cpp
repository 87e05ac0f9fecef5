// xhal_index_plan_create_from_tensor on a cuda device (skipped where no CUDA
// device is found): the plan is built on the device (plugin ABI 1.5 slot
// index_plan_create_from_buffer) and gives the same bits as the plan of the
// same host list, in index_select and in index_add, whose sums depend on the
// order of a row's sources. Only the 256-byte status block comes back to the
// host; an out-of-range index is named as the host path names it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "xhal/xhal.h"

namespace {

constexpr uint64_t kStatusBlockBytes = 256;  // docs/interop.md
constexpr int64_t kWidth = 3;

class CudaPlanFromTensorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    xhal_runtime_options_t o{};
    o.struct_size = sizeof o;
    o.device_selector = "cuda";
    const xhal_status_t s = xhal_runtime_init(&o);
    ASSERT_TRUE(s == XHAL_OK || s == XHAL_BUSY) << xhal_last_error();
  }
  void SetUp() override {
    if (xhal_device_open("cuda:0", &dev) != XHAL_OK) GTEST_SKIP() << xhal_last_error();
  }
  void TearDown() override {
    for (xhal_buffer_t b : buffers) xhal_buffer_release(b);
    if (dev) {
      EXPECT_EQ(xhal_device_release(dev), XHAL_OK) << xhal_last_error();
    }
  }
  xhal_buffer_t upload(const void* data, uint64_t bytes, uint64_t offset = 0) {
    xhal_buffer_t b = nullptr;
    EXPECT_EQ(xhal_buffer_allocate(dev, bytes + offset, &b), XHAL_OK) << xhal_last_error();
    if (bytes) {
      EXPECT_EQ(xhal_buffer_write(b, offset, data, bytes), XHAL_OK) << xhal_last_error();
    }
    buffers.push_back(b);
    return b;
  }
  static xhal_tensor_t matrix(xhal_buffer_t b, int64_t rows, int64_t cols) {
    xhal_tensor_t t{};
    t.buffer = b;
    t.dtype = XHAL_DTYPE_F32;
    t.rank = 2;
    t.shape[0] = rows;
    t.shape[1] = cols;
    return t;
  }
  std::vector<float> read(xhal_buffer_t b, size_t n) {
    std::vector<float> v(n);
    EXPECT_EQ(xhal_buffer_read(b, 0, v.data(), n * 4), XHAL_OK) << xhal_last_error();
    return v;
  }
  // index_select and index_add of `plan` on fixed inputs, as bytes.
  std::vector<float> run_ops(xhal_index_plan_t plan, int64_t count, int64_t num_rows) {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    // Magnitudes 2^-20 .. 2^20: a row's float sum depends on its order.
    auto value = [&] { return std::ldexp(u(rng), static_cast<int>(rng() % 41) - 20); };
    std::vector<float> table(static_cast<size_t>(num_rows * kWidth)), src(count * kWidth);
    for (float& v : table) v = value();
    for (float& v : src) v = value();
    xhal_buffer_t tb = upload(table.data(), table.size() * 4);
    xhal_buffer_t sb = upload(src.data(), src.size() * 4);
    xhal_buffer_t gb = upload(nullptr, 0, src.size() * 4);
    const xhal_tensor_t tt = matrix(tb, num_rows, kWidth), st = matrix(sb, count, kWidth),
                        gt = matrix(gb, count, kWidth);
    EXPECT_EQ(xhal_index_select(dev, plan, &tt, &gt), XHAL_OK) << xhal_last_error();
    EXPECT_EQ(xhal_index_add(dev, plan, 0.75f, &st, &tt), XHAL_OK) << xhal_last_error();
    std::vector<float> out = read(gb, src.size());
    const std::vector<float> added = read(tb, table.size());
    out.insert(out.end(), added.begin(), added.end());
    return out;
  }
  // The plan of `idx` from a device tensor (i32 when `narrow`) and from the
  // host, compared through run_ops bit for bit; the device path's transfers.
  void check_same_plan(const std::vector<int64_t>& idx, int64_t num_rows, bool narrow) {
    SCOPED_TRACE(std::string(narrow ? "i32" : "i64") + ", " + std::to_string(idx.size()) +
                 " indices into " + std::to_string(num_rows) + " rows");
    const int64_t n = static_cast<int64_t>(idx.size());
    xhal_index_plan_t host_plan = nullptr;
    ASSERT_EQ(xhal_index_plan_create(dev, idx.data(), XHAL_DTYPE_I64, idx.size(),
                                     static_cast<uint64_t>(num_rows), &host_plan),
              XHAL_OK)
        << xhal_last_error();
    std::vector<int32_t> idx32(idx.begin(), idx.end());
    const uint64_t es = narrow ? 4 : 8;
    // At byte offset 16 of its buffer, as a slice of a framework's tensor.
    xhal_buffer_t ib =
        upload(narrow ? static_cast<const void*>(idx32.data()) : idx.data(), es * idx.size(), 16);
    xhal_tensor_t it{};
    it.buffer = ib;
    it.offset = 16;
    it.dtype = narrow ? XHAL_DTYPE_I32 : XHAL_DTYPE_I64;
    it.rank = 1;
    it.shape[0] = n;
    xhal_counters_t before{}, after{};
    ASSERT_EQ(xhal_device_get_counters(dev, &before), XHAL_OK);
    xhal_index_plan_t plan = nullptr;
    ASSERT_EQ(xhal_index_plan_create_from_tensor(dev, &it, static_cast<uint64_t>(num_rows), &plan),
              XHAL_OK)
        << xhal_last_error();
    ASSERT_EQ(xhal_device_get_counters(dev, &after), XHAL_OK);
    EXPECT_EQ(after.device_to_host_transfers - before.device_to_host_transfers, 1u);
    EXPECT_EQ(after.device_to_host_bytes - before.device_to_host_bytes, kStatusBlockBytes);
    EXPECT_EQ(after.host_to_device_transfers, before.host_to_device_transfers);
    const std::vector<float> expected = run_ops(host_plan, n, num_rows);
    const std::vector<float> got = run_ops(plan, n, num_rows);
    ASSERT_EQ(got.size(), expected.size());
    size_t differ = 0, first = 0;
    for (size_t i = 0; i < got.size(); ++i)
      if (std::memcmp(&got[i], &expected[i], 4) != 0 && differ++ == 0) first = i;
    EXPECT_EQ(differ, 0u) << "first differing value at " << first;
    EXPECT_EQ(xhal_index_plan_release(plan), XHAL_OK);
    EXPECT_EQ(xhal_index_plan_release(host_plan), XHAL_OK);
  }

  xhal_device_t dev = nullptr;
  std::vector<xhal_buffer_t> buffers;
};

std::vector<int64_t> random_list(size_t n, int64_t num_rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> v(n);
  for (int64_t& x : v) x = static_cast<int64_t>(rng() % static_cast<uint64_t>(num_rows));
  return v;
}

TEST_F(CudaPlanFromTensorTest, RandomListsGiveTheHostPlansBits) {
  for (bool narrow : {false, true}) {
    check_same_plan(random_list(100000, 5000, 1), 5000, narrow);  // rows of ~20, some > 32
    check_same_plan(random_list(3, 10, 2), 10, narrow);
    check_same_plan(random_list(20000, (int64_t{1} << 24) + 3, 3), (int64_t{1} << 24) + 3,
                    narrow);  // 25 bits to sort by, nearly every row touched once
  }
}

TEST_F(CudaPlanFromTensorTest, HubRowsNeedSeveralRoundsOfTheChunkTree) {
  // Row 7 gets 70,000 sources (2,188 chunks: three rounds), row 2 gets 40
  // (two chunks), the rest are short; one list into a single row (no bits
  // to sort by).
  std::vector<int64_t> idx = random_list(30000, 900, 4);
  for (int i = 0; i < 70000; ++i) idx.insert(idx.begin() + (i * 37) % idx.size(), 7);
  for (int i = 0; i < 40; ++i) idx[static_cast<size_t>(i) * 997] = 2;
  check_same_plan(idx, 900, false);
  check_same_plan(std::vector<int64_t>(5000, 0), 1, true);
}

TEST_F(CudaPlanFromTensorTest, OutOfRangeIsNamedAsTheHostPathNamesIt) {
  std::vector<int64_t> idx = random_list(50000, 1000, 5);
  idx[40000] = -1;
  idx[777] = 1000;  // the lowest bad position is the one named
  xhal_index_plan_t host_plan = nullptr;
  ASSERT_EQ(xhal_index_plan_create(dev, idx.data(), XHAL_DTYPE_I64, idx.size(), 1000, &host_plan),
            XHAL_OUT_OF_RANGE);
  const std::string host_message = xhal_last_error();
  EXPECT_NE(host_message.find("indices[777] = 1000"), std::string::npos) << host_message;
  xhal_buffer_t ib = upload(idx.data(), idx.size() * 8);
  xhal_tensor_t it{};
  it.buffer = ib;
  it.dtype = XHAL_DTYPE_I64;
  it.rank = 1;
  it.shape[0] = static_cast<int64_t>(idx.size());
  auto* sentinel = reinterpret_cast<xhal_index_plan_t>(uintptr_t{0x5a5a});
  xhal_index_plan_t plan = sentinel;
  EXPECT_EQ(xhal_index_plan_create_from_tensor(dev, &it, 1000, &plan), XHAL_OUT_OF_RANGE);
  EXPECT_EQ(std::string(xhal_last_error()), host_message);
  EXPECT_EQ(plan, sentinel);  // nothing written
  // The device goes on: a good list afterwards.
  idx[40000] = 1;
  idx[777] = 2;
  ASSERT_EQ(xhal_buffer_write(ib, 0, idx.data(), idx.size() * 8), XHAL_OK);
  ASSERT_EQ(xhal_index_plan_create_from_tensor(dev, &it, 1000, &plan), XHAL_OK)
      << xhal_last_error();
  EXPECT_EQ(xhal_index_plan_release(plan), XHAL_OK);
}

}  // namespace
