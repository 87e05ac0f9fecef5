// The CPU plugin's entry point: one device (this machine's cores; the
// option devices=N lists N virtual ones for tests), buffers in host memory,
// ops run synchronously on the calling thread plus an OpenMP team, so the
// in-order queue holds trivially and synchronize has no work.
#include <omp.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <thread>

#include "dense_ops.h"
#include "op_registry.h"
#include "options.h"
#include "stable_id.h"

namespace xhal::cpu {
namespace {

struct CpuContext {
  xhal_plugin_device_info_t info{};
  Options options;
};

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    std::string name = line.substr(colon + 1);
    const auto first = name.find_first_not_of(" \t");
    return first == std::string::npos ? std::string("unknown CPU") : name.substr(first);
  }
  return "unknown CPU";
}

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

void fill_device_info(xhal_plugin_device_info_t* info) {
  const std::string model = cpu_model_name();
  const int threads = omp_get_max_threads();
  std::snprintf(info->name, sizeof info->name, "%s (%d threads)", model.c_str(), threads);
  std::snprintf(info->stable_id, sizeof info->stable_id, "%s", stable_id_of(model).c_str());
  info->kind = XHAL_DEVICE_KIND_CPU;
  info->memory_bytes = physical_memory_bytes();

  // The dtypes each op file registered.
  for (const OpRegistration& r : op_registry())
    if (r.op >= 0 && r.op < XHAL_OP_COUNT_) info->op_dtypes[r.op] |= r.dtypes;
}

// The options' text the core passed to init (struct_size covers `options`
// from ABI 1.2 on).
const char* init_options(const xhal_plugin_host_t* host) {
  const size_t end = offsetof(xhal_plugin_host_t, options) + sizeof host->options;
  return host->struct_size >= end && host->options ? host->options : "";
}

xhal_status_t init(const xhal_plugin_host_t* host, void** out_context, char* out_note,
                   size_t note_capacity) {
  set_host(host);
  Options options;
  std::string error;
  if (!parse_options(init_options(host), &options, &error)) {
    set_error(("cpu plugin: " + error).c_str());
    return XHAL_INVALID_ARGUMENT;
  }
  auto* context = new (std::nothrow) CpuContext;
  if (context == nullptr) return XHAL_OUT_OF_MEMORY;
  context->options = options;
  fill_device_info(&context->info);
  if (out_note != nullptr && note_capacity > 0) out_note[0] = '\0';
  *out_context = context;
  return XHAL_OK;
}

void shutdown(void* context) { delete static_cast<CpuContext*>(context); }

xhal_status_t device_count(void* context, uint32_t* out_count) {
  *out_count = static_cast<CpuContext*>(context)->options.devices;
  return XHAL_OK;
}

xhal_status_t index_out_of_range(const CpuContext* context, uint32_t index) {
  set_error(("cpu plugin: device index " + std::to_string(index) + " is out of range (" +
             std::to_string(context->options.devices) + " device(s))")
                .c_str());
  return XHAL_OUT_OF_RANGE;
}

xhal_status_t device_get_info(void* context_arg, uint32_t index, xhal_plugin_device_info_t* out) {
  const auto* context = static_cast<CpuContext*>(context_arg);
  if (index >= context->options.devices) return index_out_of_range(context, index);
  // Virtual device k > 0 differs from device 0 in its name and stable id
  // only: each device has an id of its own, selectable and the same on
  // every run (stable_id.h).
  xhal_plugin_device_info_t info = context->info;
  if (index > 0) {
    const std::string name =
        std::string(context->info.name) + " [virtual " + std::to_string(index) + "]";
    const std::string id = virtual_stable_id(context->info.stable_id, index);
    std::snprintf(info.name, sizeof info.name, "%s", name.c_str());
    std::snprintf(info.stable_id, sizeof info.stable_id, "%s", id.c_str());
  }
  // Copy everything after struct_size, which the core owns.
  const size_t header = sizeof info.struct_size;
  const size_t limit = out->struct_size < sizeof info ? out->struct_size : sizeof info;
  if (limit > header)
    std::memcpy(reinterpret_cast<char*>(out) + header,
                reinterpret_cast<const char*>(&info) + header, limit - header);
  return XHAL_OK;
}

