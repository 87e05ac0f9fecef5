// Interop slots (plugin ABI 1.3): the CPU device's buffers are host memory,
// so app memory is wrapped as it is; every slot completes before it
// returns, so there is no native queue and nothing to order with one.
#include <new>

#include "dense_ops.h"

namespace xhal::cpu {

xhal_status_t device_get_memory_kind(void*, xhal_memory_kind_t* out_kind, int32_t* out_ordinal) {
  *out_kind = XHAL_MEMORY_HOST;
  *out_ordinal = 0;
  return XHAL_OK;
}

xhal_status_t buffer_import(void*, xhal_memory_kind_t, int32_t, void* pointer, uint64_t size,
                            void** out_buffer) {
  auto* b = new (std::nothrow) CpuBuffer{static_cast<std::byte*>(pointer), size, false};
  if (b == nullptr) {
    set_error("cpu plugin: host allocation failed");
    return XHAL_OUT_OF_MEMORY;
  }
  *out_buffer = b;
  return XHAL_OK;
}

xhal_status_t buffer_get_native(void*, void* buffer, void** out_pointer) {
  *out_pointer = static_cast<CpuBuffer*>(buffer)->data;
  return XHAL_OK;
}

xhal_status_t device_get_native_queue(void*, void** out_queue) {
  *out_queue = nullptr;
  return XHAL_OK;
}

// The device's work is complete when its slots return, and an external
// queue of host code is the calling thread: nothing to wait for either way.
xhal_status_t queue_signal_external(void*, void*) { return XHAL_OK; }
xhal_status_t queue_wait_external(void*, void*) { return XHAL_OK; }

}  // namespace xhal::cpu
