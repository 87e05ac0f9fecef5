// What the interop entry points (interop.cpp) and DLPack (dlpack.cpp) share:
// the device's memory kind, and wrapping app memory as a core Buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "internal.h"

namespace xhal {

// "XHAL_MEMORY_CUDA", or "not a memory kind".
const char* memory_kind_name(uint32_t kind);

// The device has native memory (plugin ABI 1.3's device_get_memory_kind said
// where) and the slot `what` needs; else XHAL_UNSUPPORTED naming both.
xhal_status_t check_interop(const Device* d, bool slot_present, const char* what);

// `kind` and `ordinal` (named kind_arg, ordinal_arg in messages) are the
// device's: another kind is XHAL_INVALID_ARGUMENT, another ordinal of the
// right kind XHAL_WRONG_DEVICE.
xhal_status_t check_memory_of(const Device* d, uint32_t kind, int64_t ordinal, const char* kind_arg,
                              const char* ordinal_arg);

struct ImportRequest {
  void* pointer = nullptr;
  uint64_t size = 0;
  bool read_only = false;
  xhal_release_fn release = nullptr;
  void* release_user_data = nullptr;
};

// Wraps checked memory of the device's kind and ordinal as a new buffer (its
// handle in *out). The release callback is attached only on success: on
// failure the caller still owns it and must run it.
xhal_status_t import_memory(Device* d, const ImportRequest& r, Buffer** out);

// Copies the `size` bytes at `offset` of a caller's struct that ends at
// `struct_size` (a field it cuts is left as it was: zero in a zeroed copy).
inline void copy_in(const void* from, size_t struct_size, size_t offset, size_t size, void* to) {
  if (offset + size <= struct_size)
    std::memcpy(static_cast<char*>(to) + offset, static_cast<const char*>(from) + offset, size);
}

}  // namespace xhal
