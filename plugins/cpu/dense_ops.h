// Dense op and buffer entry points of the CPU plugin (one file per kernel);
// plugin.cpp puts them in the table.
#pragma once

#include "cpu_plugin.h"

namespace xhal::cpu {

// Reports a failure's message through the core's host table (host.cpp).
void set_host(const xhal_plugin_host_t* host);
void set_error(const char* message);
// A matrix's value dtype from csr_create's desc: its values_dtype when the
// core is 1.6 or newer (the field exists), else f32.
xhal_dtype_t csr_values_dtype(const xhal_plugin_csr_desc_t* desc);

// ---- buffers (buffers.cpp) ----
xhal_status_t buffer_allocate(void* device, uint64_t size, void** out_buffer);
void buffer_free(void* device, void* buffer);
xhal_status_t buffer_write(void* device, void* dst, uint64_t offset, const void* src,
                           uint64_t size);
xhal_status_t buffer_read(void* device, void* src, uint64_t offset, void* dst, uint64_t size);
xhal_status_t buffer_copy(void* device, void* src, uint64_t src_offset, void* dst,
                          uint64_t dst_offset, uint64_t size);
xhal_status_t buffer_fill(void* device, void* dst, uint64_t offset, uint64_t size,
                          const void* pattern, uint32_t pattern_size);

// ---- interop, plugin ABI 1.3 (interop.cpp) ----
xhal_status_t device_get_memory_kind(void* device, xhal_memory_kind_t* out_kind,
                                     int32_t* out_ordinal);
xhal_status_t buffer_import(void* device, xhal_memory_kind_t kind, int32_t ordinal, void* pointer,
                            uint64_t size, void** out_buffer);
xhal_status_t buffer_get_native(void* device, void* buffer, void** out_pointer);
xhal_status_t device_get_native_queue(void* device, void** out_queue);
xhal_status_t queue_signal_external(void* device, void* external_queue);
xhal_status_t queue_wait_external(void* device, void* external_queue);

// ---- index plans, gather, scatter-add (index_plan.cpp, index_select.cpp, index_add.cpp) ----
xhal_status_t index_plan_create(void* device, const xhal_plugin_index_plan_desc_t* desc,
                                void** out_plan);
void index_plan_destroy(void* device, void* plan);
xhal_status_t index_select(void* device, void* plan, const xhal_plugin_tensor_t* src,
                           const xhal_plugin_tensor_t* out);
xhal_status_t index_add(void* device, void* plan, float alpha, const xhal_plugin_tensor_t* src,
                        const xhal_plugin_tensor_t* dst);

// ---- permute (permute.cpp) ----
xhal_status_t permute(void* device, const xhal_plugin_tensor_t* src,
                      const xhal_plugin_tensor_t* dst);

// ---- row ops (softmax.cpp, rms_norm.cpp, layer_norm.cpp) ----
xhal_status_t softmax_forward(void* device, const xhal_plugin_tensor_t* x,
                              const xhal_plugin_tensor_t* y);
xhal_status_t softmax_backward(void* device, const xhal_plugin_tensor_t* y,
                               const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx);
xhal_status_t rms_norm_forward(void* device, const xhal_plugin_tensor_t* x,
                               const xhal_plugin_tensor_t* gamma, float eps,
                               const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* rstd);
xhal_status_t rms_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                const xhal_plugin_tensor_t* gamma, const xhal_plugin_tensor_t* rstd,
                                const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx,
                                const xhal_plugin_tensor_t* dgamma);
xhal_status_t layer_norm_forward(void* device, const xhal_plugin_tensor_t* x,
                                 const xhal_plugin_tensor_t* gamma,
                                 const xhal_plugin_tensor_t* beta, float eps,
                                 const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* mean,
                                 const xhal_plugin_tensor_t* rstd);
xhal_status_t layer_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                  const xhal_plugin_tensor_t* gamma,
                                  const xhal_plugin_tensor_t* mean,
                                  const xhal_plugin_tensor_t* rstd, const xhal_plugin_tensor_t* dy,
                                  const xhal_plugin_tensor_t* dx,
                                  const xhal_plugin_tensor_t* dgamma,
                                  const xhal_plugin_tensor_t* dbeta);

}  // namespace xhal::cpu
