/* Tensor descriptors: a typed, shaped view of a device buffer. Passed by
 * pointer to ops; plain data, no ownership. */
#ifndef XHAL_TENSOR_H_
#define XHAL_TENSOR_H_

#include "xhal/buffer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The layout is frozen (ABI): new fields never go here. */
typedef struct xhal_tensor {
  xhal_buffer_t buffer;
  uint64_t offset; /* bytes from the start of the buffer */
  xhal_dtype_t dtype;
  uint32_t rank; /* 0..XHAL_MAX_RANK; rank 0 is one element */
  int64_t shape[XHAL_MAX_RANK];
  /* In elements, >= 0. All zero (the default of a zeroed struct) means
   * contiguous row-major. Only ops that say so accept other strides. */
  int64_t strides[XHAL_MAX_RANK];
} xhal_tensor_t;

/* Bytes per element of a dtype (0 for XHAL_DTYPE_INVALID or unknown). */
XHAL_API uint32_t xhal_dtype_size(xhal_dtype_t dtype);
XHAL_API const char* xhal_dtype_name(xhal_dtype_t dtype);

/* Fills a contiguous descriptor. */
XHAL_API xhal_status_t xhal_tensor_init(xhal_buffer_t buffer, uint64_t offset, xhal_dtype_t dtype,
                                        uint32_t rank, const int64_t* shape,
                                        xhal_tensor_t* out_tensor);

/* Metadata only: out_view is `tensor` with dims reordered, out_view.shape[i]
 * = tensor.shape[perm[i]], with explicit strides. No data moves. */
XHAL_API xhal_status_t xhal_tensor_permute_view(const xhal_tensor_t* tensor, const uint32_t* perm,
                                                xhal_tensor_t* out_view);

#ifdef __cplusplus
}
#endif
#endif
