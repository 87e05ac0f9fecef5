// Index plans: keep the core's validated indices and transposed CSR for the
// plan's lifetime and sort destination rows into light and hub rows once.
#include <new>

#include "dense_ops.h"
#include "index_plan.h"

namespace xhal::cpu {

xhal_status_t index_plan_create(void*, const xhal_plugin_index_plan_desc_t* desc,
                                void** out_plan) {
  try {
    auto* plan = new IndexPlan;
    plan->count = desc->count;
    plan->num_rows = desc->num_rows;
    plan->indices.assign(desc->indices, desc->indices + desc->count);
    plan->row_ptr.assign(desc->row_ptr, desc->row_ptr + desc->num_rows + 1);
    plan->row_sources.assign(desc->row_sources, desc->row_sources + desc->count);
    for (uint64_t r = 0; r < desc->num_rows; ++r) {
      const int64_t m = desc->row_ptr[r + 1] - desc->row_ptr[r];
      if (m == 0) continue;
      (m > kHubSources ? plan->hub_rows : plan->light_rows).push_back(static_cast<int64_t>(r));
    }
    *out_plan = plan;
    return XHAL_OK;
  } catch (const std::bad_alloc&) {
    set_error("cpu plugin: out of host memory copying the index plan");
    return XHAL_OUT_OF_MEMORY;
  }
}

void index_plan_destroy(void*, void* plan) { delete static_cast<IndexPlan*>(plan); }

}  // namespace xhal::cpu
