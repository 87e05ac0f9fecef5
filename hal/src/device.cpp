// Device enumeration, opening by selector or index, release, queries.
#include <algorithm>
#include <cstring>

#include "runtime_state.h"

namespace xhal {
namespace {

xhal_status_t check_info_struct(const xhal_device_info_t* out_info) {
  if (!out_info) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_info' is NULL");
  if (out_info->struct_size < sizeof(size_t)) {
    return fail(XHAL_INVALID_ARGUMENT,
                "out_info->struct_size is %zu; set it to sizeof(xhal_device_info_t)",
                out_info->struct_size);
  }
  return XHAL_OK;
}

// Copies the fields that fit in the caller's struct_size; struct_size stays.
void copy_info(const xhal_device_info_t& from, xhal_device_info_t* to) {
  const size_t n = std::min(to->struct_size, sizeof(from));
  std::memcpy(reinterpret_cast<char*>(to) + sizeof(size_t),
              reinterpret_cast<const char*>(&from) + sizeof(size_t), n - sizeof(size_t));
}

// Opens list entry `d` (caller holds the runtime mutex): the first handle
// opens the plugin device, later ones share it.
xhal_status_t open_entry_locked(DeviceEntry& d, xhal_device_t* out_device) {
  xhal_device* handle = d.handle.get();
  if (handle->open_handles.load() == 0) {
    take_plugin_message();
    void* plugin_device = nullptr;
    const xhal_status_t s = d.plugin->api.device_open(d.plugin->context,
                                                      d.info.backend_index, &plugin_device);
    if (s != XHAL_OK) return plugin_status(s, d.backend.c_str(), "device_open");
    if (!plugin_device) {
      return fail(XHAL_PLUGIN_ERROR, "%s plugin: device_open returned a NULL device",
                  d.backend.c_str());
    }
    handle->plugin_device = plugin_device;
  }
  handle->open_handles.fetch_add(1);
  *out_device = handle;
  return XHAL_OK;
}

}  // namespace

xhal_status_t check_device(const xhal_device* device, const char* arg) {
  if (!device) return fail(XHAL_INVALID_ARGUMENT, "argument '%s' is NULL", arg);
  if (device->open_handles.load(std::memory_order_acquire) == 0) {
    return fail(XHAL_INVALID_ARGUMENT, "argument '%s' (%s:%u) was released", arg,
                device->backend.c_str(), device->backend_index);
  }
  return XHAL_OK;
}

}  // namespace xhal

using xhal::fail;
using xhal::runtime;

