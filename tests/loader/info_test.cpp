// Info structs follow the struct_size convention (fields past the caller's
// struct_size are not written), plus version, status names and init rules.
#include <gmock/gmock.h>

#include <cstring>
#include <thread>

#include "test_support.h"

namespace xhal::test {
namespace {

using ::testing::HasSubstr;

class InfoTest : public RuntimeTest {
 protected:
  void SetUp() override { ASSERT_EQ(start(fake_dir("good")), XHAL_OK) << xhal_last_error(); }
};

TEST_F(InfoTest, DeviceInfoHasEveryField) {
  const xhal_device_info_t info = device_info(1);
  EXPECT_EQ(info.struct_size, sizeof(xhal_device_info_t));
  EXPECT_STREQ(info.backend, "good");
  EXPECT_EQ(info.backend_index, 1u);
  EXPECT_STREQ(info.name, "good fake device 1");
  EXPECT_STREQ(info.stable_id, "fake-good-1");
  EXPECT_EQ(info.kind, XHAL_DEVICE_KIND_OTHER);
  EXPECT_EQ(info.memory_bytes, (uint64_t{1} << 30) + 1);
}

TEST_F(InfoTest, SmallerDeviceInfoLeavesLaterFieldsUntouched) {
  xhal_device_info_t info;
  std::memset(&info, 0xAB, sizeof(info));
  info.struct_size = offsetof(xhal_device_info_t, name);  // an older, shorter struct
  ASSERT_EQ(xhal_device_get_info(1, &info), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(info.struct_size, offsetof(xhal_device_info_t, name));
  EXPECT_STREQ(info.backend, "good");
  EXPECT_EQ(info.backend_index, 1u);
  xhal_device_info_t untouched;
  std::memset(&untouched, 0xAB, sizeof(untouched));
  EXPECT_EQ(std::memcmp(reinterpret_cast<char*>(&info) + info.struct_size,
                        reinterpret_cast<char*>(&untouched) + info.struct_size,
                        sizeof(info) - info.struct_size),
            0);

  xhal_device_t dev = nullptr;
  ASSERT_EQ(xhal_device_open_index(0, &dev), XHAL_OK);
  std::memset(&info, 0xAB, sizeof(info));
  info.struct_size = offsetof(xhal_device_info_t, kind);
  ASSERT_EQ(xhal_device_query(dev, &info), XHAL_OK);
  EXPECT_STREQ(info.stable_id, "fake-good-0");
  EXPECT_EQ(std::memcmp(reinterpret_cast<char*>(&info) + info.struct_size,
                        reinterpret_cast<char*>(&untouched) + info.struct_size,
                        sizeof(info) - info.struct_size),
            0);
  EXPECT_EQ(xhal_device_release(dev), XHAL_OK);
}

TEST_F(InfoTest, SmallerPluginInfoLeavesLaterFieldsUntouched) {
  xhal_plugin_info_t info;
  std::memset(&info, 0xAB, sizeof(info));
  info.struct_size = offsetof(xhal_plugin_info_t, reason);
  ASSERT_EQ(xhal_plugin_get_info(0, &info), XHAL_OK) << xhal_last_error();
  EXPECT_STREQ(info.backend, "good");
  EXPECT_EQ(info.state, XHAL_PLUGIN_LOADED);
  xhal_plugin_info_t untouched;
  std::memset(&untouched, 0xAB, sizeof(untouched));
  EXPECT_EQ(std::memcmp(reinterpret_cast<char*>(&info) + info.struct_size,
                        reinterpret_cast<char*>(&untouched) + info.struct_size,
                        sizeof(info) - info.struct_size),
            0);
}

TEST_F(InfoTest, BadInfoArguments) {
  xhal_device_info_t info{};
  EXPECT_EQ(xhal_device_get_info(0, &info), XHAL_INVALID_ARGUMENT);  // struct_size 0
  EXPECT_THAT(xhal_last_error(), HasSubstr("out_info->struct_size is 0"));
  EXPECT_EQ(xhal_device_get_info(0, nullptr), XHAL_INVALID_ARGUMENT);
  info.struct_size = sizeof(info);
  EXPECT_EQ(xhal_device_get_info(2, &info), XHAL_OUT_OF_RANGE);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'index' is 2; there are 2 devices"));
  xhal_plugin_info_t pinfo{};
  pinfo.struct_size = sizeof(pinfo);
  EXPECT_EQ(xhal_plugin_get_info(1, &pinfo), XHAL_OUT_OF_RANGE);
  EXPECT_EQ(xhal_plugin_count(nullptr), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_device_count(nullptr), XHAL_INVALID_ARGUMENT);
}

TEST_F(InfoTest, InitWhileRunningIsBusy) {
  EXPECT_EQ(start(fake_dir("good")), XHAL_BUSY);
  EXPECT_THAT(xhal_last_error(), HasSubstr("already running"));
}

TEST(Version, MatchesTheHeader) {
  uint32_t major = 9, minor = 9, patch = 9;
  ASSERT_EQ(xhal_version(&major, &minor, &patch), XHAL_OK);
  EXPECT_EQ(major, uint32_t{XHAL_VERSION_MAJOR});
  EXPECT_EQ(minor, uint32_t{XHAL_VERSION_MINOR});
  EXPECT_EQ(patch, uint32_t{XHAL_VERSION_PATCH});
  EXPECT_EQ(xhal_version(nullptr, &minor, &patch), XHAL_INVALID_ARGUMENT);
}

TEST(StatusNames, AreStable) {
  EXPECT_STREQ(xhal_status_name(XHAL_OK), "XHAL_OK");
  EXPECT_STREQ(xhal_status_name(XHAL_OUT_OF_RANGE), "XHAL_OUT_OF_RANGE");
  EXPECT_STREQ(xhal_status_name(XHAL_INTERNAL), "XHAL_INTERNAL");
  EXPECT_STREQ(xhal_status_name(static_cast<xhal_status_t>(999)), "XHAL_UNKNOWN_STATUS");
}

TEST(LastError, IsPerThreadAndClearedBySuccess) {
  EXPECT_EQ(xhal_buffer_release(nullptr), XHAL_INVALID_ARGUMENT);
  EXPECT_STRNE(xhal_last_error(), "");
  std::string other_thread = "unset";
  std::thread([&] { other_thread = xhal_last_error(); }).join();
  EXPECT_EQ(other_thread, "");
  uint32_t a, b, c;
  EXPECT_EQ(xhal_version(&a, &b, &c), XHAL_OK);
  EXPECT_STREQ(xhal_last_error(), "");
}

TEST(RuntimeOptions, ShortStructUsesOnlyItsFields) {
  // An options struct that ends before plugin_path_only: the default (0)
  // applies, and the folder beside libxhal is searched too.
  xhal_runtime_options_t options{};
  options.struct_size = offsetof(xhal_runtime_options_t, plugin_path_only);
  options.device_selector = "good";
  const std::string path = fake_dir("good");
  options.plugin_path = path.c_str();
  options.plugin_path_only = 1;  // past struct_size: must be ignored
  ASSERT_EQ(xhal_runtime_init(&options), XHAL_OK) << xhal_last_error();
  EXPECT_GE(plugins().size(), 1u);
  EXPECT_EQ(plugins()[0].path, path + "/libxhal-good.so");
  EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK);
  options.struct_size = 0;
  EXPECT_EQ(xhal_runtime_init(&options), XHAL_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace xhal::test
