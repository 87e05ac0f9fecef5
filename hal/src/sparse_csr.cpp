// CSR matrices: creation from host arrays or device buffers (validated and
// analysed once), value replacement, read-back and release.
#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstring>
#include <new>

#include "handles.h"
#include "validate.h"
#include "validate_sparse.h"

namespace xhal {

CsrFault find_csr_fault(const CsrPattern& p) {
  const auto& rp = p.row_ptr;
  CsrFault f{};
  if (rp[0] != 0) {
    f.kind = XHAL_PLUGIN_CSR_FAULT_FIRST_OFFSET;
    f.value = rp[0];
    return f;
  }
  for (int64_t i = 0; i < p.rows; ++i) {
    if (rp[i + 1] < rp[i] || rp[i + 1] > p.nnz) {
      f.kind = rp[i + 1] < rp[i] ? XHAL_PLUGIN_CSR_FAULT_NOT_MONOTONE
                                 : XHAL_PLUGIN_CSR_FAULT_OFFSET_PAST_NNZ;
      f.row = i;
      f.value = rp[i + 1];
      f.other = rp[i];
      return f;
    }
  }
  if (rp[p.rows] != p.nnz) {
    f.kind = XHAL_PLUGIN_CSR_FAULT_LAST_OFFSET;
    f.row = p.rows > 0 ? p.rows - 1 : 0;
    f.value = rp[p.rows];
    return f;
  }
  // Columns: rows cut into ranges checked side by side; the fault is the
  // first bad row of the lowest range that has one, which is the pattern's
  // first bad row.
  auto row_ok = [&](int64_t i) {
    for (int64_t k = rp[i]; k < rp[i + 1]; ++k) {
      const int64_t c = p.col_idx[k];
      if (c < 0 || c >= p.cols || (k > rp[i] && c <= p.col_idx[k - 1])) return false;
    }
    return true;
  };
  std::vector<int64_t> first_bad(static_cast<size_t>(parts_for(p.nnz)), -1);
  parallel_ranges(p.nnz, [&](int64_t e0, int64_t e1, int64_t part) {
    // The rows whose first entry lies in [e0, e1).
    const int64_t r0 = std::lower_bound(rp.begin(), rp.begin() + p.rows, e0) - rp.begin();
    for (int64_t i = r0; i < p.rows && rp[i] < e1; ++i)
      if (!row_ok(i)) {
        first_bad[part] = i;
        return;
      }
  });
  for (int64_t i : first_bad) {
    if (i < 0) continue;
    for (int64_t k = rp[i]; k < rp[i + 1]; ++k) {
      const int64_t c = p.col_idx[k];
      const bool range = c < 0 || c >= p.cols;
      if (range || (k > rp[i] && c <= p.col_idx[k - 1])) {
        f.kind = range ? XHAL_PLUGIN_CSR_FAULT_COLUMN_RANGE : XHAL_PLUGIN_CSR_FAULT_COLUMN_ORDER;
        f.row = i;
        f.entry = k;
        f.value = c;
        f.other = range ? 0 : p.col_idx[k - 1];
        return f;
      }
    }
  }
  return f;
}

xhal_status_t csr_fault_error(const CsrFault& f, int64_t rows, int64_t cols, int64_t nnz,
                              const char* arg) {
  switch (f.kind) {
    case XHAL_PLUGIN_CSR_FAULT_NONE:
      return XHAL_OK;
    case XHAL_PLUGIN_CSR_FAULT_FIRST_OFFSET:
      return fail(XHAL_INVALID_STRUCTURE,
                  "argument '%s': row 0: row_ptr[0] = %" PRId64 ", expected 0", arg, f.value);
    case XHAL_PLUGIN_CSR_FAULT_NOT_MONOTONE:
      return fail(XHAL_INVALID_STRUCTURE,
                  "argument '%s': row %" PRId64 ": row_ptr[%" PRId64 "] = %" PRId64
                  " is less than row_ptr[%" PRId64 "] = %" PRId64 " (not monotone)",
                  arg, f.row, f.row + 1, f.value, f.row, f.other);
    case XHAL_PLUGIN_CSR_FAULT_OFFSET_PAST_NNZ:
      return fail(XHAL_INVALID_STRUCTURE,
                  "argument '%s': row %" PRId64 ": row_ptr[%" PRId64 "] = %" PRId64
                  " exceeds nnz = %" PRId64,
                  arg, f.row, f.row + 1, f.value, nnz);
    case XHAL_PLUGIN_CSR_FAULT_LAST_OFFSET:
      return fail(XHAL_INVALID_STRUCTURE,
                  "argument '%s': row %" PRId64 ": row_ptr[%" PRId64 "] = %" PRId64
                  " (end of the last row) but nnz = %" PRId64,
                  arg, f.row, rows, f.value, nnz);
    case XHAL_PLUGIN_CSR_FAULT_COLUMN_RANGE:
      return fail(XHAL_INVALID_STRUCTURE,
                  "argument '%s': row %" PRId64 ": column %" PRId64 " (entry %" PRId64
                  ") is outside [0, %" PRId64 ")",
                  arg, f.row, f.value, f.entry, cols);
    case XHAL_PLUGIN_CSR_FAULT_COLUMN_ORDER:
      return fail(XHAL_INVALID_STRUCTURE,
                  "argument '%s': row %" PRId64 ": column %" PRId64 " (entry %" PRId64
                  ") %s previous column %" PRId64 " (columns must be sorted and unique)",
                  arg, f.row, f.value, f.entry,
                  f.value == f.other ? "duplicates the" : "is below the", f.other);
    default:
      return fail(XHAL_PLUGIN_ERROR,
                  "argument '%s': the plugin rejected the pattern with fault kind %u, which this "
                  "core does not know",
                  arg, f.kind);
  }
}

xhal_status_t validate_csr_pattern(const CsrPattern& p, const char* arg) {
  return csr_fault_error(find_csr_fault(p), p.rows, p.cols, p.nnz, arg);
}

int64_t first_zero_diagonal(const Matrix& m, const void* values) {
  auto first_zero = [&m](const auto* v) -> int64_t {
    for (size_t i = 0; i < m.diag_pos.size(); ++i)
      if (m.diag_pos[i] >= 0 && v[m.diag_pos[i]] == 0) return static_cast<int64_t>(i);
    return -1;
  };
  if (m.values_dtype == XHAL_DTYPE_F64) return first_zero(static_cast<const double*>(values));
  if (xhal_dtype_size(m.values_dtype) == 2) {  // f16, bf16: +0 and -0 have no other bits
    const auto* v = static_cast<const uint16_t*>(values);
    for (size_t i = 0; i < m.diag_pos.size(); ++i)
      if (m.diag_pos[i] >= 0 && (v[m.diag_pos[i]] & 0x7fffu) == 0) return static_cast<int64_t>(i);
    return -1;
  }
  return first_zero(static_cast<const float*>(values));
}

xhal_status_t check_values_dtype_supported(const Device* device, xhal_dtype_t dtype,
                                           const char* arg) {
  if (dtype == XHAL_DTYPE_F32) return XHAL_OK;
  constexpr xhal_op_t kSparseOps[] = {XHAL_OP_SPMV, XHAL_OP_SPMM, XHAL_OP_CSR_SOLVE,
                                      XHAL_OP_CSR_SOLVE_BACKWARD, XHAL_OP_SPGEMM};
  bool claimed = false;
  for (xhal_op_t op : kSparseOps)
    claimed = claimed || (device->info.op_dtypes[op] & dtype_bit(dtype));
  // f64 values arrived in plugin ABI 1.6, f16/bf16 values in 1.7: an older
  // plugin would read them as f32.
  const uint32_t since = dtype == XHAL_DTYPE_F64 ? 6 : 7;
  if (device->plugin_abi_minor >= since && claimed) return XHAL_OK;
  return fail(XHAL_UNSUPPORTED,
              "argument '%s': %s matrix values are not implemented by backend '%s' (no sparse op "
              "of it takes %s%s)",
              arg, xhal_dtype_name(dtype), device->backend.c_str(), xhal_dtype_name(dtype),
              device->plugin_abi_minor < since ? (since == 6 ? "; its plugin ABI is older than 1.6"
                                                             : "; its plugin ABI is older than 1.7")
                                               : "");
}

xhal_status_t check_matrix(Device* device, const char* name, xhal_csr_t handle, Matrix** out) {
  XHAL_TRY(get_matrix(handle, name, out));
  const Matrix* m = *out;
  if (m->device != device)
    return fail(XHAL_WRONG_DEVICE,
                "argument '%s': matrix of device %s:%u, not of the op's device %s:%u", name,
                m->device->backend.c_str(), m->device->backend_index, device->backend.c_str(),
                device->backend_index);
  return XHAL_OK;
}

namespace {

// row_idx, the transpose (counting sort by column; rows come out ascending
// because rows are visited in order; skipped when the plugin builds its
// own, XHAL_PLUGIN_CSR_OWN_TRANSPOSE) and the triangle/diagonal facts, rows
// cut into ranges of about equal entry counts side by side.
void analyse(Matrix& m, bool transpose) {
  const int64_t rows = m.rows, nnz = m.nnz, diagonal = std::min(m.rows, m.cols);
  m.row_idx.resize(nnz);
  m.diag_pos.resize(rows);
  const int64_t parts = parts_for(nnz);
  std::vector<xhal_plugin_csr_facts_t> found(static_cast<size_t>(parts),
                                             xhal_plugin_csr_facts_t{-1, 0, -1, 0, -1});
  run_parts(parts, [&](int64_t t) {
    auto row_at = [&](int64_t e) {
      return std::upper_bound(m.row_ptr.begin(), m.row_ptr.begin() + rows + 1, e) -
             m.row_ptr.begin() - 1;
    };
    const int64_t i0 = t == 0 ? 0 : row_at(nnz / parts * t);
    const int64_t i1 = t + 1 == parts ? rows : row_at(nnz / parts * (t + 1));
    xhal_plugin_csr_facts_t& f = found[t];
    for (int64_t i = i0; i < i1; ++i) {
      int64_t diag = -1;
      for (int64_t k = m.row_ptr[i]; k < m.row_ptr[i + 1]; ++k) {
        const int64_t c = m.col_idx[k];
        m.row_idx[k] = i;
        if (c > i && f.above_row < 0) f = {i, c, f.below_row, f.below_col, f.missing_diagonal_row};
        if (c < i && f.below_row < 0) f = {f.above_row, f.above_col, i, c, f.missing_diagonal_row};
        if (c == i) diag = k;
      }
      m.diag_pos[i] = diag;
      if (diag < 0 && i < diagonal && f.missing_diagonal_row < 0) f.missing_diagonal_row = i;
    }
  });
  // Parts are in row order: each fact from the first part that has one.
  for (const auto& f : found) {
    if (m.facts.above_row < 0 && f.above_row >= 0) {
      m.facts.above_row = f.above_row;
      m.facts.above_col = f.above_col;
    }
    if (m.facts.below_row < 0 && f.below_row >= 0) {
      m.facts.below_row = f.below_row;
      m.facts.below_col = f.below_col;
    }
    if (m.facts.missing_diagonal_row < 0) m.facts.missing_diagonal_row = f.missing_diagonal_row;
  }
  if (transpose) transpose_pattern(m);
}

void free_buffer(Device* device, Buffer* b) {
  if (!b) return;
  call_void_slot([&] { device->api->buffer_free(device->plugin_device, b->plugin_buffer); });
  delete b;
}

// The buffers a matrix owns besides its plugin matrix.
void free_owned(Device* device, Matrix* m) {
  free_buffer(device, m->values);
  free_buffer(device, m->device_row_ptr);
  free_buffer(device, m->device_col_idx);
  m->values = m->device_row_ptr = m->device_col_idx = nullptr;
}

}  // namespace

namespace {

// Allocates m's values buffer (nnz of values.dtype) and fills it from the
// host, a device buffer or with zeros; records what the solves' zero-
// diagonal check may know of them (diag_pos must be filled first).
xhal_status_t allocate_values(Device* device, Matrix& m, const CsrValues& values) {
  const uint64_t bytes = static_cast<uint64_t>(m.nnz) * xhal_dtype_size(values.dtype);
  void* plugin_values = nullptr;
  XHAL_TRY(XHAL_PLUGIN_CALL(device, buffer_allocate, bytes, &plugin_values));
  m.values = new Buffer;
  m.values->device = device;
  m.values->plugin_buffer = plugin_values;
  m.values->size = bytes;
  m.values_known = true;
  m.first_zero_diag_row = -1;
  if (bytes == 0) return XHAL_OK;
  if (values.host) {
    m.first_zero_diag_row = first_zero_diagonal(m, values.host);
    return XHAL_PLUGIN_CALL(device, buffer_write, plugin_values, 0, values.host, bytes);
  }
  if (values.device) {
    m.values_known = false;
    return XHAL_PLUGIN_CALL(device, buffer_copy, values.device->plugin_buffer, 0, plugin_values, 0,
                            bytes);
  }
  // Zeros on a stored diagonal: the first row with one.
  for (size_t i = 0; i < m.diag_pos.size() && m.first_zero_diag_row < 0; ++i)
    if (m.diag_pos[i] >= 0) m.first_zero_diag_row = static_cast<int64_t>(i);
  const uint32_t zero = 0;
  return XHAL_PLUGIN_CALL(device, buffer_fill, plugin_values, 0, bytes, &zero, 4);
}

// Gives the plugin matrix of `m` a handle; on failure destroys it.
xhal_status_t publish(Device* device, std::unique_ptr<Matrix> m, Matrix** out) {
  m->handle = handles().add(HandleKind::kMatrix, m.get());
  if (m->handle == 0) {
    call_void_slot([&] { device->api->csr_destroy(device->plugin_device, m->plugin_matrix); });
    free_owned(device, m.get());
    return fail(XHAL_OUT_OF_MEMORY, "too many live handles");
  }
  device->live_objects.fetch_add(1);
  *out = m.release();
  return XHAL_OK;
}

}  // namespace

xhal_status_t make_csr(Device* device, CsrPattern&& p, xhal_dtype_t index_dtype, CsrValues values,
                       Matrix** out, bool inside_op) {
  auto m = std::make_unique<Matrix>();
  m->device = device;
  m->rows = p.rows;
  m->cols = p.cols;
  m->nnz = p.nnz;
  m->index_dtype = index_dtype;
  m->values_dtype = values.dtype;
  m->row_ptr = std::move(p.row_ptr);
  m->col_idx = std::move(p.col_idx);
  // The flag is read only from a 1.8 plugin (an older table's tail is zero
  // in the core's copy anyway), and not for spgemm's C (make_csr's comment).
  const bool own_transpose = !inside_op && device->plugin_abi_minor >= 8 &&
                             (device->api->csr_create_flags & XHAL_PLUGIN_CSR_OWN_TRANSPOSE) != 0;
  analyse(*m, !own_transpose);

  xhal_status_t s = allocate_values(device, *m, values);
  if (s == XHAL_OK) {
    xhal_plugin_csr_desc_t d{};
    d.rows = m->rows;
    d.cols = m->cols;
    d.nnz = m->nnz;
    d.row_ptr = m->row_ptr.data();
    d.col_idx = m->col_idx.data();
    d.row_idx = m->row_idx.data();
    if (!own_transpose) {
      d.t_row_ptr = m->t_row_ptr.data();
      d.t_col_idx = m->t_col_idx.data();
      d.t_perm = m->t_perm.data();
    }
    d.values_buffer = m->values->plugin_buffer;
    d.values_dtype = values.dtype;
    s = XHAL_PLUGIN_CALL(device, csr_create, &d, &m->plugin_matrix);
  }
  if (s != XHAL_OK) {
    free_owned(device, m.get());
    return s;
  }
  return publish(device, std::move(m), out);
}

namespace {

// A buffer of `bytes` owned by the core (no handle) holding the first
// `bytes` of the device buffer `from`, or of host memory `host`.
xhal_status_t owned_copy(Device* device, uint64_t bytes, const Buffer* from, const void* host,
                         Buffer** out) {
  void* plugin_buffer = nullptr;
  XHAL_TRY(XHAL_PLUGIN_CALL(device, buffer_allocate, bytes, &plugin_buffer));
  auto* b = new Buffer;
  b->device = device;
  b->plugin_buffer = plugin_buffer;
  b->size = bytes;
  *out = b;
  if (from)
    return XHAL_PLUGIN_CALL(device, buffer_copy, from->plugin_buffer, 0, plugin_buffer, 0, bytes);
  return XHAL_PLUGIN_CALL(device, buffer_write, plugin_buffer, 0, host, bytes);
}

// diag_pos of a validated pattern the core holds, rows side by side.
void find_diagonal(Matrix& m) {
  m.diag_pos.assign(static_cast<size_t>(m.rows), -1);
  const int64_t diagonal = std::min(m.rows, m.cols);
  parallel_ranges(diagonal, [&](int64_t b, int64_t e, int64_t) {
    for (int64_t i = b; i < e; ++i) {
      const auto first = m.col_idx.begin() + m.row_ptr[i],
                 last = m.col_idx.begin() + m.row_ptr[i + 1];
      const auto at = std::lower_bound(first, last, i);
      if (at != last && *at == i) m.diag_pos[i] = at - m.col_idx.begin();
    }
  });
}

}  // namespace

xhal_status_t make_csr_on_device(Device* device, const CsrShape& shape, xhal_dtype_t index_dtype,
                                 const DevicePatternSource& from, CsrValues values, Matrix** out) {
  auto m = std::make_unique<Matrix>();
  m->device = device;
  m->rows = shape.rows;
  m->cols = shape.cols;
  m->nnz = shape.nnz;
  m->index_dtype = index_dtype;
  m->values_dtype = values.dtype;
  const bool host = from.kept != nullptr;
  m->pattern_on_device = !host;
  m->pattern_from_buffers = !host;
  const uint64_t isz = xhal_dtype_size(index_dtype);
  const uint64_t rp_bytes = isz * (shape.rows + 1), col_bytes = isz * shape.nnz;
  // The plugin analyses the core's copies: device to device from buffers
  // (kept: the caller may reuse its buffers at once, and xhal_csr_read
  // returns what was validated), or the host arrays as given, uploaded once
  // (dropped after the call: the core keeps its host copy).
  xhal_status_t s =
      owned_copy(device, rp_bytes, from.row_ptr, from.host_row_ptr, &m->device_row_ptr);
  if (s == XHAL_OK && shape.nnz > 0)
    s = owned_copy(device, col_bytes, from.col_idx, from.host_col_idx, &m->device_col_idx);
  if (s == XHAL_OK) s = allocate_values(device, *m, values);
  m->values_known = false;  // until the diagonal is known (host) or never (buffers)
  CsrFault fault{};
  if (s == XHAL_OK) {
    xhal_plugin_csr_buffers_desc_t d{};
    d.rows = m->rows;
    d.cols = m->cols;
    d.nnz = m->nnz;
    d.index_dtype = index_dtype;
    d.row_ptr_buffer = m->device_row_ptr->plugin_buffer;
    d.col_idx_buffer = m->device_col_idx ? m->device_col_idx->plugin_buffer : nullptr;
    d.values_buffer = m->values->plugin_buffer;
    d.values_dtype = values.dtype;
    xhal_plugin_csr_facts_t facts{-1, 0, -1, 0, -1};
    s = XHAL_PLUGIN_CALL(device, csr_create_from_buffers, &d, &m->plugin_matrix, &fault, &facts);
    m->facts = facts;
  }
  if (s != XHAL_OK) {
    free_owned(device, m.get());
    if (s != XHAL_INVALID_STRUCTURE) return s;
    if (fault.kind == XHAL_PLUGIN_CSR_FAULT_NONE)
      return fail(XHAL_PLUGIN_ERROR,
                  "backend '%s' rejected the pattern as invalid without naming a fault",
                  device->backend.c_str());
    return csr_fault_error(fault, shape.rows, shape.cols, shape.nnz, "desc");
  }
  if (host) {
    // Valid now: the host copy and its diagonal, for xhal_csr_read, spgemm
    // and the zero-diagonal check, as on the host path.
    free_buffer(device, m->device_row_ptr);
    free_buffer(device, m->device_col_idx);
    m->device_row_ptr = m->device_col_idx = nullptr;
    m->row_ptr = std::move(from.kept->row_ptr);
    m->col_idx = std::move(from.kept->col_idx);
    find_diagonal(*m);
    m->values_known = values.device == nullptr;
    m->first_zero_diag_row = -1;
    if (values.host && m->nnz > 0) {
      m->first_zero_diag_row = first_zero_diagonal(*m, values.host);
    } else if (!values.device) {  // zeros
      for (size_t i = 0; i < m->diag_pos.size() && m->first_zero_diag_row < 0; ++i)
        if (m->diag_pos[i] >= 0) m->first_zero_diag_row = static_cast<int64_t>(i);
    }
  }
  return publish(device, std::move(m), out);
}

xhal_status_t fetch_host_pattern(Matrix& m) {
  if (!m.pattern_on_device || !m.row_ptr.empty()) return XHAL_OK;
  Device* device = m.device;
  const uint64_t isz = xhal_dtype_size(m.index_dtype);
  auto fetch = [&](const Buffer* b, int64_t count, IndexArray* to) -> xhal_status_t {
    to->resize(static_cast<size_t>(count));
    if (count == 0) return XHAL_OK;
    std::vector<std::byte> staged(static_cast<size_t>(count) * isz);
    XHAL_TRY(
        XHAL_PLUGIN_CALL(device, buffer_read, b->plugin_buffer, 0, staged.data(), staged.size()));
    for (int64_t i = 0; i < count; ++i) {
      if (isz == 4) {
        int32_t v;
        std::memcpy(&v, staged.data() + 4 * i, 4);
        (*to)[i] = v;
      } else {
        std::memcpy(&(*to)[i], staged.data() + 8 * i, 8);
      }
    }
    return XHAL_OK;
  };
  IndexArray rp, col;
  XHAL_TRY(fetch(m.device_row_ptr, m.rows + 1, &rp));
  XHAL_TRY(fetch(m.device_col_idx, m.nnz, &col));
  m.row_ptr = std::move(rp);
  m.col_idx = std::move(col);
  return XHAL_OK;
}

}  // namespace xhal

