/* Interop: memory, queues and tensors shared with other libraries (ML
 * frameworks, array libraries) without copies. docs/interop.md explains
 * ownership, ordering and DLPack with examples. */
#ifndef XHAL_INTEROP_H_
#define XHAL_INTEROP_H_

#include "xhal/dlpack.h"
#include "xhal/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where memory lives. The values are DLPack's device types. */
typedef enum xhal_memory_kind {
  XHAL_MEMORY_HOST = 1,  /* host memory (kDLCPU): the cpu device */
  XHAL_MEMORY_CUDA = 2,  /* CUDA device memory (kDLCUDA) */
  XHAL_MEMORY_ROCM = 10, /* HIP device memory (kDLROCM) */
} xhal_memory_kind_t;

/* Called exactly once when xhal is done with memory it did not allocate. */
typedef void (*xhal_release_fn)(void* user_data);

/* Memory the caller owns, to be used as an xhal buffer without a copy.
 * Grows at the end; struct_size = sizeof(xhal_external_memory_t). */
typedef struct xhal_external_memory {
  size_t struct_size;
  xhal_memory_kind_t kind;
  int32_t device_ordinal; /* CUDA/HIP device number; 0 for host memory */
  void* pointer;          /* must not be NULL unless size is 0 */
  uint64_t size;          /* bytes */
  /* May be NULL. Runs exactly once: when the buffer has been released and
   * no DLPack export of it is alive, after the device's queued work on it
   * is complete; or before xhal_buffer_import returns, if it fails. */
  xhal_release_fn release;
  void* release_user_data;
} xhal_external_memory_t;

/* Wraps `memory` as a buffer of `device`: no copy, no allocation of device
 * memory. The buffer is validated like any other (bounds, aliasing, device)
 * and released with xhal_buffer_release. The memory kind must be the
 * device's (host memory for the cpu device, CUDA memory of the same device
 * for a cuda device): else XHAL_INVALID_ARGUMENT naming the kind. A backend
 * that cannot wrap external memory returns XHAL_UNSUPPORTED. */
XHAL_API xhal_status_t xhal_buffer_import(xhal_device_t device,
                                          const xhal_external_memory_t* memory,
                                          xhal_buffer_t* out_buffer);

/* Where a buffer's bytes live: a host pointer (cpu) or a device pointer
 * (cuda, rocm), valid while the buffer is. Writes through it are ordered
 * with xhal's work only as docs/interop.md describes. Grows at the end. */
typedef struct xhal_native_memory {
  size_t struct_size;
  xhal_memory_kind_t kind;
  int32_t device_ordinal;
  void* pointer;
  uint64_t size;
} xhal_native_memory_t;

/* Fields that lie entirely inside out_memory->struct_size are written.
 * XHAL_UNSUPPORTED for a backend whose buffers have no address (vulkan). */
XHAL_API xhal_status_t xhal_buffer_get_native(xhal_buffer_t buffer,
                                              xhal_native_memory_t* out_memory);

/* The device's queue as its runtime knows it: the cudaStream_t or
 * hipStream_t xhal queues its work on. NULL for the cpu device, whose calls
 * have completed when they return. */
XHAL_API xhal_status_t xhal_device_get_native_queue(xhal_device_t device,
                                                    void** out_queue);

/* Makes `external_queue` (a stream of the same device; NULL: the legacy
 * default stream) wait for the work queued on `device` so far, without
 * blocking the host. A no-op on the cpu device. */
XHAL_API xhal_status_t xhal_device_signal_external_queue(xhal_device_t device,
                                                         void* external_queue);

/* Makes `device`'s queue wait for the work queued on `external_queue` so
 * far, without blocking the host. A no-op on the cpu device. */
XHAL_API xhal_status_t xhal_device_wait_external_queue(xhal_device_t device,
                                                       void* external_queue);

/* ---- DLPack ------------------------------------------------------------
 * Export: a DLPack view of `tensor` (no copy). The export keeps the
 * tensor's buffer alive: releasing the buffer handle is allowed, the memory
 * goes when the consumer calls the deleter (exactly once, from any thread).
 * The device cannot be released while an export is alive (XHAL_BUSY).
 * `flags` may hold XHAL_DLPACK_FLAG_READ_ONLY. Work queued on the device
 * before the export is not waited for: order it with
 * xhal_device_signal_external_queue (the Python array API's handshake). */
XHAL_API xhal_status_t xhal_tensor_export_dlpack(
    const xhal_tensor_t* tensor, uint64_t flags,
    xhal_dlpack_managed_tensor_versioned_t** out_managed);
/* The same for a consumer that knows only DLPack 0.x (DLManagedTensor). */
XHAL_API xhal_status_t xhal_tensor_export_dlpack_unversioned(
    const xhal_tensor_t* tensor, xhal_dlpack_managed_tensor_t** out_managed);

/* Import: `managed` becomes a tensor on a new buffer of `device` (no copy);
 * xhal owns it from this call on and calls its deleter exactly once: when
 * out_tensor->buffer is released (and no export of it is alive), or before
 * returning if the import fails. Refused with a status: a major version
 * other than 1, a device type or id that is not `device`'s, a dtype xhal
 * has no name for, negative or overlapping strides, data not aligned to
 * the element size. Strides that are not row-major give a strided tensor
 * (only ops that accept strides take it; xhal_permute copies it). A
 * read-only tensor gives a read-only buffer: an op or write that would
 * change it fails with XHAL_INVALID_ARGUMENT. */
XHAL_API xhal_status_t xhal_tensor_import_dlpack(
    xhal_device_t device, xhal_dlpack_managed_tensor_versioned_t* managed,
    xhal_tensor_t* out_tensor);
/* The same for a DLPack 0.x producer (never read-only). */
XHAL_API xhal_status_t xhal_tensor_import_dlpack_unversioned(
    xhal_device_t device, xhal_dlpack_managed_tensor_t* managed,
    xhal_tensor_t* out_tensor);

#ifdef __cplusplus
}
#endif
#endif
