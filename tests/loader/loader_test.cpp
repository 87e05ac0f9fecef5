// Every plugin candidate ends LOADED, REJECTED with its specific reason, or
// SKIPPED; the good plugins still load and give devices.
#include <gmock/gmock.h>

#include "test_support.h"
#include "xhal/xhal_plugin.h"

namespace xhal::test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class LoaderTest : public RuntimeTest {
 protected:
  void SetUp() override { ASSERT_EQ(start(fake_dir("loader")), XHAL_OK) << xhal_last_error(); }
};

TEST_F(LoaderTest, GoodPluginLoadsWithItsDevices) {
  const PluginView p = plugin("good");
  EXPECT_EQ(p.state, XHAL_PLUGIN_LOADED);
  EXPECT_EQ(p.backend, "good");
  EXPECT_EQ(p.reason, "");
  EXPECT_EQ(p.abi_major, 1u);
  EXPECT_EQ(p.abi_minor, uint32_t{XHAL_PLUGIN_ABI_MINOR});
  EXPECT_EQ(p.version, "0.0.1-fake");
  EXPECT_EQ(p.device_count, 2u);
  EXPECT_TRUE(library_mapped(p.path));
}

TEST_F(LoaderTest, WrongMajorIsRejectedNamingBothVersions) {
  const PluginView p = plugin("wrongmajor");
  EXPECT_EQ(p.state, XHAL_PLUGIN_REJECTED);
  EXPECT_EQ(p.reason, "plugin ABI 2.0, core supports 1.x");
  EXPECT_EQ(p.abi_major, 2u);
  EXPECT_FALSE(library_mapped(p.path)) << "a rejected plugin stays loaded";
}

TEST_F(LoaderTest, OlderShorterTableLoadsWithOpsUnsupported) {
  const PluginView p = plugin("oldminor");
  ASSERT_EQ(p.state, XHAL_PLUGIN_LOADED) << p.reason;
  EXPECT_EQ(p.device_count, 2u);
  uint32_t n = 0;
  ASSERT_EQ(xhal_device_count(&n), XHAL_OK);
  int seen = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const xhal_device_info_t info = device_info(i);
    if (std::string(info.backend) != "oldminor") continue;
    ++seen;
    // It claims dtypes for permute, but its table ends before that slot.
    EXPECT_EQ(info.supported_ops, 0u);
    for (int op = 0; op < XHAL_OP_COUNT_; ++op) EXPECT_EQ(info.op_dtypes[op], 0u) << op;
  }
  EXPECT_EQ(seen, 2);
}

TEST_F(LoaderTest, NewerLongerTableLoadsAndExtraSlotsAreIgnored) {
  const PluginView p = plugin("newminor");
  ASSERT_EQ(p.state, XHAL_PLUGIN_LOADED) << p.reason;
  EXPECT_EQ(p.abi_minor, 99u);  // newer than any core so far
  EXPECT_EQ(p.device_count, 2u);
}

TEST_F(LoaderTest, SupportedOpsNeedSlotsAndDtypes) {
  uint32_t n = 0;
  ASSERT_EQ(xhal_device_count(&n), XHAL_OK);
  for (uint32_t i = 0; i < n; ++i) {
    const xhal_device_info_t info = device_info(i);
    if (std::string(info.backend) != "good") continue;
    // permute: slot + dtypes. softmax: dtypes, no slot. index_select: slot
    // and dtypes but no index_plan_create.
    EXPECT_EQ(info.supported_ops, uint64_t{1} << XHAL_OP_PERMUTE);
    EXPECT_EQ(info.op_dtypes[XHAL_OP_PERMUTE], (1u << XHAL_DTYPE_F32) | (1u << XHAL_DTYPE_I32));
    EXPECT_EQ(info.op_dtypes[XHAL_OP_SOFTMAX_FORWARD], 0u);
    EXPECT_EQ(info.op_dtypes[XHAL_OP_INDEX_SELECT], 0u);
  }
}

