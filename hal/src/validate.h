// Argument checks shared by the op front ends. Each check either passes or
// sets the thread's message (naming the argument and the value) and returns
// the status that docs/semantics.md section 4 assigns. All checks of an op
// run before its first plugin call, so a failing op writes nothing.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>

#include "entry.h"
#include "internal.h"

namespace xhal {

// Bit masks of dtypes an op accepts by the spec.
inline constexpr uint32_t dtype_bit(xhal_dtype_t d) { return 1u << static_cast<uint32_t>(d); }
inline constexpr uint32_t kF32Only = dtype_bit(XHAL_DTYPE_F32);
inline constexpr uint32_t kAnyDtype = dtype_bit(XHAL_DTYPE_F32) | dtype_bit(XHAL_DTYPE_F16) |
                                      dtype_bit(XHAL_DTYPE_BF16) | dtype_bit(XHAL_DTYPE_I32) |
                                      dtype_bit(XHAL_DTYPE_I64) | dtype_bit(XHAL_DTYPE_U8) |
                                      dtype_bit(XHAL_DTYPE_F64);

// "[4, 3]"
std::string shape_string(uint32_t rank, const int64_t* shape);
inline std::string shape_string(std::span<const int64_t> shape) {
  return shape_string(static_cast<uint32_t>(shape.size()), shape.data());
}

// The integer behind an enum field a caller filled in. C lets any value into
// an enum; in C++ loading one outside the enum's range is undefined, so a
// field is read as bytes until it has been checked.
template <typename E>
inline uint32_t raw_enum(const E& field) {
  static_assert(sizeof(E) == sizeof(uint32_t));
  uint32_t v;
  std::memcpy(&v, &field, sizeof v);
  return v;
}
// A dtype value that names a real dtype (xhal_dtype_size > 0).
inline bool is_dtype(uint32_t raw) { return raw > XHAL_DTYPE_INVALID && raw < XHAL_DTYPE_COUNT_; }
// xhal_dtype_size of a raw dtype value, without a call out of the library.
inline uint32_t dtype_size(uint32_t raw) {
  constexpr uint32_t kSizes[XHAL_DTYPE_COUNT_] = {0, 4, 2, 2, 4, 8, 1, 8};
  return raw < XHAL_DTYPE_COUNT_ ? kSizes[raw] : 0;
}

// Layouts a tensor argument may have.
enum class Layout {
  kContiguous,  // strides all zero or row-major dense
  kStrided,     // any strides >= 0 (a view)
};

// A tensor argument that passed the per-tensor checks. No field has a
// default: check_tensor writes them all, and nothing may read one before it
// succeeded. (Zero-filling the 200 bytes of each of an op's two to eight
// arguments was a third of the core's per-call cost for small tensors.)
struct Checked {
  const char* name;
  const xhal_tensor_t* tensor;
  uint32_t elem_size;
  int64_t elements;
  // Bytes the tensor touches, [begin, end); begin == end when it is empty.
  uint64_t begin, end;
  xhal_plugin_tensor_t plugin;  // explicit element strides
  bool read_only;               // its buffer may not be written (an output must not be)
  uint32_t rank() const { return tensor->rank; }
  const int64_t* shape() const { return tensor->shape; }
  xhal_dtype_t dtype() const { return tensor->dtype; }
};

// Per-tensor checks, in this order: NULL descriptor, buffer handle (NULL,
// released), buffer of another device, dtype known and allowed for `op`,
// byte offset a multiple of the element size (the address, for imported
// memory), rank <= 8, extents >= 0,
// strides >= 0 (and row-major when `layout` is contiguous), bytes inside the
// buffer. Fills `out` on success; on failure `out` is partly written and
// must not be read.
xhal_status_t check_tensor(Device* device, const char* name, const xhal_tensor_t* t, const char* op,
                           uint32_t allowed_dtypes, Layout layout, Checked* out);

// Exact shape. XHAL_SHAPE_MISMATCH "argument 'dst': shape [4, 3] but
// expected [4, 8]".
xhal_status_t check_shape(const Checked& c, std::span<const int64_t> expected);
inline xhal_status_t check_shape(const Checked& c, std::initializer_list<int64_t> expected) {
  return check_shape(c, std::span<const int64_t>(expected.begin(), expected.size()));
}
xhal_status_t check_rank(const Checked& c, uint32_t rank);
// Same dtype as `ref` (XHAL_INVALID_ARGUMENT).
xhal_status_t check_same_dtype(const Checked& c, const Checked& ref);

// Two tensors overlap when they share a buffer and their byte ranges meet.
bool overlaps(const Checked& a, const Checked& b);
// Same buffer, offset, dtype and shape: the in-place case the spec allows.
bool same_view(const Checked& a, const Checked& b);
// `out` must not overlap `in` (XHAL_ALIASING naming both).
xhal_status_t check_no_alias(const Checked& out, const Checked& in);
// `out` may be exactly `in` (in place); any other overlap is XHAL_ALIASING.
xhal_status_t check_in_place_or_disjoint(const Checked& out, const Checked& in);

// "f32, f64": the dtypes of a mask, for messages ("nothing" when empty).
std::string dtype_list(uint32_t mask);
// The device implements `op` (its slot is present and it reports dtypes for
// it) for `dtype`; else XHAL_UNSUPPORTED naming the op and the backend.
xhal_status_t check_supported(Device* device, xhal_op_t op, bool slot_present, xhal_dtype_t dtype,
                              const char* arg);
// A slot that is not an op (index plans, matrices) is present.
xhal_status_t check_slot(Device* device, bool slot_present, const char* what);

// `perm` is a permutation of 0..rank-1 (NULL allowed for rank 0).
xhal_status_t check_perm(const char* name, const uint32_t* perm, uint32_t rank);
// Element strides of `t` with the all-zero default made explicit; fails on a
// negative stride.
xhal_status_t explicit_strides(const char* name, const xhal_tensor_t& t,
                               int64_t out[XHAL_MAX_RANK]);
// Row-major strides of a shape; false when the element count does not fit
// in int64 (the strides then saturate at INT64_MAX).
bool row_major_strides(uint32_t rank, const int64_t* shape, int64_t out[XHAL_MAX_RANK]);

// Reshapes a validated contiguous plugin tensor (same bytes, new shape).
// Inline over the fixed XHAL_MAX_RANK slots so the per-call copy folds into
// a few stores (it ran on every row-op call).
[[gnu::always_inline]] inline xhal_plugin_tensor_t reshape(const Checked& c,
                                                           std::initializer_list<int64_t> shape) {
  xhal_plugin_tensor_t p;
  p.buffer = c.plugin.buffer;
  p.offset = c.plugin.offset;
  p.dtype = c.plugin.dtype;
  const uint32_t rank = static_cast<uint32_t>(shape.size());
  p.rank = rank;
  const int64_t* extents = shape.begin();
  // Whole 16-byte pairs: a zero tail of odd length became `rep stos`, whose
  // start-up cost was most of this function.
  for (uint32_t k = 0; k < XHAL_MAX_RANK; k += 2) {
    int64_t e0 = k < rank ? extents[k] : 0, e1 = k + 1 < rank ? extents[k + 1] : 0;
    p.shape[k] = e0;
    p.shape[k + 1] = e1;
  }
  int64_t stride = 1;
  for (uint32_t k = XHAL_MAX_RANK; k-- > 0;) {
    const bool used = k < rank;
    p.strides[k] = used ? stride : 0;
    if (used) stride *= p.shape[k] > 0 ? p.shape[k] : 1;
  }
  return p;
}

// The reduced form of a permute (ops_permute.cpp): the permutation folded
// into src's strides in dst order, size-1 dims dropped, dims adjacent in
// memory merged. dst_shape: dst.shape (= src.shape[perm[i]]); src_strides:
// src's explicit element strides in src order.
struct PermutePlan {
  uint32_t rank = 0;
  int64_t shape[XHAL_MAX_RANK] = {};        // dst shape, merged
  int64_t src_strides[XHAL_MAX_RANK] = {};  // src element stride per dst dim
  bool is_copy = false;                     // one contiguous run: a plain copy
};
PermutePlan plan_permute(uint32_t rank, const int64_t* dst_shape, const int64_t* src_strides,
                         const uint32_t* perm);

}  // namespace xhal
