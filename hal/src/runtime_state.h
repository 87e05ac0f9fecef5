// The runtime's state: plugin candidates, loaded plugins and the device list.
// One process-wide instance, guarded by its mutex.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/dll/shared_library.hpp>

#include "internal.h"
#include "selector.h"

namespace xhal {

struct LoadedPlugin {
  boost::dll::shared_library library;
  xhal_plugin_api_t api{};  // zero-padded copy: slots past struct_size are null
  void* context = nullptr;
  std::string backend;
  // The services table given to init, and the plugin-wide options it
  // points at: both live as long as the plugin (host->options must).
  std::string options;
  xhal_plugin_host_t host{};
};

// One candidate file and what became of it (xhal_plugin_get_info).
struct PluginRecord {
  std::string path;
  std::string backend;
  xhal_plugin_state_t state = XHAL_PLUGIN_REJECTED;
  std::string reason;  // rejection reason, skip reason, or the init note
  uint32_t abi_major = 0, abi_minor = 0;
  std::string plugin_version;
  uint32_t device_count = 0;
  std::unique_ptr<LoadedPlugin> plugin;            // set when LOADED
  std::vector<xhal_plugin_device_info_t> devices;  // as the plugin described them
};

// One device of a loaded plugin, in the runtime's list.
struct DeviceEntry {
  LoadedPlugin* plugin = nullptr;
  uint32_t plugin_order = 0;  // position of its plugin in search order
  std::string backend, name, stable_id;
  xhal_device_info_t info{};       // strings point into this entry
  std::unique_ptr<Device> handle;  // the core object behind every open of this device
};

struct Runtime {
  std::mutex mutex;
  bool running = false;
  Selector selector;
  std::string selector_source;  // "XHAL_DEVICE" or "device_selector"
  std::vector<PluginRecord> plugins;
  std::vector<std::unique_ptr<DeviceEntry>> devices;  // selected, in order
  std::vector<std::string> all_device_names;          // before selection
};

Runtime& runtime();

// Starts the runtime from the environment if it is not running. Caller holds
// runtime().mutex.
xhal_status_t ensure_started_locked();

// Fails with XHAL_NOT_FOUND when the selector left no device; the message
// names the selector, the devices that exist and the plugins it skipped.
xhal_status_t check_devices_selected_locked();

// "cpu:0 \"name\", cuda:0 \"name\"" of the given devices, or "none".
std::string describe_devices(const std::vector<std::unique_ptr<DeviceEntry>>& devices);

}  // namespace xhal
