// Interop: memory the app owns as xhal buffers, a buffer's native address,
// the device's native queue and ordering with other queues (plugin ABI
// 1.3; docs/interop.md). DLPack is in dlpack.cpp.
#include <cinttypes>
#include <cstring>
#include <memory>
#include <string>

#include "entry.h"
#include "handles.h"
#include "internal.h"
#include "interop_internal.h"
#include "validate.h"

namespace xhal {

const char* memory_kind_name(uint32_t kind) {
  switch (kind) {
    case XHAL_MEMORY_HOST:
      return "XHAL_MEMORY_HOST";
    case XHAL_MEMORY_CUDA:
      return "XHAL_MEMORY_CUDA";
    case XHAL_MEMORY_ROCM:
      return "XHAL_MEMORY_ROCM";
    default:
      return "not a memory kind";
  }
}

xhal_status_t check_interop(const Device* d, bool slot_present, const char* what) {
  if (d->memory_kind != 0 && slot_present) [[likely]]
    return XHAL_OK;
  return fail(XHAL_UNSUPPORTED,
              "%s: device %s:%u does not support it (its %s plugin, ABI 1.%u, %s)", what,
              d->backend.c_str(), d->backend_index, d->backend.c_str(), d->plugin_abi_minor,
              d->memory_kind == 0 ? "reports no memory an app may address" : "lacks the slot");
}

xhal_status_t check_memory_of(const Device* d, uint32_t kind, int64_t ordinal, const char* kind_arg,
                              const char* ordinal_arg) {
  if (kind != d->memory_kind)
    return fail(XHAL_INVALID_ARGUMENT, "argument '%s' is %u (%s); device %s:%u takes %s (%u)",
                kind_arg, kind, memory_kind_name(kind), d->backend.c_str(), d->backend_index,
                memory_kind_name(d->memory_kind), d->memory_kind);
  if (ordinal != d->memory_ordinal)
    return fail(XHAL_WRONG_DEVICE,
                "argument '%s' is %" PRId64 "; device %s:%u is %s device %d of its runtime",
                ordinal_arg, ordinal, d->backend.c_str(), d->backend_index,
                memory_kind_name(d->memory_kind), d->memory_ordinal);
  return XHAL_OK;
}

xhal_status_t import_memory(Device* d, const ImportRequest& r, Buffer** out) {
  auto buffer = std::make_unique<Buffer>();
  buffer->device = d;
  buffer->size = r.size;
  buffer->imported = true;
  buffer->read_only = r.read_only;
  buffer->base_misalign = static_cast<uint8_t>(reinterpret_cast<uintptr_t>(r.pointer) % 8);
  std::lock_guard queue(d->queue);
  XHAL_TRY(XHAL_PLUGIN_CALL(d, buffer_import, static_cast<xhal_memory_kind_t>(d->memory_kind),
                            d->memory_ordinal, r.pointer, r.size, &buffer->plugin_buffer));
  buffer->handle = handles().add(HandleKind::kBuffer, buffer.get());
  if (buffer->handle == 0) {
    call_void_slot([&] { d->api->buffer_free(d->plugin_device, buffer->plugin_buffer); });
    return fail(XHAL_OUT_OF_MEMORY, "xhal_buffer_import: too many live handles");
  }
  buffer->release = r.release;
  buffer->release_user_data = r.release_user_data;
  d->live_objects.fetch_add(1);
  *out = buffer.release();
  return XHAL_OK;
}

}  // namespace xhal

using namespace xhal;

namespace {

// Runs the app's release callback unless the import succeeded, also when
// an exception leaves the entry point.
class ReleaseOnFailure {
 public:
  ReleaseOnFailure(xhal_release_fn fn, void* user_data) : fn_(fn), user_data_(user_data) {}
  ~ReleaseOnFailure() {
    if (!fn_) return;
    // The callback may call xhal (release what it held): the failure's
    // message must survive it.
    std::string& message = thread_state().last_error;
    std::string saved = std::move(message);
    try {
      fn_(user_data_);
    } catch (...) {  // a C++ callback that throws must not end the process here
    }
    message = std::move(saved);
  }
  ReleaseOnFailure(const ReleaseOnFailure&) = delete;
  ReleaseOnFailure& operator=(const ReleaseOnFailure&) = delete;
  void dismiss() { fn_ = nullptr; }

