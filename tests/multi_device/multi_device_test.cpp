// Several devices of one backend (issue 16): the device list, the selector
// and stable ids on the cpu plugin's virtual devices (its option devices=N,
// docs/device-options.md), checked against what docs/device-selection.md
// promises: the default order within a backend is the backend index; positive
// terms add in term order and never add a device twice; '!' terms remove
// wherever they stand; a selector of only '!' terms starts from everything;
// a stable id selects exactly its device; ids differ per device and do not
// change across runs.
#include <gmock/gmock.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "xhal/xhal.h"

namespace xhal::multi_device_test {
namespace {

using ::testing::HasSubstr;
using Labels = std::vector<std::string>;

struct Listed {
  std::string label;  // "cpu:1"
  uint32_t backend_index = 0;
  std::string name, stable_id;
  uint64_t memory_bytes = 0;
};

// Starts the runtime on the cpu plugin alone, with XHAL_DEVICE_OPTIONS
// `options` (read when the plugin starts) and the selector `selector`.
xhal_status_t start_cpu(const char* options, const std::string& selector) {
  if (options) setenv("XHAL_DEVICE_OPTIONS", options, 1);
  else unsetenv("XHAL_DEVICE_OPTIONS");
  xhal_runtime_options_t o{};
  o.struct_size = sizeof o;
  o.device_selector = selector.c_str();
  o.plugin_path = XHAL_CPU_PLUGIN;
  o.plugin_path_only = 1;
  const xhal_status_t s = xhal_runtime_init(&o);
  unsetenv("XHAL_DEVICE_OPTIONS");
  return s;
}

std::vector<Listed> listed() {
  std::vector<Listed> out;
  uint32_t n = 0;
  EXPECT_EQ(xhal_device_count(&n), XHAL_OK) << xhal_last_error();
  for (uint32_t i = 0; i < n; ++i) {
    xhal_device_info_t info{};
    info.struct_size = sizeof info;
    EXPECT_EQ(xhal_device_get_info(i, &info), XHAL_OK) << xhal_last_error();
    out.push_back({std::string(info.backend) + ":" + std::to_string(info.backend_index),
                   info.backend_index, info.name, info.stable_id, info.memory_bytes});
  }
  return out;
}

Labels labels(const std::vector<Listed>& devices) {
  Labels out;
  for (const Listed& d : devices) out.push_back(d.label);
  return out;
}

// The stable ids of cpu:0..N-1 under devices=N, no selector.
std::vector<std::string> ids_of(const char* options) {
  std::vector<std::string> ids;
  EXPECT_EQ(start_cpu(options, ""), XHAL_OK) << xhal_last_error();
  for (const Listed& d : listed()) ids.push_back(d.stable_id);
  EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK);
  return ids;
}

// The selector's rule for a stable id in a term (docs/device-selection.md).
bool selectable_id(const std::string& id) {
  if (id.empty() || id.back() == ':') return false;
  for (const char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.' || c == ':';
    if (!ok) return false;
  }
  return true;
}

class VirtualCpus : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK); }
};

TEST_F(VirtualCpus, DefaultOrderIsTheBackendIndex) {
  ASSERT_EQ(start_cpu("cpu:devices=3", ""), XHAL_OK) << xhal_last_error();
  const std::vector<Listed> devices = listed();
  ASSERT_EQ(labels(devices), (Labels{"cpu:0", "cpu:1", "cpu:2"}));
  EXPECT_THAT(devices[0].name, ::testing::Not(HasSubstr("[virtual")));
  EXPECT_THAT(devices[1].name, ::testing::EndsWith(" [virtual 1]"));
  EXPECT_THAT(devices[2].name, ::testing::EndsWith(" [virtual 2]"));
  EXPECT_EQ(devices[1].name, devices[0].name + " [virtual 1]");
}

