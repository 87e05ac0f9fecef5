// Index plans and the ops that use them: index_select (gather) and
// index_add (deterministic scatter-add over the transposed selection).
#include <array>
#include <cinttypes>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "handles.h"
#include "index_selection.h"
#include "internal.h"
#include "op_validate.h"
#include "validate.h"

using namespace xhal;

namespace {

template <typename I>
xhal_status_t widen_indices(const I* in, uint64_t count, uint64_t num_rows,
                            std::vector<int64_t>* out) {
  out->resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    const int64_t v = static_cast<int64_t>(in[i]);
    if (v < 0 || static_cast<uint64_t>(v) >= num_rows)
      return fail(XHAL_OUT_OF_RANGE,
                  "argument 'indices': indices[%" PRIu64 "] = %" PRId64 " is outside [0, %" PRIu64
                  ")",
                  i, v, num_rows);
    (*out)[i] = v;
  }
  return XHAL_OK;
}

xhal_status_t check_plan(Device* device, xhal_index_plan_t handle, Plan** out) {
  XHAL_TRY(get_plan(handle, "plan", out));
  const Plan* plan = *out;
  if (plan->device != device)
    return fail(XHAL_WRONG_DEVICE,
                "argument 'plan': created on device %s:%u, not on the op's device %s:%u",
                plan->device->backend.c_str(), plan->device->backend_index, device->backend.c_str(),
                device->backend_index);
  return XHAL_OK;
}

// Gives a plugin's new plan a handle (the caller holds the device's queue);
// destroys it when no handle is left.
xhal_status_t register_plan(Device* device, void* plugin_plan, uint64_t count, uint64_t num_rows,
                            xhal_index_plan_t* out_plan) {
  auto destroy = [&] {
    call_void_slot([&] { device->api->index_plan_destroy(device->plugin_device, plugin_plan); });
  };
  std::unique_ptr<Plan> plan;
  try {
    plan = std::make_unique<Plan>();
  } catch (const std::bad_alloc&) {
    destroy();
    return fail(XHAL_OUT_OF_MEMORY, "index plan: host memory exhausted");
  }
  plan->device = device;
  plan->count = count;
  plan->num_rows = num_rows;
  plan->plugin_plan = plugin_plan;
  plan->handle = handles().add(HandleKind::kPlan, plan.get());
  if (plan->handle == 0) {
    destroy();
    return fail(XHAL_OUT_OF_MEMORY, "xhal_index_plan_create: too many live handles");
  }
  device->live_objects.fetch_add(1);
  *out_plan = to_handle<xhal_index_plan_t>(plan.release()->handle);
  return XHAL_OK;
}

