/* raw_calls.c: xhal calls with enum arguments passed as raw uint32_t. */
#ifndef XHAL_CONFORMANCE_RAW_CALLS_H_
#define XHAL_CONFORMANCE_RAW_CALLS_H_

#include "xhal/xhal.h"

#ifdef __cplusplus
extern "C" {
#endif

uint32_t raw_dtype_size(uint32_t dtype);
const char* raw_dtype_name(uint32_t dtype);
xhal_status_t raw_index_plan_create(xhal_device_t device, const void* indices, uint32_t index_dtype,
                                    uint64_t count, uint64_t num_rows, xhal_index_plan_t* out_plan);
xhal_status_t raw_tensor_init(xhal_buffer_t buffer, uint64_t offset, uint32_t dtype, uint32_t rank,
                              const int64_t* shape, xhal_tensor_t* out_tensor);
xhal_status_t raw_spmv(xhal_device_t device, xhal_csr_t a, uint32_t trans, float alpha,
                       const xhal_tensor_t* x, float beta, const xhal_tensor_t* y);
xhal_status_t raw_spmm(xhal_device_t device, xhal_csr_t a, uint32_t trans, float alpha,
                       const xhal_tensor_t* x, float beta, const xhal_tensor_t* y);
xhal_status_t raw_csr_solve(xhal_device_t device, xhal_csr_t a, uint32_t trans, uint32_t triangle,
                            uint32_t diagonal, const xhal_tensor_t* b, const xhal_tensor_t* x);
xhal_status_t raw_csr_solve_backward(xhal_device_t device, xhal_csr_t a, uint32_t trans,
                                     uint32_t triangle, uint32_t diagonal, const xhal_tensor_t* x,
                                     const xhal_tensor_t* dx, const xhal_tensor_t* gb,
                                     const xhal_tensor_t* ga);

#ifdef __cplusplus
}
#endif
#endif
