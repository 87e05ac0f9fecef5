// What the recording fake plugin (libxhal-recorder.so: fake_plugin.cpp built
// with FAKE_RECORDER) saw: every slot call in order, with its arguments
// copied, plus copies of the index plans and CSR patterns the core built.
// The tests read it through the exported xhal_recorder_state() of the
// loaded module.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "xhal/xhal_plugin.h"

namespace xhal::recorder {

struct Call {
  std::string slot;
  // Tensor arguments in slot order; a NULL tensor (csr_solve_backward's ga)
  // is recorded with rank 99.
  std::vector<xhal_plugin_tensor_t> tensors;
  float alpha = 0, beta = 0, eps = 0;
  int trans = -1, triangle = -1, diagonal = -1;
  // buffer_* slots: buffers, offsets and size.
  void* src = nullptr;
  void* dst = nullptr;
  uint64_t src_offset = 0, dst_offset = 0, size = 0;
  void* plan_or_matrix = nullptr;
  // index_plan_create_from_buffer: the indices' dtype and num_rows (their
  // buffer, offset and count are src, src_offset and size).
  int index_dtype = -1;
  uint64_t num_rows = 0;
};

struct Plan {
  uint64_t count = 0, num_rows = 0, max_sources_per_row = 0;
  std::vector<int64_t> indices, row_ptr, row_sources;
  bool row_ptr_null = false;
  // The compact form, recorded by a recorder built for ABI minor >= 1.
  uint64_t touched_count = 0;
  std::vector<int64_t> touched_rows, touched_ptr;
};

struct Matrix {
  int64_t rows = 0, cols = 0, nnz = 0;
  std::vector<int64_t> row_ptr, col_idx, row_idx, t_row_ptr, t_col_idx, t_perm;
  bool transpose_given = false;        // t_row_ptr was not NULL
  bool transpose_fields_null = false;  // t_row_ptr, t_col_idx and t_perm all NULL
  void* values_buffer = nullptr;
};

struct State {
  std::vector<Call> calls;
  std::vector<Plan> plans;
  std::vector<Matrix> matrices;
  int64_t live_plans = 0, live_matrices = 0, live_buffers = 0;
  // Next op slot (not buffer slot) fails with this status when not XHAL_OK.
  xhal_status_t fail_next_op = XHAL_OK;
  // A gate for the independent-queue test: while `hold` is set, the next
  // softmax_forward on device 0 records nothing, sets `held` and waits
  // until `release` is set (the call stays inside the plugin meanwhile).
  std::atomic<bool> hold{false}, held{false}, release{false};
  // device_open_on_queue: how often, and the queue of the last call.
  int opens_on_queue = 0;
  void* last_open_queue = nullptr;
  // index_plan_create_from_buffer: when `fault_status` is not XHAL_OK, the
  // next call returns it with this fault (and no plan).
  xhal_status_t fault_status = XHAL_OK;
  xhal_plugin_index_fault_t fault{};
  // csr_create_from_buffers (FAKE_CSR_FROM_BUFFERS): the same for a
  // pattern's fault.
  xhal_status_t csr_fault_status = XHAL_OK;
  xhal_plugin_csr_fault_t csr_fault{};

  void clear() {
    calls.clear();
    plans.clear();
    matrices.clear();
  }
  size_t count(const std::string& slot) const {
    size_t n = 0;
    for (const Call& c : calls) n += c.slot == slot;
    return n;
  }
  const Call* last(const std::string& slot) const {
    for (auto it = calls.rbegin(); it != calls.rend(); ++it)
      if (it->slot == slot) return &*it;
    return nullptr;
  }
};

}  // namespace xhal::recorder

extern "C" typedef xhal::recorder::State* (*xhal_recorder_state_fn)(void);