 private:
  xhal_release_fn fn_;
  void* user_data_;
};

xhal_status_t get_slot_device(xhal_device_t device, bool (*present)(const xhal_plugin_api_t&),
                              const char* what, Device** out) {
  XHAL_TRY(get_device(device, "device", out));
  if (present(*(*out)->api)) [[likely]]
    return XHAL_OK;
  const Device* d = *out;
  return fail(XHAL_UNSUPPORTED, "%s: device %s:%u does not support it (its %s plugin, ABI 1.%u)",
              what, d->backend.c_str(), d->backend_index, d->backend.c_str(), d->plugin_abi_minor);
}

}  // namespace

extern "C" {

xhal_status_t xhal_buffer_import(xhal_device_t device, const xhal_external_memory_t* memory,
                                 xhal_buffer_t* out_buffer) {
  return entry("xhal_buffer_import", [&]() -> xhal_status_t {
    if (!memory) return fail(XHAL_INVALID_ARGUMENT, "argument 'memory' is NULL");
    const size_t size = memory->struct_size;
    if (size < sizeof(size_t))
      return fail(XHAL_INVALID_ARGUMENT,
                  "memory->struct_size is %zu; set it to sizeof(xhal_external_memory_t)", size);
    // The fields the caller's struct holds; the others stay zero.
    xhal_external_memory_t m{};
    using M = xhal_external_memory_t;
#define XHAL_COPY_IN_(field) copy_in(memory, size, offsetof(M, field), sizeof m.field, &m)
    XHAL_COPY_IN_(kind);
    XHAL_COPY_IN_(device_ordinal);
    XHAL_COPY_IN_(pointer);
    XHAL_COPY_IN_(size);
    XHAL_COPY_IN_(release);
    XHAL_COPY_IN_(release_user_data);
    XHAL_COPY_IN_(flags);
#undef XHAL_COPY_IN_
    ReleaseOnFailure guard(m.release, m.release_user_data);
    Device* d = nullptr;
    XHAL_TRY(get_device(device, "device", &d));
    if (!out_buffer) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_buffer' is NULL");
    const uint32_t kind = raw_enum(m.kind);
    if (kind != XHAL_MEMORY_HOST && kind != XHAL_MEMORY_CUDA && kind != XHAL_MEMORY_ROCM)
      return fail(XHAL_INVALID_ARGUMENT,
                  "argument 'memory->kind' is %u; must be XHAL_MEMORY_HOST (1), "
                  "XHAL_MEMORY_CUDA (2) or XHAL_MEMORY_ROCM (10)",
                  kind);
    if (m.flags & ~XHAL_EXTERNAL_MEMORY_READ_ONLY)
      return fail(XHAL_INVALID_ARGUMENT,
                  "argument 'memory->flags' is 0x%" PRIx64
                  "; only XHAL_EXTERNAL_MEMORY_READ_ONLY (0x1) is defined",
                  m.flags);
    if (!m.pointer && m.size != 0)
      return fail(XHAL_INVALID_ARGUMENT,
                  "argument 'memory->pointer' is NULL but memory->size is %" PRIu64, m.size);
    XHAL_TRY(check_interop(d, d->api->buffer_import != nullptr, "xhal_buffer_import"));
    XHAL_TRY(check_memory_of(d, kind, m.device_ordinal, "memory->kind", "memory->device_ordinal"));
    ImportRequest r;
    r.pointer = m.pointer;
    r.size = m.size;
    r.read_only = (m.flags & XHAL_EXTERNAL_MEMORY_READ_ONLY) != 0;
    r.release = m.release;
    r.release_user_data = m.release_user_data;
    Buffer* b = nullptr;
    XHAL_TRY(import_memory(d, r, &b));
    guard.dismiss();
    *out_buffer = to_handle<xhal_buffer_t>(b->handle);
    return XHAL_OK;
  });
}

xhal_status_t xhal_buffer_get_native(xhal_buffer_t buffer, xhal_native_memory_t* out_memory) {
  return entry("xhal_buffer_get_native", [&]() -> xhal_status_t {
    Buffer* b = nullptr;
    XHAL_TRY(get_buffer(buffer, "buffer", &b));
    if (!out_memory) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_memory' is NULL");
    const size_t size = out_memory->struct_size;
    if (size < sizeof(size_t))
      return fail(XHAL_INVALID_ARGUMENT,
                  "out_memory->struct_size is %zu; set it to sizeof(xhal_native_memory_t)", size);
    Device* d = b->device;
    XHAL_TRY(check_interop(d, d->api->buffer_get_native != nullptr, "xhal_buffer_get_native"));
    void* pointer = nullptr;
    {
      std::lock_guard queue(d->queue);
      XHAL_TRY(XHAL_PLUGIN_CALL(d, buffer_get_native, b->plugin_buffer, &pointer));
    }
    xhal_native_memory_t n{};
    n.kind = static_cast<xhal_memory_kind_t>(d->memory_kind);
    n.device_ordinal = d->memory_ordinal;
    n.pointer = pointer;
    n.size = b->size;
    using N = xhal_native_memory_t;
    // Out: the fields inside the caller's struct_size; struct_size stays.
#define XHAL_COPY_OUT_(field)                      \
  if (offsetof(N, field) + sizeof n.field <= size) \
  std::memcpy(reinterpret_cast<char*>(out_memory) + offsetof(N, field), &n.field, sizeof n.field)
    XHAL_COPY_OUT_(kind);
    XHAL_COPY_OUT_(device_ordinal);
    XHAL_COPY_OUT_(pointer);
    XHAL_COPY_OUT_(size);
#undef XHAL_COPY_OUT_
    return XHAL_OK;
  });
}

xhal_status_t xhal_device_get_native_queue(xhal_device_t device, void** out_queue) {
  return entry("xhal_device_get_native_queue", [&]() -> xhal_status_t {
    Device* d = nullptr;
    XHAL_TRY(get_slot_device(
        device, [](const xhal_plugin_api_t& a) { return a.device_get_native_queue != nullptr; },
        "xhal_device_get_native_queue", &d));
    if (!out_queue) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_queue' is NULL");
    void* queue_handle = nullptr;
    std::lock_guard queue(d->queue);
    XHAL_TRY(XHAL_PLUGIN_CALL(d, device_get_native_queue, &queue_handle));
    *out_queue = queue_handle;
    return XHAL_OK;
  });
}

xhal_status_t xhal_device_signal_external_queue(xhal_device_t device, void* external_queue) {
  return entry("xhal_device_signal_external_queue", [&]() -> xhal_status_t {
    Device* d = nullptr;
    XHAL_TRY(get_slot_device(
        device, [](const xhal_plugin_api_t& a) { return a.queue_signal_external != nullptr; },
        "xhal_device_signal_external_queue", &d));
    std::lock_guard queue(d->queue);
    return XHAL_PLUGIN_CALL(d, queue_signal_external, external_queue);
  });
}

xhal_status_t xhal_device_wait_external_queue(xhal_device_t device, void* external_queue) {
  return entry("xhal_device_wait_external_queue", [&]() -> xhal_status_t {
    Device* d = nullptr;
    XHAL_TRY(get_slot_device(
        device, [](const xhal_plugin_api_t& a) { return a.queue_wait_external != nullptr; },
        "xhal_device_wait_external_queue", &d));
    std::lock_guard queue(d->queue);
    return XHAL_PLUGIN_CALL(d, queue_wait_external, external_queue);
  });
}

}  // extern "C"
