/* Calls that pass enum arguments as raw 32-bit values, as a C program may
 * (C converts any int to an enum type without complaint). The suite, the
 * unit tests and the fuzz harnesses are C++, where merely loading an
 * out-of-range enum value is undefined behaviour that UBSan reports in the
 * caller; from here the value reaches libxhal as it would from a C caller,
 * so a report is the core's. */
#include <stdint.h>

#include "raw_calls.h"

uint32_t raw_dtype_size(uint32_t dtype) { return xhal_dtype_size((xhal_dtype_t)dtype); }

const char* raw_dtype_name(uint32_t dtype) { return xhal_dtype_name((xhal_dtype_t)dtype); }

xhal_status_t raw_index_plan_create(xhal_device_t device, const void* indices, uint32_t index_dtype,
                                    uint64_t count, uint64_t num_rows,
                                    xhal_index_plan_t* out_plan) {
  return xhal_index_plan_create(device, indices, (xhal_dtype_t)index_dtype, count, num_rows,
                                out_plan);
}

xhal_status_t raw_tensor_init(xhal_buffer_t buffer, uint64_t offset, uint32_t dtype, uint32_t rank,
                              const int64_t* shape, xhal_tensor_t* out_tensor) {
  return xhal_tensor_init(buffer, offset, (xhal_dtype_t)dtype, rank, shape, out_tensor);
}

xhal_status_t raw_spmv(xhal_device_t device, xhal_csr_t a, uint32_t trans, float alpha,
                       const xhal_tensor_t* x, float beta, const xhal_tensor_t* y) {
  return xhal_spmv(device, a, (xhal_transpose_t)trans, alpha, x, beta, y);
}

xhal_status_t raw_spmm(xhal_device_t device, xhal_csr_t a, uint32_t trans, float alpha,
                       const xhal_tensor_t* x, float beta, const xhal_tensor_t* y) {
  return xhal_spmm(device, a, (xhal_transpose_t)trans, alpha, x, beta, y);
}

xhal_status_t raw_csr_solve(xhal_device_t device, xhal_csr_t a, uint32_t trans, uint32_t triangle,
                            uint32_t diagonal, const xhal_tensor_t* b, const xhal_tensor_t* x) {
  return xhal_csr_solve(device, a, (xhal_transpose_t)trans, (xhal_triangle_t)triangle,
                        (xhal_diagonal_t)diagonal, b, x);
}

xhal_status_t raw_csr_solve_backward(xhal_device_t device, xhal_csr_t a, uint32_t trans,
                                     uint32_t triangle, uint32_t diagonal, const xhal_tensor_t* x,
                                     const xhal_tensor_t* dx, const xhal_tensor_t* gb,
                                     const xhal_tensor_t* ga) {
  return xhal_csr_solve_backward(device, a, (xhal_transpose_t)trans, (xhal_triangle_t)triangle,
                                 (xhal_diagonal_t)diagonal, x, dx, gb, ga);
}
