// DLPack in both directions (docs/interop.md): an export is a view of an
// xhal tensor that holds a reference to its buffer until the consumer's
// deleter call; an import wraps the producer's memory as a new buffer whose
// release callback is the producer's deleter.
#include <cinttypes>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "entry.h"
#include "handles.h"
#include "internal.h"
#include "interop_internal.h"
#include "validate.h"

namespace xhal {
namespace {

using u128 = unsigned __int128;

// xhal dtype <-> DLPack (code, bits); lanes are always 1.
struct DtypeMap {
  xhal_dtype_t dtype;
  uint8_t code, bits;
};
constexpr DtypeMap kDtypes[] = {
    {XHAL_DTYPE_F32, XHAL_DLPACK_DTYPE_FLOAT, 32},   {XHAL_DTYPE_F16, XHAL_DLPACK_DTYPE_FLOAT, 16},
    {XHAL_DTYPE_BF16, XHAL_DLPACK_DTYPE_BFLOAT, 16}, {XHAL_DTYPE_F64, XHAL_DLPACK_DTYPE_FLOAT, 64},
    {XHAL_DTYPE_I32, XHAL_DLPACK_DTYPE_INT, 32},     {XHAL_DTYPE_I64, XHAL_DLPACK_DTYPE_INT, 64},
    {XHAL_DTYPE_U8, XHAL_DLPACK_DTYPE_UINT, 8},
};

xhal_dlpack_dtype_t to_dlpack(xhal_dtype_t dtype) {
  for (const DtypeMap& m : kDtypes)
    if (m.dtype == dtype) return {m.code, m.bits, 1};
  return {0, 0, 0};  // unreachable: the tensor was checked
}

// ---- export ---------------------------------------------------------------

// One allocation per export: the managed tensor, its shape and strides, and
// the buffer it keeps alive. `managed` comes first so the deleter's `self`
// is the block.
template <typename Managed>
struct ExportBlock {
  Managed managed;
  int64_t shape[XHAL_MAX_RANK];
  int64_t strides[XHAL_MAX_RANK];
  Buffer* buffer;
};

// The consumer's end of an export: any thread, exactly once (DLPack's rule).
template <typename Managed>
void export_deleter(Managed* self) {
  if (!self) return;
  auto* block = reinterpret_cast<ExportBlock<Managed>*>(self);
  Buffer* b = block->buffer;
  b->device->live_exports.fetch_sub(1);
  delete block;
  release_buffer_ref(b);
}

template <typename Managed>
xhal_status_t export_tensor(const xhal_tensor_t* tensor, uint64_t flags, bool versioned,
                            Managed** out) {
  if (!tensor) return fail(XHAL_INVALID_ARGUMENT, "argument 'tensor' is NULL");
  if (!out) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_managed' is NULL");
  Buffer* b = nullptr;
  XHAL_TRY(get_buffer(tensor->buffer, "tensor", &b));
  Device* d = b->device;
  if (flags & ~XHAL_DLPACK_FLAG_READ_ONLY)
    return fail(XHAL_INVALID_ARGUMENT,
                "argument 'flags' is 0x%" PRIx64
                "; only XHAL_DLPACK_FLAG_READ_ONLY (0x1) may be set",
                flags);
  if (!versioned && b->read_only)
    return fail(XHAL_INVALID_ARGUMENT,
                "argument 'tensor': its buffer is read-only, which DLPack 0.x cannot say; use "
                "xhal_tensor_export_dlpack (DLPack 1.x)");
  XHAL_TRY(check_interop(d, d->api->buffer_get_native != nullptr, "DLPack export"));
  Checked c;
  XHAL_TRY(check_tensor(d, "tensor", tensor, "DLPack export", kAnyDtype, Layout::kStrided, &c));
  auto block = std::make_unique<ExportBlock<Managed>>();
  void* base = nullptr;
  {
    std::lock_guard queue(d->queue);
    XHAL_TRY(XHAL_PLUGIN_CALL(d, buffer_get_native, b->plugin_buffer, &base));
  }
  const uint32_t rank = tensor->rank;
  for (uint32_t k = 0; k < XHAL_MAX_RANK; ++k) {
    block->shape[k] = k < rank ? tensor->shape[k] : 0;
    block->strides[k] = k < rank ? c.plugin.strides[k] : 0;
  }
  block->buffer = b;
  Managed& m = block->managed;
  xhal_dlpack_tensor_t& t = m.dl_tensor;
  t.data = base;
  t.device.device_type = static_cast<int32_t>(d->memory_kind);
  t.device.device_id = d->memory_ordinal;
  t.ndim = static_cast<int32_t>(rank);
  t.dtype = to_dlpack(tensor->dtype);
  t.shape = block->shape;
  t.strides = block->strides;
  t.byte_offset = tensor->offset;
  m.manager_ctx = block.get();
  m.deleter = export_deleter<Managed>;
  if constexpr (std::is_same_v<Managed, xhal_dlpack_managed_tensor_versioned_t>) {
    m.version.major = XHAL_DLPACK_MAJOR_VERSION;
    m.version.minor = XHAL_DLPACK_MINOR_VERSION;
    m.flags = flags | (b->read_only ? XHAL_DLPACK_FLAG_READ_ONLY : 0);
  }
  b->refs.fetch_add(1, std::memory_order_relaxed);
  d->live_exports.fetch_add(1);
  *out = &block.release()->managed;
  return XHAL_OK;
}

// ---- import ---------------------------------------------------------------

// Runs the producer's deleter unless the import succeeded (also when an
// exception leaves the entry point), keeping the failure's message.
template <typename Managed>
class DeleteOnFailure {
 public:
  explicit DeleteOnFailure(Managed* m) : m_(m) {}
  ~DeleteOnFailure() {
    if (!m_ || !m_->deleter) return;
    std::string& message = thread_state().last_error;
    std::string saved = std::move(message);
    try {
      m_->deleter(m_);
    } catch (...) {  // a C++ deleter that throws must not end the process here
    }
    message = std::move(saved);
  }
  DeleteOnFailure(const DeleteOnFailure&) = delete;
  DeleteOnFailure& operator=(const DeleteOnFailure&) = delete;
  void dismiss() { m_ = nullptr; }

