// Interop slots (plugin ABI 1.3) of the GPU plugin: app device memory
// wrapped as buffers (checked with the runtime's pointer attributes), the
// device's stream as its native queue, and ordering with another stream of
// the same device through an event (record on one, wait on the other:
// neither blocks the host).
#include <new>

#include "gpu_plugin.h"

namespace xhal::gpu {
namespace {

constexpr xhal_memory_kind_t kMemoryKind =
    kBackend == GpuBackend::kRocm ? XHAL_MEMORY_ROCM : XHAL_MEMORY_CUDA;

// `to` waits for the work queued on `from` so far. The event is destroyed
// at once: the wait keeps what it recorded (CUDA and HIP semantics).
xhal_status_t order_streams(gpuStream_t from, gpuStream_t to, const char* what) {
  gpuEvent_t event = nullptr;
  gpuError_t e = gpuEventCreateWithFlags(&event, gpuEventDisableTiming);
  if (e != gpuSuccess) return runtime_error(e, what);
  e = gpuEventRecord(event, from);
  if (e == gpuSuccess) e = gpuStreamWaitEvent(to, event, 0);
  (void)gpuEventDestroy(event);
  return e == gpuSuccess ? XHAL_OK : runtime_error(e, what);
}

}  // namespace

xhal_status_t device_get_memory_kind(void* device, xhal_memory_kind_t* out_kind,
                                     int32_t* out_ordinal) {
  *out_kind = kMemoryKind;
  *out_ordinal = static_cast<Device*>(device)->ordinal;
  return XHAL_OK;
}

xhal_status_t buffer_import(void* device, xhal_memory_kind_t, int32_t, void* pointer, uint64_t size,
                            void** out_buffer) {
  Device* d = enter(device);
  if (pointer) {
    gpuPointerAttributes_t attributes{};
    const gpuError_t e = gpuPointerGetAttributes(&attributes, pointer);
    if (e != gpuSuccess) {
      (void)gpuGetLastError();  // not sticky: clear it so the next call is not blamed
      return fail(XHAL_INVALID_ARGUMENT,
                  "%s plugin: pointer %p is not memory the %s runtime knows (%s)",
                  XHAL_GPU_BACKEND_NAME, pointer, XHAL_GPU_RUNTIME_NAME, gpuGetErrorString(e));
    }
    if (!xhal_is_device_memory(attributes))
      return fail(XHAL_INVALID_ARGUMENT,
                  "%s plugin: pointer %p is host memory, not %s device memory; the cpu device "
                  "takes host memory",
                  XHAL_GPU_BACKEND_NAME, pointer, XHAL_GPU_RUNTIME_NAME);
    if (attributes.device != d->ordinal)
      return fail(XHAL_WRONG_DEVICE, "%s plugin: pointer %p is memory of %s device %d, not %d",
                  XHAL_GPU_BACKEND_NAME, pointer, XHAL_GPU_RUNTIME_NAME, attributes.device,
                  d->ordinal);
  }
  auto* b = new (std::nothrow) Buffer;
  if (!b)
    return fail(XHAL_OUT_OF_MEMORY, "%s plugin: host allocation failed", XHAL_GPU_BACKEND_NAME);
  b->ptr = pointer;
  b->size = size;
  b->owned = false;
  *out_buffer = b;
  return XHAL_OK;
}

xhal_status_t buffer_get_native(void*, void* buffer, void** out_pointer) {
  *out_pointer = static_cast<Buffer*>(buffer)->ptr;
  return XHAL_OK;
}

xhal_status_t device_get_native_queue(void* device, void** out_queue) {
  *out_queue = static_cast<void*>(static_cast<Device*>(device)->stream);
  return XHAL_OK;
}

xhal_status_t queue_signal_external(void* device, void* external_queue) {
  Device* d = enter(device);
  return order_streams(d->stream, static_cast<gpuStream_t>(external_queue),
                       "queue_signal_external");
}

xhal_status_t queue_wait_external(void* device, void* external_queue) {
  Device* d = enter(device);
  return order_streams(static_cast<gpuStream_t>(external_queue), d->stream, "queue_wait_external");
}

}  // namespace xhal::gpu
