// Device enumeration, opening by selector or index, release, queries.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "entry.h"
#include "handles.h"
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

// Copies the fields that lie entirely inside the caller's struct_size (an
// array element counts as a field); struct_size itself stays.
void copy_info(const xhal_device_info_t& from, xhal_device_info_t* to) {
  const size_t size = to->struct_size;
  auto put = [&](const auto& field) {
    const size_t offset =
        reinterpret_cast<const char*>(&field) - reinterpret_cast<const char*>(&from);
    if (offset + sizeof(field) <= size)
      std::memcpy(reinterpret_cast<char*>(to) + offset, &field, sizeof(field));
  };
  put(from.backend);
  put(from.backend_index);
  put(from.name);
  put(from.stable_id);
  put(from.kind);
  put(from.memory_bytes);
  put(from.supported_ops);
  for (const uint32_t& dtypes : from.op_dtypes) put(dtypes);
}

// Interop (plugin ABI 1.3): where the new plugin device's buffers live. A
// slot that fails or reports a kind outside xhal_memory_kind_t leaves the
// device without native memory (interop calls are XHAL_UNSUPPORTED); the
// open itself does not fail.
void query_memory_kind(DeviceEntry& d, void* plugin_device) {
  Device* device = d.handle.get();
  device->memory_kind = 0;
  device->memory_ordinal = 0;
  const xhal_plugin_api_t& api = d.plugin->api;
  if (!api.device_get_memory_kind) return;
  xhal_memory_kind_t kind{};
  int32_t ordinal = 0;
  const xhal_status_t s = call_slot(d.backend.c_str(), "device_get_memory_kind", [&] {
    return api.device_get_memory_kind(plugin_device, &kind, &ordinal);
  });
  uint32_t raw = 0;
  std::memcpy(&raw, &kind, sizeof raw);  // a plugin may return any integer
  if (s != XHAL_OK ||
      (raw != XHAL_MEMORY_HOST && raw != XHAL_MEMORY_CUDA && raw != XHAL_MEMORY_ROCM)) {
    clear_error();
    return;
  }
  device->memory_kind = raw;
  device->memory_ordinal = ordinal;
}

// Opens list entry `d` (caller holds the runtime mutex): the first handle
// opens the plugin device, later ones share it.
// A caller's queue (xhal_device_open_on_native_queue), or none.
struct QueueRequest {
  bool on_queue = false;
  void* queue = nullptr;
};

xhal_status_t open_entry_locked(DeviceEntry& d, xhal_device_t* out_device,
                                QueueRequest request = {}) {
  Device* device = d.handle.get();
  if (device->open_handles.load() != 0 && request.on_queue) {
    // One device, one in-order queue: opening it on the queue it already
    // uses shares it (the cpu device's is none: NULL), another is refused.
    void* current = device->native_queue;
    bool known = device->on_native_queue;
    if (!known && device->api->device_get_native_queue) {
      std::lock_guard queue(device->queue);
      known = XHAL_PLUGIN_CALL(device, device_get_native_queue, &current) == XHAL_OK;
      clear_error();
    }
    if (!known || current != request.queue)
      return fail(XHAL_BUSY,
                  "argument 'native_queue' is %p; device %s:%u is already open on %s queue %p; "
                  "release every handle of it before opening it on another queue",
                  request.queue, d.backend.c_str(), d.info.backend_index,
                  device->on_native_queue ? "native" : "its own", known ? current : nullptr);
  }
  if (device->open_handles.load() == 0) {
    void* plugin_device = nullptr;
    std::string options;
    XHAL_TRY(options_for(d.backend, &options));
    const xhal_plugin_api_t& api = d.plugin->api;
    if (request.on_queue) {
      if (!api.device_open_on_queue)
        return fail(XHAL_UNSUPPORTED,
                    "backend '%s' cannot run on a caller's queue (its plugin has no "
                    "device_open_on_queue slot)",
                    d.backend.c_str());
      XHAL_TRY(call_slot(d.backend.c_str(), "device_open_on_queue", [&] {
        return api.device_open_on_queue(d.plugin->context, d.info.backend_index, options.c_str(),
                                        request.queue, &plugin_device);
      }));
    } else if (api.device_open_with_options) {
      XHAL_TRY(call_slot(d.backend.c_str(), "device_open_with_options", [&] {
        return api.device_open_with_options(d.plugin->context, d.info.backend_index,
                                            options.c_str(), &plugin_device);
      }));
    } else if (!options.empty()) {
      return fail(XHAL_INVALID_ARGUMENT,
                  "XHAL_DEVICE_OPTIONS: backend '%s' takes no device options (got '%s')",
                  d.backend.c_str(), options.c_str());
    } else {
      XHAL_TRY(call_slot(d.backend.c_str(), "device_open", [&] {
        return api.device_open(d.plugin->context, d.info.backend_index, &plugin_device);
      }));
    }
    if (!plugin_device) {
      return fail(XHAL_PLUGIN_ERROR, "%s plugin: device_open returned a NULL device",
                  d.backend.c_str());
    }
    query_memory_kind(d, plugin_device);
    const uint64_t handle = handles().add(HandleKind::kDevice, device);
    if (handle == 0) {
      call_void_slot([&] { d.plugin->api.device_close(plugin_device); });
      return fail(XHAL_OUT_OF_MEMORY, "xhal_device_open: too many live handles");
    }
    device->plugin_device = plugin_device;
    device->handle = handle;
    device->on_native_queue = request.on_queue;
    device->native_queue = request.queue;
  }
  device->open_handles.fetch_add(1);
  *out_device = to_handle<xhal_device_t>(device->handle);
  return XHAL_OK;
}

}  // namespace

}  // namespace xhal

