/* Dense ops. Semantics, canonical summation orders, error statuses and
 * accuracy bounds: docs/semantics.md. Every op is queued on the device's
 * in-order queue; it never reads or writes host memory. On any error nothing
 * is written. Unless an op says otherwise tensors must be contiguous. */
#ifndef XHAL_OPS_H_
#define XHAL_OPS_H_

#include "xhal/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- index plans --------------------------------------------------------
 * A validated list of row indices into a table of `num_rows` rows, uploaded
 * once and reused by index_select and index_add. `indices` is host memory of
 * dtype XHAL_DTYPE_I32 or XHAL_DTYPE_I64; an index outside [0, num_rows) is
 * XHAL_OUT_OF_RANGE naming its position and value. count may be 0. */
typedef struct xhal_index_plan* xhal_index_plan_t;

XHAL_API xhal_status_t xhal_index_plan_create(xhal_device_t device, const void* indices,
                                              xhal_dtype_t index_dtype, uint64_t count,
                                              uint64_t num_rows, xhal_index_plan_t* out_plan);
XHAL_API xhal_status_t xhal_index_plan_release(xhal_index_plan_t plan);

/* The same plan from indices already in a device tensor (rank 1, i32 or
 * i64, contiguous, on `device`): count is indices->shape[0]; the same
 * statuses and messages as from a host list (an index out of range names
 * the lowest such position and its value). The call returns when the plan
 * is built. cuda and rocm validate the list and build the plan on the
 * device: one 256-byte status block comes back to the host, whatever the
 * count. A backend without that (cpu, vulkan) reads the list to the host
 * (one transfer of count elements) and builds it there. Both are counted
 * by the device's transfer counters; docs/interop.md has the figures. */
XHAL_API xhal_status_t xhal_index_plan_create_from_tensor(xhal_device_t device,
                                                          const xhal_tensor_t* indices,
                                                          uint64_t num_rows,
                                                          xhal_index_plan_t* out_plan);

/* out[i, :] = src[idx[i], :].  src [num_rows, w], out [count, w]; any dtype. */
XHAL_API xhal_status_t xhal_index_select(xhal_device_t device, xhal_index_plan_t plan,
                                         const xhal_tensor_t* src, const xhal_tensor_t* out);

/* dst[idx[i], :] += alpha * src[i, :], deterministic (canonical order).
 * src [count, w], dst [num_rows, w]; f32. */
XHAL_API xhal_status_t xhal_index_add(xhal_device_t device, xhal_index_plan_t plan, float alpha,
                                      const xhal_tensor_t* src, const xhal_tensor_t* dst);

/* dst = src with dims reordered: dst.shape[i] = src.shape[perm[i]]. src may
 * be a strided view; dst is contiguous; any dtype; rank <= 8. */
XHAL_API xhal_status_t xhal_permute(xhal_device_t device, const xhal_tensor_t* src,
                                    const uint32_t* perm, const xhal_tensor_t* dst);

/* ---- row-wise ops over the last dimension --------------------------------
 * x is viewed as [rows, n] with n = last dim; f32. Per-row outputs (rstd,
 * mean) have `rows` elements; gamma/beta/dgamma/dbeta have n elements. */
XHAL_API xhal_status_t xhal_softmax_forward(xhal_device_t device, const xhal_tensor_t* x,
                                            const xhal_tensor_t* y);
XHAL_API xhal_status_t xhal_softmax_backward(xhal_device_t device, const xhal_tensor_t* y,
                                             const xhal_tensor_t* dy, const xhal_tensor_t* dx);

XHAL_API xhal_status_t xhal_rms_norm_forward(xhal_device_t device, const xhal_tensor_t* x,
                                             const xhal_tensor_t* gamma, float eps,
                                             const xhal_tensor_t* y, const xhal_tensor_t* rstd);
XHAL_API xhal_status_t xhal_rms_norm_backward(xhal_device_t device, const xhal_tensor_t* x,
                                              const xhal_tensor_t* gamma, const xhal_tensor_t* rstd,
                                              const xhal_tensor_t* dy, const xhal_tensor_t* dx,
                                              const xhal_tensor_t* dgamma);

XHAL_API xhal_status_t xhal_layer_norm_forward(xhal_device_t device, const xhal_tensor_t* x,
                                               const xhal_tensor_t* gamma,
                                               const xhal_tensor_t* beta, float eps,
                                               const xhal_tensor_t* y, const xhal_tensor_t* mean,
                                               const xhal_tensor_t* rstd);
XHAL_API xhal_status_t xhal_layer_norm_backward(
    xhal_device_t device, const xhal_tensor_t* x, const xhal_tensor_t* gamma,
    const xhal_tensor_t* mean, const xhal_tensor_t* rstd, const xhal_tensor_t* dy,
    const xhal_tensor_t* dx, const xhal_tensor_t* dgamma, const xhal_tensor_t* dbeta);

#ifdef __cplusplus
}
#endif
#endif
