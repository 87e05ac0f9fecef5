// Internals shared by the CPU plugin's files: what a buffer and a device
// handle are, and the op entry points the plugin table refers to.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "xhal/xhal_plugin.h"

namespace xhal::cpu {

// A buffer handle given to the core is a CpuBuffer*.
struct CpuBuffer {
  std::byte* data = nullptr;  // 64-byte aligned, unless imported
  uint64_t size = 0;
  bool owned = true;  // false: the app's memory (buffer_import), never freed here
  // Bumped by every write the plugin makes into the buffer (buffer_write,
  // buffer_copy, buffer_fill, spgemm's values): data kept from a matrix's
  // values is current while the version it was made from is.
  std::atomic<uint64_t> version{0};
};

// A device handle given to the core is a CpuDevice*.
struct CpuDevice {
  std::atomic<uint64_t> h2d_transfers{0}, h2d_bytes{0};
  std::atomic<uint64_t> d2h_transfers{0}, d2h_bytes{0};
  std::atomic<uint64_t> kernel_launches{0};
  std::string options;  // in force, as device_get_options reports them
};

inline void mark_written(CpuBuffer* b) { b->version.fetch_add(1, std::memory_order_relaxed); }

inline void count_launch(void* device) {
  static_cast<CpuDevice*>(device)->kernel_launches.fetch_add(1, std::memory_order_relaxed);
}

// A copy of the caller's host data into the device's own memory: a write,
// or the arrays an index plan or a CSR pattern keeps (docs/plugin-guide.md
// "Counters": plan uploads move the transfer counters, on a GPU and here).
inline void count_upload(void* device, uint64_t bytes) {
  auto* d = static_cast<CpuDevice*>(device);
  d->h2d_transfers.fetch_add(1, std::memory_order_relaxed);
  d->h2d_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

// Typed address of a validated tensor's first element.
template <typename T>
inline T* tensor_data(const xhal_plugin_tensor_t* t) {
  return reinterpret_cast<T*>(static_cast<CpuBuffer*>(t->buffer)->data + t->offset);
}

// ---- sparse slots (sparse_*.cpp) ----
xhal_status_t csr_create(void* device, const xhal_plugin_csr_desc_t* desc, void** out_matrix);
void csr_destroy(void* device, void* matrix);
xhal_status_t spmv(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y);
xhal_status_t spmm(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y);
xhal_status_t csr_solve(void* device, void* a, xhal_transpose_t trans, xhal_triangle_t triangle,
                        xhal_diagonal_t diagonal, const xhal_plugin_tensor_t* b,
                        const xhal_plugin_tensor_t* x);
xhal_status_t csr_solve_backward(void* device, void* a, xhal_transpose_t trans,
                                 xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                                 const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* dx,
                                 const xhal_plugin_tensor_t* gb, const xhal_plugin_tensor_t* ga);
xhal_status_t spgemm_numeric(void* device, void* a, void* b, void* c);

}  // namespace xhal::cpu
