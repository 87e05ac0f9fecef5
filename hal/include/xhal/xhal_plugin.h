/* xhal plugin ABI. A backend is a shared library named libxhal-<backend>.so
 * that exports XHAL_PLUGIN_ENTRY_SYMBOL returning a pointer to a static
 * xhal_plugin_api_t. Rules (docs/abi.md): the table only grows at the end;
 * a minor bump appends slots, a major bump breaks. The core refuses another
 * major, and reads only the first struct_size bytes of the table: slots past
 * it are absent. An absent optional slot is reported as XHAL_UNSUPPORTED.
 *
 * The core validates every argument before calling a slot (handles, dtypes,
 * shapes, strides, byte ranges, indices, CSR structure), so a slot may assume
 * valid input. Slots run on the caller's thread; the core calls the slots of
 * one device one at a time (slots of different devices may run at once).
 * A failing slot returns a status and may describe it with host->set_error. */
#ifndef XHAL_PLUGIN_H_
#define XHAL_PLUGIN_H_

#include "xhal/device.h"
#include "xhal/interop.h" /* xhal_memory_kind_t */
#include "xhal/sparse.h"  /* xhal_transpose_t, xhal_triangle_t, xhal_diagonal_t */
#include "xhal/status.h"
#include "xhal/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XHAL_PLUGIN_ABI_MAJOR 1
#define XHAL_PLUGIN_ABI_MINOR 9
#define XHAL_PLUGIN_ENTRY_SYMBOL "xhal_plugin_get_api"

#if defined(_WIN32)
#define XHAL_PLUGIN_EXPORT __declspec(dllexport)
#else
#define XHAL_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* Services the core offers a plugin. Grows at the end like the plugin table. */
typedef struct xhal_plugin_host {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  /* Sets the message of the current call's failure (copied). */
  void (*set_error)(const char* message);
  /* Since 1.2: this backend's items of XHAL_DEVICE_OPTIONS
   * ("name=value,..."; "" for none), for the options that apply to the
   * whole plugin and must be known in init (e.g. a validation layer). The
   * same items reach device_open_with_options, which must accept them.
   * Valid until shutdown. Read it only when struct_size covers it. */
  const char* options;
} xhal_plugin_host_t;

typedef struct xhal_plugin_device_info {
  size_t struct_size; /* set by the core */
  char name[128];
  char stable_id[128]; /* "GPU-<uuid>", "pci:0000:17:00.0", "cpu:<model>" */
  xhal_device_kind_t kind;
  uint64_t memory_bytes;
  uint32_t op_dtypes[XHAL_OP_COUNT_]; /* bit (1 << dtype) per supported dtype */
} xhal_plugin_device_info_t;

/* A validated tensor as a plugin sees it: plugin buffer handle, byte offset,
 * and explicit element strides (the core fills them, also when contiguous). */
typedef struct xhal_plugin_tensor {
  void* buffer;
  uint64_t offset;
  xhal_dtype_t dtype;
  uint32_t rank;
  int64_t shape[XHAL_MAX_RANK];
  int64_t strides[XHAL_MAX_RANK];
} xhal_plugin_tensor_t;

/* Index plan as built by the core (host arrays, valid for the call only).
 * The transposed selection lists, for each destination row, the positions
 * i with indices[i] == row (its "sources"): row_sources holds them grouped
 * by row, rows ascending, sources ascending within a row (the order
 * index_add sums them in). Since 1.1 the rows that have sources are listed
 * in compact form (touched_*), O(count); the full row_ptr over every row,
 * O(num_rows), is built only for plugins whose table says abi_minor 0. */