using namespace xhal;

namespace {

// A desc array given as a device buffer: present, of this device, large
// enough. Checked for every array before any is read. `what` is the desc
// field ("row_ptr").
xhal_status_t check_index_source(Device* device, const char* what, const void* host,
                                 xhal_buffer_t handle, xhal_dtype_t dtype, int64_t count,
                                 Buffer** out) {
  *out = nullptr;
  if (host || count == 0) return XHAL_OK;
  const uint64_t bytes = static_cast<uint64_t>(count) * xhal_dtype_size(dtype);
  if (!handle)
    return fail(XHAL_INVALID_ARGUMENT, "argument 'desc': %s and %s_buffer are both NULL", what,
                what);
  const std::string arg = std::string("desc.") + what + "_buffer";
  XHAL_TRY(get_buffer(handle, arg.c_str(), out));
  const Buffer* buffer = *out;
  if (buffer->device != device)
    return fail(XHAL_WRONG_DEVICE, "argument 'desc': %s_buffer belongs to device %s:%u, not %s:%u",
                what, buffer->device->backend.c_str(), buffer->device->backend_index,
                device->backend.c_str(), device->backend_index);
  if (buffer->size < bytes)
    return fail(XHAL_OUT_OF_RANGE,
                "argument 'desc': %s_buffer has %" PRIu64 " bytes but %" PRId64 " %s need %" PRIu64,
                what, buffer->size, count, xhal_dtype_name(dtype), bytes);
  return XHAL_OK;
}

// Reads `count` indices of `dtype` from a host array or a (checked) device
// buffer and widens them.
xhal_status_t read_indices(Device* device, const void* host, const Buffer* buffer,
                           xhal_dtype_t dtype, int64_t count, IndexArray* out) {
  const uint64_t bytes = static_cast<uint64_t>(count) * xhal_dtype_size(dtype);
  std::vector<std::byte> staged;
  const void* src = host;
  if (!host) {
    if (count == 0) {
      out->clear();
      return XHAL_OK;
    }
    staged.resize(bytes);
    XHAL_TRY(XHAL_PLUGIN_CALL(device, buffer_read, buffer->plugin_buffer, 0, staged.data(), bytes));
    src = staged.data();
  }
  out->resize(count);
  // Side by side: the threads are the first to touch out's pages.
  parallel_ranges(count, [&](int64_t b, int64_t e, int64_t) {
    if (dtype == XHAL_DTYPE_I32) {
      const auto* p = static_cast<const int32_t*>(src);
      for (int64_t i = b; i < e; ++i) (*out)[i] = p[i];
    } else if (e > b) {
      std::memcpy(out->data() + b, static_cast<const int64_t*>(src) + b,
                  static_cast<size_t>(e - b) * sizeof(int64_t));
    }
  });
  return XHAL_OK;
}

xhal_status_t csr_create(xhal_device_t device_handle, const xhal_csr_desc_t* desc,
                         xhal_csr_t* out_matrix) {
  Device* device = nullptr;
  XHAL_TRY(get_device(device_handle, "device", &device));
  if (!desc) return fail(XHAL_INVALID_ARGUMENT, "argument 'desc': NULL");
  if (!out_matrix) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_matrix': NULL");
  // Fields past the caller's struct_size are absent (zero).
  constexpr size_t kMinSize = offsetof(xhal_csr_desc_t, values) + sizeof(desc->values);
  if (desc->struct_size < kMinSize)
    return fail(XHAL_INVALID_ARGUMENT,
                "argument 'desc': struct_size = %zu, expected at least %zu (sizeof "
                "xhal_csr_desc_t is %zu)",
                desc->struct_size, kMinSize, sizeof(xhal_csr_desc_t));
  // Only the fields that lie entirely inside struct_size; the rest stay zero
  // (absent), never a field's leading bytes.
  xhal_csr_desc_t d{};
  const size_t size = std::min(desc->struct_size, sizeof d);
  auto take = [&](auto& field) {
    const size_t offset = reinterpret_cast<const char*>(&field) - reinterpret_cast<const char*>(&d);
    if (offset + sizeof field <= size)
      std::memcpy(&field, reinterpret_cast<const char*>(desc) + offset, sizeof field);
  };
  take(d.rows);
  take(d.cols);
  take(d.nnz);
  take(d.index_dtype);
  take(d.row_ptr);
  take(d.col_idx);
  take(d.values);
  take(d.row_ptr_buffer);
  take(d.col_idx_buffer);
  take(d.values_buffer);
  take(d.values_dtype);
  take(d.values_data);
  d.struct_size = desc->struct_size;

  if (d.rows < 0 || d.cols < 0 || d.nnz < 0)
    return fail(XHAL_INVALID_ARGUMENT,
                "argument 'desc': rows = %" PRId64 ", cols = %" PRId64 ", nnz = %" PRId64
                " (%s is negative)",
                d.rows, d.cols, d.nnz,
                d.rows < 0   ? "rows"
                : d.cols < 0 ? "cols"
                             : "nnz");
  const uint32_t raw_index_dtype = raw_enum(d.index_dtype);
  if (raw_index_dtype != XHAL_DTYPE_I32 && raw_index_dtype != XHAL_DTYPE_I64)
    return fail(XHAL_INVALID_ARGUMENT, "argument 'desc': index_dtype %s, expected i32 or i64",
                is_dtype(raw_index_dtype)
                    ? xhal_dtype_name(static_cast<xhal_dtype_t>(raw_index_dtype))
                    : std::to_string(raw_index_dtype).c_str());
  const auto index_dtype = static_cast<xhal_dtype_t>(raw_index_dtype);
  if (d.rows >= (int64_t(1) << 40) || d.nnz >= (int64_t(1) << 40) || d.cols >= (int64_t(1) << 40))
    return fail(XHAL_OUT_OF_RANGE, "argument 'desc': rows, cols or nnz beyond 2^40");
  const uint32_t raw_values_dtype = raw_enum(d.values_dtype);
  if (raw_values_dtype != 0 && raw_values_dtype != XHAL_DTYPE_F32 &&
      raw_values_dtype != XHAL_DTYPE_F64 && raw_values_dtype != XHAL_DTYPE_F16 &&
      raw_values_dtype != XHAL_DTYPE_BF16)
    return fail(
        XHAL_INVALID_ARGUMENT, "argument 'desc': values_dtype %s, expected f32, f64, f16 or bf16",
        is_dtype(raw_values_dtype) ? xhal_dtype_name(static_cast<xhal_dtype_t>(raw_values_dtype))
                                   : std::to_string(raw_values_dtype).c_str());
  const auto values_dtype =
      raw_values_dtype == 0 ? XHAL_DTYPE_F32 : static_cast<xhal_dtype_t>(raw_values_dtype);
  if (d.values && d.values_data)
    return fail(XHAL_INVALID_ARGUMENT,
                "argument 'desc': values and values_data are both set (give one)");
  if (d.values && values_dtype != XHAL_DTYPE_F32)
    return fail(XHAL_INVALID_ARGUMENT,
                "argument 'desc': values is f32 but values_dtype is %s (give the host values "
                "through values_data)",
                xhal_dtype_name(values_dtype));
  const void* host_values = d.values ? static_cast<const void*>(d.values) : d.values_data;
  const uint64_t value_bytes = static_cast<uint64_t>(d.nnz) * xhal_dtype_size(values_dtype);
  Buffer* values_buffer = nullptr;
  if (!host_values && d.values_buffer) {
    XHAL_TRY(get_buffer(d.values_buffer, "desc.values_buffer", &values_buffer));
    if (values_buffer->device != device)
      return fail(XHAL_WRONG_DEVICE,
                  "argument 'desc': values_buffer belongs to device %s:%u, not %s:%u",
                  values_buffer->device->backend.c_str(), values_buffer->device->backend_index,
                  device->backend.c_str(), device->backend_index);
    if (values_buffer->size < value_bytes)
      return fail(XHAL_OUT_OF_RANGE,
                  "argument 'desc': values_buffer has %" PRIu64 " bytes but %" PRId64
                  " %s values need %" PRIu64,
                  values_buffer->size, d.nnz, xhal_dtype_name(values_dtype), value_bytes);
  }
  Buffer *row_ptr_buffer = nullptr, *col_idx_buffer = nullptr;
  XHAL_TRY(check_index_source(device, "row_ptr", d.row_ptr, d.row_ptr_buffer, index_dtype,
                              d.rows + 1, &row_ptr_buffer));
  XHAL_TRY(check_index_source(device, "col_idx", d.col_idx, d.col_idx_buffer, index_dtype, d.nnz,
                              &col_idx_buffer));
  XHAL_TRY(check_slot(device, device->api->csr_create != nullptr, "CSR matrices"));
  XHAL_TRY(check_values_dtype_supported(device, values_dtype, "desc"));

  std::lock_guard queue(device->queue);
  // Both arrays in device buffers and a plugin that validates there: the
  // pattern never comes to the host (docs/semantics.md, "Sparse (CSR)").
  const bool from_buffers = row_ptr_buffer != nullptr && d.col_idx == nullptr;
  try {
    if (from_buffers && device->api->csr_create_from_buffers) {
      CsrValues v;
      v.dtype = values_dtype;
      v.host = host_values;
      v.device = host_values ? nullptr : values_buffer;
      Matrix* m = nullptr;
      DevicePatternSource from;
      from.row_ptr = row_ptr_buffer;
      from.col_idx = col_idx_buffer;
      XHAL_TRY(
          make_csr_on_device(device, CsrShape{d.rows, d.cols, d.nnz}, index_dtype, from, v, &m));
      *out_matrix = to_handle<xhal_csr_t>(m->handle);
      return XHAL_OK;
    }
    CsrPattern p;
    p.rows = d.rows;
    p.cols = d.cols;
    p.nnz = d.nnz;
    XHAL_TRY(read_indices(device, d.row_ptr, row_ptr_buffer, index_dtype, d.rows + 1, &p.row_ptr));
    XHAL_TRY(read_indices(device, d.col_idx, col_idx_buffer, index_dtype, d.nnz, &p.col_idx));
    // Host arrays and a plugin that validates on the device: the arrays go
    // up as given and are validated and analysed there (faster than the
    // host's validation, transposition and the plugin's narrowing); the
    // core keeps its widened copy as on the host path.
    const bool host_arrays = d.row_ptr != nullptr && (d.col_idx != nullptr || d.nnz == 0);
    if (host_arrays && device->api->csr_create_from_buffers) {
      CsrValues v;
      v.dtype = values_dtype;
      v.host = host_values;
      v.device = host_values ? nullptr : values_buffer;
      DevicePatternSource from;
      from.host_row_ptr = d.row_ptr;
      from.host_col_idx = d.col_idx;
      from.kept = &p;
      Matrix* m = nullptr;
      XHAL_TRY(
          make_csr_on_device(device, CsrShape{d.rows, d.cols, d.nnz}, index_dtype, from, v, &m));
      *out_matrix = to_handle<xhal_csr_t>(m->handle);
      return XHAL_OK;
    }
    XHAL_TRY(validate_csr_pattern(p, "desc"));
    CsrValues v;
    v.dtype = values_dtype;
    v.host = host_values;
    v.device = host_values ? nullptr : values_buffer;
    Matrix* m = nullptr;
    XHAL_TRY(make_csr(device, std::move(p), index_dtype, v, &m));
    // Every backend treats a pattern from buffers alike (the handle is not
    // out yet): its diagonal values are never checked.
    m->pattern_from_buffers = from_buffers;
    if (from_buffers) m->values_known = false;
    *out_matrix = to_handle<xhal_csr_t>(m->handle);
    return XHAL_OK;
  } catch (const std::bad_alloc&) {
    return fail(XHAL_OUT_OF_MEMORY,
                "CSR matrix %" PRId64 " x %" PRId64 " with %" PRId64
                " entries: host memory exhausted",
                d.rows, d.cols, d.nnz);
  }
}

}  // namespace

