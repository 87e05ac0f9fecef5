// Sparse ops on validated CSR matrices: spmv, spmm, triangular solve and its
// backward. Pattern facts (triangle, diagonal) were computed at creation, so
// these checks cost O(1) per call except the ones that name a row.
#include <cinttypes>

#include "validate.h"
#include "validate_sparse.h"

using namespace xhal;

namespace {

// Enum arguments are checked as integers: C lets any value into them, and
// C++ may not load an enum object holding a value outside its range.
xhal_status_t check_trans(const xhal_transpose_t& t) {
  const uint32_t raw = raw_enum(t);
  if (raw != XHAL_TRANSPOSE_NONE && raw != XHAL_TRANSPOSE)
    return fail(XHAL_INVALID_ARGUMENT, "argument 'trans': %d is not an xhal_transpose_t",
                static_cast<int>(raw));
  return XHAL_OK;
}

struct OpShape {
  int64_t rows, cols;  // of op(A)
};
OpShape op_shape(const Matrix& a, xhal_transpose_t t) {
  return t == XHAL_TRANSPOSE ? OpShape{a.cols, a.rows} : OpShape{a.rows, a.cols};
}

xhal_status_t get(Device* device, const char* op, const char* name, const xhal_tensor_t* t,
                  Checked* out) {
  return check_tensor(device, name, t, op, kF32Only, Layout::kContiguous, out);
}

// [n] or [n, k]; k is 1 for a vector.
xhal_status_t check_rhs(const Checked& c, int64_t n, int64_t* k) {
  if (c.rank() == 1) {
    *k = 1;
    return check_shape(c, {n});
  }
  if (c.rank() == 2) {
    *k = c.shape()[1];
    return check_shape(c, {n, *k});
  }
  return fail(XHAL_SHAPE_MISMATCH,
              "argument '%s': shape %s but expected [%" PRId64 "] or [%" PRId64 ", k]", c.name,
              shape_string(c.rank(), c.shape()).c_str(), n, n);
}

// A's stored pattern lies in `triangle`; with a stored diagonal every
// diagonal entry is present and, when the values came from the host, non-zero.
xhal_status_t check_triangular(const Matrix& a, const xhal_triangle_t& triangle_arg,
                               const xhal_diagonal_t& diagonal_arg) {
  const uint32_t raw_triangle = raw_enum(triangle_arg), raw_diagonal = raw_enum(diagonal_arg);
  if (raw_triangle != XHAL_TRIANGLE_LOWER && raw_triangle != XHAL_TRIANGLE_UPPER)
    return fail(XHAL_INVALID_ARGUMENT, "argument 'triangle': %d is not an xhal_triangle_t",
                static_cast<int>(raw_triangle));
  if (raw_diagonal != XHAL_DIAGONAL_STORED && raw_diagonal != XHAL_DIAGONAL_UNIT)
    return fail(XHAL_INVALID_ARGUMENT, "argument 'diagonal': %d is not an xhal_diagonal_t",
                static_cast<int>(raw_diagonal));
  const auto triangle = static_cast<xhal_triangle_t>(raw_triangle);
  const auto diagonal = static_cast<xhal_diagonal_t>(raw_diagonal);
  if (a.rows != a.cols)
    return fail(XHAL_SHAPE_MISMATCH, "argument 'a': shape [%" PRId64 ", %" PRId64 "] is not square",
                a.rows, a.cols);
  const bool lower = triangle == XHAL_TRIANGLE_LOWER;
  if (lower ? !a.lower : !a.upper) {
    for (int64_t i = 0; i < a.rows; ++i)
      for (int64_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
        const int64_t c = a.col_idx[k];
        if (lower ? c > i : c < i)
          return fail(XHAL_INVALID_STRUCTURE,
                      "argument 'a': row %" PRId64 " has an entry in column %" PRId64
                      ", %s the diagonal, but triangle is %s",
                      i, c, lower ? "above" : "below", lower ? "lower" : "upper");
      }
  }
  if (diagonal == XHAL_DIAGONAL_STORED) {
    if (!a.full_diagonal)
      for (int64_t i = 0; i < a.rows; ++i)
        if (a.diag_pos[i] < 0)
          return fail(XHAL_INVALID_STRUCTURE,
                      "argument 'a': row %" PRId64
                      " has no stored diagonal entry, but diagonal "
                      "is stored",
                      i);
    if (a.values_known && a.first_zero_diag_row >= 0)
      return fail(XHAL_INVALID_STRUCTURE,
                  "argument 'a': row %" PRId64 " has a zero diagonal value, but diagonal is stored",
                  a.first_zero_diag_row);
  }
  return XHAL_OK;
}

xhal_plugin_tensor_t as_columns(const Checked& c, int64_t n, int64_t k) {
  return reshape(c, {n, k});
}

}  // namespace

