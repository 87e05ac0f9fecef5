// The device selector: ordering, '!', stable ids, which plugins load,
// malformed selectors and selectors that match nothing.
// Fakes in select/: alpha (CPU, 2 devices), beta (GPU, 2), gamma (OTHER, 1,
// shares beta:0's stable id), marker (OTHER, 1, leaves a file when loaded).
#include <gmock/gmock.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "test_support.h"

namespace xhal::test {
namespace {

using ::testing::HasSubstr;
using Labels = std::vector<std::string>;

struct SelectCase {
  const char* selector;
  Labels expected;
};
void PrintTo(const SelectCase& c, std::ostream* os) { *os << "'" << c.selector << "'"; }

class SelectorOrder : public ::testing::TestWithParam<SelectCase> {
 protected:
  void TearDown() override { EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK); }
};

TEST_P(SelectorOrder, ListsTheSelectedDevicesInPreferenceOrder) {
  ASSERT_EQ(start(fake_dir("select"), GetParam().selector), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(device_labels(), GetParam().expected) << "selector '" << GetParam().selector << "'";
}

INSTANTIATE_TEST_SUITE_P(
    Grammar, SelectorOrder,
    ::testing::Values(
        // No selector: GPU first, then other kinds, CPU last.
        SelectCase{"", {"beta:0", "beta:1", "gamma:0", "marker:0", "alpha:0", "alpha:1"}},
        SelectCase{"  ", {"beta:0", "beta:1", "gamma:0", "marker:0", "alpha:0", "alpha:1"}},
        SelectCase{"*", {"beta:0", "beta:1", "gamma:0", "marker:0", "alpha:0", "alpha:1"}},
        SelectCase{"alpha", {"alpha:0", "alpha:1"}}, SelectCase{"alpha:*", {"alpha:0", "alpha:1"}},
        SelectCase{"alpha:1,beta", {"alpha:1", "beta:0", "beta:1"}},
        SelectCase{" beta:1 , beta,alpha:1\t", {"beta:1", "beta:0", "alpha:1"}},
        SelectCase{"*,!beta:1", {"beta:0", "gamma:0", "marker:0", "alpha:0", "alpha:1"}},
        SelectCase{"!beta:1,*", {"beta:0", "gamma:0", "marker:0", "alpha:0", "alpha:1"}},
        SelectCase{"!alpha", {"beta:0", "beta:1", "gamma:0", "marker:0"}},
        SelectCase{"*:1", {"beta:1", "alpha:1"}},
        SelectCase{"*:GPU-shared-0", {"beta:0", "gamma:0"}},
        SelectCase{"gamma:GPU-shared-0,alpha", {"gamma:0", "alpha:0", "alpha:1"}},
        SelectCase{"alpha,*", {"alpha:0", "alpha:1", "beta:0", "beta:1", "gamma:0", "marker:0"}}));

struct MalformedCase {
  const char* selector;
  const char* term;  // the offending term as the message quotes it
};
void PrintTo(const MalformedCase& c, std::ostream* os) { *os << "'" << c.selector << "'"; }

class SelectorMalformed : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(SelectorMalformed, IsInvalidArgumentQuotingSelectorAndTerm) {
  const auto [selector, term] = GetParam();
  ASSERT_EQ(start(fake_dir("select"), selector), XHAL_INVALID_ARGUMENT);
  const std::string message = xhal_last_error();
  EXPECT_THAT(message, HasSubstr("device_selector '" + std::string(selector) + "'"));
  EXPECT_THAT(message, HasSubstr("term '" + std::string(term) + "'"));
  // The runtime stays stopped: a second init is not BUSY.
  EXPECT_EQ(start(fake_dir("select"), "alpha"), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK);
}

INSTANTIATE_TEST_SUITE_P(Grammar, SelectorMalformed,
                         ::testing::Values(MalformedCase{"alpha,,beta", ""},
                                           MalformedCase{"alpha,", ""}, MalformedCase{"!", "!"},
                                           MalformedCase{"alpha:", "alpha:"},
                                           MalformedCase{"al pha", "al pha"},
                                           MalformedCase{"alpha;beta", "alpha;beta"},
                                           MalformedCase{":0", ":0"}, MalformedCase{"cu*", "cu*"},
                                           MalformedCase{"alpha:0:", "alpha:0:"},
                                           MalformedCase{"alpha:99999999999", "alpha:99999999999"},
                                           MalformedCase{"alpha:GPU/1", "alpha:GPU/1"}));

TEST(SelectorNotFound, NamesTheSelectorAndListsTheDevices) {
  ASSERT_EQ(start(fake_dir("select"), "alpha:7"), XHAL_OK) << xhal_last_error();
  uint32_t n = 99;
  EXPECT_EQ(xhal_device_count(&n), XHAL_NOT_FOUND);
  EXPECT_EQ(n, 99u) << "nothing is written on failure";
  const std::string message = xhal_last_error();
  EXPECT_THAT(message, HasSubstr("device_selector='alpha:7' matches no device"));
  EXPECT_THAT(message,
              HasSubstr("alpha:0 \"alpha fake device 0\", alpha:1 \"alpha fake device 1\""));
  EXPECT_THAT(message,
              HasSubstr("plugins not loaded because of the selector: beta, gamma, marker"));
  xhal_device_t device = nullptr;
  EXPECT_EQ(xhal_device_open(nullptr, &device), XHAL_NOT_FOUND);
  EXPECT_THAT(xhal_last_error(), HasSubstr("'alpha:7'"));
  EXPECT_EQ(device, nullptr);
  EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK);
}

TEST(SelectorNotFound, UnknownBackendLoadsNothing) {
  ASSERT_EQ(start(fake_dir("select"), "nosuch"), XHAL_OK) << xhal_last_error();
  uint32_t n = 0;
  EXPECT_EQ(xhal_device_count(&n), XHAL_NOT_FOUND);
  EXPECT_THAT(xhal_last_error(), HasSubstr("'nosuch' matches no device; devices: none; plugins "
                                           "not loaded because of the selector: alpha, beta, "
                                           "gamma, marker"));
  for (const PluginView& p : plugins()) EXPECT_EQ(p.state, XHAL_PLUGIN_SKIPPED) << p.path;
  EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK);
}

