// xhal_device_open_on_native_queue in the core: the caller's queue reaches
// the plugin's device_open_on_queue once per opening, the device keeps one
// queue (same queue or a plain open share the handle; another queue is
// XHAL_BUSY), and a backend without the slot is XHAL_UNSUPPORTED.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "ops_test_support.h"
#include "xhal/interop.h"

namespace xhal::ops_test {
namespace {

using ::testing::HasSubstr;

void* fake_queue(uintptr_t v) { return reinterpret_cast<void*>(v); }

TEST_F(OpsTest, NativeQueueReachesThePluginOnceAndIsKept) {
  // dev1 is recorder:1's only open: close it so the next open opens it.
  ASSERT_EQ(xhal_device_release(dev1), XHAL_OK);
  dev1 = nullptr;
  const int before = rec->opens_on_queue;

  xhal_device_t a = nullptr, b = nullptr, c = nullptr;
  ASSERT_EQ(xhal_device_open_on_native_queue("recorder:1", fake_queue(0x5000), &a), XHAL_OK)
      << xhal_last_error();
  EXPECT_EQ(rec->opens_on_queue, before + 1);
  EXPECT_EQ(rec->last_open_queue, fake_queue(0x5000));
  void* q = nullptr;
  ASSERT_EQ(xhal_device_get_native_queue(a, &q), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(q, fake_queue(0x5000));

  // The same queue, and a plain open: the same device, no second plugin open.
  ASSERT_EQ(xhal_device_open_on_native_queue("recorder:1", fake_queue(0x5000), &b), XHAL_OK);
  ASSERT_EQ(xhal_device_open("recorder:1", &c), XHAL_OK);
  EXPECT_EQ(b, a);
  EXPECT_EQ(c, a);
  EXPECT_EQ(rec->opens_on_queue, before + 1);

  // Another queue cannot join the device's one in-order queue.
  xhal_device_t other = nullptr;
  EXPECT_EQ(xhal_device_open_on_native_queue("recorder:1", fake_queue(0x6000), &other), XHAL_BUSY);
  EXPECT_THAT(xhal_last_error(), HasSubstr("already open on native queue"));
  EXPECT_EQ(other, nullptr);

  for (xhal_device_t d : {a, b, c}) ASSERT_EQ(xhal_device_release(d), XHAL_OK);
  // Closed: now another queue opens it anew.
  ASSERT_EQ(xhal_device_open_on_native_queue("recorder:1", fake_queue(0x6000), &a), XHAL_OK);
  EXPECT_EQ(rec->opens_on_queue, before + 2);
  EXPECT_EQ(rec->last_open_queue, fake_queue(0x6000));
  ASSERT_EQ(xhal_device_release(a), XHAL_OK);
  dev1 = open("recorder", 1);  // TearDown releases it
  ASSERT_NE(dev1, nullptr);
}

TEST_F(OpsTest, NativeQueueOfADeviceOpenOnItsOwnQueueIsBusy) {
  // dev (recorder:0) is open on its own queue.
  xhal_device_t d = nullptr;
  const int before = rec->opens_on_queue;
  EXPECT_EQ(xhal_device_open_on_native_queue("recorder:0", fake_queue(0x7000), &d), XHAL_BUSY);
  EXPECT_THAT(xhal_last_error(), HasSubstr("already open on its own queue"));
  EXPECT_EQ(d, nullptr);
  EXPECT_EQ(rec->opens_on_queue, before);
}

TEST_F(OpsTest, NativeQueueWithoutThePluginSlotIsUnsupported) {
  // recmin has no device_open_on_queue slot; its device 0 is open (devmin),
  // so close it first: the refusal must come from the missing slot.
  ASSERT_EQ(xhal_device_release(devmin), XHAL_OK);
  devmin = nullptr;
  xhal_device_t d = nullptr;
  EXPECT_EQ(xhal_device_open_on_native_queue("recmin", fake_queue(0x5000), &d), XHAL_UNSUPPORTED);
  EXPECT_THAT(xhal_last_error(), HasSubstr("backend 'recmin' cannot run on a caller's queue"));
  EXPECT_EQ(d, nullptr);
  EXPECT_EQ(xhal_device_open_on_native_queue("recmin", nullptr, nullptr), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("out_device"));
  devmin = open("recmin", 0);
  ASSERT_NE(devmin, nullptr);
}

}  // namespace
}  // namespace xhal::ops_test