TEST_F(LoaderTest, MissingEntrySymbolIsNamed) {
  const PluginView p = plugin("noentry");
  EXPECT_EQ(p.state, XHAL_PLUGIN_REJECTED);
  EXPECT_EQ(p.reason, "missing entry symbol 'xhal_plugin_get_api'");
  EXPECT_FALSE(library_mapped(p.path));
}

TEST_F(LoaderTest, EntryReturningNullIsRejected) {
  const PluginView p = plugin("nullentry");
  EXPECT_EQ(p.state, XHAL_PLUGIN_REJECTED);
  EXPECT_EQ(p.reason, "entry symbol 'xhal_plugin_get_api' returned NULL");
}

TEST_F(LoaderTest, InitFailureKeepsThePluginsMessage) {
  const PluginView p = plugin("initfails");
  EXPECT_EQ(p.state, XHAL_PLUGIN_REJECTED);
  EXPECT_EQ(p.reason, "init failed (XHAL_PLUGIN_ERROR): fake licence server unreachable");
  EXPECT_EQ(p.device_count, 0u);
}

TEST_F(LoaderTest, TextFileNamedLikeAPluginGivesTheDlopenError) {
  const PluginView p = plugin("text");
  EXPECT_EQ(p.state, XHAL_PLUGIN_REJECTED);
  EXPECT_THAT(p.reason, StartsWith("dlopen failed: "));
  EXPECT_THAT(p.reason, HasSubstr("libxhal-text.so"));  // dlerror names the file
  EXPECT_EQ(p.backend, "text");
}

TEST_F(LoaderTest, BackendNameMustMatchTheFileName) {
  const PluginView p = plugin("mismatch");
  EXPECT_EQ(p.state, XHAL_PLUGIN_REJECTED);
  EXPECT_EQ(p.reason, "backend_name 'other' does not match the file name (expected 'mismatch')");
}

TEST_F(LoaderTest, MissingRequiredSlotIsNamed) {
  const PluginView p = plugin("nofill");
  EXPECT_EQ(p.state, XHAL_PLUGIN_REJECTED);
  EXPECT_EQ(p.reason, "required slot 'buffer_fill' is missing");
}

TEST_F(LoaderTest, TableSmallerThanItsHeaderIsRejected) {
  const PluginView p = plugin("tiny");
  EXPECT_EQ(p.state, XHAL_PLUGIN_REJECTED);
  EXPECT_EQ(p.reason, "table struct_size " + std::to_string(sizeof(size_t)) +
                          " is smaller than the table header (" +
                          std::to_string(offsetof(xhal_plugin_api_t, init)) + " bytes)");
}

// A struct_size that ends inside a slot: the slot is absent, not the
// leading bytes of a function pointer (which would pass as present).
TEST_F(LoaderTest, SlotCutByStructSizeIsAbsent) {
  const PluginView p = plugin("cutslot");
  EXPECT_EQ(p.state, XHAL_PLUGIN_REJECTED);
  EXPECT_EQ(p.reason, "required slot 'buffer_fill' is missing (the table ends at struct_size " +
                          std::to_string(offsetof(xhal_plugin_api_t, buffer_fill) + 4) + ")");
}

TEST_F(LoaderTest, PluginWithoutDevicesLoadsWithItsNote) {
  const PluginView p = plugin("nodevices");
  EXPECT_EQ(p.state, XHAL_PLUGIN_LOADED);
  EXPECT_EQ(p.device_count, 0u);
  EXPECT_EQ(p.reason, "no fake device found");
}

TEST_F(LoaderTest, EveryCandidateIsReportedInSearchOrder) {
  std::vector<std::string> names;
  for (const PluginView& p : plugins()) names.push_back(p.file_name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "libxhal-cutslot.so", "libxhal-good.so", "libxhal-initfails.so",
                       "libxhal-mismatch.so", "libxhal-newminor.so", "libxhal-nodevices.so",
                       "libxhal-noentry.so", "libxhal-nofill.so", "libxhal-nullentry.so",
                       "libxhal-oldminor.so", "libxhal-text.so", "libxhal-tiny.so",
                       "libxhal-wrongmajor.so"}));
  // good, newminor and oldminor give two devices each.
  uint32_t n = 0;
  ASSERT_EQ(xhal_device_count(&n), XHAL_OK);
  EXPECT_EQ(n, 6u);
}

