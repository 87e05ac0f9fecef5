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
  /* XHAL_EXTERNAL_MEMORY_READ_ONLY or 0. */
  uint64_t flags;
} xhal_external_memory_t;

/* xhal_external_memory_t.flags: xhal never writes the memory. An op, copy,
 * fill or write whose destination is the buffer fails with
 * XHAL_INVALID_ARGUMENT naming the argument, before the device is called. */
#define XHAL_EXTERNAL_MEMORY_READ_ONLY (UINT64_C(1) << 0)

/* Wraps `memory` as a buffer of `device`: no copy, no allocation of device
 * memory. The buffer is validated like any other (bounds, device, aliasing
 * among the views of one buffer) and released with xhal_buffer_release.
 * Fields outside memory->struct_size read as 0 (so an old caller's memory
 * has no flags; one that ends before `size` has kind 0 and is refused).
 * Statuses: XHAL_INVALID_ARGUMENT for NULL arguments, struct_size <
 * sizeof(size_t), a kind outside xhal_memory_kind_t or not the device's
 * (host memory for the cpu device, CUDA memory for a cuda device), a NULL
 * pointer with a size, an unknown flag bit, or memory the backend sees is
 * not device memory (a host pointer given to a cuda device);
 * XHAL_WRONG_DEVICE for the right kind with another device_ordinal, or
 * memory the backend finds on another GPU; XHAL_UNSUPPORTED for a
 * backend that cannot wrap external memory (vulkan). The release callback
 * runs before a failing call returns, whenever memory is not NULL and its
 * struct_size holds `release`. */
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

/* Fields that lie entirely inside out_memory->struct_size are written
 * (struct_size < sizeof(size_t): XHAL_INVALID_ARGUMENT, nothing written).
 * `pointer` is the buffer's first byte (a tensor at offset o starts at
 * pointer + o). XHAL_UNSUPPORTED for a backend whose buffers have no
 * address (vulkan). */
XHAL_API xhal_status_t xhal_buffer_get_native(xhal_buffer_t buffer,
                                              xhal_native_memory_t* out_memory);

/* The device's queue as its runtime knows it: the cudaStream_t or
 * hipStream_t xhal queues its work on (one in-order queue per device). NULL
 * for the cpu device, whose calls have completed when they return.
 * XHAL_UNSUPPORTED for a backend that does not expose its queue (vulkan). */
XHAL_API xhal_status_t xhal_device_get_native_queue(xhal_device_t device, void** out_queue);

/* Opens the first device matching `selector` (as xhal_device_open, with
 * XHAL_DEVICE_OPTIONS) so that xhal queues all of its work on
 * `native_queue`, a cudaStream_t or hipStream_t of that device which the
 * caller owns and keeps alive until the device's last release (NULL: the
 * runtime's legacy default stream). xhal's work is then ordered with the
 * caller's on that stream without any event; the stream is synchronised
 * by the last xhal_device_release and never destroyed.
 * The device is still one device with one in-order queue: while it is open,
 * opening it on the queue it uses (the caller's, or its own as
 * xhal_device_get_native_queue gives it), or with xhal_device_open, returns
 * the same handle with one more open count; opening it on another queue is
 * XHAL_BUSY naming both (release every handle first).
 * The cpu device has no queue: NULL opens it as xhal_device_open does, any
 * other value is XHAL_INVALID_ARGUMENT (XHAL_BUSY while it is open). A
 * backend that cannot run on a caller's queue (vulkan): XHAL_UNSUPPORTED. */
XHAL_API xhal_status_t xhal_device_open_on_native_queue(const char* selector, void* native_queue,
                                                        xhal_device_t* out_device);

/* Makes `external_queue` (a stream of the same device; NULL: the legacy
 * default stream) wait for the work queued on `device` so far, without
 * blocking the host. A no-op on the cpu device; XHAL_UNSUPPORTED where
 * the backend has no native queue (vulkan). */