// A selector decides which plugins run any code at all.
class SelectorLoading : public ::testing::Test {
 protected:
  void SetUp() override {
    marker_dir_ =
        std::filesystem::temp_directory_path() / ("xhal-marker-" + std::to_string(getpid()));
    std::filesystem::create_directories(marker_dir_);
    setenv("XHAL_FAKE_MARKER_DIR", marker_dir_.c_str(), 1);
  }
  void TearDown() override {
    EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK);
    unsetenv("XHAL_FAKE_MARKER_DIR");
    std::filesystem::remove_all(marker_dir_);
  }
  bool marker_ran() const { return std::filesystem::exists(marker_dir_ / "marker.loaded"); }
  std::filesystem::path marker_dir_;
};

TEST_F(SelectorLoading, OneBackendDoesNotOpenTheOthers) {
  ASSERT_EQ(start(fake_dir("select"), "alpha"), XHAL_OK) << xhal_last_error();
  EXPECT_FALSE(marker_ran()) << "the marker plugin's code ran";
  for (const char* name : {"beta", "gamma", "marker"}) {
    const PluginView p = plugin(name);
    EXPECT_EQ(p.state, XHAL_PLUGIN_SKIPPED) << name;
    EXPECT_EQ(p.reason, "not needed by device_selector='alpha'");
    EXPECT_FALSE(library_mapped(p.path)) << name;
  }
  EXPECT_EQ(plugin("alpha").state, XHAL_PLUGIN_LOADED);
}

TEST_F(SelectorLoading, ExcludedBackendIsNotOpened) {
  ASSERT_EQ(start(fake_dir("select"), "!marker"), XHAL_OK) << xhal_last_error();
  EXPECT_FALSE(marker_ran());
  EXPECT_EQ(plugin("marker").state, XHAL_PLUGIN_SKIPPED);
  EXPECT_EQ(plugin("beta").state, XHAL_PLUGIN_LOADED);
}

TEST_F(SelectorLoading, MarkerRunsWhenSelected) {  // the control for the two above
  ASSERT_EQ(start(fake_dir("select"), "marker,alpha"), XHAL_OK) << xhal_last_error();
  EXPECT_TRUE(marker_ran());
  EXPECT_EQ(plugin("beta").state, XHAL_PLUGIN_SKIPPED);
}

class DeviceOpenTest : public RuntimeTest {
 protected:
  void SetUp() override { ASSERT_EQ(start(fake_dir("select")), XHAL_OK) << xhal_last_error(); }
};

