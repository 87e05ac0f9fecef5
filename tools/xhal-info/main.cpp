// xhal-info: which plugins the runtime considered (loaded, rejected and why,
// skipped), and which devices exist, with their ops and dtypes.
// Exit status: 0 devices listed; 1 no device (selector matched nothing, or no
// plugin gave one); 2 bad arguments or a malformed selector.
// --probe loads each plugin in a child process instead (probe.h).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "probe.h"
#include "xhal/xhal.h"
#include "xhal/xhal_plugin.h"

namespace {

using nlohmann::ordered_json;

const char* state_name(xhal_plugin_state_t state) {
  switch (state) {
    case XHAL_PLUGIN_LOADED:
      return "loaded";
    case XHAL_PLUGIN_REJECTED:
      return "rejected";
    case XHAL_PLUGIN_SKIPPED:
      return "skipped";
  }
  return "unknown";
}

const char* kind_name(xhal_device_kind_t kind) {
  switch (kind) {
    case XHAL_DEVICE_KIND_CPU:
      return "cpu";
    case XHAL_DEVICE_KIND_GPU:
      return "gpu";
    case XHAL_DEVICE_KIND_OTHER:
      return "other";
  }
  return "unknown";
}

std::vector<std::string> dtype_names(uint32_t mask) {
  std::vector<std::string> names;
  for (int d = 1; d < XHAL_DTYPE_COUNT_; ++d) {
    if (mask & (1u << d)) names.emplace_back(xhal_dtype_name(static_cast<xhal_dtype_t>(d)));
  }
  return names;
}

std::string human_bytes(uint64_t bytes) {
  char text[32];
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(text, sizeof(text), "%.1f GiB", static_cast<double>(bytes) / (1u << 30));
  } else {
    std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(bytes) / (1u << 20));
  }
  return text;
}

// Copies of the runtime's reports (its strings die with xhal_runtime_shutdown).
struct Plugin {
  struct {
    std::string path, backend, reason, plugin_version;
    xhal_plugin_state_t state;
    uint32_t abi_major, abi_minor, device_count;
  } info;
  // What an operator reads: "loaded, 0 devices: no CUDA device found".
  std::string summary() const {
    if (info.state != XHAL_PLUGIN_LOADED) return info.reason;
    std::string s = "loaded, " + std::to_string(info.device_count) +
                    (info.device_count == 1 ? " device" : " devices");
    if (!info.reason.empty()) s += ": " + info.reason;
    return s;
  }
};

struct Device {
  struct {
    std::string backend, name, stable_id;
    uint32_t backend_index;
    xhal_device_kind_t kind;
    uint64_t memory_bytes, supported_ops;
    uint32_t op_dtypes[XHAL_OP_COUNT_];
  } info;
  std::string id;              // "cuda:0"
  std::string same_device_as;  // an earlier entry with the same stable id
  // Options in force (xhal_device_get_options), or why the device could not
  // be opened to ask (a bad XHAL_DEVICE_OPTIONS shows here).
  std::string options, options_error;
};

// Opens device `index` just long enough to read its options in force.
void read_options(uint32_t index, Device* d) {
  xhal_device_t dev = nullptr;
  if (xhal_device_open_index(index, &dev) != XHAL_OK) {
    d->options_error = xhal_last_error();
    return;
  }
  size_t length = 0;
  if (xhal_device_get_options(dev, nullptr, 0, &length) == XHAL_OK) {
    std::string text(length + 1, '\0');
    if (xhal_device_get_options(dev, text.data(), text.size(), &length) == XHAL_OK)
      d->options = text.substr(0, length);
  } else {
    d->options_error = xhal_last_error();
  }
  xhal_device_release(dev);
}

std::vector<Plugin> read_plugins() {
  std::vector<Plugin> plugins;
  uint32_t count = 0;
  if (xhal_plugin_count(&count) != XHAL_OK) return plugins;
  for (uint32_t i = 0; i < count; ++i) {
    xhal_plugin_info_t info{};
    info.struct_size = sizeof(info);
    if (xhal_plugin_get_info(i, &info) != XHAL_OK) continue;
    plugins.push_back({{info.path, info.backend, info.reason, info.plugin_version, info.state,
                        info.abi_major, info.abi_minor, info.device_count}});
  }
  return plugins;
}

std::vector<Device> read_devices(uint32_t count) {
  std::vector<Device> devices;
  std::map<std::string, std::string> first_with_id;
  for (uint32_t i = 0; i < count; ++i) {
    xhal_device_info_t info{};
    info.struct_size = sizeof(info);
    if (xhal_device_get_info(i, &info) != XHAL_OK) continue;
    Device d{};
    d.info.backend = info.backend;
    d.info.name = info.name;
    d.info.stable_id = info.stable_id;
    d.info.backend_index = info.backend_index;
    d.info.kind = info.kind;
    d.info.memory_bytes = info.memory_bytes;
    d.info.supported_ops = info.supported_ops;
    std::copy(std::begin(info.op_dtypes), std::end(info.op_dtypes), d.info.op_dtypes);
    d.id = d.info.backend + ":" + std::to_string(d.info.backend_index);
    const std::string stable = d.info.stable_id;
    if (!stable.empty()) {
      auto [it, inserted] = first_with_id.emplace(stable, d.id);
      if (!inserted) d.same_device_as = it->second;
    }
    read_options(i, &d);
    devices.push_back(d);
  }
  return devices;
}

