// Tensor descriptors: dtype facts, contiguous descriptors and metadata-only
// permuted views. Nothing here touches a device.
#include <cstring>

#include "internal.h"
#include "validate.h"

using namespace xhal;

extern "C" {

uint32_t xhal_dtype_size(xhal_dtype_t dtype_arg) {
  switch (raw_enum(dtype_arg)) {
    case XHAL_DTYPE_F32:
      return 4;
    case XHAL_DTYPE_F16:
      return 2;
    case XHAL_DTYPE_BF16:
      return 2;
    case XHAL_DTYPE_I32:
      return 4;
    case XHAL_DTYPE_I64:
      return 8;
    case XHAL_DTYPE_U8:
      return 1;
    case XHAL_DTYPE_F64:
      return 8;
    default:
      return 0;
  }
}

const char* xhal_dtype_name(xhal_dtype_t dtype_arg) {
  switch (raw_enum(dtype_arg)) {
    case XHAL_DTYPE_F32:
      return "f32";
    case XHAL_DTYPE_F16:
      return "f16";
    case XHAL_DTYPE_BF16:
      return "bf16";
    case XHAL_DTYPE_I32:
      return "i32";
    case XHAL_DTYPE_I64:
      return "i64";
    case XHAL_DTYPE_U8:
      return "u8";
    case XHAL_DTYPE_F64:
      return "f64";
    case XHAL_DTYPE_INVALID:
      return "invalid";
    default:
      return "unknown";
  }
}

xhal_status_t xhal_tensor_init(xhal_buffer_t buffer, uint64_t offset, xhal_dtype_t dtype,
                               uint32_t rank, const int64_t* shape, xhal_tensor_t* out_tensor) {
  return entry("xhal_tensor_init", [&]() -> xhal_status_t {
    if (!out_tensor) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_tensor': NULL");
    Buffer* b = nullptr;
    XHAL_TRY(get_buffer(buffer, "buffer", &b));
    const uint32_t esize = dtype_size(raw_enum(dtype));
    if (esize == 0)
      return fail(XHAL_INVALID_ARGUMENT, "argument 'dtype': %u is not a dtype", raw_enum(dtype));
    if (offset % esize != 0)
      return fail(XHAL_INVALID_ARGUMENT,
                  "argument 'offset': byte offset %llu is not a multiple of %u, the size of %s",
                  static_cast<unsigned long long>(offset), esize, xhal_dtype_name(dtype));
    if (rank > XHAL_MAX_RANK)
      return fail(XHAL_INVALID_ARGUMENT, "argument 'rank': %u exceeds %d", rank, XHAL_MAX_RANK);
    if (rank > 0 && !shape) return fail(XHAL_INVALID_ARGUMENT, "argument 'shape': NULL");
    for (uint32_t i = 0; i < rank; ++i)
      if (shape[i] < 0)
        return fail(XHAL_INVALID_ARGUMENT, "argument 'shape': shape[%u] = %lld is negative", i,
                    static_cast<long long>(shape[i]));
    xhal_tensor_t t{};
    t.buffer = buffer;
    t.offset = offset;
    t.dtype = dtype;
    t.rank = rank;
    for (uint32_t i = 0; i < rank; ++i) t.shape[i] = shape[i];
    *out_tensor = t;
    return XHAL_OK;
  });
}

xhal_status_t xhal_tensor_permute_view(const xhal_tensor_t* tensor, const uint32_t* perm,
                                       xhal_tensor_t* out_view) {
  return entry("xhal_tensor_permute_view", [&]() -> xhal_status_t {
    if (!tensor) return fail(XHAL_INVALID_ARGUMENT, "argument 'tensor': NULL");
    if (!out_view) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_view': NULL");
    if (tensor->rank > XHAL_MAX_RANK)
      return fail(XHAL_INVALID_ARGUMENT, "argument 'tensor': rank %u exceeds %d", tensor->rank,
                  XHAL_MAX_RANK);
    XHAL_TRY(xhal::check_perm("perm", perm, tensor->rank));
    int64_t strides[XHAL_MAX_RANK];
    XHAL_TRY(xhal::explicit_strides("tensor", *tensor, strides));
    xhal_tensor_t v = *tensor;
    for (uint32_t i = 0; i < tensor->rank; ++i) {
      v.shape[i] = tensor->shape[perm[i]];
      v.strides[i] = strides[perm[i]];
    }
    *out_view = v;
    return XHAL_OK;
  });
}

}  // extern "C"