XHAL_API xhal_status_t xhal_device_signal_external_queue(xhal_device_t device,
                                                         void* external_queue);

/* Makes `device`'s queue wait for the work queued on `external_queue` so
 * far, without blocking the host. A no-op on the cpu device;
 * XHAL_UNSUPPORTED where the backend has no native queue (vulkan). */
XHAL_API xhal_status_t xhal_device_wait_external_queue(xhal_device_t device, void* external_queue);

/* ---- DLPack ------------------------------------------------------------
 * Export: a DLPack view of `tensor` (no copy). The export keeps the
 * tensor's buffer alive: releasing the buffer handle is allowed, the memory
 * goes when the consumer calls the deleter (exactly once, from any thread).
 * The device cannot be released while an export is alive (XHAL_BUSY).
 * `flags` may hold XHAL_DLPACK_FLAG_READ_ONLY (other bits:
 * XHAL_INVALID_ARGUMENT); a read-only buffer is always exported read-only.
 * `tensor` is checked like an op argument (any strides >= 0). data is the
 * buffer's first byte and byte_offset the tensor's offset; strides are
 * always given (in elements); version 1.0. Work queued on the device
 * before the export is not waited for: order it with
 * xhal_device_signal_external_queue (the Python array API's handshake).
 * XHAL_UNSUPPORTED for a backend whose buffers have no address (vulkan). */
XHAL_API xhal_status_t
xhal_tensor_export_dlpack(const xhal_tensor_t* tensor, uint64_t flags,
                          xhal_dlpack_managed_tensor_versioned_t** out_managed);
/* The same for a consumer that knows only DLPack 0.x (DLManagedTensor),
 * which cannot say read-only: a read-only buffer is refused
 * (XHAL_INVALID_ARGUMENT). */
XHAL_API xhal_status_t xhal_tensor_export_dlpack_unversioned(
    const xhal_tensor_t* tensor, xhal_dlpack_managed_tensor_t** out_managed);

/* Import: `managed` becomes a tensor on a new buffer of `device` (no copy);
 * xhal owns it from this call on and calls its deleter exactly once: when
 * out_tensor->buffer is released (and no export of it is alive), or before
 * returning if the import fails (whenever `managed` is not NULL).
 * Refused, with a message naming the field and value:
 *   XHAL_UNSUPPORTED: a major version other than 1 (nothing but version and
 *     deleter is read then), a dtype xhal has no name for (lanes != 1,
 *     complex, bool, ...), ndim > XHAL_MAX_RANK, negative strides,
 *     overlapping strides (stride 0 on an extent > 1, ...), data +
 *     byte_offset not aligned to the element size;
 *   XHAL_INVALID_ARGUMENT: NULL arguments, a device type that is not the
 *     device's memory kind, ndim < 0, NULL shape (ndim > 0), a negative
 *     extent, NULL data with elements;
 *   XHAL_WRONG_DEVICE: the device's type with another device id.
 * The new buffer covers the bytes the tensor spans, from data + byte_offset
 * (out_tensor->offset is 0). Strides that are row-major (extents of 1
 * ignored) or absent give zero strides; others give a strided tensor (only
 * ops that accept strides take it; xhal_permute copies it). A read-only
 * tensor gives a read-only buffer: an op or write that would change it
 * fails with XHAL_INVALID_ARGUMENT. Flag bits other than read-only are
 * ignored (IS_COPIED changes nothing: the buffer is xhal's until release). */
XHAL_API xhal_status_t xhal_tensor_import_dlpack(xhal_device_t device,
                                                 xhal_dlpack_managed_tensor_versioned_t* managed,
                                                 xhal_tensor_t* out_tensor);
/* The same for a DLPack 0.x producer (never read-only). */
XHAL_API xhal_status_t xhal_tensor_import_dlpack_unversioned(xhal_device_t device,
                                                             xhal_dlpack_managed_tensor_t* managed,
                                                             xhal_tensor_t* out_tensor);

#ifdef __cplusplus
}
#endif
#endif