ordered_json plugin_json(const Plugin& p) {
  return {{"path", p.info.path},
          {"backend", p.info.backend},
          {"state", state_name(p.info.state)},
          {"reason", p.info.reason},
          {"summary", p.summary()},
          {"plugin_version", p.info.plugin_version},
          {"abi", std::to_string(p.info.abi_major) + "." + std::to_string(p.info.abi_minor)},
          {"abi_major", p.info.abi_major},
          {"abi_minor", p.info.abi_minor},
          {"device_count", p.info.device_count}};
}

ordered_json device_json(uint32_t index, const Device& d) {
  ordered_json ops = ordered_json::object();
  for (int op = 0; op < XHAL_OP_COUNT_; ++op) {
    if (d.info.supported_ops & (uint64_t{1} << op))
      ops[xhal_op_name(static_cast<xhal_op_t>(op))] = dtype_names(d.info.op_dtypes[op]);
  }
  ordered_json j = {{"index", index},
                    {"id", d.id},
                    {"backend", d.info.backend},
                    {"backend_index", d.info.backend_index},
                    {"name", d.info.name},
                    {"kind", kind_name(d.info.kind)},
                    {"stable_id", d.info.stable_id},
                    {"memory_bytes", d.info.memory_bytes},
                    {"ops", ops}};
  j["options"] = d.options;
  if (!d.options_error.empty()) j["options_error"] = d.options_error;
  j["same_device_as"] = d.same_device_as.empty() ? ordered_json() : ordered_json(d.same_device_as);
  return j;
}

void print_plugins(const std::vector<Plugin>& plugins) {
  std::cout << "Plugins (search order):\n";
  if (plugins.empty()) std::cout << "  none found\n";
  for (const Plugin& p : plugins) {
    std::cout << "  [" << state_name(p.info.state) << "] " << p.info.backend << "  " << p.info.path
              << "\n      ";
    // Version and ABI when the table was read (the ABI reason states them).
    if (p.info.abi_major != 0 && p.info.reason.rfind("plugin ABI ", 0) != 0) {
      std::cout << "version " << p.info.plugin_version << ", ABI " << p.info.abi_major << "."
                << p.info.abi_minor << ", ";
    }
    std::cout << p.summary() << "\n";
  }
}

