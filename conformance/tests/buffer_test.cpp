// Buffers: round trips, copies, fills, bounds, counters, threads.
#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "check.h"

namespace xhal::conf {
namespace {

class BufferTest : public DeviceTest {};

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t r = rng();
    std::memcpy(v.data() + i, &r, 8);
  }
  for (; i < n; ++i) v[i] = static_cast<uint8_t>(rng());
  return v;
}

TEST_P(BufferTest, RoundTripSizes) {
  for (uint64_t size : {uint64_t{0}, uint64_t{1}, uint64_t{3}, uint64_t{4097}, uint64_t{1} << 20}) {
    SCOPED_TRACE("size " + std::to_string(size));
    std::vector<uint8_t> data = random_bytes(size, fresh_seed());
    BufferGuard g;
    xhal_buffer_t b = g.add(upload(dev, data.data(), size));
    ASSERT_NE(b, nullptr);
    uint64_t got_size = 99;
    ASSERT_EQ(xhal_buffer_size(b, &got_size), XHAL_OK);
    EXPECT_EQ(got_size, size);
    std::string first;
    EXPECT_TRUE(same_bytes(download_bytes(b, 0, size), data, &first)) << first;
  }
}

TEST_P(BufferTest, RoundTripLarge256MiB) {
  const uint64_t size = uint64_t{256} << 20;
  std::vector<uint8_t> data = random_bytes(size, fresh_seed());
  BufferGuard g;
  xhal_buffer_t b = g.add(upload(dev, data.data(), size));
  ASSERT_NE(b, nullptr);
  std::vector<uint8_t> back = download_bytes(b, 0, size);
  EXPECT_TRUE(back == data) << "256 MiB round trip differs";
}

TEST_P(BufferTest, OffsetsReadAndWriteOnlyTheirRange) {
  const uint64_t size = 1001;
  std::vector<uint8_t> base = random_bytes(size, fresh_seed());
  std::vector<uint8_t> patch = random_bytes(333, fresh_seed());
  BufferGuard g;
  xhal_buffer_t b = g.add(upload(dev, base));
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(xhal_buffer_write(b, 17, patch.data(), patch.size()), XHAL_OK) << xhal_last_error();
  std::vector<uint8_t> want = base;
  std::memcpy(want.data() + 17, patch.data(), patch.size());
  std::string first;
  EXPECT_TRUE(same_bytes(download_bytes(b, 0, size), want, &first)) << first;
  // Reads at odd offsets, including the last byte and an empty read at the end.
  for (uint64_t off : {uint64_t{0}, uint64_t{1}, uint64_t{17}, uint64_t{999}}) {
    uint64_t len = size - off;
    std::vector<uint8_t> part(want.begin() + off, want.end());
    EXPECT_TRUE(same_bytes(download_bytes(b, off, len), part, &first))
        << "offset " << off << ": " << first;
  }
  EXPECT_EQ(xhal_buffer_read(b, size, nullptr, 0), XHAL_OK) << xhal_last_error();
}

TEST_P(BufferTest, DeviceToDeviceCopy) {
  const uint64_t size = 65537;
  std::vector<uint8_t> a = random_bytes(size, fresh_seed()), c = random_bytes(size, fresh_seed());
  BufferGuard g;
  xhal_buffer_t src = g.add(upload(dev, a)), dst = g.add(upload(dev, c));
  ASSERT_NE(dst, nullptr);
  xhal_counters_t before = counters(dev);
  ASSERT_EQ(xhal_buffer_copy(src, 3, dst, 11, 40000), XHAL_OK) << xhal_last_error();
  xhal_counters_t after = counters(dev);
  XHAL_CONF_EXPECT_NO_HOST_TRANSFER(before, after);
  std::memcpy(c.data() + 11, a.data() + 3, 40000);
  std::string first;
  EXPECT_TRUE(same_bytes(download_bytes(dst, 0, size), c, &first)) << first;
  // Within one buffer, disjoint ranges.
  ASSERT_EQ(xhal_buffer_copy(dst, 0, dst, 50000, 10000), XHAL_OK) << xhal_last_error();
  std::memcpy(c.data() + 50000, c.data(), 10000);
  EXPECT_TRUE(same_bytes(download_bytes(dst, 0, size), c, &first)) << first;
  // Empty copy.
  EXPECT_EQ(xhal_buffer_copy(src, size, dst, size, 0), XHAL_OK) << xhal_last_error();
  EXPECT_TRUE(same_bytes(download_bytes(dst, 0, size), c, &first)) << first;
}

TEST_P(BufferTest, FillPatterns) {
  const uint64_t size = 8 * 1024 + 64;
  for (uint32_t psize : {1u, 2u, 4u, 8u}) {
    SCOPED_TRACE("pattern size " + std::to_string(psize));
    std::vector<uint8_t> base = random_bytes(size, fresh_seed());
    std::vector<uint8_t> pattern = random_bytes(psize, fresh_seed());
    BufferGuard g;
    xhal_buffer_t b = g.add(upload(dev, base));
    ASSERT_NE(b, nullptr);
    uint64_t off = 8 * psize, len = 1000 * psize;
    xhal_counters_t before = counters(dev);
    ASSERT_EQ(xhal_buffer_fill(b, off, len, pattern.data(), psize), XHAL_OK) << xhal_last_error();
    xhal_counters_t after = counters(dev);
    XHAL_CONF_EXPECT_NO_HOST_TRANSFER(before, after);
    for (uint64_t i = 0; i < len; ++i) base[off + i] = pattern[i % psize];
    std::string first;
    EXPECT_TRUE(same_bytes(download_bytes(b, 0, size), base, &first)) << first;
  }
}

