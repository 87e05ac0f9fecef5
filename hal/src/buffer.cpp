// Buffers: validation of every handle and byte range, then the plugin slot.
#include <cinttypes>
#include <cstring>

#include "internal.h"

namespace xhal {

xhal_status_t check_buffer(const xhal_buffer* buffer, const char* arg) {
  if (!buffer) return fail(XHAL_INVALID_ARGUMENT, "argument '%s' is NULL", arg);
  if (!buffer->device || buffer->device->open_handles.load(std::memory_order_acquire) == 0) {
    return fail(XHAL_INVALID_ARGUMENT, "argument '%s': its device was released", arg);
  }
  return XHAL_OK;
}

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

}  // namespace xhal

using xhal::fail;

extern "C" {

xhal_status_t xhal_buffer_allocate(xhal_device_t device, uint64_t size,
                                   xhal_buffer_t* out_buffer) {
  xhal::clear_error();
  if (xhal_status_t s = xhal::check_device(device, "device"); s != XHAL_OK) return s;
  if (!out_buffer) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_buffer' is NULL");
  auto buffer = std::make_unique<xhal_buffer>();
  buffer->device = device;
  buffer->size = size;
  const xhal_status_t s =
      device->api->buffer_allocate(device->plugin_device, size, &buffer->plugin_buffer);
  if (s != XHAL_OK) return xhal::plugin_status(s, device->backend.c_str(), "buffer_allocate");
  device->live_objects.fetch_add(1);
  *out_buffer = buffer.release();
  return XHAL_OK;
}

xhal_status_t xhal_buffer_release(xhal_buffer_t buffer) {
  xhal::clear_error();
  if (xhal_status_t s = xhal::check_buffer(buffer, "buffer"); s != XHAL_OK) return s;
  xhal_device* device = buffer->device;
  device->api->buffer_free(device->plugin_device, buffer->plugin_buffer);
  device->live_objects.fetch_sub(1);
  delete buffer;
  return XHAL_OK;
}

xhal_status_t xhal_buffer_size(xhal_buffer_t buffer, uint64_t* out_size) {
  xhal::clear_error();
  if (xhal_status_t s = xhal::check_buffer(buffer, "buffer"); s != XHAL_OK) return s;
  if (!out_size) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_size' is NULL");
  *out_size = buffer->size;
  return XHAL_OK;
}

xhal_status_t xhal_buffer_device(xhal_buffer_t buffer, xhal_device_t* out_device) {
  xhal::clear_error();
  if (xhal_status_t s = xhal::check_buffer(buffer, "buffer"); s != XHAL_OK) return s;
  if (!out_device) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_device' is NULL");
  *out_device = buffer->device;
  return XHAL_OK;
}

xhal_status_t xhal_buffer_write(xhal_buffer_t dst, uint64_t dst_offset, const void* src,
                                uint64_t size) {
  xhal::clear_error();
  if (xhal_status_t s = xhal::check_buffer(dst, "dst"); s != XHAL_OK) return s;
  if (!src && size != 0) return fail(XHAL_INVALID_ARGUMENT, "argument 'src' is NULL");
  if (xhal_status_t s = xhal::check_byte_range(dst_offset, size, dst->size, "dst");
      s != XHAL_OK) {
    return s;
  }
  if (size == 0) return XHAL_OK;
  xhal_device* d = dst->device;
  return xhal::plugin_status(
      d->api->buffer_write(d->plugin_device, dst->plugin_buffer, dst_offset, src, size),
      d->backend.c_str(), "buffer_write");
}

xhal_status_t xhal_buffer_read(xhal_buffer_t src, uint64_t src_offset, void* dst,
                               uint64_t size) {
  xhal::clear_error();
  if (xhal_status_t s = xhal::check_buffer(src, "src"); s != XHAL_OK) return s;
  if (!dst && size != 0) return fail(XHAL_INVALID_ARGUMENT, "argument 'dst' is NULL");
  if (xhal_status_t s = xhal::check_byte_range(src_offset, size, src->size, "src");
      s != XHAL_OK) {
    return s;
  }
  if (size == 0) return XHAL_OK;
  xhal_device* d = src->device;
  return xhal::plugin_status(
      d->api->buffer_read(d->plugin_device, src->plugin_buffer, src_offset, dst, size),
      d->backend.c_str(), "buffer_read");
}

xhal_status_t xhal_buffer_copy(xhal_buffer_t src, uint64_t src_offset, xhal_buffer_t dst,
                               uint64_t dst_offset, uint64_t size) {
  xhal::clear_error();
  if (xhal_status_t s = xhal::check_buffer(src, "src"); s != XHAL_OK) return s;
  if (xhal_status_t s = xhal::check_buffer(dst, "dst"); s != XHAL_OK) return s;
  if (src->device != dst->device) {
    return fail(XHAL_WRONG_DEVICE,
                "buffer_copy: 'src' is on %s:%u but 'dst' is on %s:%u; copies stay on one "
                "device (read to the host and write instead)",
                src->device->backend.c_str(), src->device->backend_index,
                dst->device->backend.c_str(), dst->device->backend_index);
  }
  if (xhal_status_t s = xhal::check_byte_range(src_offset, size, src->size, "src");
      s != XHAL_OK) {
    return s;
  }
  if (xhal_status_t s = xhal::check_byte_range(dst_offset, size, dst->size, "dst");
      s != XHAL_OK) {
    return s;
  }
  if (src == dst && size != 0 && src_offset < dst_offset + size &&
      dst_offset < src_offset + size) {
    return fail(XHAL_ALIASING,
                "buffer_copy within one buffer: source [%" PRIu64 ", %" PRIu64
                ") overlaps destination [%" PRIu64 ", %" PRIu64 ")",
                src_offset, src_offset + size, dst_offset, dst_offset + size);
  }
  if (size == 0) return XHAL_OK;
  xhal_device* d = src->device;
  return xhal::plugin_status(d->api->buffer_copy(d->plugin_device, src->plugin_buffer,
                                                 src_offset, dst->plugin_buffer, dst_offset,
                                                 size),
                             d->backend.c_str(), "buffer_copy");
}

xhal_status_t xhal_buffer_fill(xhal_buffer_t dst, uint64_t offset, uint64_t size,
                               const void* pattern, uint32_t pattern_size) {
  xhal::clear_error();
  if (xhal_status_t s = xhal::check_buffer(dst, "dst"); s != XHAL_OK) return s;
  if (!pattern) return fail(XHAL_INVALID_ARGUMENT, "argument 'pattern' is NULL");
  if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4 && pattern_size != 8) {
    return fail(XHAL_INVALID_ARGUMENT, "argument 'pattern_size' is %u; must be 1, 2, 4 or 8",
                pattern_size);
  }
  if (offset % pattern_size != 0) {
    return fail(XHAL_INVALID_ARGUMENT,
                "argument 'offset' is %" PRIu64 "; must be a multiple of pattern_size %u",
                offset, pattern_size);
  }
  if (size % pattern_size != 0) {
    return fail(XHAL_INVALID_ARGUMENT,
                "argument 'size' is %" PRIu64 "; must be a multiple of pattern_size %u", size,
                pattern_size);
  }
  if (xhal_status_t s = xhal::check_byte_range(offset, size, dst->size, "dst"); s != XHAL_OK) {
    return s;
  }
  if (size == 0) return XHAL_OK;
  xhal_device* d = dst->device;
  return xhal::plugin_status(
      d->api->buffer_fill(d->plugin_device, dst->plugin_buffer, offset, size, pattern,
                          pattern_size),
      d->backend.c_str(), "buffer_fill");
}

}  // extern "C"
