// Runtime lifecycle: start (explicit or lazy from the environment), the
// device list, plugin reports, shutdown (explicit and at unload/exit).
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "entry.h"
#include "loader.h"
#include "runtime_state.h"

extern "C" int __cxa_atexit(void (*function)(void*), void* argument, void* dso_handle);
extern "C" void __cxa_finalize(void* dso_handle);

namespace xhal {
namespace {

void shutdown_at_exit(void*);

// The exit handler is registered once per start, after that start opened its
// plugins, so that at exit it runs before their static destructors (exit
// runs handlers in reverse order). Registered under this token rather than
// libxhal's __dso_handle, so that a shutdown can retire it with
// __cxa_finalize(&token): the libc slot is then reused by the next start
// instead of the exit list growing by one entry per init/shutdown cycle.
char g_exit_token;
bool g_exit_handler_registered = false;  // under the runtime mutex
bool g_retiring_exit_handler = false;

void register_exit_handler() {
  if (g_exit_handler_registered) return;
  __cxa_atexit(&shutdown_at_exit, nullptr, &g_exit_token);
  g_exit_handler_registered = true;
}

// Runs (and so frees) the registration without shutting anything down.
void retire_exit_handler() {
  if (!g_exit_handler_registered) return;
  g_retiring_exit_handler = true;
  __cxa_finalize(&g_exit_token);
  g_retiring_exit_handler = false;
  g_exit_handler_registered = false;
}

// libxhal itself being unloaded (dlclose) while the runtime runs: the exit
// handler must run now, while its code is still mapped. At process exit it
// has run already and this finds nothing.
__attribute__((destructor)) void run_exit_handler_at_unload() { __cxa_finalize(&g_exit_token); }

// GPUs first, then other accelerators, the CPU last.
int kind_rank(xhal_device_kind_t kind) {
  switch (kind) {
    case XHAL_DEVICE_KIND_GPU:
      return 0;
    case XHAL_DEVICE_KIND_OTHER:
      return 1;
    case XHAL_DEVICE_KIND_CPU:
      return 2;
  }
  return 1;
}

std::string device_label(const DeviceEntry& d) {
  return d.backend + ":" + std::to_string(d.info.backend_index);
}

std::unique_ptr<DeviceEntry> make_entry(LoadedPlugin* plugin, uint32_t plugin_order, uint32_t index,
                                        const xhal_plugin_device_info_t& from) {
  auto d = std::make_unique<DeviceEntry>();
  d->plugin = plugin;
  d->plugin_order = plugin_order;
  d->backend = plugin->backend;
  d->name = from.name;
  d->stable_id = from.stable_id;
  xhal_device_info_t& info = d->info;
  info.struct_size = sizeof(info);
  info.backend = d->backend.c_str();
  info.backend_index = index;
  info.name = d->name.c_str();
  info.stable_id = d->stable_id.c_str();
  info.kind = from.kind;
  info.memory_bytes = from.memory_bytes;
  for (int op = 0; op < XHAL_OP_COUNT_; ++op) {
    const bool slots = op_slots_present(plugin->api, static_cast<xhal_op_t>(op));
    // A dtype claim without the slot is not support (older, shorter tables),
    // nor is one the spec does not allow for the op (the core refuses it
    // before the plugin runs): xhal-info lists what a call can use.
    info.op_dtypes[op] =
        slots ? (from.op_dtypes[op] & spec_dtypes(static_cast<xhal_op_t>(op))) : 0u;
    if (info.op_dtypes[op] != 0) info.supported_ops |= uint64_t{1} << op;
  }
  return d;
}

std::string skipped_backends(const Runtime& rt) {
  std::string list;
  for (const PluginRecord& p : rt.plugins) {
    if (p.state != XHAL_PLUGIN_SKIPPED) continue;
    if (!list.empty()) list += ", ";
    list += p.backend;
  }
  return list;
}

void stop_locked(Runtime& rt, bool unload = true) {
  rt.devices.clear();
  forget_released_devices();
  for (auto it = rt.plugins.rbegin(); it != rt.plugins.rend(); ++it) unload_plugin(*it, unload);
  rt.plugins.clear();
  rt.all_device_names.clear();
  rt.selector = {};
  rt.running = false;
  if (unload) retire_exit_handler();
}

xhal_status_t start_locked(Runtime& rt, const char* selector_text, const char* source,
                           const char* plugin_path, bool plugin_path_only) {
  Selector selector;
  if (xhal_status_t s = parse_selector(selector_text, source, &selector); s != XHAL_OK) {
    return s;
  }
  rt.selector = std::move(selector);
  rt.selector_source = source;
  const std::string skip_reason =
      "not needed by " + rt.selector_source + "='" + rt.selector.text + "'";
  for (const PluginCandidate& c :
       find_plugin_candidates(plugin_path ? plugin_path : "", plugin_path_only)) {
    // Decided from the file name alone: none of a skipped plugin's code runs.
    if (c.problem.empty() && !selector_needs_backend(rt.selector, c.backend)) {
      PluginRecord skipped;
      skipped.path = c.path;
      skipped.backend = c.backend;
      skipped.state = XHAL_PLUGIN_SKIPPED;
      skipped.reason = skip_reason;
      rt.plugins.push_back(std::move(skipped));
      continue;
    }
    rt.plugins.push_back(load_plugin(c, rt.plugins));
  }

  std::vector<std::unique_ptr<DeviceEntry>> all;
  for (uint32_t p = 0; p < rt.plugins.size(); ++p) {
    PluginRecord& record = rt.plugins[p];
    if (record.state != XHAL_PLUGIN_LOADED) continue;
    for (uint32_t i = 0; i < record.devices.size(); ++i) {
      all.push_back(make_entry(record.plugin.get(), p, i, record.devices[i]));
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return kind_rank(a->info.kind) < kind_rank(b->info.kind);
  });
  std::vector<SelectableDevice> selectable;
  for (const auto& d : all) {
    selectable.push_back({d->backend, d->info.backend_index, d->stable_id});
    rt.all_device_names.push_back(device_label(*d) + " \"" + d->name + "\"");
  }
  for (size_t i : apply_selector(rt.selector, selectable)) {
    auto& d = all[i];
    d->handle = std::make_unique<Device>();
    d->handle->api = &d->plugin->api;
    d->handle->plugin_abi_minor = d->plugin->api.abi_minor;
    d->handle->backend = d->backend;
    d->handle->backend_index = d->info.backend_index;
    d->handle->info = d->info;
    rt.devices.push_back(std::move(d));
  }
  rt.running = true;
  register_exit_handler();
  return XHAL_OK;
}

// At exit (or when libxhal is unloaded) the runtime shuts down, unless the
// app still holds devices: then nothing is unloaded under its feet.
void shutdown_at_exit(void*) {
  if (g_retiring_exit_handler) return;
  g_exit_handler_registered = false;
  Runtime& rt = runtime();
  std::unique_lock lock(rt.mutex, std::try_to_lock);
  if (!lock.owns_lock() || !rt.running) return;
  for (const auto& d : rt.devices) {
    if (d->handle->open_handles.load() != 0) return;
  }
  try {
    stop_locked(rt, /*unload=*/false);
  } catch (...) {
    // Nothing to report to at exit; an escaping exception would terminate.
  }
}

// A start either completes or leaves nothing behind: no plugin records, no
// loaded plugin, no device, so that a later start begins clean. What the
// core throws (out of memory) is rethrown after the cleanup, for entry() to
// turn into a status.
xhal_status_t start_all_or_nothing_locked(Runtime& rt, const char* selector_text,
                                          const char* source, const char* plugin_path,
                                          bool plugin_path_only) {
  stop_locked(rt);  // no-op unless an earlier failed start left something
  xhal_status_t status = XHAL_INTERNAL;
  try {
    status = start_locked(rt, selector_text, source, plugin_path, plugin_path_only);
  } catch (...) {
    stop_locked(rt);
    throw;
  }
  if (status != XHAL_OK) stop_locked(rt);
  return status;
}

}  // namespace

Runtime& runtime() {
  // Never destroyed: plugins may still run during static destruction.
  static Runtime* instance = new Runtime;
  return *instance;
}

xhal_status_t ensure_started_locked() {
  Runtime& rt = runtime();
  if (rt.running) return XHAL_OK;
  return start_all_or_nothing_locked(rt, std::getenv("XHAL_DEVICE"), "XHAL_DEVICE",
                                     std::getenv("XHAL_PLUGIN_PATH"), false);
}

std::string describe_devices(const std::vector<std::unique_ptr<DeviceEntry>>& devices) {
  std::string list;
  for (const auto& d : devices) {
    if (!list.empty()) list += ", ";
    list += device_label(*d) + " \"" + d->name + "\"";
  }
  return list.empty() ? "none" : list;
}

xhal_status_t check_devices_selected_locked() {
  const Runtime& rt = runtime();
  if (!rt.devices.empty()) return XHAL_OK;
  std::string existing;
  for (const std::string& name : rt.all_device_names) {
    if (!existing.empty()) existing += ", ";
    existing += name;
  }
  if (existing.empty()) existing = "none";
  const std::string skipped = skipped_backends(rt);
  const std::string not_loaded =
      skipped.empty() ? "" : "; plugins not loaded because of the selector: " + skipped;
  if (rt.selector.terms.empty()) {
    std::string plugins;
    for (const PluginRecord& p : rt.plugins) {
      if (!plugins.empty()) plugins += "; ";
      plugins += p.path + ": " +
                 (p.state == XHAL_PLUGIN_LOADED ? "loaded, 0 devices" : "rejected") +
                 (p.reason.empty() ? "" : " (" + p.reason + ")");
    }
    return fail(XHAL_NOT_FOUND, "no xhal device found; plugins: %s (run xhal-info)",
                plugins.empty() ? "no plugin files found" : plugins.c_str());
  }
  return fail(XHAL_NOT_FOUND, "%s='%s' matches no device; devices: %s%s",
              rt.selector_source.c_str(), rt.selector.text.c_str(), existing.c_str(),
              not_loaded.c_str());
}

}  // namespace xhal

