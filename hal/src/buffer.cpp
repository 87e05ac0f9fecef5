// Buffers: validation of every handle and byte range, then the plugin slot.
#include <cinttypes>
#include <cstring>
#include <string>

#include "entry.h"
#include "handles.h"
#include "internal.h"

namespace xhal {

xhal_status_t check_byte_range(uint64_t offset, uint64_t size, uint64_t buffer_size,
                               const char* arg) {
  // offset + size may wrap; compare without adding.
  if (offset > buffer_size || size > buffer_size - offset) {
    return fail(XHAL_OUT_OF_RANGE,
                "%s: range offset %" PRIu64 " + size %" PRIu64
                " does not fit in the buffer of %" PRIu64 " bytes",
                arg, offset, size, buffer_size);
  }
  return XHAL_OK;
}

xhal_status_t check_writable(const Buffer& b, const char* arg, const char* what) {
  if (!b.read_only) [[likely]]
    return XHAL_OK;
  return fail(XHAL_INVALID_ARGUMENT,
              "argument '%s': the buffer is read-only (imported read-only); %s would write it", arg,
              what);
}

void release_buffer_ref(Buffer* b) noexcept {
  if (b->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  Device* d = b->device;
  {
    std::lock_guard queue(d->queue);
    if (b->imported) {
      // The app gets its memory back only once no queued work uses it. A
      // failure here does not stop the release, and is not the caller's:
      // the thread's message is left as it was.
      ThreadState& t = thread_state();
      std::string saved = std::move(t.last_error);
      (void)XHAL_PLUGIN_CALL(d, device_synchronize);
      t.last_error = std::move(saved);
      t.plugin_message.clear();
    }
    call_void_slot([&] { d->api->buffer_free(d->plugin_device, b->plugin_buffer); });
  }
  if (b->release) {
    try {
      b->release(b->release_user_data);
    } catch (...) {  // a C++ callback that throws must not unwind into the app's caller
    }
  }
  delete b;
  // Last: once the count is 0 the device may be closed by another thread.
  d->live_objects.fetch_sub(1);
}

}  // namespace xhal

using namespace xhal;

extern "C" {

xhal_status_t xhal_buffer_allocate(xhal_device_t device, uint64_t size, xhal_buffer_t* out_buffer) {
  return entry("xhal_buffer_allocate", [&] {
    Device* d = nullptr;
    XHAL_TRY(get_device(device, "device", &d));
    if (!out_buffer) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_buffer' is NULL");
    auto buffer = std::make_unique<Buffer>();
    buffer->device = d;
    buffer->size = size;
    std::lock_guard queue(d->queue);
    XHAL_TRY(XHAL_PLUGIN_CALL(d, buffer_allocate, size, &buffer->plugin_buffer));
    buffer->handle = handles().add(HandleKind::kBuffer, buffer.get());
    if (buffer->handle == 0) {
      call_void_slot([&] { d->api->buffer_free(d->plugin_device, buffer->plugin_buffer); });
      return fail(XHAL_OUT_OF_MEMORY, "xhal_buffer_allocate: too many live handles");
    }
    d->live_objects.fetch_add(1);
    *out_buffer = to_handle<xhal_buffer_t>(buffer.release()->handle);
    return XHAL_OK;
  });
}

xhal_status_t xhal_buffer_release(xhal_buffer_t buffer) {
  return entry("xhal_buffer_release", [&] {
    // Retired first: of two releases of one handle exactly one gets the
    // object, and the other reports a stale handle.
    auto* b = static_cast<Buffer*>(handles().remove(HandleKind::kBuffer, handle_bits(buffer)));
    if (!b) return get_buffer(buffer, "buffer", &b);
    release_buffer_ref(b);  // a live DLPack export keeps the memory until its deleter runs
    return XHAL_OK;
  });
}

xhal_status_t xhal_buffer_size(xhal_buffer_t buffer, uint64_t* out_size) {
  return entry("xhal_buffer_size", [&] {
    Buffer* b = nullptr;
    XHAL_TRY(get_buffer(buffer, "buffer", &b));
    if (!out_size) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_size' is NULL");
    *out_size = b->size;
    return XHAL_OK;
  });
}

xhal_status_t xhal_buffer_device(xhal_buffer_t buffer, xhal_device_t* out_device) {
  return entry("xhal_buffer_device", [&] {
    Buffer* b = nullptr;
    XHAL_TRY(get_buffer(buffer, "buffer", &b));
    if (!out_device) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_device' is NULL");
    *out_device = to_handle<xhal_device_t>(b->device->handle);
    return XHAL_OK;
  });
}

xhal_status_t xhal_buffer_write(xhal_buffer_t dst, uint64_t dst_offset, const void* src,
                                uint64_t size) {
  return entry("xhal_buffer_write", [&] {
    Buffer* b = nullptr;
    XHAL_TRY(get_buffer(dst, "dst", &b));
    if (!src && size != 0) return fail(XHAL_INVALID_ARGUMENT, "argument 'src' is NULL");
    XHAL_TRY(check_byte_range(dst_offset, size, b->size, "dst"));
    XHAL_TRY(check_writable(*b, "dst", "xhal_buffer_write"));
    if (size == 0) return XHAL_OK;
    Device* d = b->device;
    std::lock_guard queue(d->queue);
    return XHAL_PLUGIN_CALL(d, buffer_write, b->plugin_buffer, dst_offset, src, size);
  });
}

xhal_status_t xhal_buffer_read(xhal_buffer_t src, uint64_t src_offset, void* dst, uint64_t size) {
  return entry("xhal_buffer_read", [&] {
    Buffer* b = nullptr;
    XHAL_TRY(get_buffer(src, "src", &b));
    if (!dst && size != 0) return fail(XHAL_INVALID_ARGUMENT, "argument 'dst' is NULL");
    XHAL_TRY(check_byte_range(src_offset, size, b->size, "src"));
    if (size == 0) return XHAL_OK;
    Device* d = b->device;
    std::lock_guard queue(d->queue);
    return XHAL_PLUGIN_CALL(d, buffer_read, b->plugin_buffer, src_offset, dst, size);
  });
}

xhal_status_t xhal_buffer_copy(xhal_buffer_t src, uint64_t src_offset, xhal_buffer_t dst,
                               uint64_t dst_offset, uint64_t size) {
  return entry("xhal_buffer_copy", [&] {
    Buffer *s = nullptr, *t = nullptr;
    XHAL_TRY(get_buffer(src, "src", &s));
    XHAL_TRY(get_buffer(dst, "dst", &t));
    if (s->device != t->device) {
      return fail(XHAL_WRONG_DEVICE,
                  "buffer_copy: 'src' is on %s:%u but 'dst' is on %s:%u; copies stay on one "
                  "device (read to the host and write instead)",
                  s->device->backend.c_str(), s->device->backend_index, t->device->backend.c_str(),
                  t->device->backend_index);
    }
    XHAL_TRY(check_byte_range(src_offset, size, s->size, "src"));
    XHAL_TRY(check_byte_range(dst_offset, size, t->size, "dst"));
    XHAL_TRY(check_writable(*t, "dst", "xhal_buffer_copy"));
    if (s == t && size != 0 && src_offset < dst_offset + size && dst_offset < src_offset + size) {
      return fail(XHAL_ALIASING,
                  "buffer_copy within one buffer: source [%" PRIu64 ", %" PRIu64
                  ") overlaps destination [%" PRIu64 ", %" PRIu64 ")",
                  src_offset, src_offset + size, dst_offset, dst_offset + size);
    }
    if (size == 0) return XHAL_OK;
    Device* d = s->device;
    std::lock_guard queue(d->queue);
    return XHAL_PLUGIN_CALL(d, buffer_copy, s->plugin_buffer, src_offset, t->plugin_buffer,
                            dst_offset, size);
  });
}

xhal_status_t xhal_buffer_fill(xhal_buffer_t dst, uint64_t offset, uint64_t size,
                               const void* pattern, uint32_t pattern_size) {
  return entry("xhal_buffer_fill", [&] {
    Buffer* b = nullptr;
    XHAL_TRY(get_buffer(dst, "dst", &b));
    if (!pattern) return fail(XHAL_INVALID_ARGUMENT, "argument 'pattern' is NULL");
    if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4 && pattern_size != 8) {
      return fail(XHAL_INVALID_ARGUMENT, "argument 'pattern_size' is %u; must be 1, 2, 4 or 8",
                  pattern_size);
    }
    if (offset % pattern_size != 0) {
      return fail(XHAL_INVALID_ARGUMENT,
                  "argument 'offset' is %" PRIu64 "; must be a multiple of pattern_size %u", offset,
                  pattern_size);
    }
    if (size % pattern_size != 0) {
      return fail(XHAL_INVALID_ARGUMENT,
                  "argument 'size' is %" PRIu64 "; must be a multiple of pattern_size %u", size,
                  pattern_size);
    }
    XHAL_TRY(check_byte_range(offset, size, b->size, "dst"));
    XHAL_TRY(check_writable(*b, "dst", "xhal_buffer_fill"));
    if (size == 0) return XHAL_OK;
    Device* d = b->device;
    std::lock_guard queue(d->queue);
    return XHAL_PLUGIN_CALL(d, buffer_fill, b->plugin_buffer, offset, size, pattern, pattern_size);
  });
}

}  // extern "C"