extern "C" {

xhal_status_t xhal_device_count(uint32_t* out_count) {
  xhal::clear_error();
  if (!out_count) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_count' is NULL");
  xhal::Runtime& rt = runtime();
  std::lock_guard lock(rt.mutex);
  if (xhal_status_t s = xhal::ensure_started_locked(); s != XHAL_OK) return s;
  // A selector that matched nothing is reported, not shown as "0 devices".
  if (!rt.selector.terms.empty()) {
    if (xhal_status_t s = xhal::check_devices_selected_locked(); s != XHAL_OK) return s;
  }
  *out_count = static_cast<uint32_t>(rt.devices.size());
  return XHAL_OK;
}

xhal_status_t xhal_device_get_info(uint32_t index, xhal_device_info_t* out_info) {
  xhal::clear_error();
  if (xhal_status_t s = xhal::check_info_struct(out_info); s != XHAL_OK) return s;
  xhal::Runtime& rt = runtime();
  std::lock_guard lock(rt.mutex);
  if (xhal_status_t s = xhal::ensure_started_locked(); s != XHAL_OK) return s;
  if (xhal_status_t s = xhal::check_devices_selected_locked(); s != XHAL_OK) return s;
  if (index >= rt.devices.size()) {
    return fail(XHAL_OUT_OF_RANGE, "argument 'index' is %u; there are %zu devices: %s", index,
                rt.devices.size(), xhal::describe_devices(rt.devices).c_str());
  }
  xhal::copy_info(rt.devices[index]->info, out_info);
  return XHAL_OK;
}

xhal_status_t xhal_device_open(const char* selector, xhal_device_t* out_device) {
  xhal::clear_error();
  if (!out_device) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_device' is NULL");
  xhal::Selector parsed;
  if (xhal_status_t s = xhal::parse_selector(selector, "selector", &parsed); s != XHAL_OK) {
    return s;
  }
  xhal::Runtime& rt = runtime();
  std::lock_guard lock(rt.mutex);
  if (xhal_status_t s = xhal::ensure_started_locked(); s != XHAL_OK) return s;
  if (xhal_status_t s = xhal::check_devices_selected_locked(); s != XHAL_OK) return s;
  std::vector<xhal::SelectableDevice> selectable;
  for (const auto& d : rt.devices) {
    selectable.push_back({d->backend, d->info.backend_index, d->stable_id});
  }
  const std::vector<size_t> chosen = xhal::apply_selector(parsed, selectable);
  if (chosen.empty()) {
    std::string narrowed;
    if (!rt.selector.terms.empty()) {
      narrowed = "; the list is narrowed by " + rt.selector_source + "='" +
                 rt.selector.text + "'";
    }
    return fail(XHAL_NOT_FOUND, "selector '%s' matches no device; devices: %s%s",
                parsed.text.c_str(), xhal::describe_devices(rt.devices).c_str(),
                narrowed.c_str());
  }
  return xhal::open_entry_locked(*rt.devices[chosen.front()], out_device);
}

xhal_status_t xhal_device_open_index(uint32_t index, xhal_device_t* out_device) {
  xhal::clear_error();
  if (!out_device) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_device' is NULL");
  xhal::Runtime& rt = runtime();
  std::lock_guard lock(rt.mutex);
  if (xhal_status_t s = xhal::ensure_started_locked(); s != XHAL_OK) return s;
  if (xhal_status_t s = xhal::check_devices_selected_locked(); s != XHAL_OK) return s;
  if (index >= rt.devices.size()) {
    return fail(XHAL_OUT_OF_RANGE, "argument 'index' is %u; there are %zu devices: %s", index,
                rt.devices.size(), xhal::describe_devices(rt.devices).c_str());
  }
  return xhal::open_entry_locked(*rt.devices[index], out_device);
}

xhal_status_t xhal_device_release(xhal_device_t device) {
  xhal::clear_error();
  xhal::Runtime& rt = runtime();
  std::lock_guard lock(rt.mutex);
  if (xhal_status_t s = xhal::check_device(device, "device"); s != XHAL_OK) return s;
  const uint32_t handles = device->open_handles.load();
  const int64_t live = device->live_objects.load();
  if (handles == 1 && live != 0) {
    return fail(XHAL_BUSY,
                "cannot release device %s:%u: %lld buffers/plans/matrices still live",
                device->backend.c_str(), device->backend_index, static_cast<long long>(live));
  }
  if (handles == 1) {
    // Queued work finishes before the device goes away.
    xhal::take_plugin_message();
    device->api->device_synchronize(device->plugin_device);
    xhal::take_plugin_message();
    device->api->device_close(device->plugin_device);
    device->plugin_device = nullptr;
  }
  device->open_handles.fetch_sub(1, std::memory_order_release);
  return XHAL_OK;
}

xhal_status_t xhal_device_query(xhal_device_t device, xhal_device_info_t* out_info) {
  xhal::clear_error();
  if (xhal_status_t s = xhal::check_device(device, "device"); s != XHAL_OK) return s;
  if (xhal_status_t s = xhal::check_info_struct(out_info); s != XHAL_OK) return s;
  xhal::copy_info(device->info, out_info);
  return XHAL_OK;
}

xhal_status_t xhal_device_synchronize(xhal_device_t device) {
  xhal::clear_error();
  if (xhal_status_t s = xhal::check_device(device, "device"); s != XHAL_OK) return s;
  return xhal::plugin_status(device->api->device_synchronize(device->plugin_device),
                             device->backend.c_str(), "device_synchronize");
}

xhal_status_t xhal_device_get_counters(xhal_device_t device, xhal_counters_t* out_counters) {
  xhal::clear_error();
  if (xhal_status_t s = xhal::check_device(device, "device"); s != XHAL_OK) return s;
  if (!out_counters) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_counters' is NULL");
  xhal_counters_t counters{};
  const xhal_status_t s = device->api->device_get_counters(device->plugin_device, &counters);
  if (s != XHAL_OK) return xhal::plugin_status(s, device->backend.c_str(), "device_get_counters");
  *out_counters = counters;
  return XHAL_OK;
}

}  // extern "C"
