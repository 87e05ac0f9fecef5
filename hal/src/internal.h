// Core-internal objects shared by the runtime (loader, selector, devices,
// buffers) and the op front ends (validation + dispatch). Not installed.
#pragma once

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "handles.h"
#include "parallel.h"
#include "xhal/xhal.h"
#include "xhal/xhal_plugin.h"

namespace xhal {

// One loaded plugin library (owned by the runtime; lives until shutdown).
struct LoadedPlugin;

// ---- errors -------------------------------------------------------------
// Per-thread state of the core, one thread_local block (errors.cpp).
struct ThreadState {
  std::string last_error;      // what xhal_last_error returns; replaced by each failing call
  std::string plugin_message;  // what a plugin said through host->set_error in this slot call
  int plugin_depth = 0;        // > 0 while this thread runs inside a plugin slot
};
ThreadState& thread_state();
// Sets the calling thread's last error and returns `status`, so a check reads
//   if (!ok) return fail(XHAL_OUT_OF_RANGE, "argument 'x': ...", ...);
xhal_status_t fail(xhal_status_t status, const char* format, ...)
    __attribute__((format(printf, 2, 3)));
// Clears the thread's message at the start of every public call.
void clear_error();
// The message a plugin set through host->set_error during the current call
// (empty if none); consumed by plugin_status().
std::string take_plugin_message();
// Maps a plugin slot's return into a public status, keeping the plugin's
// message or naming the slot ("cpu plugin: index_add failed (XHAL_...)").
xhal_status_t plugin_status(int status, const char* backend, const char* slot);

// The services table handed to a plugin's init (set_error feeds
// take_plugin_message on the calling thread), with `options` as the
// plugin-wide options it carries; the caller keeps the result alive.
xhal_plugin_host_t plugin_host(const char* options);

// The items of XHAL_DEVICE_OPTIONS ("[backend:]name=value,...") meant for
// `backend`, prefix removed, joined with commas; XHAL_INVALID_ARGUMENT
// naming a malformed item (device_options.cpp).
xhal_status_t options_for(const std::string& backend, std::string* out);

// ---- shared argument checks (each fails with a message naming `arg`) -----
// get_device, get_buffer, get_plan, get_matrix (handles.h) resolve a public
// handle to the core's object, or fail with XHAL_INVALID_ARGUMENT naming the
// argument: NULL, released (or released twice), a handle of another kind,
// or a value xhal never gave out.
// A device handle retired by its last release keeps its label ("cpu:0") for
// messages until the runtime shuts down (forget_released_devices).
void remember_released_device(uint64_t handle, const std::string& label);
void forget_released_devices();
// [offset, offset + size) must lie in [0, buffer_size); overflow-safe.
// XHAL_OUT_OF_RANGE naming offset, size and the buffer size.
xhal_status_t check_byte_range(uint64_t offset, uint64_t size, uint64_t buffer_size,
                               const char* arg);

// True when the plugin table has every slot `op` needs (the op's own slot
// plus index_plan_create/destroy or csr_create/destroy where it uses them).
bool op_slots_present(const xhal_plugin_api_t& api, xhal_op_t op);
// The dtypes docs/semantics.md allows for `op` (its first tensor argument's
// in the op table; f32 for spgemm, whose operands are matrices).
uint32_t spec_dtypes(xhal_op_t op);
// Stable lower-case name of an op ("index_select"); "unknown" otherwise.
const char* op_name(xhal_op_t op);

}  // namespace xhal

