#include "op_validate.h"

namespace xhal {

// A per-row tensor: [rows], or x's shape without its last dim.
xhal_status_t check_per_row(const Checked& c, const Checked& x, int64_t rows) {
  if (c.rank() == 1 && c.shape()[0] == rows) return XHAL_OK;
  if (c.rank() + 1 == x.rank()) {
    bool same = true;
    for (uint32_t k = 0; k < c.rank(); ++k) same = same && c.shape()[k] == x.shape()[k];
    if (same) return XHAL_OK;
  }
  return fail(XHAL_SHAPE_MISMATCH,
              "argument '%s': shape %s but expected [%lld] (one value per row of '%s' %s)", c.name,
              shape_string(c.rank(), c.shape()).c_str(), static_cast<long long>(rows), x.name,
              shape_string(x.rank(), x.shape()).c_str());
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

xhal_status_t check_rows(const Checked& c, OpArgs* a) {
  if (c.rank() == 0)
    return fail(XHAL_SHAPE_MISMATCH,
                "argument '%s': rank 0, but the op needs rank >= 1 (rows of the last dim)", c.name);
  a->n = c.shape()[c.rank() - 1];
  a->rows = 1;
  for (uint32_t k = 0; k + 1 < c.rank(); ++k) a->rows *= c.shape()[k];
  return XHAL_OK;
}

// [rows, w] where the op's first argument (rank 2) gives w.
xhal_status_t check_table_rows(const Checked& c, bool first, const Checked& x, int64_t rows) {
  if (first) XHAL_TRY(check_rank(c, 2));
  return check_shape(c, {rows, x.shape()[1]});
}

xhal_status_t check_permuted(const Checked& c, const Checked& x, const uint32_t* perm) {
  XHAL_TRY(check_perm("perm", perm, x.rank()));
  int64_t expected[XHAL_MAX_RANK] = {};
  for (uint32_t k = 0; k < x.rank(); ++k) expected[k] = x.shape()[perm[k]];
  return check_shape(c, std::span<const int64_t>(expected, x.rank()));
}

// [extent] (spmv) or [extent, k] (spmm; the first argument gives k).
xhal_status_t check_op_shape(const Matrix& m, bool transpose, bool rows, const Checked& c, size_t i,
                             bool spmm, OpArgs* a) {
  const int64_t op_rows = transpose ? m.cols : m.rows;
  const int64_t op_cols = transpose ? m.rows : m.cols;
  const int64_t extent = rows ? op_rows : op_cols;
  if (!spmm) return check_shape(c, {extent});
  if (i == 0) {
    XHAL_TRY(check_rank(c, 2));
    a->k = c.shape()[1];
  }
  return check_shape(c, {extent, a->k});
}

xhal_status_t check_solve_rhs(const Matrix& m, const Checked& c, OpArgs* a) {
  return check_rhs(c, m.rows, &a->k);
}

xhal_status_t check_nnz(const Matrix& m, const Checked& c) { return check_shape(c, {m.nnz}); }

xhal_status_t check_matrix_allowed(const Matrix& m, const char* op, uint32_t allowed) {
  if (allowed & dtype_bit(m.values_dtype)) return XHAL_OK;
  return fail(XHAL_INVALID_ARGUMENT,
              "argument 'a': the matrix holds %s values, not allowed: op %s takes %s matrices",
              xhal_dtype_name(m.values_dtype), op, dtype_list(allowed).c_str());
}

xhal_status_t check_matrix_dtype(const Checked& c, const Matrix& m) {
  if (c.dtype() == m.values_dtype) return XHAL_OK;
  return fail(XHAL_INVALID_ARGUMENT, "argument '%s': dtype %s but matrix 'a' holds %s values",
              c.name, xhal_dtype_name(c.dtype()), xhal_dtype_name(m.values_dtype));
}

xhal_status_t check_dtype_agrees(const Checked& c, const Checked& anchor, ops::DtypeRule rule) {
  if (ops::dtype_agrees(rule, c.dtype(), anchor.dtype())) return XHAL_OK;
  const char* why = "";
  switch (rule) {
    case ops::DtypeRule::kSame:
      break;
    case ops::DtypeRule::kParam:
      why = "; it takes x's dtype, or f32 when x is f16 or bf16";
      break;
    case ops::DtypeRule::kStat:
      why = "; saved statistics are f64 for f64 x and f32 for f32, f16 and bf16 x";
      break;
  }
  return fail(XHAL_INVALID_ARGUMENT, "argument '%s': dtype %s but argument '%s' is %s%s", c.name,
              xhal_dtype_name(c.dtype()), anchor.name, xhal_dtype_name(anchor.dtype()), why);
}

bool op_slots_present(const xhal_plugin_api_t& api, const ops::Op& op) {
  auto present = [&api](size_t offset) {
    void* slot = nullptr;
    std::memcpy(&slot, reinterpret_cast<const char*>(&api) + offset, sizeof slot);
    return slot != nullptr;
  };
  if (!present(op.slot)) return false;
  switch (op.needs) {
    case ops::Needs::kNothing:
      return true;
    case ops::Needs::kPlan:
      return api.index_plan_create && api.index_plan_destroy;
    case ops::Needs::kMatrix:
      return api.csr_create && api.csr_destroy;
  }
  return false;
}

}  // namespace xhal