typedef struct xhal_plugin_index_plan_desc {
  uint64_t count;         /* number of indices */
  uint64_t num_rows;      /* rows the indices address */
  const int64_t* indices; /* [count], each in [0, num_rows) */
  /* Full form: the sources of row r are row_sources[row_ptr[r] ..
   * row_ptr[r+1]). [num_rows + 1] for a plugin of abi_minor 0; NULL for
   * abi_minor >= 1, which read touched_* instead. A 1.0 core always sets it
   * and its desc ends at max_sources_per_row: so a 1.1 plugin reads the
   * touched_* fields only when row_ptr is NULL. */
  const int64_t* row_ptr;
  const int64_t* row_sources; /* [count] (may be NULL when count is 0) */
  uint64_t max_sources_per_row;
  /* ---- since 1.1: compact form, filled for every plugin ---- */
  uint64_t touched_count;      /* rows selected at least once */
  const int64_t* touched_rows; /* [touched_count], strictly ascending */
  /* [touched_count + 1], touched_ptr[0] = 0, touched_ptr[touched_count] =
   * count: the sources of touched_rows[k] are row_sources[touched_ptr[k] ..
   * touched_ptr[k+1]), never empty. */
  const int64_t* touched_ptr;
} xhal_plugin_index_plan_desc_t;

/* The first index of a device list outside [0, num_rows), found by the
 * plugin (index_plan_create_from_buffer). */
typedef struct xhal_plugin_index_fault {
  uint64_t position; /* lowest position i whose index is out of range */
  int64_t value;     /* that index, widened to int64 */
} xhal_plugin_index_fault_t;

/* csr_create_flags (the last field of the table, since 1.8). */
/* csr_create builds A^T itself: the core skips its host transposition and
 * passes t_row_ptr, t_col_idx and t_perm as NULL. */
#define XHAL_PLUGIN_CSR_OWN_TRANSPOSE 0x1u

/* A validated CSR pattern with its transpose, built once by the core. */
typedef struct xhal_plugin_csr_desc {
  int64_t rows, cols, nnz;
  const int64_t* row_ptr; /* [rows + 1] */
  const int64_t* col_idx; /* [nnz], strictly increasing within a row */
  const int64_t* row_idx; /* [nnz], the row of each entry */
  /* A^T as CSR: its row j lists A's column j in ascending row order. All
   * three NULL when the plugin sets XHAL_PLUGIN_CSR_OWN_TRANSPOSE. */
  const int64_t* t_row_ptr; /* [cols + 1] */
  const int64_t* t_col_idx; /* [nnz], rows of A */
  const int64_t* t_perm;    /* [nnz], index into A's entries */
  /* values_buffer: a plugin buffer of nnz values owned by the core; the
   * matrix's values live there and are replaced through buffer_write/copy. */
  void* values_buffer;
  /* Since 1.6: the values' dtype, XHAL_DTYPE_F32 or XHAL_DTYPE_F64. The core
   * passes F64 only to a plugin of abi_minor >= 6 whose device claims f64
   * for at least one sparse op (op_dtypes); an older plugin never sees an
   * f64 matrix, so it may ignore the field. A 1.6 plugin reads it only when
   * the core's host->abi_minor is >= 6: an older core's desc ends before
   * it. Since 1.7 it may also be XHAL_DTYPE_F16 or XHAL_DTYPE_BF16 (2-byte
   * values; only spmv and spmm take such a matrix, docs/semantics.md 7.2):
   * the core passes them only to a plugin of abi_minor >= 7 whose device
   * claims that dtype for spmv or spmm. */
  xhal_dtype_t values_dtype;
} xhal_plugin_csr_desc_t;

/* A CSR pattern in device buffers (csr_create_from_buffers, since 1.9).
 * Like the other descs it only grows at its end. */
typedef struct xhal_plugin_csr_buffers_desc {
  int64_t rows, cols, nnz;
  xhal_dtype_t index_dtype;  /* XHAL_DTYPE_I32 or XHAL_DTYPE_I64, both arrays */
  void* row_ptr_buffer;      /* plugin buffer, rows + 1 indices from byte 0 */
  void* col_idx_buffer;      /* plugin buffer, nnz indices from byte 0; NULL when nnz is 0 */
  void* values_buffer;       /* as xhal_plugin_csr_desc_t's */
  xhal_dtype_t values_dtype; /* as xhal_plugin_csr_desc_t's */
} xhal_plugin_csr_buffers_desc_t;