TEST_P(BufferTest, OutOfRangeWritesNothing) {
  const uint64_t size = 256;
  std::vector<uint8_t> base = random_bytes(size, fresh_seed());
  std::vector<uint8_t> junk = random_bytes(size + 16, fresh_seed());
  BufferGuard g;
  xhal_buffer_t b = g.add(upload(dev, base)), other = g.add(upload(dev, base));
  ASSERT_NE(other, nullptr);
  const uint64_t huge = ~uint64_t{0};
  struct Case {
    const char* what;
    xhal_status_t st;
  };
  uint64_t pattern = 0x0123456789abcdefull;
  std::vector<uint8_t> host(size + 16, 0x5a), host_before = host;
  Case cases[] = {
      {"write past the end", xhal_buffer_write(b, size - 3, junk.data(), 8)},
      {"write larger than the buffer", xhal_buffer_write(b, 0, junk.data(), size + 1)},
      {"write at offset past the end", xhal_buffer_write(b, size + 1, junk.data(), 0)},
      {"write whose end overflows uint64", xhal_buffer_write(b, huge - 1, junk.data(), 4)},
      {"copy source range outside", xhal_buffer_copy(other, size - 4, b, 0, 8)},
      {"copy destination range outside", xhal_buffer_copy(other, 0, b, size - 4, 8)},
      {"copy whose end overflows", xhal_buffer_copy(other, 0, b, huge - 2, 8)},
      {"fill past the end", xhal_buffer_fill(b, size - 8, 16, &pattern, 8)},
      {"fill whose end overflows", xhal_buffer_fill(b, 8, huge - 7, &pattern, 8)},
      {"read past the end", xhal_buffer_read(b, size - 3, host.data(), 8)},
      {"read whose end overflows", xhal_buffer_read(b, huge - 1, host.data(), 4)},
  };
  for (const Case& c : cases)
    EXPECT_EQ(c.st, XHAL_OUT_OF_RANGE) << c.what << ": " << xhal_status_name(c.st);
  std::string first;
  EXPECT_TRUE(same_bytes(download_bytes(b, 0, size), base, &first)) << "buffer changed: " << first;
  EXPECT_TRUE(host == host_before) << "a failed read wrote host memory";
}

TEST_P(BufferTest, BadFillAndOverlapArguments) {
  std::vector<uint8_t> base = random_bytes(64, fresh_seed());
  BufferGuard g;
  xhal_buffer_t b = g.add(upload(dev, base));
  ASSERT_NE(b, nullptr);
  uint64_t pattern = 0xfeedfacecafebeefull;
  EXPECT_EQ(xhal_buffer_fill(b, 0, 12, &pattern, 3), XHAL_INVALID_ARGUMENT) << "pattern size 3";
  EXPECT_EQ(xhal_buffer_fill(b, 2, 8, &pattern, 4), XHAL_INVALID_ARGUMENT)
      << "offset not a multiple";
  EXPECT_EQ(xhal_buffer_fill(b, 0, 6, &pattern, 4), XHAL_INVALID_ARGUMENT) << "size not a multiple";
  EXPECT_EQ(xhal_buffer_fill(b, 0, 8, nullptr, 4), XHAL_INVALID_ARGUMENT) << "null pattern";
  EXPECT_EQ(xhal_buffer_copy(b, 0, b, 8, 16), XHAL_ALIASING) << "overlapping copy in one buffer";
  EXPECT_EQ(xhal_buffer_write(nullptr, 0, base.data(), 4), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_buffer_write(b, 0, nullptr, 4), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_buffer_read(b, 0, nullptr, 4), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_buffer_copy(nullptr, 0, b, 0, 4), XHAL_INVALID_ARGUMENT);
  std::string first;
  EXPECT_TRUE(same_bytes(download_bytes(b, 0, 64), base, &first)) << "buffer changed: " << first;
  // The failing call names its argument.
  EXPECT_EQ(xhal_buffer_fill(b, 0, 12, &pattern, 3), XHAL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(xhal_last_error()).find("pattern_size"), std::string::npos)
      << xhal_last_error();
}

