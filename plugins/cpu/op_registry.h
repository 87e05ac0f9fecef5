// Each op file of this plugin registers the slots it fills and the dtypes it
// implements, beside the implementation, so that adding an op to the plugin
// touches one file:
//   XHAL_CPU_OP(XHAL_OP_SOFTMAX_FORWARD, kF32Dtype, api.softmax_forward = softmax_forward);
// Registration runs while the library is loaded (static initialisation),
// before the core reads the table.
#pragma once

#include <cstdint>
#include <vector>

#include "xhal/xhal_plugin.h"

namespace xhal::cpu {

inline constexpr uint32_t kF32Dtype = 1u << XHAL_DTYPE_F32;
inline constexpr uint32_t kF32F64Dtypes = kF32Dtype | (1u << XHAL_DTYPE_F64);
// f32, f64, f16 and bf16 (docs/semantics.md 7.2, 7.3).
inline constexpr uint32_t kFloatDtypes =
    kF32F64Dtypes | (1u << XHAL_DTYPE_F16) | (1u << XHAL_DTYPE_BF16);
inline constexpr uint32_t kEveryDtype =
    ((1u << XHAL_DTYPE_COUNT_) - 1u) & ~(1u << XHAL_DTYPE_INVALID);
// Slots that are not an op (index plans, matrices) register with kNotAnOp.
inline constexpr int kNotAnOp = -1;

struct OpRegistration {
  int op;           // xhal_op_t, or kNotAnOp
  uint32_t dtypes;  // bit per xhal_dtype_t the op implements
  void (*fill)(xhal_plugin_api_t& api);
};

// Every registration of the library, in no particular order.
std::vector<OpRegistration>& op_registry();

struct OpRegistrar {
  OpRegistrar(int op, uint32_t dtypes, void (*fill)(xhal_plugin_api_t&)) {
    op_registry().push_back({op, dtypes, fill});
  }
};

}  // namespace xhal::cpu

#define XHAL_CPU_CONCAT_(a, b) a##b
#define XHAL_CPU_CONCAT(a, b) XHAL_CPU_CONCAT_(a, b)
#define XHAL_CPU_OP(op, dtypes, ...)                                             \
  static const ::xhal::cpu::OpRegistrar XHAL_CPU_CONCAT(xhal_cpu_op_, __LINE__)( \
      (op), (dtypes), [](xhal_plugin_api_t& api) { __VA_ARGS__; })
