// Which plugin slots each op needs, and op names for messages and reports.
#include "internal.h"

namespace xhal {

bool op_slots_present(const xhal_plugin_api_t& api, xhal_op_t op) {
  const bool plans = api.index_plan_create && api.index_plan_destroy;
  const bool csr = api.csr_create && api.csr_destroy;
  switch (op) {
    case XHAL_OP_INDEX_SELECT: return plans && api.index_select;
    case XHAL_OP_INDEX_ADD: return plans && api.index_add;
    case XHAL_OP_PERMUTE: return api.permute != nullptr;
    case XHAL_OP_SOFTMAX_FORWARD: return api.softmax_forward != nullptr;
    case XHAL_OP_SOFTMAX_BACKWARD: return api.softmax_backward != nullptr;
    case XHAL_OP_RMS_NORM_FORWARD: return api.rms_norm_forward != nullptr;
    case XHAL_OP_RMS_NORM_BACKWARD: return api.rms_norm_backward != nullptr;
    case XHAL_OP_LAYER_NORM_FORWARD: return api.layer_norm_forward != nullptr;
    case XHAL_OP_LAYER_NORM_BACKWARD: return api.layer_norm_backward != nullptr;
    case XHAL_OP_SPMV: return csr && api.spmv;
    case XHAL_OP_SPMM: return csr && api.spmm;
    case XHAL_OP_CSR_SOLVE: return csr && api.csr_solve;
    case XHAL_OP_CSR_SOLVE_BACKWARD: return csr && api.csr_solve_backward;
    case XHAL_OP_SPGEMM: return csr && api.spgemm_numeric;
    case XHAL_OP_COUNT_: break;
  }
  return false;
}

const char* op_name(xhal_op_t op) {
  switch (op) {
    case XHAL_OP_INDEX_SELECT: return "index_select";
    case XHAL_OP_INDEX_ADD: return "index_add";
    case XHAL_OP_PERMUTE: return "permute";
    case XHAL_OP_SOFTMAX_FORWARD: return "softmax_forward";
    case XHAL_OP_SOFTMAX_BACKWARD: return "softmax_backward";
    case XHAL_OP_RMS_NORM_FORWARD: return "rms_norm_forward";
    case XHAL_OP_RMS_NORM_BACKWARD: return "rms_norm_backward";
    case XHAL_OP_LAYER_NORM_FORWARD: return "layer_norm_forward";
    case XHAL_OP_LAYER_NORM_BACKWARD: return "layer_norm_backward";
    case XHAL_OP_SPMV: return "spmv";
    case XHAL_OP_SPMM: return "spmm";
    case XHAL_OP_CSR_SOLVE: return "csr_solve";
    case XHAL_OP_CSR_SOLVE_BACKWARD: return "csr_solve_backward";
    case XHAL_OP_SPGEMM: return "spgemm";
    case XHAL_OP_COUNT_: break;
  }
  return "unknown";
}

}  // namespace xhal