namespace xhal {
namespace {
// The first device `selector` matches, or XHAL_NOT_FOUND listing them
// (caller holds the runtime mutex).
xhal_status_t select_entry_locked(const char* selector, DeviceEntry** out) {
  Selector parsed;
  XHAL_TRY(parse_selector(selector, "selector", &parsed));
  Runtime& rt = runtime();
  XHAL_TRY(ensure_started_locked());
  XHAL_TRY(check_devices_selected_locked());
  std::vector<SelectableDevice> selectable;
  for (const auto& d : rt.devices) {
    selectable.push_back({d->backend, d->info.backend_index, d->stable_id});
  }
  const std::vector<size_t> chosen = apply_selector(parsed, selectable);
  if (chosen.empty()) {
    std::string narrowed;
    if (!rt.selector.terms.empty()) {
      narrowed = "; the list is narrowed by " + rt.selector_source + "='" + rt.selector.text + "'";
    }
    return fail(XHAL_NOT_FOUND, "selector '%s' matches no device; devices: %s%s",
                parsed.text.c_str(), describe_devices(rt.devices).c_str(), narrowed.c_str());
  }
  *out = rt.devices[chosen.front()].get();
  return XHAL_OK;
}
}  // namespace
}  // namespace xhal

using namespace xhal;

