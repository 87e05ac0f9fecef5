// Helpers shared by the core tests: starting the runtime on a fake-plugin
// folder and reading back plugin and device reports.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "xhal/xhal.h"

namespace xhal::test {

inline std::string fake_dir(const std::string& folder) {
  return std::string(XHAL_FAKE_PLUGIN_DIR) + "/" + folder;
}

// Starts the runtime on `plugin_path` only, with an explicit selector (never
// the environment's XHAL_DEVICE).
inline xhal_status_t start(const std::string& plugin_path, const char* selector = "") {
  xhal_runtime_options_t options{};
  options.struct_size = sizeof(options);
  options.device_selector = selector;
  options.plugin_path = plugin_path.c_str();
  options.plugin_path_only = 1;
  return xhal_runtime_init(&options);
}

struct PluginView {
  std::string path, file_name, backend, reason, version;
  xhal_plugin_state_t state = XHAL_PLUGIN_REJECTED;
  uint32_t abi_major = 0, abi_minor = 0, device_count = 0;
};

inline std::vector<PluginView> plugins() {
  std::vector<PluginView> out;
  uint32_t n = 0;
  EXPECT_EQ(xhal_plugin_count(&n), XHAL_OK) << xhal_last_error();
  for (uint32_t i = 0; i < n; ++i) {
    xhal_plugin_info_t info{};
    info.struct_size = sizeof(info);
    EXPECT_EQ(xhal_plugin_get_info(i, &info), XHAL_OK) << xhal_last_error();
    PluginView v;
    v.path = info.path;
    v.file_name = v.path.substr(v.path.rfind('/') + 1);
    v.backend = info.backend;
    v.reason = info.reason;
    v.version = info.plugin_version;
    v.state = info.state;
    v.abi_major = info.abi_major;
    v.abi_minor = info.abi_minor;
    v.device_count = info.device_count;
    out.push_back(v);
  }
  return out;
}

// The report of the candidate whose file is libxhal-<name>.so (first match).
inline PluginView plugin(const std::string& name) {
  for (const PluginView& p : plugins()) {
    if (p.file_name == "libxhal-" + name + ".so") return p;
  }
  ADD_FAILURE() << "no candidate libxhal-" << name << ".so";
  return {};
}

inline xhal_device_info_t device_info(uint32_t index) {
  xhal_device_info_t info{};
  info.struct_size = sizeof(info);
  EXPECT_EQ(xhal_device_get_info(index, &info), XHAL_OK) << xhal_last_error();
  return info;
}

// "beta:0", "alpha:1", ... in list order.
inline std::vector<std::string> device_labels() {
  std::vector<std::string> out;
  uint32_t n = 0;
  if (xhal_device_count(&n) != XHAL_OK) return {"<" + std::string(xhal_last_error()) + ">"};
  for (uint32_t i = 0; i < n; ++i) {
    const xhal_device_info_t info = device_info(i);
    out.push_back(std::string(info.backend) + ":" + std::to_string(info.backend_index));
  }
  return out;
}

// Whether the library at `path` is mapped into this process.
inline bool library_mapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.ends_with(path)) return true;
  }
  return false;
}

// Shuts the runtime down after each test, whatever it did.
class RuntimeTest : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK) << xhal_last_error(); }
};

}  // namespace xhal::test
