// The core's buffer API validation, run against the good fake (host memory):
// every bad call gets its status, a message naming the argument and value,
// and writes nothing.
#include <gmock/gmock.h>

#include <cstring>
#include <numeric>
#include <thread>

#include "test_support.h"

namespace xhal::test {
namespace {

using ::testing::HasSubstr;
using Bytes = std::vector<uint8_t>;

class BufferTest : public RuntimeTest {
 protected:
  void SetUp() override {
    ASSERT_EQ(start(fake_dir("good")), XHAL_OK) << xhal_last_error();
    ASSERT_EQ(xhal_device_open("good:0", &dev_), XHAL_OK) << xhal_last_error();
    ASSERT_EQ(xhal_buffer_allocate(dev_, 64, &buf_), XHAL_OK) << xhal_last_error();
    std::iota(initial_.begin(), initial_.end(), uint8_t{0});
    ASSERT_EQ(xhal_buffer_write(buf_, 0, initial_.data(), 64), XHAL_OK);
  }
  void TearDown() override {
    EXPECT_EQ(xhal_buffer_release(buf_), XHAL_OK) << xhal_last_error();
    EXPECT_EQ(xhal_device_release(dev_), XHAL_OK) << xhal_last_error();
    RuntimeTest::TearDown();
  }
  Bytes contents(xhal_buffer_t b, uint64_t size = 64) {
    Bytes out(size, 0xEE);
    EXPECT_EQ(xhal_buffer_read(b, 0, out.data(), size), XHAL_OK) << xhal_last_error();
    return out;
  }
  xhal_device_t dev_ = nullptr;
  xhal_buffer_t buf_ = nullptr;
  Bytes initial_ = Bytes(64);
};

TEST_F(BufferTest, WriteReadRoundTrip) {
  const Bytes data = {9, 8, 7, 6, 5};
  ASSERT_EQ(xhal_buffer_write(buf_, 10, data.data(), data.size()), XHAL_OK);
  Bytes expected = initial_;
  std::copy(data.begin(), data.end(), expected.begin() + 10);
  EXPECT_EQ(contents(buf_), expected);
  Bytes part(3);
  ASSERT_EQ(xhal_buffer_read(buf_, 11, part.data(), 3), XHAL_OK);
  EXPECT_EQ(part, (Bytes{8, 7, 6}));
}

TEST_F(BufferTest, WriteOutOfRangeWritesNothing) {
  const Bytes data(8, 0xFF);
  EXPECT_EQ(xhal_buffer_write(buf_, 60, data.data(), 8), XHAL_OUT_OF_RANGE);
  EXPECT_THAT(xhal_last_error(),
              HasSubstr("dst: range offset 60 + size 8 does not fit in the buffer of 64 bytes"));
  EXPECT_EQ(contents(buf_), initial_);
  EXPECT_EQ(xhal_buffer_write(buf_, 65, data.data(), 0), XHAL_OUT_OF_RANGE);
}

TEST_F(BufferTest, RangeArithmeticDoesNotWrap) {
  const Bytes data(8, 0xFF);
  EXPECT_EQ(xhal_buffer_write(buf_, UINT64_MAX - 3, data.data(), 8), XHAL_OUT_OF_RANGE);
  EXPECT_EQ(xhal_buffer_write(buf_, 8, data.data(), UINT64_MAX - 4), XHAL_OUT_OF_RANGE);
  EXPECT_THAT(xhal_last_error(), HasSubstr("offset 8 + size 18446744073709551611"));
  EXPECT_EQ(contents(buf_), initial_);
  Bytes out(8, 0xCD);
  EXPECT_EQ(xhal_buffer_read(buf_, UINT64_MAX, out.data(), 1), XHAL_OUT_OF_RANGE);
  EXPECT_EQ(out, Bytes(8, 0xCD));
}

TEST_F(BufferTest, ReadOutOfRangeWritesNothingToTheHost) {
  Bytes out(16, 0xCD);
  EXPECT_EQ(xhal_buffer_read(buf_, 50, out.data(), 16), XHAL_OUT_OF_RANGE);
  EXPECT_THAT(xhal_last_error(), HasSubstr("src: range offset 50 + size 16"));
  EXPECT_EQ(out, Bytes(16, 0xCD));
}

TEST_F(BufferTest, NullArgumentsAreNamed) {
  EXPECT_EQ(xhal_buffer_write(nullptr, 0, "x", 1), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'dst' is NULL"));
  EXPECT_EQ(xhal_buffer_write(buf_, 0, nullptr, 1), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'src' is NULL"));
  EXPECT_EQ(xhal_buffer_read(buf_, 0, nullptr, 1), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'dst' is NULL"));
  EXPECT_EQ(xhal_buffer_allocate(nullptr, 4, &buf_), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'device' is NULL"));
  EXPECT_EQ(xhal_buffer_allocate(dev_, 4, nullptr), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'out_buffer' is NULL"));
  EXPECT_EQ(xhal_buffer_size(buf_, nullptr), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_buffer_release(nullptr), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_device_synchronize(nullptr), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_buffer_write(buf_, 0, nullptr, 0), XHAL_OK);  // zero bytes need no data
}

TEST_F(BufferTest, CopyWithinOneDevice) {
  xhal_buffer_t other = nullptr;
  ASSERT_EQ(xhal_buffer_allocate(dev_, 32, &other), XHAL_OK);
  ASSERT_EQ(xhal_buffer_fill(other, 0, 32, "\x00", 1), XHAL_OK);
  ASSERT_EQ(xhal_buffer_copy(buf_, 4, other, 8, 16), XHAL_OK) << xhal_last_error();
  Bytes expected(32, 0);
  std::copy(initial_.begin() + 4, initial_.begin() + 20, expected.begin() + 8);
  EXPECT_EQ(contents(other, 32), expected);
  EXPECT_EQ(xhal_buffer_copy(buf_, 0, other, 8, 32), XHAL_OUT_OF_RANGE);
  EXPECT_THAT(xhal_last_error(), HasSubstr("dst: range offset 8 + size 32"));
  EXPECT_EQ(xhal_buffer_copy(buf_, 40, other, 0, 32), XHAL_OUT_OF_RANGE);
  EXPECT_THAT(xhal_last_error(), HasSubstr("src: range offset 40 + size 32"));
  EXPECT_EQ(contents(other, 32), expected);
  EXPECT_EQ(xhal_buffer_release(other), XHAL_OK);
}

TEST_F(BufferTest, OverlappingCopyInOneBufferIsAliasing) {
  EXPECT_EQ(xhal_buffer_copy(buf_, 0, buf_, 8, 16), XHAL_ALIASING);
  EXPECT_THAT(xhal_last_error(), HasSubstr("source [0, 16) overlaps destination [8, 24)"));
  EXPECT_EQ(xhal_buffer_copy(buf_, 8, buf_, 0, 9), XHAL_ALIASING);
  EXPECT_EQ(contents(buf_), initial_);
  // Touching ranges do not overlap.
  ASSERT_EQ(xhal_buffer_copy(buf_, 0, buf_, 16, 16), XHAL_OK) << xhal_last_error();
  Bytes expected = initial_;
  std::copy(initial_.begin(), initial_.begin() + 16, expected.begin() + 16);
  EXPECT_EQ(contents(buf_), expected);
}

TEST_F(BufferTest, CopyAcrossDevicesIsWrongDevice) {
  xhal_device_t dev1 = nullptr;
  ASSERT_EQ(xhal_device_open("good:1", &dev1), XHAL_OK);
  ASSERT_NE(dev1, dev_);
  xhal_buffer_t other = nullptr;
  ASSERT_EQ(xhal_buffer_allocate(dev1, 64, &other), XHAL_OK);
  ASSERT_EQ(xhal_buffer_fill(other, 0, 64, "\x11", 1), XHAL_OK);
  EXPECT_EQ(xhal_buffer_copy(buf_, 0, other, 0, 8), XHAL_WRONG_DEVICE);
  EXPECT_THAT(xhal_last_error(), HasSubstr("'src' is on good:0 but 'dst' is on good:1"));
  EXPECT_EQ(contents(other), Bytes(64, 0x11));
  EXPECT_EQ(xhal_buffer_release(other), XHAL_OK);
  EXPECT_EQ(xhal_device_release(dev1), XHAL_OK);
}

TEST_F(BufferTest, FillRepeatsThePattern) {
  const uint32_t pattern = 0xA1B2C3D4;
  ASSERT_EQ(xhal_buffer_fill(buf_, 8, 16, &pattern, 4), XHAL_OK) << xhal_last_error();
  Bytes expected = initial_;
  for (int i = 0; i < 4; ++i) std::memcpy(expected.data() + 8 + 4 * i, &pattern, 4);
  EXPECT_EQ(contents(buf_), expected);
  const uint64_t wide = 0x0102030405060708ull;
  ASSERT_EQ(xhal_buffer_fill(buf_, 56, 8, &wide, 8), XHAL_OK);
  std::memcpy(expected.data() + 56, &wide, 8);
  EXPECT_EQ(contents(buf_), expected);
}

TEST_F(BufferTest, FillRejectsBadPatternsAndRanges) {
  const uint64_t pattern = ~0ull;
  EXPECT_EQ(xhal_buffer_fill(buf_, 0, 12, &pattern, 3), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'pattern_size' is 3; must be 1, 2, 4 or 8"));
  EXPECT_EQ(xhal_buffer_fill(buf_, 0, 16, &pattern, 16), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_buffer_fill(buf_, 2, 8, &pattern, 4), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(),
              HasSubstr("argument 'offset' is 2; must be a multiple of pattern_size 4"));
  EXPECT_EQ(xhal_buffer_fill(buf_, 0, 6, &pattern, 4), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'size' is 6"));
  EXPECT_EQ(xhal_buffer_fill(buf_, 56, 16, &pattern, 8), XHAL_OUT_OF_RANGE);
  EXPECT_EQ(xhal_buffer_fill(buf_, 0, 8, nullptr, 8), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'pattern' is NULL"));
  EXPECT_EQ(contents(buf_), initial_);
}

TEST_F(BufferTest, EmptyBuffersAndZeroByteTransfersAreValid) {
  xhal_buffer_t empty = nullptr;
  ASSERT_EQ(xhal_buffer_allocate(dev_, 0, &empty), XHAL_OK) << xhal_last_error();
  uint64_t size = 99;
  ASSERT_EQ(xhal_buffer_size(empty, &size), XHAL_OK);
  EXPECT_EQ(size, 0u);
  uint8_t byte = 0x5A;
  EXPECT_EQ(xhal_buffer_write(empty, 0, &byte, 0), XHAL_OK);
  EXPECT_EQ(xhal_buffer_read(empty, 0, &byte, 0), XHAL_OK);
  EXPECT_EQ(xhal_buffer_fill(empty, 0, 0, &byte, 1), XHAL_OK);
  EXPECT_EQ(xhal_buffer_copy(buf_, 64, empty, 0, 0), XHAL_OK);
  EXPECT_EQ(xhal_buffer_write(empty, 1, &byte, 0), XHAL_OUT_OF_RANGE);
  EXPECT_EQ(xhal_buffer_write(empty, 0, &byte, 1), XHAL_OUT_OF_RANGE);
  EXPECT_EQ(byte, 0x5A);
  EXPECT_EQ(xhal_buffer_release(empty), XHAL_OK);
}

TEST_F(BufferTest, BufferKnowsItsDeviceAndSize) {
  xhal_device_t owner = nullptr;
  ASSERT_EQ(xhal_buffer_device(buf_, &owner), XHAL_OK);
  EXPECT_EQ(owner, dev_);
  uint64_t size = 0;
  ASSERT_EQ(xhal_buffer_size(buf_, &size), XHAL_OK);
  EXPECT_EQ(size, 64u);
}

TEST_F(BufferTest, CountersCountTransfers) {
  xhal_counters_t before{}, after{};
  ASSERT_EQ(xhal_device_get_counters(dev_, &before), XHAL_OK);
  uint8_t data[16] = {};
  ASSERT_EQ(xhal_buffer_write(buf_, 0, data, 16), XHAL_OK);
  ASSERT_EQ(xhal_buffer_read(buf_, 0, data, 8), XHAL_OK);
  ASSERT_EQ(xhal_buffer_write(buf_, 0, data, 70), XHAL_OUT_OF_RANGE);  // never reaches it
  ASSERT_EQ(xhal_device_get_counters(dev_, &after), XHAL_OK);
  EXPECT_EQ(after.host_to_device_transfers - before.host_to_device_transfers, 1u);
  EXPECT_EQ(after.host_to_device_bytes - before.host_to_device_bytes, 16u);
  EXPECT_EQ(after.device_to_host_transfers - before.device_to_host_transfers, 1u);
  EXPECT_EQ(after.device_to_host_bytes - before.device_to_host_bytes, 8u);
  EXPECT_EQ(xhal_device_get_counters(dev_, nullptr), XHAL_INVALID_ARGUMENT);
}

TEST_F(BufferTest, PluginFailureCarriesItsMessage) {
  xhal_buffer_t huge = nullptr;
  EXPECT_EQ(xhal_buffer_allocate(dev_, uint64_t{5} << 30, &huge), XHAL_OUT_OF_MEMORY);
  EXPECT_STREQ(xhal_last_error(),
               "good plugin: buffer_allocate: fake backend allocates at most 4 GiB");
  EXPECT_EQ(huge, nullptr);
  // The next call starts with a clean message, and the failed allocation
  // left no live object behind (TearDown's device release would be BUSY).
  uint64_t size = 0;
  EXPECT_EQ(xhal_buffer_size(buf_, &size), XHAL_OK);
  EXPECT_STREQ(xhal_last_error(), "");
}

TEST_F(BufferTest, DeviceWithLiveBuffersIsBusy) {
  EXPECT_EQ(xhal_device_release(dev_), XHAL_BUSY);
  EXPECT_THAT(xhal_last_error(), HasSubstr("good:0: 1 buffers/plans/matrices still live"));
  EXPECT_EQ(xhal_runtime_shutdown(), XHAL_BUSY);
  EXPECT_THAT(xhal_last_error(), HasSubstr("devices still open: good:0 (1 handle)"));
  EXPECT_EQ(start(fake_dir("good")), XHAL_BUSY);
  // Still usable afterwards.
  EXPECT_EQ(contents(buf_), initial_);
}

TEST(DeviceThreads, ConcurrentOpenUseAndRelease) {
  ASSERT_EQ(start(fake_dir("good")), XHAL_OK);
  constexpr int kThreads = 8, kRounds = 40;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      for (int round = 0; round < kRounds; ++round) {
        xhal_device_t dev = nullptr;
        xhal_buffer_t buf = nullptr;
        Bytes data(256, static_cast<uint8_t>(t * 31 + round)), back(256, 0);
        const bool ok = xhal_device_open(t % 2 ? "good:1" : "good:0", &dev) == XHAL_OK &&
                        xhal_buffer_allocate(dev, 256, &buf) == XHAL_OK &&
                        xhal_buffer_write(buf, 0, data.data(), 256) == XHAL_OK &&
                        xhal_buffer_read(buf, 0, back.data(), 256) == XHAL_OK && back == data &&
                        xhal_buffer_release(buf) == XHAL_OK && xhal_device_release(dev) == XHAL_OK;
        if (!ok) ++failures[t];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures, std::vector<int>(kThreads, 0));
  // Every handle was released: shutdown is not BUSY.
  EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK) << xhal_last_error();
}

TEST(DeviceRelease, UseAfterReleaseIsReported) {
  ASSERT_EQ(start(fake_dir("good")), XHAL_OK);
  xhal_device_t dev = nullptr;
  ASSERT_EQ(xhal_device_open("good", &dev), XHAL_OK);
  ASSERT_EQ(xhal_device_release(dev), XHAL_OK);
  xhal_buffer_t buffer = nullptr;
  EXPECT_EQ(xhal_buffer_allocate(dev, 8, &buffer), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'device' (good:0) was released"));
  EXPECT_EQ(xhal_device_release(dev), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK);
}

}  // namespace
}  // namespace xhal::test