namespace xhal {
void destroy_matrix(Matrix* m) {
  Device* device = m->device;
  call_void_slot([&] { device->api->csr_destroy(device->plugin_device, m->plugin_matrix); });
  free_owned(device, m);
  device->live_objects.fetch_sub(1);
  delete m;
}
}  // namespace xhal

namespace {

// A host-values call's dtype against the matrix's. `other` names the call
// that takes the matrix's dtype when this one cannot (NULL: none).
xhal_status_t check_matrix_values_dtype(const Matrix& m, uint32_t dtype, const char* arg,
                                        const char* other) {
  if (dtype == static_cast<uint32_t>(m.values_dtype)) return XHAL_OK;
  const std::string given =
      is_dtype(dtype) ? xhal_dtype_name(static_cast<xhal_dtype_t>(dtype)) : std::to_string(dtype);
  return fail(XHAL_INVALID_ARGUMENT, "argument '%s': %s but the matrix holds %s values%s%s", arg,
              given.c_str(), xhal_dtype_name(m.values_dtype), other ? "; use " : "",
              other ? other : "");
}

// nnz values of the matrix's dtype from the host (dtype already checked).
xhal_status_t set_host_values(Matrix* m, const void* values) {
  if (m->nnz == 0) return XHAL_OK;
  if (!values) return fail(XHAL_INVALID_ARGUMENT, "argument 'values': NULL");
  Device* device = m->device;
  const int64_t zero_row = first_zero_diagonal(*m, values);
  std::lock_guard queue(device->queue);
  XHAL_TRY(
      XHAL_PLUGIN_CALL(device, buffer_write, m->values->plugin_buffer, 0, values, m->values->size));
  m->values_known = !m->pattern_from_buffers;
  m->first_zero_diag_row = zero_row;
  return XHAL_OK;
}

xhal_status_t read_host_values(Matrix* m, void* out_values) {
  if (m->nnz == 0) return XHAL_OK;
  Device* device = m->device;
  std::lock_guard queue(device->queue);
  return XHAL_PLUGIN_CALL(device, buffer_read, m->values->plugin_buffer, 0, out_values,
                          m->values->size);
}

}  // namespace