/* The first fault of an invalid pattern, in the order the core's host
 * validation finds it (docs/semantics.md, "Sparse (CSR)"): row_ptr[0]; then for each
 * row i in order, row_ptr[i + 1] below row_ptr[i], then above nnz; then
 * row_ptr[rows] != nnz; then the lowest row with a bad column, and in it
 * the lowest bad entry (its range before its order). */
typedef enum xhal_plugin_csr_fault_kind {
  XHAL_PLUGIN_CSR_FAULT_NONE = 0,
  XHAL_PLUGIN_CSR_FAULT_FIRST_OFFSET = 1,    /* value = row_ptr[0] (row 0) */
  XHAL_PLUGIN_CSR_FAULT_NOT_MONOTONE = 2,    /* value = row_ptr[row + 1], other = row_ptr[row] */
  XHAL_PLUGIN_CSR_FAULT_OFFSET_PAST_NNZ = 3, /* value = row_ptr[row + 1] */
  XHAL_PLUGIN_CSR_FAULT_LAST_OFFSET = 4,     /* value = row_ptr[rows] (row = rows - 1, or 0) */
  XHAL_PLUGIN_CSR_FAULT_COLUMN_RANGE = 5,    /* value = col_idx[entry] */
  XHAL_PLUGIN_CSR_FAULT_COLUMN_ORDER = 6, /* value = col_idx[entry], other = col_idx[entry - 1] */
} xhal_plugin_csr_fault_kind_t;

typedef struct xhal_plugin_csr_fault {
  uint32_t kind; /* xhal_plugin_csr_fault_kind_t */
  int64_t row;
  int64_t entry; /* column faults only */
  int64_t value;
  int64_t other;
} xhal_plugin_csr_fault_t;

/* What the solves' checks need of a valid pattern, found by the plugin. */
typedef struct xhal_plugin_csr_facts {
  int64_t above_row;            /* lowest row with an entry right of the diagonal; -1: none */
  int64_t above_col;            /* that row's lowest such column */
  int64_t below_row;            /* lowest row with an entry left of the diagonal; -1: none */
  int64_t below_col;            /* that row's lowest such column */
  int64_t missing_diagonal_row; /* lowest row i < min(rows, cols) without (i, i); -1: none */
} xhal_plugin_csr_facts_t;

