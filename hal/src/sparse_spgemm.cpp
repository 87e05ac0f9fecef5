// SpGEMM C = A B. The symbolic phase runs once on the host from the kept
// patterns (C's row i is the union of B's rows k over A's entries (i, k),
// sorted); C is then created like any matrix, with zero values, and the
// plugin fills the values on the device.
#include <algorithm>
#include <cinttypes>
#include <limits>
#include <new>

#include "handles.h"
#include "validate.h"
#include "validate_sparse.h"

using namespace xhal;

namespace {

CsrPattern symbolic_product(const Matrix& a, const Matrix& b) {
  CsrPattern c;
  c.rows = a.rows;
  c.cols = b.cols;
  c.row_ptr.assign(a.rows + 1, 0);
  // Marker per column of C: the last row that saw it (a dense "seen" set
  // that never needs clearing).
  std::vector<int64_t> last_row(b.cols, -1);
  std::vector<int64_t> row_cols;
  for (int64_t i = 0; i < a.rows; ++i) {
    row_cols.clear();
    for (int64_t ka = a.row_ptr[i]; ka < a.row_ptr[i + 1]; ++ka) {
      const int64_t k = a.col_idx[ka];
      for (int64_t kb = b.row_ptr[k]; kb < b.row_ptr[k + 1]; ++kb) {
        const int64_t j = b.col_idx[kb];
        if (last_row[j] != i) {
          last_row[j] = i;
          row_cols.push_back(j);
        }
      }
    }
    std::sort(row_cols.begin(), row_cols.end());
    c.col_idx.insert(c.col_idx.end(), row_cols.begin(), row_cols.end());
    c.row_ptr[i + 1] = static_cast<int64_t>(c.col_idx.size());
  }
  c.nnz = static_cast<int64_t>(c.col_idx.size());
  return c;
}

}  // namespace

namespace {

xhal_status_t spgemm(xhal_device_t device_handle, xhal_csr_t a_handle, xhal_csr_t b_handle,
                     xhal_csr_t* out_c) {
  Device* device = nullptr;
  XHAL_TRY(get_device(device_handle, "device", &device));
  std::lock_guard queue(device->queue);
  Matrix *a = nullptr, *b = nullptr;
  XHAL_TRY(check_matrix(device, "a", a_handle, &a));
  XHAL_TRY(check_matrix(device, "b", b_handle, &b));
  if (!out_c) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_c': NULL");
  if (a->cols != b->rows)
    return fail(XHAL_SHAPE_MISMATCH,
                "argument 'b': shape [%" PRId64 ", %" PRId64 "] but A is [%" PRId64 ", %" PRId64
                "] (A.cols must equal B.rows)",
                b->rows, b->cols, a->rows, a->cols);
  if (a->values_dtype != XHAL_DTYPE_F32 && a->values_dtype != XHAL_DTYPE_F64)
    return fail(XHAL_INVALID_ARGUMENT,
                "argument 'a': the matrix holds %s values, not allowed: op spgemm takes f32 or "
                "f64 matrices",
                xhal_dtype_name(a->values_dtype));
  if (b->values_dtype != a->values_dtype)
    return fail(XHAL_INVALID_ARGUMENT, "argument 'b': %s values but matrix 'a' holds %s values",
                xhal_dtype_name(b->values_dtype), xhal_dtype_name(a->values_dtype));
  XHAL_TRY(
      check_supported(device, XHAL_OP_SPGEMM,
                      device->api->spgemm_numeric != nullptr && device->api->csr_create != nullptr,
                      a->values_dtype, "a"));
  Matrix* c = nullptr;
  try {
    // The symbolic product runs on the host: a pattern validated on the
    // device comes here once (docs/semantics.md, "Sparse (CSR)").
    XHAL_TRY(fetch_host_pattern(*a));
    XHAL_TRY(fetch_host_pattern(*b));
    CsrPattern p = symbolic_product(*a, *b);
    // C keeps the narrower index type when both inputs use it and it fits.
    const bool narrow = a->index_dtype == XHAL_DTYPE_I32 && b->index_dtype == XHAL_DTYPE_I32 &&
                        p.nnz <= std::numeric_limits<int32_t>::max();
    XHAL_TRY(make_csr(device, std::move(p), narrow ? XHAL_DTYPE_I32 : XHAL_DTYPE_I64,
                      CsrValues{a->values_dtype, nullptr, nullptr}, &c, /*inside_op=*/true));
  } catch (const std::bad_alloc&) {
    return fail(XHAL_OUT_OF_MEMORY,
                "spgemm of [%" PRId64 ", %" PRId64 "] x [%" PRId64 ", %" PRId64
                "]: host memory exhausted for C's pattern",
                a->rows, a->cols, b->rows, b->cols);
  }
  const xhal_status_t s = XHAL_PLUGIN_CALL(device, spgemm_numeric, a->plugin_matrix,
                                           b->plugin_matrix, c->plugin_matrix);
  if (s != XHAL_OK) {
    handles().remove(HandleKind::kMatrix, c->handle);
    destroy_matrix(c);  // keeps the plugin's message
    return s;
  }
  // Values were computed on the device: csr_solve cannot vouch for them.
  c->values_known = false;
  c->first_zero_diag_row = -1;
  *out_c = to_handle<xhal_csr_t>(c->handle);
  return XHAL_OK;
}

}  // namespace

extern "C" xhal_status_t xhal_spgemm(xhal_device_t device, xhal_csr_t a, xhal_csr_t b,
                                     xhal_csr_t* out_c) {
  return entry("xhal_spgemm", [&] { return spgemm(device, a, b, out_c); });
}
