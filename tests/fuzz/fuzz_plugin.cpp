// libxhal-fuzz.so: the plugin whose table the plugin-table harness writes.
// Each time the runtime loads it, the entry function reads the harness's
// current PluginScript (fuzz_plugin_script.h) and builds a table from it:
// header fields, which slots are NULL, and which slots misbehave (odd
// statuses, throws, absurd counts, garbage kinds, unterminated strings, OK
// with a NULL handle). Every other slot is a small, correct host-memory
// backend, so a buffer round trip can be checked.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "fuzz_plugin_script.h"
#include "xhal/xhal.h"
#include "xhal/xhal_plugin.h"

using xhal_fuzz::PluginScript;

extern "C" xhal_status_t xhal_fuzz_raw_status(uint32_t bits);  // fuzz_plugin_status.c

namespace {

const PluginScript* g_script = nullptr;
const xhal_plugin_host_t* g_host = nullptr;

bool odd(int slot) { return g_script && ((g_script->odd_slots >> slot) & 1); }

// The misbehaviour of a slot: throw, or return the script's status.
xhal_status_t misbehave(int slot) {
  if (g_script->odd_throw) throw std::runtime_error("fuzz plugin: slot threw");
  if (g_host && g_host->set_error) g_host->set_error("fuzz plugin: odd status");
  (void)slot;
  return xhal_fuzz_raw_status(g_script->odd_status);
}

struct Device {
  xhal_counters_t counters{};
};
struct Context {
  int magic = 0x5eed;
};

// ---- lifecycle -------------------------------------------------------------
xhal_status_t init(const xhal_plugin_host_t* host, void** out_context, char* out_note,
                   size_t note_capacity) {
  g_host = host;
  if (g_script->init_reenter) {
    // A plugin calling the app API from init (defect 6: a deadlock once).
    using count_fn = xhal_status_t (*)(uint32_t*);
    auto fn = reinterpret_cast<count_fn>(dlsym(RTLD_DEFAULT, "xhal_device_count"));
    uint32_t n = 0;
    if (fn) (void)fn(&n);
  }
  if (odd(xhal_fuzz::kInit)) return misbehave(xhal_fuzz::kInit);
  if (g_script->note_kind == 1 && note_capacity)
    std::snprintf(out_note, note_capacity, "fuzz note");
  if (g_script->note_kind == 2 && note_capacity) std::memset(out_note, 'n', note_capacity);
  *out_context = new Context;
  return XHAL_OK;
}

void shutdown(void* context) { delete static_cast<Context*>(context); }

// ---- devices ---------------------------------------------------------------
xhal_status_t device_count(void*, uint32_t* out_count) {
  if (odd(xhal_fuzz::kDeviceCount)) return misbehave(xhal_fuzz::kDeviceCount);
  *out_count = g_script->device_count;
  return XHAL_OK;
}

xhal_status_t device_get_info(void*, uint32_t index, xhal_plugin_device_info_t* info) {
  if (odd(xhal_fuzz::kDeviceGetInfo)) return misbehave(xhal_fuzz::kDeviceGetInfo);
  if (g_script->unterminated_name) {
    std::memset(info->name, 'N', sizeof info->name);
    std::memset(info->stable_id, 'S', sizeof info->stable_id);
  } else {
    std::snprintf(info->name, sizeof info->name, "fuzz device %u", index);
    std::snprintf(info->stable_id, sizeof info->stable_id, "fuzz-%u", index);
  }
  std::memcpy(&info->kind, &g_script->kind, sizeof info->kind);
  info->memory_bytes = g_script->memory_bytes;
  for (uint32_t& m : info->op_dtypes) m = g_script->op_dtypes;
  return XHAL_OK;
}

xhal_status_t device_open(void*, uint32_t, void** out_device) {
  if (odd(xhal_fuzz::kDeviceOpen)) return misbehave(xhal_fuzz::kDeviceOpen);
  *out_device = g_script->open_gives_null ? nullptr : new Device;
  return XHAL_OK;
}
void device_close(void* device) { delete static_cast<Device*>(device); }
xhal_status_t device_synchronize(void*) {
  if (odd(xhal_fuzz::kDeviceSynchronize)) return misbehave(xhal_fuzz::kDeviceSynchronize);
  return XHAL_OK;
}
xhal_status_t device_get_counters(void* device, xhal_counters_t* out) {
  if (odd(xhal_fuzz::kDeviceGetCounters)) return misbehave(xhal_fuzz::kDeviceGetCounters);
  if (!device) return XHAL_PLUGIN_ERROR;  // after open_gives_null: stay alive
  *out = static_cast<Device*>(device)->counters;
  return XHAL_OK;
}

// ---- buffers: host memory ------------------------------------------------
xhal_status_t buffer_allocate(void*, uint64_t size, void** out_buffer) {
  if (odd(xhal_fuzz::kBufferAllocate)) return misbehave(xhal_fuzz::kBufferAllocate);
  if (g_script->open_gives_null) {
    *out_buffer = nullptr;
    return XHAL_OK;
  }
  void* p = std::malloc(size ? size : 1);
  if (!p) return XHAL_OUT_OF_MEMORY;
  *out_buffer = p;
  return XHAL_OK;
}
void buffer_free(void*, void* buffer) { std::free(buffer); }
xhal_status_t buffer_write(void* device, void* dst, uint64_t offset, const void* src,
                           uint64_t size) {
  if (odd(xhal_fuzz::kBufferWrite)) return misbehave(xhal_fuzz::kBufferWrite);
  if (!device || !dst) return XHAL_PLUGIN_ERROR;  // after open_gives_null
  std::memcpy(static_cast<char*>(dst) + offset, src, size);
  auto& c = static_cast<Device*>(device)->counters;
  ++c.host_to_device_transfers;
  c.host_to_device_bytes += size;
  return XHAL_OK;
}
xhal_status_t buffer_read(void* device, void* src, uint64_t offset, void* dst, uint64_t size) {
  if (odd(xhal_fuzz::kBufferRead)) return misbehave(xhal_fuzz::kBufferRead);
  if (!device || !src) return XHAL_PLUGIN_ERROR;
  std::memcpy(dst, static_cast<const char*>(src) + offset, size);
  auto& c = static_cast<Device*>(device)->counters;
  ++c.device_to_host_transfers;
  c.device_to_host_bytes += size;
  return XHAL_OK;
}
xhal_status_t buffer_copy(void*, void* src, uint64_t src_offset, void* dst, uint64_t dst_offset,
                          uint64_t size) {
  if (odd(xhal_fuzz::kBufferCopy)) return misbehave(xhal_fuzz::kBufferCopy);
  if (!src || !dst) return XHAL_PLUGIN_ERROR;
  std::memmove(static_cast<char*>(dst) + dst_offset, static_cast<const char*>(src) + src_offset,
               size);
  return XHAL_OK;
}
xhal_status_t buffer_fill(void*, void* dst, uint64_t offset, uint64_t size, const void* pattern,
                          uint32_t pattern_size) {
  if (odd(xhal_fuzz::kBufferFill)) return misbehave(xhal_fuzz::kBufferFill);
  if (!dst) return XHAL_PLUGIN_ERROR;
  char* p = static_cast<char*>(dst) + offset;
  for (uint64_t i = 0; i < size; i += pattern_size) std::memcpy(p + i, pattern, pattern_size);
  return XHAL_OK;
}

// ---- optional slots: present or not; never called by the harness's calls,
// but the pairs' create/destroy keep their promise if they are.
xhal_status_t index_plan_create(void*, const xhal_plugin_index_plan_desc_t*, void** out) {
  *out = new int(1);
  return XHAL_OK;
}
void index_plan_destroy(void*, void* plan) { delete static_cast<int*>(plan); }
xhal_status_t csr_create(void*, const xhal_plugin_csr_desc_t*, void** out) {
  *out = new int(2);
  return XHAL_OK;
}
void csr_destroy(void*, void* m) { delete static_cast<int*>(m); }
xhal_status_t unsupported_op() { return XHAL_UNSUPPORTED; }

// The table is built into storage larger than the struct, so a struct_size
// past sizeof(xhal_plugin_api_t) still points at readable bytes.
alignas(xhal_plugin_api_t) unsigned char g_table[sizeof(xhal_plugin_api_t) + 256];
char g_backend_name[sizeof(PluginScript::backend_name) + 1];
char g_version[sizeof(PluginScript::version) + 1];

}  // namespace