TEST_F(DeviceOpenTest, OpensTheFirstMatchInSelectorOrder) {
  xhal_device_t device = nullptr;
  ASSERT_EQ(xhal_device_open("gamma,alpha", &device), XHAL_OK) << xhal_last_error();
  xhal_device_info_t info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(xhal_device_query(device, &info), XHAL_OK);
  EXPECT_STREQ(info.backend, "gamma");
  EXPECT_STREQ(info.stable_id, "GPU-shared-0");
  EXPECT_EQ(xhal_device_release(device), XHAL_OK);

  ASSERT_EQ(xhal_device_open(nullptr, &device), XHAL_OK);  // default: list index 0
  ASSERT_EQ(xhal_device_query(device, &info), XHAL_OK);
  EXPECT_STREQ(info.backend, "beta");
  EXPECT_EQ(info.backend_index, 0u);
  EXPECT_EQ(xhal_device_release(device), XHAL_OK);

  ASSERT_EQ(xhal_device_open("!beta", &device), XHAL_OK);
  ASSERT_EQ(xhal_device_query(device, &info), XHAL_OK);
  EXPECT_STREQ(info.backend, "gamma");
  EXPECT_EQ(xhal_device_release(device), XHAL_OK);
}

TEST_F(DeviceOpenTest, NoMatchListsDevices) {
  xhal_device_t device = nullptr;
  EXPECT_EQ(xhal_device_open("alpha:5", &device), XHAL_NOT_FOUND);
  EXPECT_THAT(xhal_last_error(), HasSubstr("selector 'alpha:5' matches no device; devices: "
                                           "beta:0 \"beta fake device 0\", beta:1"));
  EXPECT_EQ(device, nullptr);
}

TEST_F(DeviceOpenTest, MalformedIsInvalidArgument) {
  xhal_device_t device = nullptr;
  EXPECT_EQ(xhal_device_open("alpha,,", &device), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("selector 'alpha,,' is malformed"));
  EXPECT_EQ(device, nullptr);
}

TEST_F(DeviceOpenTest, OpeningTwiceSharesTheDevice) {
  xhal_device_t a = nullptr, b = nullptr;
  ASSERT_EQ(xhal_device_open("alpha:1", &a), XHAL_OK);
  ASSERT_EQ(xhal_device_open_index(5, &b), XHAL_OK);  // alpha:1 is last
  EXPECT_EQ(a, b);
  xhal_buffer_t buffer = nullptr;
  ASSERT_EQ(xhal_buffer_allocate(a, 16, &buffer), XHAL_OK);
  EXPECT_EQ(xhal_device_release(a), XHAL_OK);  // b still holds it
  EXPECT_EQ(xhal_buffer_write(buffer, 0, "0123456789abcdef", 16), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(xhal_device_release(b), XHAL_BUSY);  // the last handle, a buffer lives
  EXPECT_EQ(xhal_buffer_release(buffer), XHAL_OK);
  EXPECT_EQ(xhal_device_release(b), XHAL_OK);
}

TEST_F(DeviceOpenTest, OpenIndexOutOfRange) {
  xhal_device_t device = nullptr;
  EXPECT_EQ(xhal_device_open_index(6, &device), XHAL_OUT_OF_RANGE);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'index' is 6; there are 6 devices"));
}

TEST(SelectorEnvironment, LazyStartReadsXhalDevice) {
  setenv("XHAL_PLUGIN_PATH", fake_dir("select").c_str(), 1);
  setenv("XHAL_DEVICE", "gamma,alpha:0", 1);
  EXPECT_EQ(device_labels(), (Labels{"gamma:0", "alpha:0"}));
  EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK);

  setenv("XHAL_DEVICE", "gamma,,", 1);
  uint32_t n = 0;
  EXPECT_EQ(xhal_device_count(&n), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("XHAL_DEVICE 'gamma,,' is malformed"));
  setenv("XHAL_DEVICE", "nosuch", 1);
  EXPECT_EQ(xhal_device_count(&n), XHAL_NOT_FOUND);
  EXPECT_THAT(xhal_last_error(), HasSubstr("XHAL_DEVICE='nosuch' matches no device"));
  EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK);
  unsetenv("XHAL_DEVICE");
  unsetenv("XHAL_PLUGIN_PATH");
}

}  // namespace
}  // namespace xhal::test