namespace xhal {

// The core's objects behind the public handles (handles.h maps one to the
// other). The public structs (struct xhal_device, ...) stay incomplete.
struct Device {
  const xhal_plugin_api_t* api = nullptr;  // the runtime's zero-padded copy of
                                           // the plugin table: absent slots are null
  void* plugin_device = nullptr;
  std::string backend;
  uint32_t backend_index = 0;
  uint32_t plugin_abi_minor = 0;         // of the plugin's table
  xhal_device_info_t info{};             // strings point into the runtime
  std::atomic<int64_t> live_objects{0};  // buffers, plans, matrices
  // Handles given out by xhal_device_open* and not yet released; the plugin
  // device exists while this is > 0 (changed under the runtime mutex).
  std::atomic<uint32_t> open_handles{0};
  // The handle of the current opening (0 while closed): every open returns
  // it; the last release retires it, so a later open gets a new one.
  uint64_t handle = 0;
  // Serialises the calls of one device: the in-order queue of docs/abi.md
  // ("Threading"), and the core's per-object metadata.
  QueueMutex queue;
  // Interop (plugin ABI 1.3, docs/interop.md): where the device's buffers
  // live, asked once at open (0: they have no address an app may use, and
  // import, get_native and DLPack are XHAL_UNSUPPORTED), and its runtime's
  // device ordinal. Written under the runtime mutex before the handle is
  // given out.
  uint32_t memory_kind = 0;
  int32_t memory_ordinal = 0;
  // Opened with xhal_device_open_on_native_queue: the caller's queue, for
  // the current opening (runtime mutex).
  bool on_native_queue = false;
  void* native_queue = nullptr;
  // DLPack exports of the device's buffers whose deleter has not run.
  std::atomic<int64_t> live_exports{0};
};

struct Buffer {
  Device* device = nullptr;
  void* plugin_buffer = nullptr;
  uint64_t size = 0;
  uint64_t handle = 0;
  // The handle holds one reference and each live DLPack export one more;
  // the last drop frees the buffer (release_buffer_ref).
  std::atomic<uint32_t> refs{1};
  bool read_only = false;             // ops, writes, copies and fills may not write it
  bool imported = false;              // memory the app owns (xhal_buffer_import, DLPack)
  uint8_t base_misalign = 0;          // address of its first byte mod 8 (0 unless imported)
  xhal_release_fn release = nullptr;  // run once, after the plugin freed the wrapper
  void* release_user_data = nullptr;
};

// Drops one reference of `b`; the last one frees it: for imported memory the
// device's queued work is waited for, the plugin frees its buffer (under
// the queue lock), the release callback runs (outside it, so it may release
// other xhal objects), and the device's live count drops. Any thread.
void release_buffer_ref(Buffer* b) noexcept;
// A buffer whose memory an op, write, copy or fill would change must not be
// read-only: XHAL_INVALID_ARGUMENT naming `arg` and `what` writes it.
xhal_status_t check_writable(const Buffer& b, const char* arg, const char* what);

struct Plan {
  Device* device = nullptr;
  void* plugin_plan = nullptr;
  uint64_t count = 0;
  uint64_t num_rows = 0;
  uint64_t handle = 0;
};

struct Matrix {
  Device* device = nullptr;
  void* plugin_matrix = nullptr;
  Buffer* values = nullptr;  // nnz of values_dtype, owned (no handle)
  int64_t rows = 0, cols = 0, nnz = 0;
  xhal_dtype_t index_dtype = XHAL_DTYPE_I64;
  xhal_dtype_t values_dtype = XHAL_DTYPE_F32;  // f32 or f64
  uint64_t handle = 0;
  // Host copy of the validated pattern (kept: spgemm's symbolic phase,
  // xhal_csr_read) and derived facts. Empty while pattern_on_device.
  IndexArray row_ptr, col_idx;
  // The triangle and diagonal facts the solve checks read, from the host
  // analysis or from the plugin (csr_create_from_buffers).
  xhal_plugin_csr_facts_t facts{-1, 0, -1, 0, -1};
  std::vector<int64_t> diag_pos;  // entry index of (i,i) or -1; empty while pattern_on_device
  // Validated on the device (plugin ABI 1.9): the core keeps the pattern as
  // given, in two buffers of the device (index_dtype), which xhal_csr_read
  // reads and spgemm fetches to the host the first time it needs them.
  bool pattern_on_device = false;
  Buffer* device_row_ptr = nullptr;  // owned, no handle
  Buffer* device_col_idx = nullptr;  // owned, no handle; NULL when nnz is 0
  // The pattern came from device buffers (either path): the solves never
  // check its diagonal values, which the host may not see (docs/semantics.md).
  bool pattern_from_buffers = false;
  // The rest of the analysed pattern handed to csr_create, kept for the
  // matrix's lifetime so a plugin may refer to it instead of copying.
  IndexArray row_idx, t_row_ptr, t_col_idx, t_perm;
  // Zero-diagonal check of csr_solve: valid only while the values last came
  // from the host (a device write cannot be inspected without a transfer).
  // Read and written under the device's queue lock.
  bool values_known = true;
  int64_t first_zero_diag_row = -1;  // -1: no stored zero on the diagonal
};

}  // namespace xhal
