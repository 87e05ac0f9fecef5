// Index plans: keep the core's validated indices and the sources of each
// touched row for the plan's lifetime, and sort those rows into light and
// hub rows once.
#include <memory>
#include <new>

#include "dense_ops.h"
#include "index_plan.h"
#include "op_registry.h"

namespace xhal::cpu {
namespace {

void add_row(IndexPlan* plan, int64_t row, int64_t begin, int64_t end) {
  (end - begin > kHubSources ? plan->hub_rows : plan->light_rows).push_back({row, begin, end});
}

}  // namespace

xhal_status_t index_plan_create(void* device, const xhal_plugin_index_plan_desc_t* desc,
                                void** out_plan) {
  try {
    auto owned = std::make_unique<IndexPlan>();
    IndexPlan* plan = owned.get();
    plan->count = desc->count;
    plan->num_rows = desc->num_rows;
    plan->indices.assign(desc->indices, desc->indices + desc->count);
    plan->row_sources.assign(desc->row_sources, desc->row_sources + desc->count);
    if (desc->row_ptr == nullptr) {
      // The compact form (ABI 1.1 core): only the touched rows, O(count).
      for (uint64_t k = 0; k < desc->touched_count; ++k)
        add_row(plan, desc->touched_rows[k], desc->touched_ptr[k], desc->touched_ptr[k + 1]);
    } else {
      // A 1.0 core passes only the full form (and its desc has no touched_*
      // fields): walk every row, as such a core already did.
      for (uint64_t r = 0; r < desc->num_rows; ++r)
        if (desc->row_ptr[r + 1] > desc->row_ptr[r])
          add_row(plan, static_cast<int64_t>(r), desc->row_ptr[r], desc->row_ptr[r + 1]);
    }
    if (desc->count > 0) count_upload(device, 2 * desc->count * sizeof(int64_t));
    *out_plan = owned.release();
    return XHAL_OK;
  } catch (const std::bad_alloc&) {
    set_error("cpu plugin: out of host memory copying the index plan");
    return XHAL_OUT_OF_MEMORY;
  }
}

void index_plan_destroy(void*, void* plan) { delete static_cast<IndexPlan*>(plan); }

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(kNotAnOp, 0, api.index_plan_create = index_plan_create;
            api.index_plan_destroy = index_plan_destroy);

}  // namespace xhal::cpu