extern "C" {

xhal_status_t xhal_device_count(uint32_t* out_count) {
  return entry("xhal_device_count", [&] {
    if (!out_count) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_count' is NULL");
    Runtime& rt = runtime();
    std::lock_guard lock(rt.mutex);
    XHAL_TRY(ensure_started_locked());
    // A selector that matched nothing is reported, not shown as "0 devices".
    if (!rt.selector.terms.empty()) XHAL_TRY(check_devices_selected_locked());
    *out_count = static_cast<uint32_t>(rt.devices.size());
    return XHAL_OK;
  });
}

xhal_status_t xhal_device_get_info(uint32_t index, xhal_device_info_t* out_info) {
  return entry("xhal_device_get_info", [&] {
    XHAL_TRY(check_info_struct(out_info));
    Runtime& rt = runtime();
    std::lock_guard lock(rt.mutex);
    XHAL_TRY(ensure_started_locked());
    XHAL_TRY(check_devices_selected_locked());
    if (index >= rt.devices.size()) {
      return fail(XHAL_OUT_OF_RANGE, "argument 'index' is %u; there are %zu devices: %s", index,
                  rt.devices.size(), describe_devices(rt.devices).c_str());
    }
    copy_info(rt.devices[index]->info, out_info);
    return XHAL_OK;
  });
}

xhal_status_t xhal_device_open(const char* selector, xhal_device_t* out_device) {
  return entry("xhal_device_open", [&] {
    if (!out_device) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_device' is NULL");
    std::lock_guard lock(runtime().mutex);
    DeviceEntry* d = nullptr;
    XHAL_TRY(select_entry_locked(selector, &d));
    return open_entry_locked(*d, out_device);
  });
}

xhal_status_t xhal_device_open_on_native_queue(const char* selector, void* native_queue,
                                               xhal_device_t* out_device) {
  return entry("xhal_device_open_on_native_queue", [&] {
    if (!out_device) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_device' is NULL");
    std::lock_guard lock(runtime().mutex);
    DeviceEntry* d = nullptr;
    XHAL_TRY(select_entry_locked(selector, &d));
    return open_entry_locked(*d, out_device, QueueRequest{true, native_queue});
  });
}

xhal_status_t xhal_device_open_index(uint32_t index, xhal_device_t* out_device) {
  return entry("xhal_device_open_index", [&] {
    if (!out_device) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_device' is NULL");
    Runtime& rt = runtime();
    std::lock_guard lock(rt.mutex);
    XHAL_TRY(ensure_started_locked());
    XHAL_TRY(check_devices_selected_locked());
    if (index >= rt.devices.size()) {
      return fail(XHAL_OUT_OF_RANGE, "argument 'index' is %u; there are %zu devices: %s", index,
                  rt.devices.size(), describe_devices(rt.devices).c_str());
    }
    return open_entry_locked(*rt.devices[index], out_device);
  });
}

xhal_status_t xhal_device_release(xhal_device_t device) {
  return entry("xhal_device_release", [&] {
    Runtime& rt = runtime();
    std::lock_guard lock(rt.mutex);
    Device* d = nullptr;
    XHAL_TRY(get_device(device, "device", &d));
    const uint32_t open = d->open_handles.load();
    const int64_t live = d->live_objects.load();
    if (open == 1 && live != 0) {
      if (const int64_t exports = d->live_exports.load(); exports != 0)
        return fail(XHAL_BUSY,
                    "cannot release device %s:%u: %lld buffers/plans/matrices still live "
                    "(%lld DLPack exports whose deleter has not run keep theirs alive)",
                    d->backend.c_str(), d->backend_index, static_cast<long long>(live),
                    static_cast<long long>(exports));
      return fail(XHAL_BUSY, "cannot release device %s:%u: %lld buffers/plans/matrices still live",
                  d->backend.c_str(), d->backend_index, static_cast<long long>(live));
    }
    if (open == 1) {
      std::lock_guard queue(d->queue);
      // Queued work finishes before the device goes away.
      (void)XHAL_PLUGIN_CALL(d, device_synchronize);
      call_void_slot([&] { d->api->device_close(d->plugin_device); });
      d->plugin_device = nullptr;
      handles().remove(HandleKind::kDevice, d->handle);
      remember_released_device(d->handle, d->backend + ":" + std::to_string(d->backend_index));
      d->handle = 0;
      clear_error();  // a failed final synchronize does not fail the release
    }
    d->open_handles.fetch_sub(1, std::memory_order_release);
    return XHAL_OK;
  });
}

xhal_status_t xhal_device_query(xhal_device_t device, xhal_device_info_t* out_info) {
  return entry("xhal_device_query", [&] {
    Device* d = nullptr;
    XHAL_TRY(get_device(device, "device", &d));
    XHAL_TRY(check_info_struct(out_info));
    copy_info(d->info, out_info);
    return XHAL_OK;
  });
}

xhal_status_t xhal_device_synchronize(xhal_device_t device) {
  return entry("xhal_device_synchronize", [&] {
    Device* d = nullptr;
    XHAL_TRY(get_device(device, "device", &d));
    std::lock_guard queue(d->queue);
    return XHAL_PLUGIN_CALL(d, device_synchronize);
  });
}

xhal_status_t xhal_device_get_options(xhal_device_t device, char* out, size_t capacity,
                                      size_t* out_length) {
  return entry("xhal_device_get_options", [&] {
    Device* d = nullptr;
    XHAL_TRY(get_device(device, "device", &d));
    if (!out && capacity > 0) return fail(XHAL_INVALID_ARGUMENT, "argument 'out' is NULL");
    std::string text;
    if (d->api->device_get_options) {
      std::lock_guard queue(d->queue);
      // Options lists are short; 4 KiB is far more than any plugin writes.
      char buffer[4096] = {};
      XHAL_TRY(XHAL_PLUGIN_CALL(d, device_get_options, buffer, sizeof buffer));
      buffer[sizeof buffer - 1] = '\0';
      text = buffer;
    }
    if (capacity > 0) {
      const size_t n = std::min(capacity - 1, text.size());
      std::memcpy(out, text.data(), n);
      out[n] = '\0';
    }
    if (out_length) *out_length = text.size();
    return XHAL_OK;
  });
}

xhal_status_t xhal_device_get_counters(xhal_device_t device, xhal_counters_t* out_counters) {
  return entry("xhal_device_get_counters", [&] {
    Device* d = nullptr;
    XHAL_TRY(get_device(device, "device", &d));
    if (!out_counters) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_counters' is NULL");
    xhal_counters_t counters{};
    std::lock_guard queue(d->queue);
    XHAL_TRY(XHAL_PLUGIN_CALL(d, device_get_counters, &counters));
    *out_counters = counters;
    return XHAL_OK;
  });
}

}  // extern "C"