xhal_status_t plan_create(xhal_device_t dev_handle, const void* indices,
                          const xhal_dtype_t& index_dtype_arg, uint64_t count, uint64_t num_rows,
                          xhal_index_plan_t* out_plan) {
  Device* device = nullptr;
  XHAL_TRY(get_device(dev_handle, "device", &device));
  if (!out_plan) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_plan': NULL");
  const uint32_t raw_dtype = raw_enum(index_dtype_arg);
  if (raw_dtype != XHAL_DTYPE_I32 && raw_dtype != XHAL_DTYPE_I64)
    return fail(XHAL_INVALID_ARGUMENT, "argument 'index_dtype': %s, expected i32 or i64",
                is_dtype(raw_dtype) ? xhal_dtype_name(static_cast<xhal_dtype_t>(raw_dtype))
                                    : std::to_string(raw_dtype).c_str());
  const xhal_dtype_t index_dtype = static_cast<xhal_dtype_t>(raw_dtype);
  if (count > 0 && !indices) return fail(XHAL_INVALID_ARGUMENT, "argument 'indices': NULL");
  if (num_rows > uint64_t(INT64_MAX) - 1 || count > uint64_t(INT64_MAX))
    return fail(XHAL_OUT_OF_RANGE, "argument '%s': %" PRIu64 " is too large",
                count > uint64_t(INT64_MAX) ? "count" : "num_rows",
                count > uint64_t(INT64_MAX) ? count : num_rows);
  XHAL_TRY(check_slot(device, device->api->index_plan_create != nullptr, "index plans"));

  std::vector<int64_t> idx;
  CompactSelection sel;
  std::vector<int64_t> row_ptr;  // the full form, for ABI 1.0 plugins only
  xhal_status_t s = XHAL_OK;
  try {
    s = index_dtype == XHAL_DTYPE_I32
            ? widen_indices(static_cast<const int32_t*>(indices), count, num_rows, &idx)
            : widen_indices(static_cast<const int64_t*>(indices), count, num_rows, &idx);
    if (s != XHAL_OK) return s;
    sel = build_selection(idx.data(), count, num_rows);
    if (device->api->abi_minor == 0) row_ptr = full_row_ptr(sel, num_rows);
  } catch (const std::bad_alloc&) {
    return fail(XHAL_OUT_OF_MEMORY,
                "index plan of %" PRIu64 " indices into %" PRIu64 " rows: host memory exhausted",
                count, num_rows);
  }

  xhal_plugin_index_plan_desc_t desc{};
  desc.count = count;
  desc.num_rows = num_rows;
  desc.indices = idx.data();
  desc.row_ptr = row_ptr.empty() ? nullptr : row_ptr.data();
  desc.row_sources = sel.sources.data();
  desc.max_sources_per_row = sel.max_sources_per_row;
  desc.touched_count = sel.rows.size();
  desc.touched_rows = sel.rows.data();
  desc.touched_ptr = sel.ptr.data();
  void* plugin_plan = nullptr;
  std::lock_guard queue(device->queue);
  XHAL_TRY(XHAL_PLUGIN_CALL(device, index_plan_create, &desc, &plugin_plan));
  return register_plan(device, plugin_plan, count, num_rows, out_plan);
}

// Checks `indices` as an op argument (rank 1, i32 or i64, contiguous, on
// `device`). A plugin with index_plan_create_from_buffer (ABI 1.5) checks
// the list and builds the plan on the device; otherwise the list is read to
// the host (a counted transfer) and the host path builds the plan.
xhal_status_t plan_from_tensor(xhal_device_t dev_handle, const xhal_tensor_t* indices,
                               uint64_t num_rows, xhal_index_plan_t* out_plan) {
  Device* device = nullptr;
  XHAL_TRY(get_device(dev_handle, "device", &device));
  if (!out_plan) return fail(XHAL_INVALID_ARGUMENT, "argument 'out_plan': NULL");
  Checked c;
  XHAL_TRY(check_tensor(device, "indices", indices, "index_plan_create_from_tensor",
                        dtype_bit(XHAL_DTYPE_I32) | dtype_bit(XHAL_DTYPE_I64), Layout::kContiguous,
                        &c));
  XHAL_TRY(check_rank(c, 1));
  // What plan_create refuses without looking at an index is refused before
  // the transfer (an index out of range is found after it).
  if (num_rows > uint64_t(INT64_MAX) - 1)
    return fail(XHAL_OUT_OF_RANGE, "argument 'num_rows': %" PRIu64 " is too large", num_rows);
  XHAL_TRY(check_slot(device, device->api->index_plan_create != nullptr, "index plans"));
  const uint64_t count = static_cast<uint64_t>(c.elements);
  if (count != 0 && device->api->index_plan_create_from_buffer) {
    xhal_plugin_index_fault_t fault{UINT64_MAX, 0};
    void* plugin_plan = nullptr;
    std::lock_guard queue(device->queue);
    const xhal_status_t s =
        XHAL_PLUGIN_CALL(device, index_plan_create_from_buffer, c.plugin.buffer, c.begin, c.dtype(),
                         count, num_rows, &plugin_plan, &fault);
    // The message the host path writes, when the plugin named the index.
    if (s == XHAL_OUT_OF_RANGE && fault.position < count)
      return fail(XHAL_OUT_OF_RANGE,
                  "argument 'indices': indices[%" PRIu64 "] = %" PRId64 " is outside [0, %" PRIu64
                  ")",
                  fault.position, fault.value, num_rows);
    if (s != XHAL_OK) return s;
    return register_plan(device, plugin_plan, count, num_rows, out_plan);
  }
  auto read_and_create = [&](auto* typed) -> xhal_status_t {
    using I = std::remove_pointer_t<decltype(typed)>;
    std::vector<I> host;
    try {
      host.resize(count);
    } catch (const std::bad_alloc&) {
      return fail(XHAL_OUT_OF_MEMORY,
                  "argument 'indices': %" PRIu64 " indices: host memory exhausted", count);
    }
    if (count != 0) {
      std::lock_guard queue(device->queue);
      XHAL_TRY(XHAL_PLUGIN_CALL(device, buffer_read, c.plugin.buffer, c.begin, host.data(),
                                count * sizeof(I)));
    }
    return plan_create(dev_handle, host.data(), c.dtype(), count, num_rows, out_plan);
  };
  return c.dtype() == XHAL_DTYPE_I32 ? read_and_create(static_cast<int32_t*>(nullptr))
                                     : read_and_create(static_cast<int64_t*>(nullptr));
}

}  // namespace