typedef struct xhal_plugin_api {
  /* ---- header (never changes) ---- */
  size_t struct_size; /* sizeof the table as the plugin was built */
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* backend_name;   /* required: must match libxhal-<backend>.so */
  const char* plugin_version; /* required: free text, "1.2.0" */

  /* ---- lifecycle (required) ---- */
  /* Called once after loading. Returning an error rejects the plugin, with
   * the message set through host->set_error. A plugin with no usable device
   * returns XHAL_OK, reports 0 devices and explains in `out_note`. */
  xhal_status_t (*init)(const xhal_plugin_host_t* host, void** out_context, char* out_note,
                        size_t note_capacity);
  void (*shutdown)(void* context);

  /* ---- devices (required) ---- */
  xhal_status_t (*device_count)(void* context, uint32_t* out_count);
  xhal_status_t (*device_get_info)(void* context, uint32_t index,
                                   xhal_plugin_device_info_t* out_info);
  xhal_status_t (*device_open)(void* context, uint32_t index, void** out_device);
  void (*device_close)(void* device);
  xhal_status_t (*device_synchronize)(void* device);
  xhal_status_t (*device_get_counters)(void* device, xhal_counters_t* out);

  /* ---- buffers (required); ranges are validated by the core ---- */
  xhal_status_t (*buffer_allocate)(void* device, uint64_t size, void** out_buffer);
  void (*buffer_free)(void* device, void* buffer);
  xhal_status_t (*buffer_write)(void* device, void* dst, uint64_t offset, const void* src,
                                uint64_t size); /* blocking */
  xhal_status_t (*buffer_read)(void* device, void* src, uint64_t offset, void* dst,
                               uint64_t size); /* blocking */
  xhal_status_t (*buffer_copy)(void* device, void* src, uint64_t src_offset, void* dst,
                               uint64_t dst_offset, uint64_t size);
  xhal_status_t (*buffer_fill)(void* device, void* dst, uint64_t offset, uint64_t size,
                               const void* pattern, uint32_t pattern_size);

  /* ---- dense ops (optional; absent = XHAL_UNSUPPORTED) ---- */
  xhal_status_t (*index_plan_create)(void* device, const xhal_plugin_index_plan_desc_t* desc,
                                     void** out_plan);
  void (*index_plan_destroy)(void* device, void* plan); /* with index_plan_create */
  xhal_status_t (*index_select)(void* device, void* plan, const xhal_plugin_tensor_t* src,
                                const xhal_plugin_tensor_t* out);
  xhal_status_t (*index_add)(void* device, void* plan, float alpha, const xhal_plugin_tensor_t* src,
                             const xhal_plugin_tensor_t* dst);
  /* Strided gather into a contiguous dst: dst element at multi-index i (over
   * dst->shape) = src element at src->offset + sum_k i[k] * src->strides[k].
   * The core has already applied the permutation to src's shape and strides
   * and merged/dropped trivial dims; src->shape equals dst->shape. */
  xhal_status_t (*permute)(void* device, const xhal_plugin_tensor_t* src,
                           const xhal_plugin_tensor_t* dst);
  xhal_status_t (*softmax_forward)(void* device, const xhal_plugin_tensor_t* x,
                                   const xhal_plugin_tensor_t* y);
  xhal_status_t (*softmax_backward)(void* device, const xhal_plugin_tensor_t* y,
                                    const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx);
  /* Row-wise ops get x as rank 2 [rows, n]; per-row tensors as rank 1. */
  xhal_status_t (*rms_norm_forward)(void* device, const xhal_plugin_tensor_t* x,
                                    const xhal_plugin_tensor_t* gamma, float eps,
                                    const xhal_plugin_tensor_t* y,
                                    const xhal_plugin_tensor_t* rstd);
  xhal_status_t (*rms_norm_backward)(void* device, const xhal_plugin_tensor_t* x,
                                     const xhal_plugin_tensor_t* gamma,
                                     const xhal_plugin_tensor_t* rstd,
                                     const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx,
                                     const xhal_plugin_tensor_t* dgamma);
  xhal_status_t (*layer_norm_forward)(void* device, const xhal_plugin_tensor_t* x,
                                      const xhal_plugin_tensor_t* gamma,
                                      const xhal_plugin_tensor_t* beta, float eps,
                                      const xhal_plugin_tensor_t* y,
                                      const xhal_plugin_tensor_t* mean,
                                      const xhal_plugin_tensor_t* rstd);
  xhal_status_t (*layer_norm_backward)(
      void* device, const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* gamma,
      const xhal_plugin_tensor_t* mean, const xhal_plugin_tensor_t* rstd,
      const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx,
      const xhal_plugin_tensor_t* dgamma, const xhal_plugin_tensor_t* dbeta);

  /* ---- sparse ops (optional) ---- */
  /* Uploads the pattern and does per-pattern analysis (e.g. level sets). */
  xhal_status_t (*csr_create)(void* device, const xhal_plugin_csr_desc_t* desc, void** out_matrix);
  void (*csr_destroy)(void* device, void* matrix); /* with csr_create */
  /* x, y: rank 1 vectors, or rank 2 [n, k] for spmm. */
  xhal_status_t (*spmv)(void* device, void* a, xhal_transpose_t trans, float alpha,
                        const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y);
  xhal_status_t (*spmm)(void* device, void* a, xhal_transpose_t trans, float alpha,
                        const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y);
  /* b, x rank 2 [n, k] (k = 1 for vectors); x may equal b (in place). */
  xhal_status_t (*csr_solve)(void* device, void* a, xhal_transpose_t trans,
                             xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                             const xhal_plugin_tensor_t* b, const xhal_plugin_tensor_t* x);
  /* ga may be NULL. */
  xhal_status_t (*csr_solve_backward)(void* device, void* a, xhal_transpose_t trans,
                                      xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                                      const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* dx,
                                      const xhal_plugin_tensor_t* gb,
                                      const xhal_plugin_tensor_t* ga);
  /* Values of C = A B on C's pattern (computed by the core, C created
   * through csr_create); the plan maps each C entry's terms. */
  xhal_status_t (*spgemm_numeric)(void* device, void* a, void* b, void* c);

  /* ---- device options (optional, since 1.2) ---- */
  /* Opens device `index` with its tuning and diagnostic options: a
   * NUL-terminated list "name=value,name=value" ("" for none; never NULL),
   * already narrowed by the core to the options meant for this backend.
   * The plugin parses it once, here: an unknown name or a malformed value is
   * XHAL_INVALID_ARGUMENT with a message (host->set_error) naming it and
   * listing the names it knows. Absent: the core opens with device_open and
   * refuses any non-empty options for this backend. */
  xhal_status_t (*device_open_with_options)(void* context, uint32_t index, const char* options,
                                            void** out_device);
  /* Writes the options in force on an open device, every one the plugin
   * knows with its value, as "name=value,name=value" (NUL-terminated,
   * truncated to `capacity`). Optional; absent means "no options". */
  xhal_status_t (*device_get_options)(void* device, char* out, size_t capacity);

  /* ---- interop (optional, since 1.3; docs/interop.md) ---- */
  /* Where the device's buffers live: the memory kind (host memory for a
   * device whose buffers are host memory) and the device ordinal of its
   * runtime (CUDA/HIP device number; 0 for host memory). The core asks once,
   * when the device opens, and checks xhal_buffer_import and DLPack tensors
   * against it. Absent: the device's buffers have no address an app may use,
   * and every call below is XHAL_UNSUPPORTED. */
  xhal_status_t (*device_get_memory_kind)(void* device, xhal_memory_kind_t* out_kind,
                                          int32_t* out_ordinal);
  /* Wraps `size` bytes at `pointer`, memory of the device's own kind and
   * ordinal (the core has checked both against device_get_memory_kind, and
   * that pointer is not NULL unless size is 0), as a buffer of `device`
   * without copying. buffer_free of such a buffer frees the wrapper, never
   * the memory; the core runs device_synchronize before it. The plugin
   * checks what only its runtime can see (a CUDA pointer that is host memory
   * or belongs to another device: XHAL_INVALID_ARGUMENT with a message).
   * Optional; absent: XHAL_UNSUPPORTED. */
  xhal_status_t (*buffer_import)(void* device, xhal_memory_kind_t kind, int32_t ordinal,
                                 void* pointer, uint64_t size, void** out_buffer);
  /* The address of a buffer's first byte (allocated or imported), valid
   * while the buffer is; of the kind and ordinal device_get_memory_kind
   * reports. Optional; absent: XHAL_UNSUPPORTED. */
  xhal_status_t (*buffer_get_native)(void* device, void* buffer, void** out_pointer);
  /* The runtime's handle of the device's one in-order queue (cudaStream_t,
   * hipStream_t), or NULL for a backend whose slots complete before they
   * return. Optional; absent: XHAL_UNSUPPORTED. */
  xhal_status_t (*device_get_native_queue)(void* device, void** out_queue);
  /* Makes `external_queue` (a queue of the same runtime and device; NULL:
   * its legacy default stream) wait for the work queued on the device so far,
   * without blocking the host (CUDA: cudaEventRecord on the device's stream,
   * cudaStreamWaitEvent on external_queue). Optional; absent:
   * XHAL_UNSUPPORTED. A backend whose slots complete before they return
   * implements it as a no-op (the cpu plugin does): absence never silently
   * means "ordered". */
  xhal_status_t (*queue_signal_external)(void* device, void* external_queue);
  /* The reverse: the device's queue waits for the work queued on
   * `external_queue` so far. Optional; absent: XHAL_UNSUPPORTED (no-op in a
   * backend whose slots complete before they return). */
  xhal_status_t (*queue_wait_external)(void* device, void* external_queue);

  /* ---- a caller's queue (optional, since 1.4; docs/interop.md) ---- */
  /* Opens device `index` as device_open_with_options does, with `options`
   * (never NULL), but queues all of its work on `native_queue`, a queue of
   * the device's runtime that the caller owns (cudaStream_t, hipStream_t;
   * NULL: the runtime's legacy default stream), instead of one of its own.
   * device_get_native_queue returns it; device_close synchronises it and
   * never destroys it. A queue of another device, or one the plugin can
   * tell is not a queue: XHAL_INVALID_ARGUMENT with a message. A backend
   * without queues (cpu) accepts NULL only. Absent: XHAL_UNSUPPORTED. */
  xhal_status_t (*device_open_on_queue)(void* context, uint32_t index, const char* options,
                                        void* native_queue, void** out_device);

  /* ---- index plans from device memory (optional, since 1.5; docs/interop.md) ---- */
  /* Builds the plan index_plan_create builds for the same list (destroyed by
   * index_plan_destroy), from `count` (> 0) indices of `index_dtype` (i32 or
   * i64) at byte `offset` of `buffer`, a buffer of this device (the core has
   * checked the range and the alignment), without reading the list to the
   * host: the indices are validated and the schedule is built on the device.
   * At most a small fixed-size status block may come back to the host,
   * counted by the transfer counters. An index outside [0, num_rows):
   * XHAL_OUT_OF_RANGE, no plan, no message, and *out_fault names the lowest
   * such position and its value (the core writes the message the host path
   * writes). Optional; absent: the core reads the list to the host and calls
   * index_plan_create. */
  xhal_status_t (*index_plan_create_from_buffer)(void* device, void* buffer, uint64_t offset,
                                                 xhal_dtype_t index_dtype, uint64_t count,
                                                 uint64_t num_rows, void** out_plan,
                                                 xhal_plugin_index_fault_t* out_fault);

  /* ---- what csr_create does itself (optional, since 1.8) ---- */
  /* XHAL_PLUGIN_CSR_* bits, read by the core once, when the plugin loads;
   * 0 (also when struct_size ends before it, or abi_minor < 8): none. A
   * field, not a slot: 8 bytes, so the table stays in whole pointer-sized
   * steps. */
  uint64_t csr_create_flags;

  /* ---- CSR patterns from device memory (optional, since 1.9) ---- */
  /* Builds the matrix csr_create builds for the same pattern (destroyed by
   * csr_destroy) from the pattern in `desc`'s buffers (the core has checked
   * their sizes), without reading it to the host: validated and analysed on
   * the device. At most small fixed-size status blocks may come back,
   * counted by the transfer counters. An invalid pattern:
   * XHAL_INVALID_STRUCTURE, no matrix, no message, and *out_fault names its
   * first fault (the core writes the message the host path writes). On
   * success *out_facts is filled. Optional; absent: the core reads the
   * pattern to the host, validates it and calls csr_create. */
  xhal_status_t (*csr_create_from_buffers)(void* device, const xhal_plugin_csr_buffers_desc_t* desc,
                                           void** out_matrix, xhal_plugin_csr_fault_t* out_fault,
                                           xhal_plugin_csr_facts_t* out_facts);
} xhal_plugin_api_t;

/* The one symbol a plugin exports. */
typedef const xhal_plugin_api_t* (*xhal_plugin_get_api_fn)(void);

#ifdef __cplusplus
}
#endif
#endif