TEST_F(VirtualCpus, StableIdsDifferPerDeviceAndAreSelectable) {
  ASSERT_EQ(start_cpu("cpu:devices=3", ""), XHAL_OK) << xhal_last_error();
  const std::vector<Listed> devices = listed();
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_THAT(devices[0].stable_id, ::testing::StartsWith("cpu:"));
  EXPECT_EQ(devices[1].stable_id, devices[0].stable_id + ":virtual-1");
  EXPECT_EQ(devices[2].stable_id, devices[0].stable_id + ":virtual-2");
  for (const Listed& d : devices) {
    EXPECT_TRUE(selectable_id(d.stable_id)) << d.label << ": '" << d.stable_id << "'";
    // `cpu:<id>` parses and selects that device alone.
    xhal_device_t dev = nullptr;
    ASSERT_EQ(xhal_device_open(("cpu:" + d.stable_id).c_str(), &dev), XHAL_OK) << xhal_last_error();
    xhal_device_info_t info{};
    info.struct_size = sizeof info;
    ASSERT_EQ(xhal_device_query(dev, &info), XHAL_OK) << xhal_last_error();
    EXPECT_EQ(info.backend_index, d.backend_index);
    EXPECT_EQ(xhal_device_release(dev), XHAL_OK);
  }
}

TEST_F(VirtualCpus, StableIdsAreTheSameOnEveryRunAndForEveryCount) {
  const std::vector<std::string> plain = ids_of(nullptr);  // no option at all
  const std::vector<std::string> three = ids_of("cpu:devices=3");
  const std::vector<std::string> again = ids_of("cpu:devices=3");  // the plugin reloaded
  const std::vector<std::string> two = ids_of("cpu:devices=2");
  ASSERT_EQ(plain.size(), 1u);
  ASSERT_EQ(three.size(), 3u);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(three, again);
  EXPECT_EQ(three[0], plain[0]);  // device 0 is the machine, as without the option
  EXPECT_EQ(two[0], three[0]);    // more or fewer virtual devices rename none
  EXPECT_EQ(two[1], three[1]);
  ASSERT_EQ(start_cpu("cpu:devices=3", ""), XHAL_OK);  // for TearDown
}

TEST_F(VirtualCpus, EachDeviceReportsTheMachinesMemory) {
  ASSERT_EQ(start_cpu("cpu:devices=2", ""), XHAL_OK) << xhal_last_error();
  const uint64_t physical = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                            static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
  for (const Listed& d : listed()) EXPECT_EQ(d.memory_bytes, physical) << d.label;
}

TEST_F(VirtualCpus, OpenPicksTheFirstMatchOfTheList) {
  ASSERT_EQ(start_cpu("cpu:devices=3", ""), XHAL_OK) << xhal_last_error();
  auto opened_index = [](const char* selector) -> int64_t {
    xhal_device_t dev = nullptr;
    if (xhal_device_open(selector, &dev) != XHAL_OK) {
      ADD_FAILURE() << selector << ": " << xhal_last_error();
      return -1;
    }
    xhal_device_info_t info{};
    info.struct_size = sizeof info;
    EXPECT_EQ(xhal_device_query(dev, &info), XHAL_OK);
    EXPECT_EQ(xhal_device_release(dev), XHAL_OK);
    return info.backend_index;
  };
  EXPECT_EQ(opened_index("cpu:1"), 1);
  EXPECT_EQ(opened_index("cpu:2,cpu:1"), 2);
  EXPECT_EQ(opened_index("!cpu:0"), 1);
  EXPECT_EQ(opened_index("cpu,!cpu:0,!cpu:1"), 2);
  EXPECT_EQ(opened_index(nullptr), 0);  // no selector: the first of the list

  // cpu:1 by index and by stable id is one device: one handle.
  const std::string id1 = listed()[1].stable_id;
  xhal_device_t a = nullptr, b = nullptr, c = nullptr;
  ASSERT_EQ(xhal_device_open("cpu:1", &a), XHAL_OK);
  ASSERT_EQ(xhal_device_open(("cpu:" + id1).c_str(), &b), XHAL_OK);
  ASSERT_EQ(xhal_device_open("cpu:0", &c), XHAL_OK);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(xhal_device_release(a), XHAL_OK);
  EXPECT_EQ(xhal_device_release(b), XHAL_OK);
  EXPECT_EQ(xhal_device_release(c), XHAL_OK);
}

