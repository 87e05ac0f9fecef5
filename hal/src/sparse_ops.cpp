// Sparse ops on validated CSR matrices: spmv, spmm, triangular solve and its
// backward. Pattern facts (triangle, diagonal) were computed at creation, so
// these checks cost O(1) per call except the ones that name a row.
#include <cinttypes>

#include <mutex>

#include "op_validate.h"
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
  const int64_t row = lower ? a.facts.above_row : a.facts.below_row;
  if (row >= 0)
    return fail(XHAL_INVALID_STRUCTURE,
                "argument 'a': row %" PRId64 " has an entry in column %" PRId64
                ", %s the diagonal, but triangle is %s",
                row, lower ? a.facts.above_col : a.facts.below_col, lower ? "above" : "below",
                lower ? "lower" : "upper");
  if (diagonal == XHAL_DIAGONAL_STORED) {
    if (a.facts.missing_diagonal_row >= 0)
      return fail(XHAL_INVALID_STRUCTURE,
                  "argument 'a': row %" PRId64
                  " has no stored diagonal entry, but diagonal "
                  "is stored",
                  a.facts.missing_diagonal_row);
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

// Resolves the device (taking its queue lock for the rest of the call) and
// the matrix, checks trans and validates the op's tensors.
struct SparseCall {
  Device* device = nullptr;
  Matrix* a = nullptr;
  OpArgs args;
};
template <xhal_op_t Id, size_t N>
xhal_status_t begin(xhal_device_t device_handle, xhal_csr_t a_handle, const xhal_transpose_t& trans,
                    const xhal_tensor_t* const (&tensors)[N], std::unique_lock<QueueMutex>* lock,
                    SparseCall* call, const xhal_triangle_t* triangle = nullptr,
                    const xhal_diagonal_t* diagonal = nullptr) {
  XHAL_TRY(get_device(device_handle, "device", &call->device));
  *lock = std::unique_lock(call->device->queue);
  XHAL_TRY(check_matrix(call->device, "a", a_handle, &call->a));
  XHAL_TRY(check_trans(trans));
  if (triangle) XHAL_TRY(check_triangular(*call->a, *triangle, *diagonal));
  OpContext ctx;
  ctx.matrix = call->a;
  ctx.transpose = raw_enum(trans) == XHAL_TRANSPOSE;
  return validate_op<Id>(call->device, tensors, ctx, &call->args);
}

template <xhal_op_t Id>
xhal_status_t sp_mul(xhal_device_t device, xhal_csr_t a, const xhal_transpose_t& trans, float alpha,
                     const xhal_tensor_t* x, float beta, const xhal_tensor_t* y) {
  std::unique_lock<QueueMutex> lock;
  SparseCall c;
  XHAL_TRY(begin<Id>(device, a, trans, {x, y}, &lock, &c));
  const Checked &cx = c.args.arg[0], &cy = c.args.arg[1];
  if (cy.elements == 0) return XHAL_OK;
  if constexpr (Id == XHAL_OP_SPMM)
    return XHAL_PLUGIN_CALL(c.device, spmm, c.a->plugin_matrix, trans, alpha, &cx.plugin, beta,
                            &cy.plugin);
  return XHAL_PLUGIN_CALL(c.device, spmv, c.a->plugin_matrix, trans, alpha, &cx.plugin, beta,
                          &cy.plugin);
}

}  // namespace

extern "C" {

xhal_status_t xhal_spmv(xhal_device_t device, xhal_csr_t a, xhal_transpose_t trans, float alpha,
                        const xhal_tensor_t* x, float beta, const xhal_tensor_t* y) {
  return entry("xhal_spmv",
               [&] { return sp_mul<XHAL_OP_SPMV>(device, a, trans, alpha, x, beta, y); });
}

xhal_status_t xhal_spmm(xhal_device_t device, xhal_csr_t a, xhal_transpose_t trans, float alpha,
                        const xhal_tensor_t* x, float beta, const xhal_tensor_t* y) {
  return entry("xhal_spmm",
               [&] { return sp_mul<XHAL_OP_SPMM>(device, a, trans, alpha, x, beta, y); });
}

xhal_status_t xhal_csr_solve(xhal_device_t device, xhal_csr_t a, xhal_transpose_t trans,
                             xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                             const xhal_tensor_t* b, const xhal_tensor_t* x) {
  return entry("xhal_csr_solve", [&]() -> xhal_status_t {
    std::unique_lock<QueueMutex> lock;
    SparseCall c;
    XHAL_TRY(begin<XHAL_OP_CSR_SOLVE>(device, a, trans, {b, x}, &lock, &c, &triangle, &diagonal));
    const int64_t n = c.a->rows, k = c.args.k;
    if (c.args.arg[1].elements == 0) return XHAL_OK;
    const auto pb = as_columns(c.args.arg[0], n, k), px = as_columns(c.args.arg[1], n, k);
    return XHAL_PLUGIN_CALL(c.device, csr_solve, c.a->plugin_matrix, trans, triangle, diagonal, &pb,
                            &px);
  });
}

xhal_status_t xhal_csr_solve_backward(xhal_device_t device, xhal_csr_t a, xhal_transpose_t trans,
                                      xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                                      const xhal_tensor_t* x, const xhal_tensor_t* dx,
                                      const xhal_tensor_t* gb, const xhal_tensor_t* ga) {
  return entry("xhal_csr_solve_backward", [&]() -> xhal_status_t {
    std::unique_lock<QueueMutex> lock;
    SparseCall c;
    XHAL_TRY(begin<XHAL_OP_CSR_SOLVE_BACKWARD>(device, a, trans, {x, dx, gb, ga}, &lock, &c,
                                               &triangle, &diagonal));
    const OpArgs& g = c.args;
    const int64_t n = c.a->rows, k = g.k;
    if (g.arg[2].elements == 0 && (!ga || g.arg[3].elements == 0)) return XHAL_OK;
    const auto px = as_columns(g.arg[0], n, k), pdx = as_columns(g.arg[1], n, k),
               pgb = as_columns(g.arg[2], n, k);
    const xhal_plugin_tensor_t pga = ga ? reshape(g.arg[3], {c.a->nnz}) : xhal_plugin_tensor_t{};
    return XHAL_PLUGIN_CALL(c.device, csr_solve_backward, c.a->plugin_matrix, trans, triangle,
                            diagonal, &px, &pdx, &pgb, ga ? &pga : nullptr);
  });
}

}  // extern "C"