void print_devices(const std::vector<Device>& devices) {
  std::cout << "Devices (selection order):\n";
  if (devices.empty()) std::cout << "  none\n";
  for (size_t i = 0; i < devices.size(); ++i) {
    const Device& d = devices[i];
    std::cout << "  #" << i << " " << d.id << "  \"" << d.info.name << "\"  ("
              << kind_name(d.info.kind) << ")\n";
    std::cout << "      stable id: " << (d.info.stable_id.empty() ? "(none)" : d.info.stable_id);
    if (!d.same_device_as.empty()) std::cout << "  (same device as " << d.same_device_as << ")";
    std::cout << "\n      memory:    " << human_bytes(d.info.memory_bytes) << "\n";
    std::cout << "      ops:      ";
    if (d.info.supported_ops == 0) std::cout << " none";
    for (int op = 0; op < XHAL_OP_COUNT_; ++op) {
      if (!(d.info.supported_ops & (uint64_t{1} << op))) continue;
      std::cout << " " << xhal_op_name(static_cast<xhal_op_t>(op)) << "[";
      const auto names = dtype_names(d.info.op_dtypes[op]);
      for (size_t k = 0; k < names.size(); ++k) std::cout << (k ? " " : "") << names[k];
      std::cout << "]";
    }
    std::cout << "\n      options:   ";
    if (!d.options_error.empty())
      std::cout << "(cannot open the device: " << d.options_error << ")";
    else std::cout << (d.options.empty() ? "(none)" : d.options);
    std::cout << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"xhal-info: lists xhal plugin candidates and devices"};
  bool json = false;
  std::optional<std::string> device, plugin_path;
  bool plugin_path_only = false;
  app.add_flag("--json", json, "machine-readable output (JSON)");
  app.add_option("--device", device, "device selector (default: $XHAL_DEVICE)");
  app.add_option("--plugin-path", plugin_path,
                 "colon-separated plugin folders or files (default: $XHAL_PLUGIN_PATH)");
  app.add_flag("--plugin-path-only", plugin_path_only,
               "search only --plugin-path, not the installed plugin folder nor beside libxhal");
  bool probe = false;
  double probe_timeout = 10;
  std::optional<std::string> probe_one;
  app.add_flag("--probe", probe,
               "load each plugin candidate alone in a child process and report ok (N devices), "
               "rejected, crashed (the signal) or hung; exit 1 unless all are ok");
  app.add_option("--probe-timeout", probe_timeout, "seconds a --probe child may take (default 10)")
      ->check(CLI::PositiveNumber);
  // The child's side of --probe (not for people).
  app.add_option("--probe-one", probe_one)->group("");
  CLI11_PARSE(app, argc, argv);

  if (probe_one) return xhal_info::probe_one(*probe_one);
  if (probe) {
    xhal_info::ProbeOptions o;
    o.plugin_path = plugin_path.value_or("");
    o.plugin_path_only = plugin_path_only;
    o.timeout_s = probe_timeout;
    o.json = json;
    return xhal_info::probe_all(o);
  }

  xhal_runtime_options_t options{};
  options.struct_size = sizeof(options);
  options.device_selector = device ? device->c_str() : nullptr;
  options.plugin_path = plugin_path ? plugin_path->c_str() : nullptr;
  options.plugin_path_only = plugin_path_only ? 1 : 0;

  uint32_t major = 0, minor = 0, patch = 0;
  xhal_version(&major, &minor, &patch);
  const std::string version =
      std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  const char* env_selector = std::getenv("XHAL_DEVICE");
  const std::string selector = device ? *device : (env_selector ? env_selector : "");

  if (const xhal_status_t init_status = xhal_runtime_init(&options); init_status != XHAL_OK) {
    const std::string message = xhal_last_error();
    if (json) {
      std::cout << ordered_json{{"xhal_version", version},
                                {"selector", selector},
                                {"error",
                                 {{"status", xhal_status_name(init_status)}, {"message", message}}}}
                       .dump(2)
                << "\n";
    }
    std::cerr << "xhal-info: " << message << "\n";
    return 2;
  }

  const std::vector<Plugin> plugins = read_plugins();
  uint32_t count = 0;
  const xhal_status_t count_status = xhal_device_count(&count);
  const std::string count_error = count_status == XHAL_OK ? "" : xhal_last_error();
  const std::vector<Device> devices = read_devices(count_status == XHAL_OK ? count : 0);

  // When the selector matched nothing, show what exists without it.
  std::vector<Device> without_selector;
  if (count_status == XHAL_NOT_FOUND && !selector.empty()) {
    xhal_runtime_shutdown();
    xhal_runtime_options_t all = options;
    all.device_selector = "";
    uint32_t all_count = 0;
    if (xhal_runtime_init(&all) == XHAL_OK && xhal_device_count(&all_count) == XHAL_OK) {
      without_selector = read_devices(all_count);
    }
  }
  const bool no_device = count_status != XHAL_OK || devices.empty();
  std::string error = count_error;
  if (error.empty() && devices.empty()) error = "no xhal device found (see the plugins above)";

  if (json) {
    ordered_json out = {{"xhal_version", version},
                        {"plugin_abi", std::to_string(XHAL_PLUGIN_ABI_MAJOR) + "." +
                                           std::to_string(XHAL_PLUGIN_ABI_MINOR)},
                        {"selector", selector}};
    out["plugins"] = ordered_json::array();
    for (const Plugin& p : plugins) out["plugins"].push_back(plugin_json(p));
    out["devices"] = ordered_json::array();
    for (uint32_t i = 0; i < devices.size(); ++i)
      out["devices"].push_back(device_json(i, devices[i]));
    if (no_device) {
      out["error"] = {
          {"status", xhal_status_name(count_status == XHAL_OK ? XHAL_NOT_FOUND : count_status)},
          {"message", error}};
      out["devices_without_selector"] = ordered_json::array();
      for (uint32_t i = 0; i < without_selector.size(); ++i) {
        out["devices_without_selector"].push_back(device_json(i, without_selector[i]));
      }
    }
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "xhal " << version << " (plugin ABI " << XHAL_PLUGIN_ABI_MAJOR << "."
              << XHAL_PLUGIN_ABI_MINOR << ")\n";
    std::cout << "Selector: "
              << (selector.empty() ? "none (every device, GPUs first, CPU last)"
                                   : (device ? "--device " : "XHAL_DEVICE=") + selector)
              << "\n\n";
    print_plugins(plugins);
    std::cout << "\n";
    print_devices(devices);
    if (!without_selector.empty()) {
      std::cout << "\nDevices without the selector:\n";
      for (const Device& d : without_selector) {
        std::cout << "  " << d.id << "  \"" << d.info.name << "\"  stable id " << d.info.stable_id
                  << "\n";
      }
    }
  }
  xhal_runtime_shutdown();
  if (no_device) {
    std::cerr << "xhal-info: " << error << "\n";
    return 1;
  }
  return 0;
}
