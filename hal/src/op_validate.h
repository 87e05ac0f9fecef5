// The checks every op's tensor arguments get, driven by the op's row of
// op_table.h: each tensor on its own (check_tensor), dtypes that must agree,
// shapes against the shape rule, aliasing (an output overlaps nothing but
// the one input it may be exactly), and that the device implements the op
// for the dtype. What is particular to one op (the permutation, the
// triangle, the empty-input cases) stays in its front end.
//
// validate_op<Id> is instantiated per op from the constant table, so its
// loops unroll and every rule not in the op's row compiles away: the
// table-driven checks cost what the hand-written ones did.
#pragma once

#include <cinttypes>
#include <cstring>

#include "op_table.h"
#include "validate.h"

namespace xhal {

// What the shape rules read besides the tensors.
struct OpContext {
  const Plan* plan = nullptr;      // Needs::kPlan
  const Matrix* matrix = nullptr;  // Needs::kMatrix
  bool transpose = false;          // op(A) = A^T
  const uint32_t* perm = nullptr;  // permute
};

// The validated arguments, in the op's argument order.
struct OpArgs {
  Checked arg[ops::kMaxArgs];
  bool present[ops::kMaxArgs];
  int64_t rows, n;  // x as [rows, n] (row ops)
  int64_t k;        // columns of a dense right-hand side (sparse ops)
};

// The op's slots (its own and the plan's or matrix's create/destroy) are in
// the table `api`.
bool op_slots_present(const xhal_plugin_api_t& api, const ops::Op& op);

// The shape rules (op_validate.cpp).
xhal_status_t check_per_row(const Checked& c, const Checked& x, int64_t rows);
xhal_status_t check_rhs(const Checked& c, int64_t n, int64_t* k);
xhal_status_t check_rows(const Checked& c, OpArgs* a);
xhal_status_t check_table_rows(const Checked& c, bool first, const Checked& x, int64_t rows);
xhal_status_t check_permuted(const Checked& c, const Checked& x, const uint32_t* perm);
xhal_status_t check_op_extent(const Checked& c, size_t i, bool spmm, int64_t extent, OpArgs* a);
xhal_status_t check_op_shape(const Matrix& m, bool transpose, bool rows, const Checked& c, size_t i,
                             bool spmm, OpArgs* a);
xhal_status_t check_solve_rhs(const Matrix& m, const Checked& c, OpArgs* a);
xhal_status_t check_nnz(const Matrix& m, const Checked& c);
// c's dtype against the matrix's value dtype (every tensor of a sparse op).
xhal_status_t check_matrix_dtype(const Checked& c, const Matrix& m);
// The matrix's value dtype is one `op` takes (`allowed`, its tensors'
// dtypes): an f16/bf16 matrix given to a solve is refused naming 'a',
// before its tensors are looked at (docs/semantics.md 7.2, 7.4).
xhal_status_t check_matrix_allowed(const Matrix& m, const char* op, uint32_t allowed);
// c's dtype against its anchor's under `rule` (op_table.h, dtype_agrees).
xhal_status_t check_dtype_agrees(const Checked& c, const Checked& anchor, ops::DtypeRule rule);

template <xhal_op_t Id>
inline xhal_status_t check_arg_shape(size_t i, const OpContext& ctx, OpArgs* a) {
  constexpr const ops::Op& op = ops::kOps[Id];
  const Checked& c = a->arg[i];
  const Checked& x = a->arg[0];
  using ops::Shape;
  switch (op.args[i].shape) {
    case Shape::kRows:
      return check_rows(c, a);
    case Shape::kLikeX:
      return check_shape(c, std::span<const int64_t>(x.shape(), x.rank()));
    case Shape::kPerRow:
      return check_per_row(c, x, a->rows);
    case Shape::kPerColumn:
      return check_shape(c, {a->n});
    case Shape::kTable:
      return check_table_rows(c, i == 0, x, static_cast<int64_t>(ctx.plan->num_rows));
    case Shape::kSelected:
      return check_table_rows(c, i == 0, x, static_cast<int64_t>(ctx.plan->count));
    case Shape::kAnyStrided:
      return XHAL_OK;
    case Shape::kPermuted:
      return check_permuted(c, x, ctx.perm);
    case Shape::kOpColumns:
    case Shape::kOpRows:
      return check_op_shape(*ctx.matrix, ctx.transpose, op.args[i].shape == Shape::kOpRows, c, i,
                            Id == XHAL_OP_SPMM, a);
    case Shape::kSolveRhs:
      return check_solve_rhs(*ctx.matrix, c, a);
    case Shape::kNnz:
      return check_nnz(*ctx.matrix, c);
  }
  return XHAL_INTERNAL;
}

// `tensors` holds the op's arg_count pointers in its argument order.
template <xhal_op_t Id>
inline xhal_status_t validate_op(Device* device, const xhal_tensor_t* const* tensors,
                                 const OpContext& ctx, OpArgs* a) {
  constexpr const ops::Op& op = ops::kOps[Id];
  constexpr size_t n = op.arg_count;
  if constexpr (op.needs == ops::Needs::kMatrix)
    XHAL_TRY(check_matrix_allowed(*ctx.matrix, op.name, op.args[0].dtypes));
    // Each tensor on its own, in argument order.
#pragma GCC unroll 8
  for (size_t i = 0; i < n; ++i) {
    const ops::Arg& spec = op.args[i];
    a->present[i] = !(spec.optional && tensors[i] == nullptr);
    if (!a->present[i]) continue;
    const Layout layout =
        spec.shape == ops::Shape::kAnyStrided ? Layout::kStrided : Layout::kContiguous;
    XHAL_TRY(check_tensor(device, spec.name, tensors[i], op.name, spec.dtypes, layout, &a->arg[i]));
    if (spec.role == ops::Role::kOut && a->arg[i].read_only) [[unlikely]]
      return fail(XHAL_INVALID_ARGUMENT,
                  "argument '%s': the buffer is read-only (imported read-only); op %s writes it",
                  spec.name, op.name);
  }
  // Shapes, in argument order (each rule reads what earlier ones found).
  a->rows = a->n = 0;
  a->k = 1;
#pragma GCC unroll 8
  for (size_t i = 0; i < n; ++i)
    if (a->present[i]) XHAL_TRY(check_arg_shape<Id>(i, ctx, a));
      // Dtype agreement (docs/semantics.md 7.4), before the device's dtype bits
      // are read, so a mixed call gets the same status on every backend.
#pragma GCC unroll 8
  for (size_t i = 0; i < n; ++i)
    if (op.args[i].same_dtype_as != ops::kNone && a->present[i])
      XHAL_TRY(check_dtype_agrees(a->arg[i], a->arg[op.args[i].same_dtype_as], op.args[i].rule));
  // A sparse op's tensors all take the matrix's value dtype.
  if constexpr (op.needs == ops::Needs::kMatrix) {
#pragma GCC unroll 8
    for (size_t i = 0; i < n; ++i)
      if (a->present[i]) XHAL_TRY(check_matrix_dtype(a->arg[i], *ctx.matrix));
  }
  // Aliasing: an output overlaps no other argument but the one input it may
  // be exactly. A pair of outputs is checked once, from the later one.
#pragma GCC unroll 8
  for (size_t o = 0; o < n; ++o) {
    if (op.args[o].role != ops::Role::kOut || !a->present[o]) continue;
#pragma GCC unroll 8
    for (size_t j = 0; j < n; ++j) {
      if (j == o || (op.args[j].role == ops::Role::kOut && j > o) || !a->present[j]) continue;
      if (j == op.args[o].in_place_with) XHAL_TRY(check_in_place_or_disjoint(a->arg[o], a->arg[j]));
      else XHAL_TRY(check_no_alias(a->arg[o], a->arg[j]));
    }
  }
  return check_supported(device, Id, op_slots_present(*device->api, op),
                         n ? a->arg[0].dtype() : XHAL_DTYPE_F32, n ? op.args[0].name : "a");
}

}  // namespace xhal