TEST_F(VirtualCpus, NoMatchNamesTheSelectorAndEveryDevice) {
  ASSERT_EQ(start_cpu("cpu:devices=2", "cpu:2"), XHAL_OK) << xhal_last_error();
  uint32_t n = 0;
  EXPECT_EQ(xhal_device_count(&n), XHAL_NOT_FOUND);
  const std::string message = xhal_last_error();
  EXPECT_THAT(message, HasSubstr("device_selector='cpu:2' matches no device; devices: cpu:0 \""));
  EXPECT_THAT(message, HasSubstr(" [virtual 1]\""));  // cpu:1 is listed too
}

// ---- the selector table ----------------------------------------------------

struct SelectCase {
  const char* selector;  // "@k" stands for the stable id of cpu:k
  Labels expected;       // under devices=3
};
void PrintTo(const SelectCase& c, std::ostream* os) { *os << "'" << c.selector << "'"; }

class VirtualCpuSelector : public ::testing::TestWithParam<SelectCase> {
 protected:
  void TearDown() override { EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK); }
};

TEST_P(VirtualCpuSelector, ListsTheSelectedDevicesInPreferenceOrder) {
  const std::vector<std::string> ids = ids_of("cpu:devices=3");
  ASSERT_EQ(ids.size(), 3u);
  std::string selector = GetParam().selector;
  for (size_t at; (at = selector.find('@')) != std::string::npos;)
    selector.replace(at, 2, ids.at(static_cast<size_t>(selector[at + 1] - '0')));
  ASSERT_EQ(start_cpu("cpu:devices=3", selector), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(labels(listed()), GetParam().expected) << "selector '" << selector << "'";
}

INSTANTIATE_TEST_SUITE_P(
    Table, VirtualCpuSelector,
    ::testing::Values(
        SelectCase{"cpu", {"cpu:0", "cpu:1", "cpu:2"}},
        SelectCase{"cpu:*", {"cpu:0", "cpu:1", "cpu:2"}},
        SelectCase{"*", {"cpu:0", "cpu:1", "cpu:2"}}, SelectCase{"cpu:1", {"cpu:1"}},
        SelectCase{"cpu:1,cpu:0", {"cpu:1", "cpu:0"}},
        SelectCase{"cpu:2,cpu:0,cpu:1", {"cpu:2", "cpu:0", "cpu:1"}},
        SelectCase{"cpu:2,cpu", {"cpu:2", "cpu:0", "cpu:1"}},  // not added twice
        SelectCase{"cpu:1,cpu:1", {"cpu:1"}}, SelectCase{"*:1", {"cpu:1"}},
        SelectCase{"!cpu:0", {"cpu:1", "cpu:2"}},  // only '!': from everything
        SelectCase{"!cpu:0,!cpu:2", {"cpu:1"}}, SelectCase{"cpu,!cpu:1", {"cpu:0", "cpu:2"}},
        SelectCase{"!cpu:1,cpu:2,cpu", {"cpu:2", "cpu:0"}},  // '!' wherever it stands
        SelectCase{"cpu:@2", {"cpu:2"}}, SelectCase{"cpu:@2,cpu:@0", {"cpu:2", "cpu:0"}},
        SelectCase{"*:@1", {"cpu:1"}}, SelectCase{"cpu:@1,cpu", {"cpu:1", "cpu:0", "cpu:2"}},
        SelectCase{"!cpu:@0", {"cpu:1", "cpu:2"}}, SelectCase{"cpu,!*:@1", {"cpu:0", "cpu:2"}}));

}  // namespace
}  // namespace xhal::multi_device_test
