// The faulty-plugin corpus (tests/fake_plugins, folder faulty/): plugins that
// throw, report absurd counts, call back into the core or describe garbage
// devices. Each is rejected with a reason naming what was wrong, or its fault
// is contained in the call that hit it, while the good plugin of the same
// folder still loads and works.
#include <gmock/gmock.h>

#include <array>
#include <cstring>
#include <numeric>

#include "test_support.h"

namespace xhal::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Writes 64 bytes to a fresh buffer of `selector`'s device and reads them
// back: the device works.
void expect_round_trip(const char* selector) {
  xhal_device_t dev = nullptr;
  ASSERT_EQ(xhal_device_open(selector, &dev), XHAL_OK) << xhal_last_error();
  xhal_buffer_t buf = nullptr;
  ASSERT_EQ(xhal_buffer_allocate(dev, 64, &buf), XHAL_OK) << xhal_last_error();
  std::array<uint8_t, 64> in{}, out{};
  std::iota(in.begin(), in.end(), uint8_t{7});
  EXPECT_EQ(xhal_buffer_write(buf, 0, in.data(), in.size()), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(xhal_buffer_read(buf, 0, out.data(), out.size()), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(out, in);
  EXPECT_EQ(xhal_buffer_release(buf), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(xhal_device_release(dev), XHAL_OK) << xhal_last_error();
}

class FaultyPluginTest : public RuntimeTest {
 protected:
  void SetUp() override { ASSERT_EQ(start(fake_dir("faulty")), XHAL_OK) << xhal_last_error(); }

  // The candidate is rejected with exactly `reason` and left unloaded.
  void expect_rejected(const std::string& name, const std::string& reason) {
    const PluginView p = plugin(name);
    EXPECT_EQ(p.state, XHAL_PLUGIN_REJECTED) << name;
    EXPECT_EQ(p.reason, reason) << name;
    EXPECT_EQ(p.device_count, 0u) << name;
    EXPECT_FALSE(library_mapped(p.path)) << name << " stayed loaded after its rejection";
  }
};

TEST_F(FaultyPluginTest, GoodPluginBesideTheFaultyOnesLoadsAndWorks) {
  const PluginView p = plugin("good");
  EXPECT_EQ(p.state, XHAL_PLUGIN_LOADED);
  EXPECT_EQ(p.device_count, 2u);
  expect_round_trip("good:0");
  expect_round_trip("good:1");
}

TEST_F(FaultyPluginTest, EntryFunctionThatThrowsIsRejected) {
  expect_rejected("throwentry",
                  "entry symbol 'xhal_plugin_get_api' threw a C++ exception: fake entry exploded");
}

TEST_F(FaultyPluginTest, InitThatThrowsIsRejected) {
  expect_rejected("throwinit", "init threw a C++ exception: fake init exploded");
  expect_rejected("throwint", "init threw an exception of unknown type");
}

TEST_F(FaultyPluginTest, DeviceCountThatThrowsIsRejected) {
  expect_rejected("throwcount", "device_count threw a C++ exception: fake device_count exploded");
}

TEST_F(FaultyPluginTest, DeviceGetInfoThatThrowsIsRejectedNamingTheDevice) {
  expect_rejected("throwinfo",
                  "device_get_info(1) threw a C++ exception: fake device_get_info exploded");
}

TEST_F(FaultyPluginTest, AbsurdDeviceCountIsRejectedWithTheNumber) {
  expect_rejected("huge",
                  "device_count gave 4294967295 devices; at most 4096 per plugin are "
                  "accepted");
}

TEST_F(FaultyPluginTest, DeviceKindOutsideTheEnumIsRejected) {
  expect_rejected("kind57",
                  "device_get_info(0) gave kind 57, not an xhal_device_kind_t (0 cpu, 1 gpu, "
                  "2 other)");
  for (const std::string& label : device_labels()) EXPECT_THAT(label, Not(StartsWith("kind57")));
}

TEST_F(FaultyPluginTest, StatusOutsideTheEnumIsNamedAsSuch) {
  expect_rejected("oddstatus", "init failed (unknown status 1234)");
}

// Re-entry: init calls the app API. It gets XHAL_BUSY (not a deadlock on the
// runtime lock the loader holds) and fails, which rejects the plugin.
TEST(FaultyPluginReentry, InitCallingBackIntoTheCoreGetsBusyInsteadOfDeadlocking) {
  ASSERT_EQ(start(fake_dir("reenter")), XHAL_OK) << xhal_last_error();
  const PluginView p = plugin("reenter");
  EXPECT_EQ(p.state, XHAL_PLUGIN_REJECTED);
  EXPECT_THAT(p.reason,
              AllOf(StartsWith("init failed (XHAL_PLUGIN_ERROR): "),
                    HasSubstr("xhal_plugin_count gave XHAL_BUSY (xhal_plugin_count was called "
                              "from inside a plugin slot"),
                    HasSubstr("xhal_device_count gave XHAL_BUSY (xhal_device_count was called "
                              "from inside a plugin slot")));
  EXPECT_FALSE(library_mapped(p.path));
  // The re-entry refusal is not left behind as this thread's error.
  uint32_t n = 0;
  EXPECT_EQ(xhal_plugin_count(&n), XHAL_OK);
  EXPECT_STREQ(xhal_last_error(), "");
  expect_round_trip("good:0");
  EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK) << xhal_last_error();
}

TEST_F(FaultyPluginTest, EveryCandidateIsListedOnceAndTheRestLoad) {
  std::vector<std::string> loaded, rejected;
  for (const PluginView& p : plugins()) {
    (p.state == XHAL_PLUGIN_LOADED ? loaded : rejected).push_back(p.backend);
  }
  EXPECT_THAT(loaded,
              ::testing::UnorderedElementsAre("good", "throwopen", "throwalloc", "throwop"));
  EXPECT_THAT(rejected,
              ::testing::UnorderedElementsAre("throwentry", "throwinit", "throwint", "throwcount",
                                              "throwinfo", "huge", "kind57", "oddstatus"));
  uint32_t n = 0;
  ASSERT_EQ(xhal_device_count(&n), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(n, 8u);
}

// Slots called after loading: what they throw becomes the call's status and
// message; the device (and the good one) keep working.
TEST_F(FaultyPluginTest, DeviceOpenThatThrowsIsAStatus) {
  xhal_device_t dev = nullptr;
  EXPECT_EQ(xhal_device_open("throwopen:0", &dev), XHAL_PLUGIN_ERROR);
  EXPECT_THAT(xhal_last_error(),
              HasSubstr("device_open threw a C++ exception: fake device_open exploded"));
  EXPECT_EQ(dev, nullptr);
  expect_round_trip("good:0");
}

TEST_F(FaultyPluginTest, BufferAllocateThatThrowsIsAStatus) {
  xhal_device_t dev = nullptr;
  ASSERT_EQ(xhal_device_open("throwalloc:0", &dev), XHAL_OK) << xhal_last_error();
  xhal_buffer_t buf = nullptr;
  EXPECT_EQ(xhal_buffer_allocate(dev, 64, &buf), XHAL_PLUGIN_ERROR);
  EXPECT_THAT(xhal_last_error(),
              HasSubstr("buffer_allocate threw a C++ exception: fake buffer_allocate exploded"));
  EXPECT_EQ(buf, nullptr);
  // Nothing half-made stays behind: the device releases cleanly.
  EXPECT_EQ(xhal_device_release(dev), XHAL_OK) << xhal_last_error();
  expect_round_trip("good:1");
}

TEST_F(FaultyPluginTest, OpSlotThatThrowsIsAStatusAndTheDeviceStaysUsable) {
  xhal_device_t dev = nullptr;
  ASSERT_EQ(xhal_device_open("throwop:0", &dev), XHAL_OK) << xhal_last_error();
  xhal_buffer_t a = nullptr, b = nullptr;
  ASSERT_EQ(xhal_buffer_allocate(dev, 24, &a), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_buffer_allocate(dev, 24, &b), XHAL_OK) << xhal_last_error();
  xhal_tensor_t src{}, dst{};
  src.buffer = a;
  src.dtype = XHAL_DTYPE_F32;
  src.rank = 2;
  src.shape[0] = 2;
  src.shape[1] = 3;
  dst = src;
  dst.buffer = b;
  dst.shape[0] = 3;
  dst.shape[1] = 2;
  const uint32_t perm[2] = {1, 0};
  EXPECT_EQ(xhal_permute(dev, &src, perm, &dst), XHAL_PLUGIN_ERROR);
  EXPECT_THAT(xhal_last_error(), HasSubstr("permute threw a C++ exception: fake permute exploded"));
  const float values[6] = {1, 2, 3, 4, 5, 6};
  float back[6] = {};
  EXPECT_EQ(xhal_buffer_write(a, 0, values, sizeof(values)), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(xhal_buffer_read(a, 0, back, sizeof(back)), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(std::memcmp(values, back, sizeof(values)), 0);
  EXPECT_EQ(xhal_buffer_release(a), XHAL_OK);
  EXPECT_EQ(xhal_buffer_release(b), XHAL_OK);
  EXPECT_EQ(xhal_device_release(dev), XHAL_OK) << xhal_last_error();
}

// Runtime start is all-or-nothing, and a start with faulty plugins leaves
// nothing stale: the next start lists each candidate once, with the same
// outcome (the old runtime listed a plugin twice after an exception and
// rejected it as a duplicate of itself).
TEST(FaultyPluginRestart, RestartListsTheSameCandidatesOnce) {
  ASSERT_EQ(start(fake_dir("faulty")), XHAL_OK) << xhal_last_error();
  const std::vector<PluginView> first = plugins();
  ASSERT_EQ(xhal_runtime_shutdown(), XHAL_OK) << xhal_last_error();
  for (const PluginView& p : first) EXPECT_FALSE(library_mapped(p.path)) << p.path;
  ASSERT_EQ(start(fake_dir("faulty")), XHAL_OK) << xhal_last_error();
  const std::vector<PluginView> second = plugins();
  ASSERT_EQ(second.size(), first.size());
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(second[i].path, first[i].path);
    EXPECT_EQ(second[i].state, first[i].state) << second[i].path;
    EXPECT_EQ(second[i].reason, first[i].reason) << second[i].path;
    EXPECT_THAT(second[i].reason, Not(HasSubstr("duplicate"))) << second[i].path;
  }
  expect_round_trip("good:0");
  EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK) << xhal_last_error();
}

}  // namespace
}  // namespace xhal::test