TEST(LoaderShutdown, UnloadsEveryPlugin) {
  ASSERT_EQ(start(fake_dir("loader")), XHAL_OK) << xhal_last_error();
  const std::string good = plugin("good").path;
  ASSERT_TRUE(library_mapped(good));
  ASSERT_EQ(xhal_runtime_shutdown(), XHAL_OK) << xhal_last_error();
  EXPECT_FALSE(library_mapped(good));
}

TEST(LoaderShutdown, KeepsLibrariesThePluginPulledIn) {
  const std::string dependency = fake_dir("deps") + "/libxhal-fake-dependency.so";
  ASSERT_FALSE(library_mapped(dependency));
  ASSERT_EQ(start(fake_dir("withdep")), XHAL_OK) << xhal_last_error();
  const PluginView p = plugin("withdep");
  ASSERT_EQ(p.state, XHAL_PLUGIN_LOADED) << p.reason;
  ASSERT_TRUE(library_mapped(dependency));
  ASSERT_EQ(xhal_runtime_shutdown(), XHAL_OK) << xhal_last_error();
  EXPECT_FALSE(library_mapped(p.path)) << "the plugin itself is unloaded";
  EXPECT_TRUE(library_mapped(dependency)) << "its dependency must stay resident";
  // Loading again works with the dependency still there.
  ASSERT_EQ(start(fake_dir("withdep")), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(plugin("withdep").state, XHAL_PLUGIN_LOADED);
  EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK);
}

TEST(LoaderDuplicates, FirstInSearchOrderWins) {
  const std::string first = fake_dir("good"), second = fake_dir("dup");
  ASSERT_EQ(start(first + ":" + second), XHAL_OK) << xhal_last_error();
  const std::vector<PluginView> ps = plugins();
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0].state, XHAL_PLUGIN_LOADED);
  EXPECT_EQ(ps[1].state, XHAL_PLUGIN_REJECTED);
  EXPECT_EQ(ps[1].reason,
            "duplicate backend 'good': already provided by " + first + "/libxhal-good.so");
  EXPECT_FALSE(library_mapped(ps[1].path));
  EXPECT_STREQ(device_info(0).stable_id, "fake-good-0");
  ASSERT_EQ(xhal_runtime_shutdown(), XHAL_OK);

  ASSERT_EQ(start(second + ":" + first), XHAL_OK) << xhal_last_error();
  EXPECT_STREQ(device_info(0).stable_id, "dup-0");
  EXPECT_EQ(plugins()[1].state, XHAL_PLUGIN_REJECTED);
  ASSERT_EQ(xhal_runtime_shutdown(), XHAL_OK);
}

TEST(LoaderPath, MissingPathEntryIsReported) {
  const std::string missing = fake_dir("no-such-folder");
  ASSERT_EQ(start(fake_dir("good") + "::" + missing), XHAL_OK) << xhal_last_error();
  const std::vector<PluginView> ps = plugins();
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0].state, XHAL_PLUGIN_LOADED);
  EXPECT_EQ(ps[1].path, missing);
  EXPECT_EQ(ps[1].state, XHAL_PLUGIN_REJECTED);
  EXPECT_EQ(ps[1].reason, "plugin path entry does not exist");
  ASSERT_EQ(xhal_runtime_shutdown(), XHAL_OK);
}

TEST(LoaderPath, AFileNamedExplicitlyIsOneCandidate) {
  const std::string file = fake_dir("loader") + "/libxhal-newminor.so";
  ASSERT_EQ(start(file), XHAL_OK) << xhal_last_error();
  const std::vector<PluginView> ps = plugins();
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_EQ(ps[0].path, file);
  EXPECT_EQ(ps[0].state, XHAL_PLUGIN_LOADED);
  ASSERT_EQ(xhal_runtime_shutdown(), XHAL_OK);
}

}  // namespace
}  // namespace xhal::test