extern "C" {

xhal_status_t xhal_csr_create(xhal_device_t device, const xhal_csr_desc_t* desc,
                              xhal_csr_t* out_matrix) {
  return entry("xhal_csr_create", [&] { return csr_create(device, desc, out_matrix); });
}

xhal_status_t xhal_csr_release(xhal_csr_t matrix) {
  return entry("xhal_csr_release", [&]() -> xhal_status_t {
    auto* m = static_cast<Matrix*>(handles().remove(HandleKind::kMatrix, handle_bits(matrix)));
    if (!m) return get_matrix(matrix, "matrix", &m);
    std::lock_guard queue(m->device->queue);
    destroy_matrix(m);
    return XHAL_OK;
  });
}

xhal_status_t xhal_csr_get_shape(xhal_csr_t matrix, int64_t* out_rows, int64_t* out_cols,
                                 int64_t* out_nnz) {
  return entry("xhal_csr_get_shape", [&]() -> xhal_status_t {
    Matrix* m = nullptr;
    XHAL_TRY(get_matrix(matrix, "matrix", &m));
    if (out_rows) *out_rows = m->rows;
    if (out_cols) *out_cols = m->cols;
    if (out_nnz) *out_nnz = m->nnz;
    return XHAL_OK;
  });
}

xhal_status_t xhal_csr_get_index_dtype(xhal_csr_t matrix, xhal_dtype_t* out_index_dtype) {
  return entry("xhal_csr_get_index_dtype", [&]() -> xhal_status_t {
    Matrix* m = nullptr;
    XHAL_TRY(get_matrix(matrix, "matrix", &m));
    if (!out_index_dtype) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_index_dtype' is NULL");
    *out_index_dtype = m->index_dtype;
    return XHAL_OK;
  });
}

xhal_status_t xhal_csr_get_values_dtype(xhal_csr_t matrix, xhal_dtype_t* out_values_dtype) {
  return entry("xhal_csr_get_values_dtype", [&]() -> xhal_status_t {
    Matrix* m = nullptr;
    XHAL_TRY(get_matrix(matrix, "matrix", &m));
    if (!out_values_dtype)
      return fail(XHAL_INVALID_ARGUMENT, "argument 'out_values_dtype' is NULL");
    *out_values_dtype = m->values_dtype;
    return XHAL_OK;
  });
}

xhal_status_t xhal_csr_set_values(xhal_csr_t matrix, const float* values) {
  return entry("xhal_csr_set_values", [&]() -> xhal_status_t {
    Matrix* m = nullptr;
    XHAL_TRY(get_matrix(matrix, "matrix", &m));
    XHAL_TRY(check_matrix_values_dtype(*m, XHAL_DTYPE_F32, "values", "xhal_csr_set_values_typed"));
    return set_host_values(m, values);
  });
}

xhal_status_t xhal_csr_set_values_typed(xhal_csr_t matrix, xhal_dtype_t dtype, const void* values) {
  return entry("xhal_csr_set_values_typed", [&]() -> xhal_status_t {
    Matrix* m = nullptr;
    XHAL_TRY(get_matrix(matrix, "matrix", &m));
    XHAL_TRY(check_matrix_values_dtype(*m, raw_enum(dtype), "dtype", nullptr));
    return set_host_values(m, values);
  });
}

xhal_status_t xhal_csr_set_values_tensor(xhal_csr_t matrix, const xhal_tensor_t* values) {
  return entry("xhal_csr_set_values_tensor", [&]() -> xhal_status_t {
    Matrix* m = nullptr;
    XHAL_TRY(get_matrix(matrix, "matrix", &m));
    Device* device = m->device;
    std::lock_guard queue(device->queue);
    Checked cv;
    XHAL_TRY(check_tensor(device, "values", values, "csr_set_values_tensor",
                          dtype_bit(XHAL_DTYPE_F32) | dtype_bit(XHAL_DTYPE_F64) |
                              dtype_bit(XHAL_DTYPE_F16) | dtype_bit(XHAL_DTYPE_BF16),
                          Layout::kContiguous, &cv));
    if (cv.dtype() != m->values_dtype)
      return fail(XHAL_INVALID_ARGUMENT,
                  "argument 'values': dtype %s but the matrix holds %s values",
                  xhal_dtype_name(cv.dtype()), xhal_dtype_name(m->values_dtype));
    if (cv.elements != m->nnz)
      return fail(XHAL_SHAPE_MISMATCH,
                  "argument 'values': shape %s has %" PRId64
                  " elements but the matrix has nnz = %" PRId64,
                  shape_string(cv.rank(), cv.shape()).c_str(), cv.elements, m->nnz);
    if (m->nnz == 0) return XHAL_OK;
    XHAL_TRY(XHAL_PLUGIN_CALL(device, buffer_copy, cv.plugin.buffer, cv.plugin.offset,
                              m->values->plugin_buffer, 0, m->values->size));
    // Device values are not inspected (that would be a transfer): csr_solve
    // trusts their diagonal.
    m->values_known = false;
    m->first_zero_diag_row = -1;
    return XHAL_OK;
  });
}

xhal_status_t xhal_csr_read(xhal_csr_t matrix, void* out_row_ptr, void* out_col_idx,
                            float* out_values) {
  return entry("xhal_csr_read", [&]() -> xhal_status_t {
    Matrix* m = nullptr;
    XHAL_TRY(get_matrix(matrix, "matrix", &m));
    auto write = [&](const IndexArray& v, void* dst) {
      if (!dst) return;
      if (m->index_dtype == XHAL_DTYPE_I32) {
        auto* p = static_cast<int32_t*>(dst);
        for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<int32_t>(v[i]);
      } else if (!v.empty()) {
        std::memcpy(dst, v.data(), v.size() * sizeof(int64_t));
      }
    };
    if (out_values)
      XHAL_TRY(check_matrix_values_dtype(*m, XHAL_DTYPE_F32, "out_values", "xhal_csr_read_values"));
    if (out_values) XHAL_TRY(read_host_values(m, out_values));
    if (m->pattern_on_device) {  // the kept copies are in the matrix's index dtype
      std::lock_guard queue(m->device->queue);
      const uint64_t isz = xhal_dtype_size(m->index_dtype);
      if (out_row_ptr)
        XHAL_TRY(XHAL_PLUGIN_CALL(m->device, buffer_read, m->device_row_ptr->plugin_buffer, 0,
                                  out_row_ptr, isz * (m->rows + 1)));
      if (out_col_idx && m->nnz > 0)
        XHAL_TRY(XHAL_PLUGIN_CALL(m->device, buffer_read, m->device_col_idx->plugin_buffer, 0,
                                  out_col_idx, isz * m->nnz));
      return XHAL_OK;
    }
    write(m->row_ptr, out_row_ptr);
    write(m->col_idx, out_col_idx);
    return XHAL_OK;
  });
}

xhal_status_t xhal_csr_read_values(xhal_csr_t matrix, xhal_dtype_t dtype, void* out_values) {
  return entry("xhal_csr_read_values", [&]() -> xhal_status_t {
    Matrix* m = nullptr;
    XHAL_TRY(get_matrix(matrix, "matrix", &m));
    XHAL_TRY(check_matrix_values_dtype(*m, raw_enum(dtype), "dtype", nullptr));
    if (!out_values && m->nnz > 0)
      return fail(XHAL_INVALID_ARGUMENT, "argument 'out_values': NULL");
    return read_host_values(m, out_values);
  });
}

}  // extern "C"
