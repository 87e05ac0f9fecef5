#include "validate.h"

#include <cinttypes>

namespace xhal {

std::string dtype_list(uint32_t mask) {
  std::string s;
  for (uint32_t d = 1; d < XHAL_DTYPE_COUNT_; ++d) {
    if (!(mask & (1u << d))) continue;
    if (!s.empty()) s += ", ";
    s += xhal_dtype_name(static_cast<xhal_dtype_t>(d));
  }
  return s.empty() ? "nothing" : s;
}

namespace {

using u128 = unsigned __int128;

bool is_row_major(const xhal_tensor_t& t) {
  // The product of the inner extents, saturated past int64 (no stride can
  // equal it then): an empty tensor's other extents may multiply past 2^63
  // before its zero extent is reached (shape [0, 2^63 - 1, 2]).
  const u128 past_int64 = u128(1) << 64;
  u128 expected = 1;
  for (uint32_t k = t.rank; k-- > 0;) {
    // The stride of a dim of extent 1 never matters; an empty tensor has no
    // layout to get wrong.
    if (t.shape[k] == 0) return true;
    if (t.shape[k] != 1 && (t.strides[k] < 0 || static_cast<u128>(t.strides[k]) != expected))
      return false;
    expected *= static_cast<uint64_t>(t.shape[k]);  // extents are >= 0 here
    if (expected > past_int64) expected = past_int64;
  }
  return true;
}

bool all_zero_strides(const xhal_tensor_t& t) {
  for (uint32_t k = 0; k < t.rank; ++k)
    if (t.strides[k] != 0) return false;
  return true;
}

}  // namespace

std::string shape_string(uint32_t rank, const int64_t* shape) {
  std::string s = "[";
  for (uint32_t i = 0; i < rank; ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

bool row_major_strides(uint32_t rank, const int64_t* shape, int64_t out[XHAL_MAX_RANK]) {
  // Saturating: the strides of a tensor with a zero extent are never used,
  // but the other extents' product may not fit (shape [0, 2^62, 4]).
  int64_t s = 1;
  bool fits = true;
  for (uint32_t k = rank; k-- > 0;) {
    out[k] = s;
    const int64_t e = shape[k] > 0 ? shape[k] : 1;
    if (s > INT64_MAX / e) {
      s = INT64_MAX;
      fits = false;
    } else {
      s *= e;
    }
  }
  return fits;
}

xhal_status_t explicit_strides(const char* name, const xhal_tensor_t& t,
                               int64_t out[XHAL_MAX_RANK]) {
  for (uint32_t k = 0; k < t.rank; ++k)
    if (t.strides[k] < 0)
      return fail(XHAL_INVALID_ARGUMENT, "argument '%s': strides[%u] = %" PRId64 " is negative",
                  name, k, t.strides[k]);
  if (all_zero_strides(t)) {
    if (!row_major_strides(t.rank, t.shape, out)) [[unlikely]] {
      // Fine for an empty tensor: its strides are never used.
      bool empty = false;
      for (uint32_t k = 0; k < t.rank; ++k) empty = empty || t.shape[k] == 0;
      if (!empty)
        return fail(XHAL_OUT_OF_RANGE, "argument '%s': shape %s has too many elements", name,
                    shape_string(t.rank, t.shape).c_str());
    }
  } else {
    for (uint32_t k = 0; k < t.rank; ++k) out[k] = t.strides[k];
  }
  return XHAL_OK;
}

xhal_status_t check_tensor(Device* device, const char* name, const xhal_tensor_t* t, const char* op,
                           uint32_t allowed_dtypes, Layout layout, Checked* out) {
  if (!t) return fail(XHAL_INVALID_ARGUMENT, "argument '%s': NULL tensor", name);
  Buffer* buf = nullptr;
  if (xhal_status_t s = get_buffer(t->buffer, name, &buf); s != XHAL_OK) return s;
  if (buf->device != device)
    return fail(XHAL_WRONG_DEVICE,
                "argument '%s': buffer belongs to device %s:%u, not to the op's device %s:%u", name,
                buf->device->backend.c_str(), buf->device->backend_index, device->backend.c_str(),
                device->backend_index);
  const uint32_t raw_dtype = raw_enum(t->dtype);
  if (!is_dtype(raw_dtype))
    return fail(XHAL_INVALID_ARGUMENT, "argument '%s': dtype %u is not a dtype", name, raw_dtype);
  const uint32_t esize = dtype_size(raw_dtype);
  if (!(allowed_dtypes & dtype_bit(t->dtype)))
    return fail(XHAL_INVALID_ARGUMENT, "argument '%s': dtype %s not allowed, op %s takes %s", name,
                xhal_dtype_name(t->dtype), op, dtype_list(allowed_dtypes).c_str());
  // Natural alignment, so that no backend ever issues a misaligned load
  // (a misaligned f32 access is a fault on a GPU, and faults poison it).
  // Imported memory may start anywhere: the address is what must be aligned.
  if ((t->offset + buf->base_misalign) % esize != 0)
    return fail(XHAL_INVALID_ARGUMENT,
                "argument '%s': byte offset %" PRIu64 " is not a multiple of %u, the size of %s%s",
                name, t->offset, esize, xhal_dtype_name(t->dtype),
                buf->base_misalign ? " (counted from an aligned address: the buffer's imported "
                                     "memory starts at one that is not)"
                                   : "");
  if (t->rank > XHAL_MAX_RANK)
    return fail(XHAL_INVALID_ARGUMENT, "argument '%s': rank %u exceeds %d", name, t->rank,
                XHAL_MAX_RANK);
  u128 elements = 1;
  for (uint32_t k = 0; k < t->rank; ++k) {
    if (t->shape[k] < 0)
      return fail(XHAL_INVALID_ARGUMENT, "argument '%s': shape %s has a negative extent", name,
                  shape_string(t->rank, t->shape).c_str());
    elements *= static_cast<uint64_t>(t->shape[k]);
    if (elements > (u128(1) << 62))
      return fail(XHAL_OUT_OF_RANGE, "argument '%s': shape %s has too many elements", name,
                  shape_string(t->rank, t->shape).c_str());
  }
  // Strides go straight into the caller's Checked: building a local copy
  // and assigning it cost more than all the checks together (a 200-byte
  // zero-fill plus a copy that stalled on store forwarding).
  xhal_plugin_tensor_t& p = out->plugin;
  int64_t* strides = p.strides;
  if (xhal_status_t s = explicit_strides(name, *t, strides); s != XHAL_OK) return s;
  if (layout == Layout::kContiguous && !all_zero_strides(*t) && !is_row_major(*t))
    return fail(XHAL_INVALID_ARGUMENT,
                "argument '%s': strides %s are not contiguous for shape %s (op %s needs a "
                "contiguous tensor)",
                name, shape_string(t->rank, t->strides).c_str(),
                shape_string(t->rank, t->shape).c_str(), op);

  // Byte extent, in 128-bit arithmetic so no product or sum can wrap.
  u128 end = t->offset;
  if (elements > 0) {
    u128 last = 0;
    for (uint32_t k = 0; k < t->rank; ++k)
      last += u128(static_cast<uint64_t>(t->shape[k] - 1)) * static_cast<uint64_t>(strides[k]);
    end += (last + 1) * esize;
  }
  if (end > buf->size)
    return fail(XHAL_OUT_OF_RANGE,
                "argument '%s': shape %s of %s at byte offset %" PRIu64
                " needs %s bytes but the buffer has %" PRIu64,
                name, shape_string(t->rank, t->shape).c_str(), xhal_dtype_name(t->dtype), t->offset,
                end > u128(UINT64_MAX) ? "more than 2^64" : std::to_string(uint64_t(end)).c_str(),
                buf->size);

  out->name = name;
  out->tensor = t;
  out->elem_size = esize;
  out->elements = static_cast<int64_t>(elements);
  out->begin = t->offset;
  out->end = static_cast<uint64_t>(end);
  out->read_only = buf->read_only;
  p.buffer = buf->plugin_buffer;
  p.offset = t->offset;
  p.dtype = t->dtype;
  p.rank = t->rank;
  for (uint32_t k = 0; k < XHAL_MAX_RANK; ++k) {
    const bool used = k < t->rank;
    p.shape[k] = used ? t->shape[k] : 0;
    if (!used) p.strides[k] = 0;
  }
  return XHAL_OK;
}

xhal_status_t check_shape(const Checked& c, std::span<const int64_t> expected) {
  bool ok = c.rank() == expected.size();
  for (size_t k = 0; ok && k < expected.size(); ++k) ok = c.shape()[k] == expected[k];
  if (!ok)
    return fail(XHAL_SHAPE_MISMATCH, "argument '%s': shape %s but expected %s", c.name,
                shape_string(c.rank(), c.shape()).c_str(), shape_string(expected).c_str());
  return XHAL_OK;
}

xhal_status_t check_rank(const Checked& c, uint32_t rank) {
  if (c.rank() != rank)
    return fail(XHAL_SHAPE_MISMATCH, "argument '%s': rank %u (shape %s) but expected rank %u",
                c.name, c.rank(), shape_string(c.rank(), c.shape()).c_str(), rank);
  return XHAL_OK;
}

xhal_status_t check_same_dtype(const Checked& c, const Checked& ref) {
  if (c.dtype() != ref.dtype())
    return fail(XHAL_INVALID_ARGUMENT, "argument '%s': dtype %s but argument '%s' is %s", c.name,
                xhal_dtype_name(c.dtype()), ref.name, xhal_dtype_name(ref.dtype()));
  return XHAL_OK;
}

bool overlaps(const Checked& a, const Checked& b) {
  if (a.tensor->buffer != b.tensor->buffer) return false;
  if (a.begin == a.end || b.begin == b.end) return false;
  return a.begin < b.end && b.begin < a.end;
}

bool same_view(const Checked& a, const Checked& b) {
  if (a.tensor->buffer != b.tensor->buffer || a.begin != b.begin || a.dtype() != b.dtype() ||
      a.rank() != b.rank())
    return false;
  for (uint32_t k = 0; k < a.rank(); ++k) {
    if (a.shape()[k] != b.shape()[k]) return false;
    if (a.plugin.strides[k] != b.plugin.strides[k]) return false;
  }
  return true;
}

static xhal_status_t alias_failure(const Checked& out, const Checked& in, const char* allowed) {
  return fail(XHAL_ALIASING,
              "argument '%s' (bytes [%" PRIu64 ", %" PRIu64
              ")) overlaps argument '%s' (bytes [%" PRIu64 ", %" PRIu64 ")) in the same buffer%s",
              out.name, out.begin, out.end, in.name, in.begin, in.end, allowed);
}

xhal_status_t check_no_alias(const Checked& out, const Checked& in) {
  if (overlaps(out, in)) return alias_failure(out, in, "");
  return XHAL_OK;
}

xhal_status_t check_in_place_or_disjoint(const Checked& out, const Checked& in) {
  if (overlaps(out, in) && !same_view(out, in))
    return alias_failure(out, in,
                         "; only the identical view (same offset, dtype, shape) is allowed");
  return XHAL_OK;
}

xhal_status_t check_supported(Device* device, xhal_op_t op, bool slot_present, xhal_dtype_t dtype,
                              const char* arg) {
  const uint32_t mask = device->info.op_dtypes[op];
  if (!slot_present || mask == 0)
    return fail(XHAL_UNSUPPORTED, "op %s is not implemented by backend '%s'", op_name(op),
                device->backend.c_str());
  if (!(mask & dtype_bit(dtype)))
    return fail(XHAL_UNSUPPORTED,
                "argument '%s': dtype %s of op %s is not implemented by backend '%s' (it "
                "implements %s)",
                arg, xhal_dtype_name(dtype), op_name(op), device->backend.c_str(),
                dtype_list(mask).c_str());
  return XHAL_OK;
}

xhal_status_t check_slot(Device* device, bool slot_present, const char* what) {
  if (!slot_present)
    return fail(XHAL_UNSUPPORTED, "%s: not implemented by backend '%s'", what,
                device->backend.c_str());
  return XHAL_OK;
}

xhal_status_t check_perm(const char* name, const uint32_t* perm, uint32_t rank) {
  if (rank == 0) return XHAL_OK;
  if (!perm) return fail(XHAL_INVALID_ARGUMENT, "argument '%s': NULL", name);
  bool seen[XHAL_MAX_RANK] = {};
  for (uint32_t i = 0; i < rank; ++i) {
    if (perm[i] >= rank || seen[perm[i]]) {
      std::string p = "(";
      for (uint32_t k = 0; k < rank; ++k) p += (k ? ", " : "") + std::to_string(perm[k]);
      p += ")";
      return fail(XHAL_INVALID_ARGUMENT,
                  "argument '%s': %s is not a permutation of 0..%u (perm[%u] = %u %s)", name,
                  p.c_str(), rank - 1, i, perm[i], perm[i] >= rank ? "is out of range" : "repeats");
    }
    seen[perm[i]] = true;
  }
  return XHAL_OK;
}

}  // namespace xhal
