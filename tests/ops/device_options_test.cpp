// XHAL_DEVICE_OPTIONS for a backend whose plugin has no options slot: the
// core refuses the open itself (the recorder plugin has no
// device_open_with_options).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "ops_test_support.h"

namespace xhal::ops_test {
namespace {

using ::testing::HasSubstr;

TEST_F(OpsTest, OptionsForABackendWithoutAnOptionsSlotFailTheOpen) {
  // dev1 is recorder:1's only open; closing it lets the next open apply
  // the options.
  ASSERT_EQ(xhal_device_release(dev1), XHAL_OK);
  dev1 = nullptr;
  setenv("XHAL_DEVICE_OPTIONS", "recorder:threads=2", 1);
  xhal_device_t d = nullptr;
  uint32_t n = 0;
  ASSERT_EQ(xhal_device_count(&n), XHAL_OK);
  xhal_status_t s = XHAL_NOT_FOUND;
  for (uint32_t i = 0; i < n; ++i) {
    xhal_device_info_t info{};
    info.struct_size = sizeof info;
    ASSERT_EQ(xhal_device_get_info(i, &info), XHAL_OK);
    if (std::string(info.backend) == "recorder" && info.backend_index == 1) {
      s = xhal_device_open_index(i, &d);
      break;
    }
  }
  const std::string message = xhal_last_error();  // before any other call clears it
  unsetenv("XHAL_DEVICE_OPTIONS");
  EXPECT_EQ(s, XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(d, nullptr);
  EXPECT_THAT(message, HasSubstr("backend 'recorder' takes no device options (got 'threads=2')"));
  dev1 = open("recorder", 1);  // without options it opens (and TearDown closes it)
  ASSERT_NE(dev1, nullptr);
}

}  // namespace
}  // namespace xhal::ops_test
