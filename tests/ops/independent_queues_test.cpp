// Two devices of one backend have independent queues: while a call on
// recorder:0 is held inside the plugin (the recorder's gate), calls on
// recorder:1 from another thread run to completion, its synchronize
// returns, and only then is the held call let go. A global lock in the core
// would make the second device's calls wait for the first: the test would
// time out instead of passing. Deterministic: no timing is measured.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "ops_test_support.h"

namespace xhal::ops_test {
namespace {

bool wait_for(const std::atomic<bool>& flag, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!flag.load()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST_F(OpsTest, OneDeviceHeldDoesNotStopAnother) {
  const xhal_tensor_t x0 = f32({2, 8}, dev), y0 = f32({2, 8}, dev);
  const xhal_tensor_t x1 = f32({2, 8}, dev1), y1 = f32({2, 8}, dev1);
  rec->release = false;
  rec->hold = true;
  auto held = std::async(std::launch::async, [&] { return xhal_softmax_forward(dev, &x0, &y0); });
  ASSERT_TRUE(wait_for(rec->held, std::chrono::seconds(30))) << "the gated call never arrived";

  // recorder:0 is busy inside its slot; recorder:1 must not wait for it.
  auto other = std::async(std::launch::async, [&] {
    xhal_status_t s = xhal_softmax_forward(dev1, &x1, &y1);
    if (s == XHAL_OK) s = xhal_device_synchronize(dev1);
    return s;
  });
  const bool finished = other.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  const bool still_held = rec->held.load();
  rec->release = true;  // let the first call go whatever happened
  EXPECT_TRUE(finished) << "a call on recorder:1 waited for the call held on recorder:0";
  EXPECT_TRUE(still_held);
  EXPECT_EQ(other.get(), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(held.get(), XHAL_OK);
  EXPECT_EQ(rec->count("softmax_forward"), 1u);  // recorder:1's; the held call records nothing
}

}  // namespace
}  // namespace xhal::ops_test