extern "C" XHAL_PLUGIN_EXPORT const xhal_plugin_api_t* xhal_plugin_get_api(void) {
  auto* const* slot =
      static_cast<const PluginScript* const*>(dlsym(RTLD_DEFAULT, xhal_fuzz::kScriptSymbol));
  g_script = slot ? *slot : nullptr;
  if (!g_script || g_script->entry == 1) return nullptr;
  if (g_script->entry == 2) throw std::runtime_error("fuzz plugin: entry threw");

  xhal_plugin_api_t api{};
  api.struct_size = static_cast<size_t>(g_script->struct_size);
  api.abi_major = g_script->abi_major;
  api.abi_minor = g_script->abi_minor;
  std::memcpy(g_backend_name, g_script->backend_name, sizeof g_script->backend_name);
  std::memcpy(g_version, g_script->version, sizeof g_script->version);
  api.backend_name = g_script->backend_name_kind == 0   ? "fuzz"
                     : g_script->backend_name_kind == 1 ? nullptr
                                                        : g_backend_name;
  api.plugin_version = g_script->version_kind == 0   ? "0.0-fuzz"
                       : g_script->version_kind == 1 ? nullptr
                                                     : g_version;
  api.init = init;
  api.shutdown = shutdown;
  api.device_count = device_count;
  api.device_get_info = device_get_info;
  api.device_open = device_open;
  api.device_close = device_close;
  api.device_synchronize = device_synchronize;
  api.device_get_counters = device_get_counters;
  api.buffer_allocate = buffer_allocate;
  api.buffer_free = buffer_free;
  api.buffer_write = buffer_write;
  api.buffer_read = buffer_read;
  api.buffer_copy = buffer_copy;
  api.buffer_fill = buffer_fill;
  api.index_plan_create = index_plan_create;
  api.index_plan_destroy = index_plan_destroy;
  api.csr_create = csr_create;
  api.csr_destroy = csr_destroy;
  // Op slots: present (answering XHAL_UNSUPPORTED if ever called) unless
  // the script drops them. The signatures differ, so they are stored as
  // the right type through a cast of a function of no arguments; the
  // harness never calls an op, and the core only tests them for NULL.
  std::memcpy(g_table, &api, sizeof api);
  for (int i = 0; i < xhal_fuzz::kSlotCount; ++i) {
    const size_t at = xhal_fuzz::kTableHeader + i * sizeof(void*);
    void* fn = nullptr;
    std::memcpy(&fn, g_table + at, sizeof fn);
    // The 1.0 op slots are present (the core only tests them for NULL
    // here); slots added by later minors stay absent.
    if (!fn && i < xhal_fuzz::kSlotsOf10) fn = reinterpret_cast<void*>(&unsupported_op);
    if (i < 64 && ((g_script->null_slots >> i) & 1)) fn = nullptr;
    std::memcpy(g_table + at, &fn, sizeof fn);
  }
  return reinterpret_cast<const xhal_plugin_api_t*>(g_table);
}