using xhal::runtime;

extern "C" {

xhal_status_t xhal_version(uint32_t* out_major, uint32_t* out_minor, uint32_t* out_patch) {
  return xhal::entry("xhal_version", [&] {
    if (!out_major) return xhal::fail(XHAL_INVALID_ARGUMENT, "argument 'out_major' is NULL");
    if (!out_minor) return xhal::fail(XHAL_INVALID_ARGUMENT, "argument 'out_minor' is NULL");
    if (!out_patch) return xhal::fail(XHAL_INVALID_ARGUMENT, "argument 'out_patch' is NULL");
    *out_major = XHAL_VERSION_MAJOR;
    *out_minor = XHAL_VERSION_MINOR;
    *out_patch = XHAL_VERSION_PATCH;
    return XHAL_OK;
  });
}

xhal_status_t xhal_runtime_init(const xhal_runtime_options_t* options) {
  return xhal::entry("xhal_runtime_init", [&] {
    const char* selector = std::getenv("XHAL_DEVICE");
    const char* source = "XHAL_DEVICE";
    const char* plugin_path = std::getenv("XHAL_PLUGIN_PATH");
    bool path_only = false;
    if (options) {
      const size_t size = options->struct_size;
      auto has = [size](size_t offset, size_t field) { return offset + field <= size; };
      if (size < sizeof(size_t)) {
        return xhal::fail(XHAL_INVALID_ARGUMENT,
                          "options->struct_size is %zu; must be at least %zu", size,
                          sizeof(size_t));
      }
      if (has(offsetof(xhal_runtime_options_t, device_selector), sizeof(const char*)) &&
          options->device_selector) {
        selector = options->device_selector;
        source = "device_selector";
      }
      if (has(offsetof(xhal_runtime_options_t, plugin_path), sizeof(const char*)) &&
          options->plugin_path) {
        plugin_path = options->plugin_path;
      }
      if (has(offsetof(xhal_runtime_options_t, plugin_path_only), sizeof(int32_t))) {
        path_only = options->plugin_path_only != 0;
      }
    }
    xhal::Runtime& rt = runtime();
    std::lock_guard lock(rt.mutex);
    if (rt.running) {
      return xhal::fail(XHAL_BUSY,
                        "the runtime is already running (call xhal_runtime_shutdown first)");
    }
    return xhal::start_all_or_nothing_locked(rt, selector, source, plugin_path, path_only);
  });
}

xhal_status_t xhal_runtime_shutdown(void) {
  return xhal::entry("xhal_runtime_shutdown", [&] {
    xhal::Runtime& rt = runtime();
    std::lock_guard lock(rt.mutex);
    if (!rt.running) return XHAL_OK;
    std::string open;
    for (const auto& d : rt.devices) {
      const uint32_t handles = d->handle->open_handles.load();
      if (handles == 0) continue;
      if (!open.empty()) open += ", ";
      open += d->backend + ":" + std::to_string(d->info.backend_index) + " (" +
              std::to_string(handles) + (handles == 1 ? " handle)" : " handles)");
    }
    if (!open.empty()) {
      return xhal::fail(XHAL_BUSY, "cannot shut down: devices still open: %s", open.c_str());
    }
    xhal::stop_locked(rt);
    return XHAL_OK;
  });
}

xhal_status_t xhal_plugin_count(uint32_t* out_count) {
  return xhal::entry("xhal_plugin_count", [&] {
    if (!out_count) return xhal::fail(XHAL_INVALID_ARGUMENT, "argument 'out_count' is NULL");
    xhal::Runtime& rt = runtime();
    std::lock_guard lock(rt.mutex);
    if (xhal_status_t s = xhal::ensure_started_locked(); s != XHAL_OK) return s;
    *out_count = static_cast<uint32_t>(rt.plugins.size());
    return XHAL_OK;
  });
}

xhal_status_t xhal_plugin_get_info(uint32_t index, xhal_plugin_info_t* out_info) {
  return xhal::entry("xhal_plugin_get_info", [&] {
    if (!out_info) return xhal::fail(XHAL_INVALID_ARGUMENT, "argument 'out_info' is NULL");
    const size_t size = out_info->struct_size;
    if (size < sizeof(size_t)) {
      return xhal::fail(XHAL_INVALID_ARGUMENT,
                        "out_info->struct_size is %zu; set it to sizeof(xhal_plugin_info_t)", size);
    }
    xhal::Runtime& rt = runtime();
    std::lock_guard lock(rt.mutex);
    if (xhal_status_t s = xhal::ensure_started_locked(); s != XHAL_OK) return s;
    if (index >= rt.plugins.size()) {
      return xhal::fail(XHAL_OUT_OF_RANGE,
                        "argument 'index' is %u; there are %zu plugin candidates", index,
                        rt.plugins.size());
    }
    const xhal::PluginRecord& p = rt.plugins[index];
    xhal_plugin_info_t info{};
    info.path = p.path.c_str();
    info.backend = p.backend.c_str();
    info.state = p.state;
    info.reason = p.reason.c_str();
    info.abi_major = p.abi_major;
    info.abi_minor = p.abi_minor;
    info.plugin_version = p.plugin_version.c_str();
    info.device_count = p.device_count;
    // Only the fields that lie entirely inside the caller's struct_size.
    auto put = [&](const auto& field) {
      const size_t offset =
          reinterpret_cast<const char*>(&field) - reinterpret_cast<const char*>(&info);
      if (offset + sizeof(field) <= size)
        std::memcpy(reinterpret_cast<char*>(out_info) + offset, &field, sizeof(field));
    };
    put(info.path);
    put(info.backend);
    put(info.state);
    put(info.reason);
    put(info.abi_major);
    put(info.abi_minor);
    put(info.plugin_version);
    put(info.device_count);
    return XHAL_OK;
  });
}

}  // extern "C"