TEST_P(BufferTest, CountersMoveByTheTransferredBytes) {
  BufferGuard g;
  xhal_buffer_t b = nullptr;
  ASSERT_EQ(xhal_buffer_allocate(dev, 10000, &b), XHAL_OK);
  g.add(b);
  std::vector<uint8_t> data = random_bytes(10000, fresh_seed());
  xhal_counters_t c0 = counters(dev);
  ASSERT_EQ(xhal_buffer_write(b, 100, data.data(), 7777), XHAL_OK);
  xhal_counters_t c1 = counters(dev);
  EXPECT_GE(c1.host_to_device_transfers, c0.host_to_device_transfers + 1);
  EXPECT_EQ(c1.host_to_device_bytes, c0.host_to_device_bytes + 7777);
  EXPECT_EQ(c1.device_to_host_transfers, c0.device_to_host_transfers);
  EXPECT_EQ(c1.device_to_host_bytes, c0.device_to_host_bytes);
  ASSERT_EQ(xhal_buffer_read(b, 5, data.data(), 1234), XHAL_OK);
  xhal_counters_t c2 = counters(dev);
  EXPECT_GE(c2.device_to_host_transfers, c1.device_to_host_transfers + 1);
  EXPECT_EQ(c2.device_to_host_bytes, c1.device_to_host_bytes + 1234);
  EXPECT_EQ(c2.host_to_device_transfers, c1.host_to_device_transfers);
  EXPECT_EQ(c2.host_to_device_bytes, c1.host_to_device_bytes);
  // A failed call moves nothing.
  EXPECT_EQ(xhal_buffer_write(b, 9999, data.data(), 2), XHAL_OUT_OF_RANGE);
  xhal_counters_t c3 = counters(dev);
  EXPECT_EQ(c3.host_to_device_bytes, c2.host_to_device_bytes);
  EXPECT_EQ(c3.host_to_device_transfers, c2.host_to_device_transfers);
}

TEST_P(BufferTest, EightThreadsOnOneDevice) {
  // Each thread owns buffers and checks its own round trips, copies and
  // fills many times; a plugin that shares state without locking mixes data.
  constexpr int kThreads = 8, kIters = 50;
  std::atomic<int> failures{0};
  std::vector<std::string> errors(kThreads);
  std::vector<uint64_t> seeds(kThreads);
  for (auto& s : seeds) s = fresh_seed();
  auto work = [&](int t) {
    std::mt19937_64 rng(seeds[t]);
    for (int it = 0; it < kIters && failures == 0; ++it) {
      uint64_t size = 1 + rng() % 200000;
      std::vector<uint8_t> data = random_bytes(size, rng()), back(size);
      xhal_buffer_t a = nullptr, b = nullptr;
      auto fail = [&](const std::string& what) {
        errors[t] = "thread " + std::to_string(t) + " iteration " + std::to_string(it) + ": " +
                    what + " " + xhal_last_error();
        ++failures;
      };
      if (xhal_buffer_allocate(dev, size, &a) != XHAL_OK ||
          xhal_buffer_allocate(dev, size, &b) != XHAL_OK) {
        fail("allocate");
      } else if (xhal_buffer_write(a, 0, data.data(), size) != XHAL_OK ||
                 xhal_buffer_copy(a, 0, b, 0, size) != XHAL_OK ||
                 xhal_buffer_read(b, 0, back.data(), size) != XHAL_OK) {
        fail("write/copy/read");
      } else if (back != data) {
        fail("copied data differ");
      } else {
        uint8_t p = static_cast<uint8_t>(t * 31 + it);
        if (xhal_buffer_fill(a, 0, size, &p, 1) != XHAL_OK ||
            xhal_buffer_read(a, 0, back.data(), size) != XHAL_OK)
          fail("fill/read");
        else if (std::any_of(back.begin(), back.end(), [&](uint8_t v) { return v != p; }))
          fail("filled data differ");
      }
      if (a) xhal_buffer_release(a);
      if (b) xhal_buffer_release(b);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (auto& th : threads) th.join();
  for (const auto& e : errors) EXPECT_TRUE(e.empty()) << e;
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(xhal_device_synchronize(dev), XHAL_OK);
}

TEST_P(BufferTest, BufferOfAnotherDeviceIsRejected) {
  // Needs a second device in the runtime (e.g. cpu and vulkan together).
  uint32_t count = 0;
  ASSERT_EQ(xhal_device_count(&count), XHAL_OK);
  xhal_device_info_t mine{};
  mine.struct_size = sizeof mine;
  ASSERT_EQ(xhal_device_query(dev, &mine), XHAL_OK);
  xhal_device_t other = nullptr;
  for (uint32_t i = 0; i < count && !other; ++i) {
    if (i == GetParam().index) continue;
    xhal_device_t d = nullptr;
    if (xhal_device_open_index(i, &d) == XHAL_OK) other = d;
  }
  if (!other) GTEST_SKIP() << "only one device in this run; the wrong-device check needs two";
  std::vector<uint8_t> base = random_bytes(64, fresh_seed());
  xhal_buffer_t mine_buf = upload(dev, base), theirs = upload(other, base);
  EXPECT_EQ(xhal_buffer_copy(theirs, 0, mine_buf, 0, 64), XHAL_WRONG_DEVICE);
  std::string first;
  EXPECT_TRUE(same_bytes(download_bytes(mine_buf, 0, 64), base, &first)) << first;
  xhal_buffer_release(mine_buf);
  xhal_buffer_release(theirs);
  xhal_device_release(other);
}

XHAL_CONF_INSTANTIATE(BufferTest);

}  // namespace
}  // namespace xhal::conf
