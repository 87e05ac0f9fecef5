/* Devices: enumeration, information, opening by selector, synchronisation.
 * Each open device has one in-order queue: every op and copy on it runs in
 * call order; xhal_device_synchronize waits for all of them. */
#ifndef XHAL_DEVICE_H_
#define XHAL_DEVICE_H_

#include "xhal/export.h"
#include "xhal/status.h"
#include "xhal/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xhal_device* xhal_device_t;

typedef enum xhal_device_kind {
  XHAL_DEVICE_KIND_CPU = 0,
  XHAL_DEVICE_KIND_GPU = 1,
  XHAL_DEVICE_KIND_OTHER = 2,
} xhal_device_kind_t;

typedef struct xhal_device_info {
  size_t struct_size;     /* set by the caller; fields past it are not written */
  const char* backend;    /* "cpu", "cuda", ... */
  uint32_t backend_index; /* index among this backend's devices: "cuda:1" */
  const char* name;       /* "NVIDIA H200", "x86-64 (16 threads)" */
  const char* stable_id;  /* UUID or PCI bus id; the same GPU seen by two
                             plugins shares it */
  xhal_device_kind_t kind;
  uint64_t memory_bytes;
  /* Bit (1 << xhal_op_t) set when the device implements the op. */
  uint64_t supported_ops;
  /* For each op, bit (1 << xhal_dtype_t) per supported element dtype. */
  uint32_t op_dtypes[XHAL_OP_COUNT_];
} xhal_device_info_t;

/* Stable lower-case name of an op ("index_select", "csr_solve_backward"), as
 * docs/semantics.md, xhal-info and conformance reports spell it; "unknown"
 * for a value outside xhal_op_t. Never NULL. */
XHAL_API const char* xhal_op_name(xhal_op_t op);

/* The devices of the loaded plugins, ordered by the selector (XHAL_DEVICE or
 * xhal_runtime_options.device_selector); without one, best first, CPU last. */
XHAL_API xhal_status_t xhal_device_count(uint32_t* out_count);
XHAL_API xhal_status_t xhal_device_get_info(uint32_t index, xhal_device_info_t* out_info);

/* Opens the first device matching `selector` (same grammar as XHAL_DEVICE,
 * see docs/device-selection.md); NULL or "" opens the default device (index
 * 0 of the list). Malformed: XHAL_INVALID_ARGUMENT quoting it; no match:
 * XHAL_NOT_FOUND listing the devices. Opening one device twice returns the
 * same handle with an open count of two: every open is matched by one
 * xhal_device_release, and the last one closes the device.
 * The first open of a device applies XHAL_DEVICE_OPTIONS
 * ("[backend:]name=value,..."; an item with a backend prefix applies to
 * that backend's devices only; docs/device-options.md): an unknown name or a
 * malformed value fails the open with XHAL_INVALID_ARGUMENT naming it. */
XHAL_API xhal_status_t xhal_device_open(const char* selector, xhal_device_t* out_device);
XHAL_API xhal_status_t xhal_device_open_index(uint32_t index, xhal_device_t* out_device);
/* Waits for queued work, then closes. Every buffer, plan and matrix of the
 * device must have been released first (else XHAL_BUSY). */
XHAL_API xhal_status_t xhal_device_release(xhal_device_t device);
XHAL_API xhal_status_t xhal_device_query(xhal_device_t device, xhal_device_info_t* out_info);

/* Waits for every queued call; reports an asynchronous fault as
 * XHAL_DEVICE_LOST. */
XHAL_API xhal_status_t xhal_device_synchronize(xhal_device_t device);

/* Snapshot of the device's counters (monotonic since it was opened). */
XHAL_API xhal_status_t xhal_device_get_counters(xhal_device_t device,
                                                xhal_counters_t* out_counters);

/* Tuning and diagnostic options in force on an open device, as
 * "name=value,name=value" ("" when its backend has none): the ones the
 * XHAL_DEVICE_OPTIONS environment variable set when the device was opened,
 * and the defaults of the rest (docs/device-options.md lists them). `out`
 * receives at most `capacity` bytes, always NUL-terminated when capacity >
 * 0; *out_length (may be NULL) receives the full length without the NUL. */
XHAL_API xhal_status_t xhal_device_get_options(xhal_device_t device, char* out, size_t capacity,
                                               size_t* out_length);

#ifdef __cplusplus
}
#endif
#endif
