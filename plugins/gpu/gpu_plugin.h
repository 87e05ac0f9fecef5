// Host-side objects of the GPU plugin (one source for CUDA and ROCm) and
// the slot functions each op file defines. All device work of a device runs
// on its one in-order stream; a mutex serialises slots of one device because
// they share its scratch memory and counters.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "device_options.h"
#include "gpu_port.h"
#include "xhal/xhal_plugin.h"

namespace xhal::gpu {

struct Device {
  int ordinal = 0;
  DeviceOptions options;  // parsed at open, read-only afterwards
  gpuStream_t stream = nullptr;
  bool owns_stream = true;  // false: the caller's (device_open_on_queue), never destroyed
  // Buffers come from the runtime's stream-ordered allocator (the device's
  // default memory pool) where the device has one: cudaMalloc and cudaFree
  // wait for every stream of the device, so an allocation would stall the
  // host behind a framework's long kernel (docs/interop.md).
  bool stream_ordered_alloc = false;
  std::mutex mutex;
  std::atomic<uint64_t> h2d_transfers{0}, h2d_bytes{0}, d2h_transfers{0}, d2h_bytes{0}, launches{0};
  void* scratch = nullptr;  // grown on demand, used within one slot call
  size_t scratch_size = 0;
  // Counters of the kernels whose blocks wait for each other (row_kernel.h,
  // norm_backward.h): zero between launches (each launch's last block
  // clears what it used), grown on demand.
  unsigned* sync = nullptr;
  size_t sync_words = 0;
  // Blocks of each waiting kernel the device holds at once, by the kernel's
  // address (row_kernel.h), asked once rather than on every op call.
  std::unordered_map<const void*, int64_t> resident_blocks;
};

struct Buffer {
  void* ptr = nullptr;
  uint64_t size = 0;
  bool owned = true;            // false: the app's memory (buffer_import), never freed here
  bool stream_ordered = false;  // from gpuMallocAsync on the device's stream
  // Bumped by every write the plugin makes into the buffer (buffer_write,
  // buffer_copy, buffer_fill, spgemm's values): a matrix's copy of its
  // values in transposed order is stale once this moves (sparse_matrix.h).
  uint64_t version = 0;
};

// Makes `ordinal` the calling thread's current device. The runtime is linked
// into the plugin, so only the plugin changes it: a per-thread cache saves
// the call on every op.
inline void use_device(int ordinal) {
  thread_local int current = -1;
  if (current != ordinal) {
    gpuSetDevice(ordinal);
    current = ordinal;
  }
}

// Sets the plugin message through the host (printf-style) and returns st.
xhal_status_t fail(xhal_status_t st, const char* fmt, ...);
// The loading core's plugin ABI minor (fields a desc has: docs/abi.md).
uint32_t core_abi_minor();
// Maps a runtime error of `what` to a status with a message.
xhal_status_t runtime_error(gpuError_t e, const char* what);
// After launches: reports a launch failure as XHAL_PLUGIN_ERROR.
xhal_status_t check_launch(Device* d, const char* op, int launches = 1);
// Scratch memory of at least `bytes` on the device (waits for the stream
// when it has to grow).
xhal_status_t scratch(Device* d, size_t bytes, void** out);
// At least `words` zeroed counters on the device (Device::sync).
xhal_status_t sync_counters(Device* d, size_t words, unsigned** out);
// Uploads host data into a new device allocation (counted as a transfer).
xhal_status_t upload(Device* d, const void* host, size_t bytes, void** out);

inline char* tensor_ptr(const xhal_plugin_tensor_t* t) {
  return static_cast<char*>(static_cast<Buffer*>(t->buffer)->ptr) + t->offset;
}
inline float* tensor_f32(const xhal_plugin_tensor_t* t) {
  return reinterpret_cast<float*>(tensor_ptr(t));
}
template <class S>
inline S* tensor_as(const xhal_plugin_tensor_t* t) {
  return reinterpret_cast<S*>(tensor_ptr(t));
}
inline int64_t tensor_elems(const xhal_plugin_tensor_t* t) {
  int64_t n = 1;
  for (uint32_t i = 0; i < t->rank; ++i) n *= t->shape[i];
  return n;
}
size_t dtype_size(xhal_dtype_t t);

// Grid size for a grid-stride loop over `items` with `block` threads.
inline unsigned grid_for(int64_t items, int block) {
  int64_t g = (items + block - 1) / block;
  if (g < 1) g = 1;
  if (g > (int64_t{1} << 20)) g = int64_t{1} << 20;
  return static_cast<unsigned>(g);
}

// The backend this file is compiled for (device_options.h).
#if defined(XHAL_GPU_HIP)
constexpr GpuBackend kBackend = GpuBackend::kRocm;
#else
constexpr GpuBackend kBackend = GpuBackend::kCuda;
#endif

// Makes the device current on the calling thread and returns it; every
// slot that queues work starts with it.
inline Device* enter(void* device) {
  auto* d = static_cast<Device*>(device);
  use_device(d->ordinal);
  return d;
}

// ---- slots (one file per op family, as in plugins/cpu) ----
// buffers.cpp
xhal_status_t buffer_allocate(void*, uint64_t, void**);
void buffer_free(void*, void*);
xhal_status_t buffer_write(void*, void*, uint64_t, const void*, uint64_t);
xhal_status_t buffer_read(void*, void*, uint64_t, void*, uint64_t);
xhal_status_t buffer_copy(void*, void*, uint64_t, void*, uint64_t, uint64_t);
xhal_status_t buffer_fill(void*, void*, uint64_t, uint64_t, const void*, uint32_t);
// interop.cpp (plugin ABI 1.3)
xhal_status_t device_get_memory_kind(void*, xhal_memory_kind_t*, int32_t*);
xhal_status_t buffer_import(void*, xhal_memory_kind_t, int32_t, void*, uint64_t, void**);
xhal_status_t buffer_get_native(void*, void*, void**);
xhal_status_t device_get_native_queue(void*, void**);
xhal_status_t queue_signal_external(void*, void*);
xhal_status_t queue_wait_external(void*, void*);
// index_plan.cpp, index_select.cpp, index_add.cpp, permute.cpp
xhal_status_t index_plan_create(void*, const xhal_plugin_index_plan_desc_t*, void**);
void index_plan_destroy(void*, void*);
// index_plan_device.cpp (plugin ABI 1.5)
xhal_status_t index_plan_create_from_buffer(void*, void*, uint64_t, xhal_dtype_t, uint64_t,
                                            uint64_t, void**, xhal_plugin_index_fault_t*);
xhal_status_t index_select(void*, void*, const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*);
xhal_status_t index_add(void*, void*, float, const xhal_plugin_tensor_t*,
                        const xhal_plugin_tensor_t*);
xhal_status_t permute(void*, const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*);
// softmax.cpp, rms_norm.cpp, layer_norm.cpp
xhal_status_t softmax_forward(void*, const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*);
xhal_status_t softmax_backward(void*, const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*,
                               const xhal_plugin_tensor_t*);
xhal_status_t rms_norm_forward(void*, const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*,
                               float, const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*);
xhal_status_t rms_norm_backward(void*, const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*,
                                const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*,
                                const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*);
xhal_status_t layer_norm_forward(void*, const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*,
                                 const xhal_plugin_tensor_t*, float, const xhal_plugin_tensor_t*,
                                 const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*);
xhal_status_t layer_norm_backward(void*, const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*,
                                  const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*,
                                  const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*,
                                  const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*);
// sparse_matrix.cpp, sparse_spmv.cpp, sparse_solve.cpp,
// sparse_solve_backward.cpp, sparse_spgemm.cpp
xhal_status_t csr_create(void*, const xhal_plugin_csr_desc_t*, void**);
void csr_destroy(void*, void*);
#if !defined(XHAL_GPU_HIP)
// sparse_from_buffers.cpp (CUDA)
xhal_status_t csr_create_from_buffers(void*, const xhal_plugin_csr_buffers_desc_t*, void**,
                                      xhal_plugin_csr_fault_t*, xhal_plugin_csr_facts_t*);
#endif
xhal_status_t spmv(void*, void*, xhal_transpose_t, float, const xhal_plugin_tensor_t*, float,
                   const xhal_plugin_tensor_t*);
xhal_status_t spmm(void*, void*, xhal_transpose_t, float, const xhal_plugin_tensor_t*, float,
                   const xhal_plugin_tensor_t*);
xhal_status_t csr_solve(void*, void*, xhal_transpose_t, xhal_triangle_t, xhal_diagonal_t,
                        const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*);
xhal_status_t csr_solve_backward(void*, void*, xhal_transpose_t, xhal_triangle_t, xhal_diagonal_t,
                                 const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*,
                                 const xhal_plugin_tensor_t*, const xhal_plugin_tensor_t*);
xhal_status_t spgemm_numeric(void*, void*, void*, void*);

}  // namespace xhal::gpu