extern "C" {

static xhal_status_t sp_mul(xhal_device_t device_handle, xhal_csr_t a_handle, xhal_transpose_t trans, float alpha,
                            const xhal_tensor_t* x, float beta, const xhal_tensor_t* y,
                            bool matrix) {
  return entry((matrix ? "xhal_spmm" : "xhal_spmv"), [&]() -> xhal_status_t {
    const char* op = matrix ? "spmm" : "spmv";
    Device* device;
    XHAL_TRY(get_device(device_handle, "device", &device));
    std::lock_guard queue(device->queue);
    Matrix* a;
    XHAL_TRY(check_matrix(device, "a", a_handle, &a));
    XHAL_TRY(check_trans(trans));
    Checked cx, cy;
    XHAL_TRY(get(device, op, "x", x, &cx));
    XHAL_TRY(get(device, op, "y", y, &cy));
    const OpShape s = op_shape(*a, trans);
    if (matrix) {
      XHAL_TRY(check_rank(cx, 2));
      const int64_t k = cx.shape()[1];
      XHAL_TRY(check_shape(cx, {s.cols, k}));
      XHAL_TRY(check_shape(cy, {s.rows, k}));
    } else {
      XHAL_TRY(check_shape(cx, {s.cols}));
      XHAL_TRY(check_shape(cy, {s.rows}));
    }
    XHAL_TRY(check_no_alias(cy, cx));
    if (matrix) {
      XHAL_TRY(
          check_supported(device, XHAL_OP_SPMM, device->api->spmm != nullptr, XHAL_DTYPE_F32, "x"));
    } else {
      XHAL_TRY(
          check_supported(device, XHAL_OP_SPMV, device->api->spmv != nullptr, XHAL_DTYPE_F32, "x"));
    }
    if (cy.elements == 0) return XHAL_OK;
    if (matrix)
      return XHAL_PLUGIN_CALL(device, spmm, a->plugin_matrix, trans, alpha, &cx.plugin, beta,
                              &cy.plugin);
    return XHAL_PLUGIN_CALL(device, spmv, a->plugin_matrix, trans, alpha, &cx.plugin, beta,
                            &cy.plugin);
  });
}

xhal_status_t xhal_spmv(xhal_device_t device, xhal_csr_t a, xhal_transpose_t trans, float alpha,
                        const xhal_tensor_t* x, float beta, const xhal_tensor_t* y) {
  return sp_mul(device, a, trans, alpha, x, beta, y, false);
}

xhal_status_t xhal_spmm(xhal_device_t device, xhal_csr_t a, xhal_transpose_t trans, float alpha,
                        const xhal_tensor_t* x, float beta, const xhal_tensor_t* y) {
  return sp_mul(device, a, trans, alpha, x, beta, y, true);
}

xhal_status_t xhal_csr_solve(xhal_device_t device_handle, xhal_csr_t a_handle, xhal_transpose_t trans,
                             xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                             const xhal_tensor_t* b, const xhal_tensor_t* x) {
  return entry("xhal_csr_solve", [&]() -> xhal_status_t {
    constexpr const char* op = "csr_solve";
    Device* device;
    XHAL_TRY(get_device(device_handle, "device", &device));
    std::lock_guard queue(device->queue);
    Matrix* a;
    XHAL_TRY(check_matrix(device, "a", a_handle, &a));
    XHAL_TRY(check_trans(trans));
    XHAL_TRY(check_triangular(*a, triangle, diagonal));
    Checked cb, cx;
    XHAL_TRY(get(device, op, "b", b, &cb));
    XHAL_TRY(get(device, op, "x", x, &cx));
    int64_t k = 1;
    XHAL_TRY(check_rhs(cb, a->rows, &k));
    XHAL_TRY(check_shape(cx, std::span<const int64_t>(cb.shape(), cb.rank())));
    XHAL_TRY(check_in_place_or_disjoint(cx, cb));
    XHAL_TRY(check_supported(device, XHAL_OP_CSR_SOLVE, device->api->csr_solve != nullptr,
                             XHAL_DTYPE_F32, "b"));
    if (cx.elements == 0) return XHAL_OK;
    const auto pb = as_columns(cb, a->rows, k), px = as_columns(cx, a->rows, k);
    return XHAL_PLUGIN_CALL(device, csr_solve, a->plugin_matrix, trans, triangle, diagonal, &pb, &px);
  });
}

xhal_status_t xhal_csr_solve_backward(xhal_device_t device_handle, xhal_csr_t a_handle, xhal_transpose_t trans,
                                      xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                                      const xhal_tensor_t* x, const xhal_tensor_t* dx,
                                      const xhal_tensor_t* gb, const xhal_tensor_t* ga) {
  return entry("xhal_csr_solve_backward", [&]() -> xhal_status_t {
    constexpr const char* op = "csr_solve_backward";
    Device* device;
    XHAL_TRY(get_device(device_handle, "device", &device));
    std::lock_guard queue(device->queue);
    Matrix* a;
    XHAL_TRY(check_matrix(device, "a", a_handle, &a));
    XHAL_TRY(check_trans(trans));
    XHAL_TRY(check_triangular(*a, triangle, diagonal));
    Checked cx, cdx, cgb, cga;
    XHAL_TRY(get(device, op, "x", x, &cx));
    XHAL_TRY(get(device, op, "dx", dx, &cdx));
    XHAL_TRY(get(device, op, "gb", gb, &cgb));
    if (ga) XHAL_TRY(get(device, op, "ga", ga, &cga));
    int64_t k = 1;
    XHAL_TRY(check_rhs(cx, a->rows, &k));
    const std::span<const int64_t> xs(cx.shape(), cx.rank());
    XHAL_TRY(check_shape(cdx, xs));
    XHAL_TRY(check_shape(cgb, xs));
    if (ga) XHAL_TRY(check_shape(cga, {a->nnz}));
    XHAL_TRY(check_no_alias(cgb, cx));
    XHAL_TRY(check_no_alias(cgb, cdx));
    if (ga) {
      XHAL_TRY(check_no_alias(cga, cx));
      XHAL_TRY(check_no_alias(cga, cdx));
      XHAL_TRY(check_no_alias(cga, cgb));
    }
    XHAL_TRY(check_supported(device, XHAL_OP_CSR_SOLVE_BACKWARD,
                             device->api->csr_solve_backward != nullptr, XHAL_DTYPE_F32, "x"));
    if (cgb.elements == 0 && (!ga || cga.elements == 0)) return XHAL_OK;
    const auto px = as_columns(cx, a->rows, k), pdx = as_columns(cdx, a->rows, k),
               pgb = as_columns(cgb, a->rows, k);
    const xhal_plugin_tensor_t pga = ga ? reshape(cga, {a->nnz}) : xhal_plugin_tensor_t{};
    return XHAL_PLUGIN_CALL(device, csr_solve_backward, a->plugin_matrix, trans, triangle, diagonal,
                            &px, &pdx, &pgb, ga ? &pga : nullptr);
  });
}

}  // extern "C"
