// Every op of the app ABI, named once: its id and public name, the plugin
// slot it calls, what it needs created beforehand, and each tensor argument
// with its role, shape rule, dtypes and the one input it may overwrite in
// place. The core's front ends validate from this table (op_validate.cpp),
// the slot-presence checks and xhal_op_name read it, and the conformance
// suite builds its per-op bad-input cases from it. Only public types appear
// here, so the conformance suite can include it.
//
// Adding an op: a row here, its front end (hal/src/ops_*.cpp), its slot in
// xhal_plugin.h and its id in types.h (docs/plugin-guide.md has the list).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

#include "xhal/xhal_plugin.h"

namespace xhal::ops {

// What must exist before the op runs (and whose slots it needs).
enum class Needs : uint8_t { kNothing, kPlan, kMatrix };

enum class Role : uint8_t { kIn, kOut };

// How an argument's shape follows from the op's other inputs. `x` is the
// op's first tensor argument; rows and n are x viewed as [rows, n] over its
// last dim; count and num_rows come from the plan; op(A) is the matrix,
// transposed or not; nnz its stored entries.
enum class Shape : uint8_t {
  kRows,        // rank >= 1, viewed as [rows, n]
  kLikeX,       // exactly x's shape
  kPerRow,      // [rows], or x's shape without its last dim
  kPerColumn,   // [n]
  kTable,       // [num_rows, w]; index_select's src gives w (rank 2)
  kSelected,    // [count, w]; index_add's src gives w (rank 2)
  kAnyStrided,  // any rank <= 8, any strides >= 0 (permute's src)
  kPermuted,    // src's shape reordered by perm (permute's dst)
  kOpColumns,   // [op(A).cols] (spmv) or [op(A).cols, k] (spmm, rank 2)
  kOpRows,      // [op(A).rows] or [op(A).rows, k], k from x
  kSolveRhs,    // [n] or [n, k] with n = A's rows
  kNnz,         // [nnz]
};

inline constexpr uint32_t kF32 = 1u << XHAL_DTYPE_F32;
// f32 and f64: the saved statistics of the norms (f32 for f32, f16 and bf16
// x, f64 for f64 x; docs/semantics.md 7.2, 7.3), and every tensor of the
// solves (which must also be the matrix's value dtype).
inline constexpr uint32_t kF32F64 = kF32 | (1u << XHAL_DTYPE_F64);
// The floating ops that exist in f64, f16 and bf16 too (docs/semantics.md
// 7.2, 7.3): index_add, softmax, the norms, spmv and spmm. Which dtypes may meet in one
// call is each argument's DtypeRule.
inline constexpr uint32_t kFloat = kF32F64 | (1u << XHAL_DTYPE_F16) | (1u << XHAL_DTYPE_BF16);
inline constexpr uint32_t kAnyDtype = (1u << XHAL_DTYPE_F32) | (1u << XHAL_DTYPE_F16) |
                                      (1u << XHAL_DTYPE_BF16) | (1u << XHAL_DTYPE_I32) |
                                      (1u << XHAL_DTYPE_I64) | (1u << XHAL_DTYPE_U8) |
                                      (1u << XHAL_DTYPE_F64);
inline constexpr uint8_t kNone = 0xff;

// How an argument's dtype must follow the dtype of its same_dtype_as
// argument (the anchor), docs/semantics.md 7.4.
enum class DtypeRule : uint8_t {
  kSame,   // the anchor's dtype
  kParam,  // norm gamma: the anchor's (x's) dtype, or f32 when x is f16 or bf16
  kStat,   // saved mean/rstd: f64 for f64 x, else f32
};

constexpr bool is_narrow(uint32_t dtype) {
  return dtype == XHAL_DTYPE_F16 || dtype == XHAL_DTYPE_BF16;
}

// Whether `dtype` agrees with the anchor's dtype under `rule`.
constexpr bool dtype_agrees(DtypeRule rule, uint32_t dtype, uint32_t anchor) {
  switch (rule) {
    case DtypeRule::kSame:
      return dtype == anchor;
    case DtypeRule::kParam:
      return dtype == anchor || (dtype == XHAL_DTYPE_F32 && is_narrow(anchor));
    case DtypeRule::kStat:
      return dtype == (anchor == XHAL_DTYPE_F64 ? XHAL_DTYPE_F64 : XHAL_DTYPE_F32);
  }
  return false;
}

struct Arg {
  const char* name;
  Role role;
  Shape shape;
  uint32_t dtypes;                    // allowed by the spec (the device may implement fewer)
  uint8_t in_place_with = kNone;      // output: the input it may be exactly (same view)
  uint8_t same_dtype_as = kNone;      // the anchor of `rule` (kSame: its dtype)
  bool optional = false;              // may be NULL (csr_solve_backward's ga)
  DtypeRule rule = DtypeRule::kSame;  // how the dtype follows same_dtype_as
};

inline constexpr size_t kMaxArgs = 8;

struct Op {
  xhal_op_t id;
  const char* name;  // xhal_op_name, reports, messages
  size_t slot;       // offsetof(xhal_plugin_api_t, <the op's slot>)
  Needs needs;
  uint8_t arg_count;
  Arg args[kMaxArgs];
  // Tensor arguments are contiguous unless their shape rule is kAnyStrided.
};

#define XHAL_SLOT_OF(member) offsetof(xhal_plugin_api_t, member)

// clang-format off: one row per op, as the table reads best
inline constexpr Op kOps[] = {
    {XHAL_OP_INDEX_SELECT,
     "index_select",
     XHAL_SLOT_OF(index_select),
     Needs::kPlan,
     2,
     {{"src", Role::kIn, Shape::kTable, kAnyDtype},
      {"out", Role::kOut, Shape::kSelected, kAnyDtype, kNone, 0}}},
    {XHAL_OP_INDEX_ADD,
     "index_add",
     XHAL_SLOT_OF(index_add),
     Needs::kPlan,
     2,
     {{"src", Role::kIn, Shape::kSelected, kFloat},
      {"dst", Role::kOut, Shape::kTable, kFloat, kNone, 0}}},
    {XHAL_OP_PERMUTE,
     "permute",
     XHAL_SLOT_OF(permute),
     Needs::kNothing,
     2,
     {{"src", Role::kIn, Shape::kAnyStrided, kAnyDtype},
      {"dst", Role::kOut, Shape::kPermuted, kAnyDtype, kNone, 0}}},
    {XHAL_OP_SOFTMAX_FORWARD,
     "softmax_forward",
     XHAL_SLOT_OF(softmax_forward),
     Needs::kNothing,
     2,
     {{"x", Role::kIn, Shape::kRows, kFloat},  //
      {"y", Role::kOut, Shape::kLikeX, kFloat, 0, 0}}},
    {XHAL_OP_SOFTMAX_BACKWARD,
     "softmax_backward",
     XHAL_SLOT_OF(softmax_backward),
     Needs::kNothing,
     3,
     {{"y", Role::kIn, Shape::kRows, kFloat},
      {"dy", Role::kIn, Shape::kLikeX, kFloat, kNone, 0},
      {"dx", Role::kOut, Shape::kLikeX, kFloat, 1, 0}}},
    {XHAL_OP_RMS_NORM_FORWARD,
     "rms_norm_forward",
     XHAL_SLOT_OF(rms_norm_forward),
     Needs::kNothing,
     4,
     {{"x", Role::kIn, Shape::kRows, kFloat},
      {"gamma", Role::kIn, Shape::kPerColumn, kFloat, kNone, 0, false, DtypeRule::kParam},
      {"y", Role::kOut, Shape::kLikeX, kFloat, 0, 0},
      {"rstd", Role::kOut, Shape::kPerRow, kF32F64, kNone, 0, false, DtypeRule::kStat}}},
    {XHAL_OP_RMS_NORM_BACKWARD,
     "rms_norm_backward",
     XHAL_SLOT_OF(rms_norm_backward),
     Needs::kNothing,
     6,
     {{"x", Role::kIn, Shape::kRows, kFloat},
      {"gamma", Role::kIn, Shape::kPerColumn, kFloat, kNone, 0, false, DtypeRule::kParam},
      {"rstd", Role::kIn, Shape::kPerRow, kF32F64, kNone, 0, false, DtypeRule::kStat},
      {"dy", Role::kIn, Shape::kLikeX, kFloat, kNone, 0},
      {"dx", Role::kOut, Shape::kLikeX, kFloat, 3, 0},
      {"dgamma", Role::kOut, Shape::kPerColumn, kFloat, kNone, 1}}},
    {XHAL_OP_LAYER_NORM_FORWARD,
     "layer_norm_forward",
     XHAL_SLOT_OF(layer_norm_forward),
     Needs::kNothing,
     6,
     {{"x", Role::kIn, Shape::kRows, kFloat},
      {"gamma", Role::kIn, Shape::kPerColumn, kFloat, kNone, 0, false, DtypeRule::kParam},
      {"beta", Role::kIn, Shape::kPerColumn, kFloat, kNone, 1},
      {"y", Role::kOut, Shape::kLikeX, kFloat, 0, 0},
      {"mean", Role::kOut, Shape::kPerRow, kF32F64, kNone, 0, false, DtypeRule::kStat},
      {"rstd", Role::kOut, Shape::kPerRow, kF32F64, kNone, 0, false, DtypeRule::kStat}}},
    {XHAL_OP_LAYER_NORM_BACKWARD,
     "layer_norm_backward",
     XHAL_SLOT_OF(layer_norm_backward),
     Needs::kNothing,
     8,
     {{"x", Role::kIn, Shape::kRows, kFloat},
      {"gamma", Role::kIn, Shape::kPerColumn, kFloat, kNone, 0, false, DtypeRule::kParam},
      {"mean", Role::kIn, Shape::kPerRow, kF32F64, kNone, 0, false, DtypeRule::kStat},
      {"rstd", Role::kIn, Shape::kPerRow, kF32F64, kNone, 0, false, DtypeRule::kStat},
      {"dy", Role::kIn, Shape::kLikeX, kFloat, kNone, 0},
      {"dx", Role::kOut, Shape::kLikeX, kFloat, 4, 0},
      {"dgamma", Role::kOut, Shape::kPerColumn, kFloat, kNone, 1},
      {"dbeta", Role::kOut, Shape::kPerColumn, kFloat, kNone, 1}}},
    {XHAL_OP_SPMV,
     "spmv",
     XHAL_SLOT_OF(spmv),
     Needs::kMatrix,
     2,
     {{"x", Role::kIn, Shape::kOpColumns, kFloat},  //
      {"y", Role::kOut, Shape::kOpRows, kFloat}}},
    {XHAL_OP_SPMM,
     "spmm",
     XHAL_SLOT_OF(spmm),
     Needs::kMatrix,
     2,
     {{"x", Role::kIn, Shape::kOpColumns, kFloat},  //
      {"y", Role::kOut, Shape::kOpRows, kFloat}}},
    {XHAL_OP_CSR_SOLVE,
     "csr_solve",
     XHAL_SLOT_OF(csr_solve),
     Needs::kMatrix,
     2,
     {{"b", Role::kIn, Shape::kSolveRhs, kF32F64},  //
      {"x", Role::kOut, Shape::kLikeX, kF32F64, 0}}},
    {XHAL_OP_CSR_SOLVE_BACKWARD,
     "csr_solve_backward",
     XHAL_SLOT_OF(csr_solve_backward),
     Needs::kMatrix,
     4,
     {{"x", Role::kIn, Shape::kSolveRhs, kF32F64},
      {"dx", Role::kIn, Shape::kLikeX, kF32F64},
      {"gb", Role::kOut, Shape::kLikeX, kF32F64},
      {"ga", Role::kOut, Shape::kNnz, kF32F64, kNone, kNone, true}}},
    {XHAL_OP_SPGEMM, "spgemm", XHAL_SLOT_OF(spgemm_numeric), Needs::kMatrix, 0, {}},
};
// clang-format on

#undef XHAL_SLOT_OF

static_assert(std::size(kOps) == XHAL_OP_COUNT_, "one row per xhal_op_t");

constexpr bool ids_in_order() {
  for (size_t i = 0; i < std::size(kOps); ++i)
    if (kOps[i].id != static_cast<xhal_op_t>(i)) return false;
  return true;
}
static_assert(ids_in_order(), "row i describes op id i");

// The row of `op`, or nullptr outside the enum.
constexpr const Op* find(uint32_t op) { return op < std::size(kOps) ? &kOps[op] : nullptr; }

}  // namespace xhal::ops