xhal_status_t device_open(void* context_arg, uint32_t index, void** out_device) {
  const auto* context = static_cast<CpuContext*>(context_arg);
  if (index >= context->options.devices) return index_out_of_range(context, index);
  auto* device = new (std::nothrow) CpuDevice;
  if (device == nullptr) return XHAL_OUT_OF_MEMORY;
  device->options = format_options(context->options);
  *out_device = device;
  return XHAL_OK;
}

// The items are the ones init parsed (the core passes the same text), so
// they parse again; the check keeps an unknown name an error at open too.
xhal_status_t device_open_with_options(void* context, uint32_t index, const char* options,
                                       void** out_device) {
  Options parsed;
  std::string error;
  if (!parse_options(options, &parsed, &error)) {
    set_error(("cpu plugin: " + error).c_str());
    return XHAL_INVALID_ARGUMENT;
  }
  return device_open(context, index, out_device);
}

// The cpu device has no queue: only "the caller's queue is none" opens it.
xhal_status_t device_open_on_queue(void* context, uint32_t index, const char* options,
                                   void* native_queue, void** out_device) {
  if (native_queue) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "cpu plugin: argument 'native_queue' is %p; the cpu device has no queue (its "
                  "calls complete before they return): pass NULL",
                  native_queue);
    set_error(text);
    return XHAL_INVALID_ARGUMENT;
  }
  return device_open_with_options(context, index, options, out_device);
}

xhal_status_t device_get_options(void* device, char* out, size_t capacity) {
  const std::string& text = static_cast<CpuDevice*>(device)->options;
  if (capacity == 0) return XHAL_OK;
  std::snprintf(out, capacity, "%s", text.c_str());
  return XHAL_OK;
}

void device_close(void* device) { delete static_cast<CpuDevice*>(device); }

// Every slot finishes its work before returning.
xhal_status_t device_synchronize(void*) { return XHAL_OK; }

xhal_status_t device_get_counters(void* device, xhal_counters_t* out) {
  const auto* d = static_cast<CpuDevice*>(device);
  out->host_to_device_transfers = d->h2d_transfers.load(std::memory_order_relaxed);
  out->host_to_device_bytes = d->h2d_bytes.load(std::memory_order_relaxed);
  out->device_to_host_transfers = d->d2h_transfers.load(std::memory_order_relaxed);
  out->device_to_host_bytes = d->d2h_bytes.load(std::memory_order_relaxed);
  out->kernel_launches = d->kernel_launches.load(std::memory_order_relaxed);
  return XHAL_OK;
}

xhal_plugin_api_t make_api() {
  xhal_plugin_api_t api{};
  api.struct_size = sizeof(xhal_plugin_api_t);
  api.abi_major = XHAL_PLUGIN_ABI_MAJOR;
  api.abi_minor = XHAL_PLUGIN_ABI_MINOR;
  api.backend_name = "cpu";
  api.plugin_version = "0.1.0";
  api.init = init;
  api.shutdown = shutdown;
  api.device_count = device_count;
  api.device_get_info = device_get_info;
  api.device_open = device_open;
  api.device_close = device_close;
  api.device_synchronize = device_synchronize;
  api.device_get_counters = device_get_counters;
  api.device_open_with_options = device_open_with_options;
  api.device_get_options = device_get_options;
  api.buffer_allocate = buffer_allocate;
  api.buffer_free = buffer_free;
  api.buffer_write = buffer_write;
  api.buffer_read = buffer_read;
  api.buffer_copy = buffer_copy;
  api.buffer_fill = buffer_fill;
  api.device_get_memory_kind = device_get_memory_kind;
  api.buffer_import = buffer_import;
  api.buffer_get_native = buffer_get_native;
  api.device_get_native_queue = device_get_native_queue;
  api.queue_signal_external = queue_signal_external;
  api.queue_wait_external = queue_wait_external;
  api.device_open_on_queue = device_open_on_queue;
  // Ops and their create/destroy slots: each op file registers its own.
  for (const OpRegistration& r : op_registry()) r.fill(api);
  return api;
}

}  // namespace

}  // namespace xhal::cpu

extern "C" XHAL_PLUGIN_EXPORT const xhal_plugin_api_t* xhal_plugin_get_api(void) {
  static const xhal_plugin_api_t api = xhal::cpu::make_api();
  return &api;
}
