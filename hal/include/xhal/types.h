/* Basic types shared by the app ABI and the plugin ABI. */
#ifndef XHAL_TYPES_H_
#define XHAL_TYPES_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define XHAL_MAX_RANK 8

/* Element types. Values are ABI: append only. */
typedef enum xhal_dtype {
  XHAL_DTYPE_INVALID = 0,
  XHAL_DTYPE_F32 = 1,
  XHAL_DTYPE_F16 = 2,  /* storage only; arithmetic in f32 */
  XHAL_DTYPE_BF16 = 3, /* storage only; arithmetic in f32 */
  XHAL_DTYPE_I32 = 4,
  XHAL_DTYPE_I64 = 5,
  XHAL_DTYPE_U8 = 6,
  XHAL_DTYPE_F64 = 7,
  XHAL_DTYPE_COUNT_ = 8, /* not a dtype; bitmask width */
} xhal_dtype_t;

/* Operation ids; used for capability masks and reports. Append only. */
typedef enum xhal_op {
  XHAL_OP_INDEX_SELECT = 0,
  XHAL_OP_INDEX_ADD = 1,
  XHAL_OP_PERMUTE = 2,
  XHAL_OP_SOFTMAX_FORWARD = 3,
  XHAL_OP_SOFTMAX_BACKWARD = 4,
  XHAL_OP_RMS_NORM_FORWARD = 5,
  XHAL_OP_RMS_NORM_BACKWARD = 6,
  XHAL_OP_LAYER_NORM_FORWARD = 7,
  XHAL_OP_LAYER_NORM_BACKWARD = 8,
  XHAL_OP_SPMV = 9,
  XHAL_OP_SPMM = 10,
  XHAL_OP_CSR_SOLVE = 11,
  XHAL_OP_CSR_SOLVE_BACKWARD = 12,
  XHAL_OP_SPGEMM = 13,
  XHAL_OP_COUNT_ = 14, /* not an op */
} xhal_op_t;

/* Per-device counters. Transfers are copies between host memory and device
 * memory made by the plugin (for any reason); a device op must move none. */
typedef struct xhal_counters {
  uint64_t host_to_device_transfers;
  uint64_t host_to_device_bytes;
  uint64_t device_to_host_transfers;
  uint64_t device_to_host_bytes;
  uint64_t kernel_launches;
} xhal_counters_t;

#ifdef __cplusplus
}
#endif
#endif