 private:
  Managed* m_;
};

// The release callback of an imported DLPack tensor's buffer.
template <typename Managed>
void run_deleter(void* user_data) {
  auto* m = static_cast<Managed*>(user_data);
  if (m->deleter) m->deleter(m);
}

xhal_status_t from_dlpack(const xhal_dlpack_dtype_t& dt, xhal_dtype_t* out) {
  if (dt.lanes == 1)
    for (const DtypeMap& m : kDtypes)
      if (m.code == dt.code && m.bits == dt.bits) {
        *out = m.dtype;
        return XHAL_OK;
      }
  return fail(XHAL_UNSUPPORTED,
              "argument 'managed': dl_tensor.dtype (code %u, bits %u, lanes %u) has no xhal "
              "dtype; xhal takes float 16/32/64, bfloat 16, int 32/64 and uint 8, lanes 1",
              dt.code, dt.bits, dt.lanes);
}

// Strides that never map two elements to one place: sorted by stride, each
// dim of extent > 1 steps past the whole span of the ones below it. (This
// refuses a few exotic non-overlapping layouts too; none comes from a
// framework.)
bool non_overlapping(uint32_t rank, const int64_t* shape, const int64_t* strides) {
  struct Dim {
    int64_t stride, extent;
  };
  Dim dims[XHAL_MAX_RANK];
  uint32_t n = 0;
  for (uint32_t k = 0; k < rank; ++k)
    if (shape[k] > 1) dims[n++] = {strides[k], shape[k]};
  for (uint32_t i = 1; i < n; ++i)  // insertion sort: at most 8 dims
    for (uint32_t j = i; j > 0 && dims[j].stride < dims[j - 1].stride; --j)
      std::swap(dims[j], dims[j - 1]);
  // Offsets the dims so far reach lie in [0, span): a dim whose stride is at
  // least span puts each step past all of them (a[:, ::2] of a [4, 5] array:
  // strides 2 then 5, spans 1, 5, 20).
  u128 span = 1;
  for (uint32_t k = 0; k < n; ++k) {
    if (u128(static_cast<uint64_t>(dims[k].stride)) < span) return false;
    span += u128(static_cast<uint64_t>(dims[k].stride)) * static_cast<uint64_t>(dims[k].extent - 1);
  }
  return true;
}

bool row_major_ignoring_ones(uint32_t rank, const int64_t* shape, const int64_t* strides) {
  int64_t expected = 1;
  for (uint32_t k = rank; k-- > 0;) {
    if (shape[k] == 1) continue;
    if (strides[k] != expected) return false;
    expected *= shape[k];
  }
  return true;
}

template <typename Managed>
xhal_status_t import_tensor(xhal_device_t device, Managed* managed, xhal_tensor_t* out) {
  if (!managed) return fail(XHAL_INVALID_ARGUMENT, "argument 'managed' is NULL");
  DeleteOnFailure<Managed> guard(managed);
  bool read_only = false;
  if constexpr (std::is_same_v<Managed, xhal_dlpack_managed_tensor_versioned_t>) {
    // DLPack: with an unknown major only version and deleter may be read.
    if (managed->version.major != XHAL_DLPACK_MAJOR_VERSION)
      return fail(XHAL_UNSUPPORTED,
                  "argument 'managed': DLPack version %u.%u; xhal takes major version %d",
                  managed->version.major, managed->version.minor, XHAL_DLPACK_MAJOR_VERSION);
    read_only = (managed->flags & XHAL_DLPACK_FLAG_READ_ONLY) != 0;
  }
  Device* d = nullptr;
  XHAL_TRY(get_device(device, "device", &d));
  if (!out) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_tensor' is NULL");
  XHAL_TRY(check_interop(d, d->api->buffer_import != nullptr, "DLPack import"));
  const xhal_dlpack_tensor_t& t = managed->dl_tensor;
  if (t.device.device_type < 0)
    return fail(XHAL_INVALID_ARGUMENT,
                "argument 'managed->dl_tensor.device.device_type' is %d; device %s:%u takes %u "
                "(%s)",
                t.device.device_type, d->backend.c_str(), d->backend_index, d->memory_kind,
                memory_kind_name(d->memory_kind));
  XHAL_TRY(check_memory_of(d, static_cast<uint32_t>(t.device.device_type), t.device.device_id,
                           "managed->dl_tensor.device.device_type",
                           "managed->dl_tensor.device.device_id"));
  if (t.ndim < 0)
    return fail(XHAL_INVALID_ARGUMENT, "argument 'managed->dl_tensor.ndim' is %d", t.ndim);
  if (t.ndim > XHAL_MAX_RANK)
    return fail(XHAL_UNSUPPORTED,
                "argument 'managed->dl_tensor.ndim' is %d; xhal tensors have at most %d dims",
                t.ndim, XHAL_MAX_RANK);
  const uint32_t rank = static_cast<uint32_t>(t.ndim);
  xhal_dtype_t dtype = XHAL_DTYPE_INVALID;
  XHAL_TRY(from_dlpack(t.dtype, &dtype));
  const uint32_t esize = dtype_size(dtype);
  if (rank > 0 && !t.shape)
    return fail(XHAL_INVALID_ARGUMENT, "argument 'managed->dl_tensor.shape' is NULL with ndim %u",
                rank);
  int64_t shape[XHAL_MAX_RANK] = {}, strides[XHAL_MAX_RANK] = {};
  u128 elements = 1;
  for (uint32_t k = 0; k < rank; ++k) {
    shape[k] = t.shape[k];
    if (shape[k] < 0)
      return fail(XHAL_INVALID_ARGUMENT,
                  "argument 'managed->dl_tensor.shape': shape %s has a "
                  "negative extent",
                  shape_string(rank, t.shape).c_str());
    elements *= static_cast<uint64_t>(shape[k]);
    if (elements > (u128(1) << 62))
      return fail(XHAL_OUT_OF_RANGE,
                  "argument 'managed->dl_tensor.shape': shape %s has too many elements",
                  shape_string(rank, t.shape).c_str());
  }
  if (t.strides) {
    for (uint32_t k = 0; k < rank; ++k) {
      strides[k] = t.strides[k];
      if (strides[k] < 0)
        return fail(XHAL_UNSUPPORTED,
                    "argument 'managed->dl_tensor.strides': strides %s have a negative stride; "
                    "xhal views take strides >= 0",
                    shape_string(rank, t.strides).c_str());
    }
  } else {
    row_major_strides(rank, shape, strides);
  }
  u128 bytes = 0;
  if (elements > 0) {
    if (!non_overlapping(rank, shape, strides))
      return fail(XHAL_UNSUPPORTED,
                  "argument 'managed->dl_tensor.strides': strides %s for shape %s make elements "
                  "overlap; xhal takes only views whose elements are distinct",
                  shape_string(rank, strides).c_str(), shape_string(rank, shape).c_str());
    u128 last = 0;
    for (uint32_t k = 0; k < rank; ++k)
      last += u128(static_cast<uint64_t>(shape[k] - 1)) * static_cast<uint64_t>(strides[k]);
    bytes = (last + 1) * esize;
  }
  const uintptr_t data = reinterpret_cast<uintptr_t>(t.data);
  if (bytes > u128(UINT64_MAX) || t.byte_offset > UINTPTR_MAX - data ||
      bytes > u128(UINTPTR_MAX - data - t.byte_offset))
    return fail(XHAL_OUT_OF_RANGE,
                "argument 'managed->dl_tensor': data %p + byte_offset %" PRIu64
                " + the bytes of shape %s overflow the address space",
                t.data, t.byte_offset, shape_string(rank, shape).c_str());
  if (!t.data && bytes > 0)
    return fail(XHAL_INVALID_ARGUMENT, "argument 'managed->dl_tensor.data' is NULL for shape %s",
                shape_string(rank, shape).c_str());
  const uintptr_t first = data + t.byte_offset;
  if (first % esize != 0)
    return fail(XHAL_UNSUPPORTED,
                "argument 'managed->dl_tensor': data %p + byte_offset %" PRIu64
                " is not aligned to %u bytes, the size of %s",
                t.data, t.byte_offset, esize, xhal_dtype_name(dtype));
  ImportRequest r;
  r.pointer = reinterpret_cast<void*>(first);
  r.size = static_cast<uint64_t>(bytes);
  r.read_only = read_only;
  r.release = run_deleter<Managed>;
  r.release_user_data = managed;
  Buffer* b = nullptr;
  XHAL_TRY(import_memory(d, r, &b));
  guard.dismiss();
  xhal_tensor_t v{};
  v.buffer = to_handle<xhal_buffer_t>(b->handle);
  v.offset = 0;
  v.dtype = dtype;
  v.rank = rank;
  const bool compact = elements == 0 || row_major_ignoring_ones(rank, shape, strides);
  for (uint32_t k = 0; k < rank; ++k) {
    v.shape[k] = shape[k];
    v.strides[k] = compact ? 0 : strides[k];
  }
  *out = v;
  return XHAL_OK;
}

}  // namespace
}  // namespace xhal