extern "C" {

xhal_status_t xhal_index_plan_create_from_tensor(xhal_device_t device, const xhal_tensor_t* indices,
                                                 uint64_t num_rows, xhal_index_plan_t* out_plan) {
  return entry("xhal_index_plan_create_from_tensor",
               [&] { return plan_from_tensor(device, indices, num_rows, out_plan); });
}

xhal_status_t xhal_index_plan_create(xhal_device_t device, const void* indices,
                                     xhal_dtype_t index_dtype, uint64_t count, uint64_t num_rows,
                                     xhal_index_plan_t* out_plan) {
  return entry("xhal_index_plan_create", [&] {
    return plan_create(device, indices, index_dtype, count, num_rows, out_plan);
  });
}

xhal_status_t xhal_index_plan_release(xhal_index_plan_t plan) {
  return entry("xhal_index_plan_release", [&] {
    auto* p = static_cast<Plan*>(handles().remove(HandleKind::kPlan, handle_bits(plan)));
    if (!p) return get_plan(plan, "plan", &p);
    Device* device = p->device;
    std::lock_guard queue(device->queue);
    call_void_slot([&] { device->api->index_plan_destroy(device->plugin_device, p->plugin_plan); });
    device->live_objects.fetch_sub(1);
    delete p;
    return XHAL_OK;
  });
}

xhal_status_t xhal_index_select(xhal_device_t device, xhal_index_plan_t plan,
                                const xhal_tensor_t* src, const xhal_tensor_t* out) {
  return entry("xhal_index_select", [&] {
    Device* d = nullptr;
    XHAL_TRY(get_device(device, "device", &d));
    std::lock_guard queue(d->queue);
    Plan* p = nullptr;
    XHAL_TRY(check_plan(d, plan, &p));
    OpContext ctx;
    ctx.plan = p;
    OpArgs a;
    XHAL_TRY(validate_op<XHAL_OP_INDEX_SELECT>(d, std::array{src, out}.data(), ctx, &a));
    if (a.arg[1].elements == 0) return XHAL_OK;  // nothing to write
    return XHAL_PLUGIN_CALL(d, index_select, p->plugin_plan, &a.arg[0].plugin, &a.arg[1].plugin);
  });
}

xhal_status_t xhal_index_add(xhal_device_t device, xhal_index_plan_t plan, float alpha,
                             const xhal_tensor_t* src, const xhal_tensor_t* dst) {
  return entry("xhal_index_add", [&] {
    Device* d = nullptr;
    XHAL_TRY(get_device(device, "device", &d));
    std::lock_guard queue(d->queue);
    Plan* p = nullptr;
    XHAL_TRY(check_plan(d, plan, &p));
    OpContext ctx;
    ctx.plan = p;
    OpArgs a;
    XHAL_TRY(validate_op<XHAL_OP_INDEX_ADD>(d, std::array{src, dst}.data(), ctx, &a));
    if (a.arg[0].elements == 0) return XHAL_OK;  // no source: dst is untouched
    return XHAL_PLUGIN_CALL(d, index_add, p->plugin_plan, alpha, &a.arg[0].plugin,
                            &a.arg[1].plugin);
  });
}

}  // extern "C"
