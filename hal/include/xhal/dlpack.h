/* DLPack 1.x structs under xhal names: layout-identical to dlpack.h's
 * DLPackVersion, DLDevice, DLDataType, DLTensor, DLManagedTensor and
 * DLManagedTensorVersioned (DLPack 1.0 and 1.1), so a pointer to one is a
 * pointer to the other. They are declared here because Debian ships only
 * the 0.6 header, and under xhal names so that an app may include any
 * dlpack.h beside this one. */
#ifndef XHAL_DLPACK_H_
#define XHAL_DLPACK_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define XHAL_DLPACK_MAJOR_VERSION 1
#define XHAL_DLPACK_MINOR_VERSION 0

/* DLManagedTensorVersioned.flags bits. */
#define XHAL_DLPACK_FLAG_READ_ONLY (UINT64_C(1) << 0)
#define XHAL_DLPACK_FLAG_IS_COPIED (UINT64_C(1) << 1)

/* DLDeviceType values xhal uses (a DLDevice stores them as int32). */
#define XHAL_DLPACK_DEVICE_CPU 1
#define XHAL_DLPACK_DEVICE_CUDA 2
#define XHAL_DLPACK_DEVICE_ROCM 10

/* DLDataTypeCode values xhal uses. */
#define XHAL_DLPACK_DTYPE_INT 0
#define XHAL_DLPACK_DTYPE_UINT 1
#define XHAL_DLPACK_DTYPE_FLOAT 2
#define XHAL_DLPACK_DTYPE_BFLOAT 4

typedef struct xhal_dlpack_version {
  uint32_t major;
  uint32_t minor;
} xhal_dlpack_version_t;

typedef struct xhal_dlpack_device {
  int32_t device_type; /* a DLDeviceType */
  int32_t device_id;
} xhal_dlpack_device_t;

typedef struct xhal_dlpack_dtype {
  uint8_t code; /* a DLDataTypeCode */
  uint8_t bits;
  uint16_t lanes;
} xhal_dlpack_dtype_t;

typedef struct xhal_dlpack_tensor {
  void* data;
  xhal_dlpack_device_t device;
  int32_t ndim;
  xhal_dlpack_dtype_t dtype;
  int64_t* shape;   /* [ndim] */
  int64_t* strides; /* [ndim] in elements, or NULL: compact row-major */
  uint64_t byte_offset;
} xhal_dlpack_tensor_t;

/* DLPack 0.x's DLManagedTensor. */
typedef struct xhal_dlpack_managed_tensor {
  xhal_dlpack_tensor_t dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct xhal_dlpack_managed_tensor* self);
} xhal_dlpack_managed_tensor_t;

/* DLPack 1.x's DLManagedTensorVersioned. */
typedef struct xhal_dlpack_managed_tensor_versioned {
  xhal_dlpack_version_t version;
  void* manager_ctx;
  void (*deleter)(struct xhal_dlpack_managed_tensor_versioned* self);
  uint64_t flags;
  xhal_dlpack_tensor_t dl_tensor;
} xhal_dlpack_managed_tensor_versioned_t;

#if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L)
#ifdef __cplusplus
#define XHAL_DLPACK_ASSERT_ static_assert
#else
#define XHAL_DLPACK_ASSERT_ _Static_assert
#endif
/* The published layout on 64-bit targets. */
XHAL_DLPACK_ASSERT_(sizeof(void*) != 8 || sizeof(xhal_dlpack_tensor_t) == 48,
                    "DLTensor is 48 bytes");
XHAL_DLPACK_ASSERT_(sizeof(void*) != 8 || sizeof(xhal_dlpack_managed_tensor_t) == 64,
                    "DLManagedTensor is 64 bytes");
XHAL_DLPACK_ASSERT_(sizeof(void*) != 8 || sizeof(xhal_dlpack_managed_tensor_versioned_t) == 80,
                    "DLManagedTensorVersioned is 80 bytes");
XHAL_DLPACK_ASSERT_(sizeof(void*) != 8 ||
                        offsetof(xhal_dlpack_managed_tensor_versioned_t, dl_tensor) == 32,
                    "dl_tensor follows version, manager_ctx, deleter, flags");
#undef XHAL_DLPACK_ASSERT_
#endif

#ifdef __cplusplus
}
#endif
#endif