using namespace xhal;

extern "C" {

xhal_status_t xhal_tensor_export_dlpack(const xhal_tensor_t* tensor, uint64_t flags,
                                        xhal_dlpack_managed_tensor_versioned_t** out_managed) {
  return entry("xhal_tensor_export_dlpack",
               [&] { return export_tensor(tensor, flags, true, out_managed); });
}

xhal_status_t xhal_tensor_export_dlpack_unversioned(const xhal_tensor_t* tensor,
                                                    xhal_dlpack_managed_tensor_t** out_managed) {
  return entry("xhal_tensor_export_dlpack_unversioned",
               [&] { return export_tensor(tensor, 0, false, out_managed); });
}

xhal_status_t xhal_tensor_import_dlpack(xhal_device_t device,
                                        xhal_dlpack_managed_tensor_versioned_t* managed,
                                        xhal_tensor_t* out_tensor) {
  return entry("xhal_tensor_import_dlpack",
               [&] { return import_tensor(device, managed, out_tensor); });
}

xhal_status_t xhal_tensor_import_dlpack_unversioned(xhal_device_t device,
                                                    xhal_dlpack_managed_tensor_t* managed,
                                                    xhal_tensor_t* out_tensor) {
  return entry("xhal_tensor_import_dlpack_unversioned",
               [&] { return import_tensor(device, managed, out_tensor); });
}

}  // extern "C"
