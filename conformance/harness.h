// Shared test harness of xhal-conformance: device parameterisation, the
// report bookkeeping and small helpers for moving data. Implemented in
// harness.cpp. Tests include this header only (plus the public API and the
// references); they never include plugin code.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "xhal/xhal.h"

namespace xhal::conf {

// One selected device (from XHAL_DEVICE / --device / --plugin).
struct DeviceParam {
  uint32_t index = 0;  // index for xhal_device_open_index
  std::string name;    // "cpu:0" (also the report's device field)
};
std::vector<DeviceParam> selected_devices();
// gtest prints a parameter as its device name (not as raw bytes).
void PrintTo(const DeviceParam& param, std::ostream* os);
std::string device_param_name(const ::testing::TestParamInfo<DeviceParam>& info);

// Conformance level an op's test demonstrated (the report keeps the best
// level per op and device that every test of that op reached).
enum class Level { kNone, kAccurate, kBitExact };

// Fixture: opens the device in SetUp, releases it in TearDown.
class DeviceTest : public ::testing::TestWithParam<DeviceParam> {
 protected:
  void SetUp() override;
  void TearDown() override;
  xhal_device_t dev = nullptr;
};

// Report bookkeeping for the running test.
void record_op(xhal_op_t op);    // the op this test exercises
void record_level(Level level);  // level this test demonstrated
// Marks the running test as "unsupported" and skips it (GTEST_SKIP).
#define XHAL_CONF_UNSUPPORTED(why)            \
  do {                                        \
    ::xhal::conf::mark_unsupported(why);      \
    GTEST_SKIP() << "unsupported: " << (why); \
  } while (0)
void mark_unsupported(const std::string& why);

// Buffers of host data; every helper ASSERTs on failure.
xhal_buffer_t upload(xhal_device_t dev, const void* data, uint64_t bytes);
template <typename T>
xhal_buffer_t upload(xhal_device_t dev, const std::vector<T>& v) {
  return upload(dev, v.data(), v.size() * sizeof(T));
}
std::vector<uint8_t> download_bytes(xhal_buffer_t buf, uint64_t offset, uint64_t bytes);
template <typename T>
std::vector<T> download(xhal_buffer_t buf, size_t count, uint64_t offset = 0) {
  auto b = download_bytes(buf, offset, count * sizeof(T));
  std::vector<T> v(count);
  if (!b.empty()) std::memcpy(v.data(), b.data(), b.size());
  return v;
}
// A contiguous tensor over `buf` at byte `offset`.
xhal_tensor_t tensor(xhal_buffer_t buf, xhal_dtype_t dtype, std::vector<int64_t> shape,
                     uint64_t offset = 0);
// Fills a buffer with a poison pattern (0x7fc0dead NaN) so unwritten or
// wrongly written outputs are caught.
void poison(xhal_buffer_t buf);
bool is_poison(float v);
// An f64 element of a poisoned buffer: the pattern twice (also a NaN).
bool is_poison(double v);

// Counters of the device (docs/plugin-guide.md "Counters"). Ops, copies and
// fills must not move the transfer counters; each op call that reaches the
// plugin counts at least one kernel launch.
xhal_counters_t counters(xhal_device_t dev);
#define XHAL_CONF_EXPECT_NO_HOST_TRANSFER(before, after)                                      \
  do {                                                                                        \
    EXPECT_EQ((before).host_to_device_transfers, (after).host_to_device_transfers)            \
        << "host-to-device transfers during device work (docs/plugin-guide.md \"Counters\")"; \
    EXPECT_EQ((before).device_to_host_transfers, (after).device_to_host_transfers)            \
        << "device-to-host transfers during device work (docs/plugin-guide.md \"Counters\")"; \
  } while (0)
// No transfer, and at least `launches` more kernel launches: one per op call
// that reaches its slot (0 for a call the core completes itself: an empty
// tensor, a permute that is a plain copy).
#define XHAL_CONF_EXPECT_OP_COUNTERS(before, after, launches)                                \
  do {                                                                                       \
    XHAL_CONF_EXPECT_NO_HOST_TRANSFER(before, after);                                        \
    EXPECT_GE((after).kernel_launches, (before).kernel_launches + (launches))                \
        << "kernel_launches moved by " << (after).kernel_launches - (before).kernel_launches \
        << " over " << (launches) << " op call(s) that reached the plugin; each counts its " \
        << "device work (docs/plugin-guide.md \"Counters\")";                                \
  } while (0)

// The same check for the op calls made while it lives: synchronises and
// reads the counters when created and when it ends.
class OpCounters {
 public:
  OpCounters(xhal_device_t dev, uint64_t launches);
  ~OpCounters();
  OpCounters(const OpCounters&) = delete;
  OpCounters& operator=(const OpCounters&) = delete;

 private:
  xhal_device_t dev_;
  uint64_t launches_;
  xhal_counters_t before_{};
};

// Release helper for gtest bodies.
struct BufferGuard {
  std::vector<xhal_buffer_t> bufs;
  ~BufferGuard() {
    for (auto b : bufs) xhal_buffer_release(b);
  }
  xhal_buffer_t add(xhal_buffer_t b) {
    bufs.push_back(b);
    return b;
  }
};

}  // namespace xhal::conf

#define XHAL_CONF_INSTANTIATE(Suite)                                                              \
  INSTANTIATE_TEST_SUITE_P(Devices, Suite, ::testing::ValuesIn(::xhal::conf::selected_devices()), \
                           ::xhal::conf::device_param_name)
