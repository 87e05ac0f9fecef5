// Row-wise ops over the last dim: softmax, RMSNorm and LayerNorm forward and
// backward. x is viewed as [rows, n] (rows = product of the leading dims);
// the plugin gets x-shaped tensors as rank 2 and per-row / per-column
// tensors as rank 1. Argument checks: op_table.h and op_validate.cpp.
#include "internal.h"
#include "op_validate.h"

using namespace xhal;

namespace {

// Norms have per-row statistics; a row of length 0 has no mean or RMS, so
// rows > 0 with n == 0 is a shape error (docs/semantics.md).
xhal_status_t check_row_length(const OpArgs& a) {
  const Checked& x = a.arg[0];
  if (a.rows > 0 && a.n == 0)
    return fail(XHAL_SHAPE_MISMATCH,
                "argument '%s': shape %s has %lld rows of length 0; a norm needs rows of at "
                "least one element (or no rows)",
                x.name, shape_string(x.rank(), x.shape()).c_str(), static_cast<long long>(a.rows));
  return XHAL_OK;
}

// The plugin's view of argument i: [rows, n] for x-shaped arguments, a
// vector for per-row and per-column ones.
xhal_plugin_tensor_t view(const ops::Op& op, const OpArgs& a, size_t i) {
  const ops::Shape s = op.args[i].shape;
  if (s == ops::Shape::kRows || s == ops::Shape::kLikeX) return reshape(a.arg[i], {a.rows, a.n});
  return reshape(a.arg[i], {a.arg[i].elements});
}

// Column sums over zero rows are +0 (all bits zero in every float dtype):
// written by the core so that no plugin sees an empty row range. The
// pattern is no wider than the element (an odd count of f16 is not a whole
// number of 4-byte patterns).
xhal_status_t zero_fill(Device* device, const Checked& c) {
  if (c.elements == 0) return XHAL_OK;
  const uint32_t zero = 0;
  const uint32_t pattern = c.elem_size < 4 ? c.elem_size : 4;
  return XHAL_PLUGIN_CALL(device, buffer_fill, c.plugin.buffer, c.plugin.offset,
                          static_cast<uint64_t>(c.elements) * c.elem_size, &zero, pattern);
}

// Resolves the device, takes its queue lock for the rest of the call and
// validates the op's tensors; then `run(device, views)` makes the slot call
// unless x is empty (then `on_empty(device, args)`).
template <xhal_op_t Id, size_t N, typename Run, typename OnEmpty>
xhal_status_t row_op(xhal_device_t device_handle, const xhal_tensor_t* const (&tensors)[N],
                     bool norm, Run&& run, OnEmpty&& on_empty) {
  constexpr const ops::Op& op = ops::kOps[Id];
  static_assert(N <= ops::kMaxArgs);
  Device* device = nullptr;
  XHAL_TRY(get_device(device_handle, "device", &device));
  std::lock_guard queue(device->queue);
  OpArgs a;
  XHAL_TRY(validate_op<Id>(device, tensors, OpContext{}, &a));
  if (norm) XHAL_TRY(check_row_length(a));
  if (a.arg[0].elements == 0) return on_empty(device, a);
  xhal_plugin_tensor_t v[N];
  for (size_t i = 0; i < N; ++i) v[i] = view(op, a, i);
  return run(device, v);
}

auto nothing_to_do = [](Device*, const OpArgs&) { return XHAL_OK; };

}  // namespace

extern "C" {

xhal_status_t xhal_softmax_forward(xhal_device_t device, const xhal_tensor_t* x,
                                   const xhal_tensor_t* y) {
  return entry("xhal_softmax_forward", [&] {
    return row_op<XHAL_OP_SOFTMAX_FORWARD>(
        device, {x, y}, false,
        [](Device* d, const xhal_plugin_tensor_t* v) {
          return XHAL_PLUGIN_CALL(d, softmax_forward, &v[0], &v[1]);
        },
        nothing_to_do);
  });
}

xhal_status_t xhal_softmax_backward(xhal_device_t device, const xhal_tensor_t* y,
                                    const xhal_tensor_t* dy, const xhal_tensor_t* dx) {
  return entry("xhal_softmax_backward", [&] {
    return row_op<XHAL_OP_SOFTMAX_BACKWARD>(
        device, {y, dy, dx}, false,
        [](Device* d, const xhal_plugin_tensor_t* v) {
          return XHAL_PLUGIN_CALL(d, softmax_backward, &v[0], &v[1], &v[2]);
        },
        nothing_to_do);
  });
}

xhal_status_t xhal_rms_norm_forward(xhal_device_t device, const xhal_tensor_t* x,
                                    const xhal_tensor_t* gamma, float eps, const xhal_tensor_t* y,
                                    const xhal_tensor_t* rstd) {
  return entry("xhal_rms_norm_forward", [&] {
    return row_op<XHAL_OP_RMS_NORM_FORWARD>(
        device, {x, gamma, y, rstd}, true,
        [eps](Device* d, const xhal_plugin_tensor_t* v) {
          return XHAL_PLUGIN_CALL(d, rms_norm_forward, &v[0], &v[1], eps, &v[2], &v[3]);
        },
        nothing_to_do);
  });
}

xhal_status_t xhal_rms_norm_backward(xhal_device_t device, const xhal_tensor_t* x,
                                     const xhal_tensor_t* gamma, const xhal_tensor_t* rstd,
                                     const xhal_tensor_t* dy, const xhal_tensor_t* dx,
                                     const xhal_tensor_t* dgamma) {
  return entry("xhal_rms_norm_backward", [&] {
    return row_op<XHAL_OP_RMS_NORM_BACKWARD>(
        device, {x, gamma, rstd, dy, dx, dgamma}, true,
        [](Device* d, const xhal_plugin_tensor_t* v) {
          return XHAL_PLUGIN_CALL(d, rms_norm_backward, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
        },
        [](Device* d, const OpArgs& a) { return zero_fill(d, a.arg[5]); });
  });
}

xhal_status_t xhal_layer_norm_forward(xhal_device_t device, const xhal_tensor_t* x,
                                      const xhal_tensor_t* gamma, const xhal_tensor_t* beta,
                                      float eps, const xhal_tensor_t* y, const xhal_tensor_t* mean,
                                      const xhal_tensor_t* rstd) {
  return entry("xhal_layer_norm_forward", [&] {
    return row_op<XHAL_OP_LAYER_NORM_FORWARD>(
        device, {x, gamma, beta, y, mean, rstd}, true,
        [eps](Device* d, const xhal_plugin_tensor_t* v) {
          return XHAL_PLUGIN_CALL(d, layer_norm_forward, &v[0], &v[1], &v[2], eps, &v[3], &v[4],
                                  &v[5]);
        },
        nothing_to_do);
  });
}

xhal_status_t xhal_layer_norm_backward(xhal_device_t device, const xhal_tensor_t* x,
                                       const xhal_tensor_t* gamma, const xhal_tensor_t* mean,
                                       const xhal_tensor_t* rstd, const xhal_tensor_t* dy,
                                       const xhal_tensor_t* dx, const xhal_tensor_t* dgamma,
                                       const xhal_tensor_t* dbeta) {
  return entry("xhal_layer_norm_backward", [&] {
    return row_op<XHAL_OP_LAYER_NORM_BACKWARD>(
        device, {x, gamma, mean, rstd, dy, dx, dgamma, dbeta}, true,
        [](Device* d, const xhal_plugin_tensor_t* v) {
          return XHAL_PLUGIN_CALL(d, layer_norm_backward, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                                  &v[6], &v[7]);
        },
        [](Device* d, const OpArgs& a) {
          XHAL_TRY(zero_fill(d, a.arg[6]));
          return zero_fill(d, a.arg[7]);
        });
  });
}

}  // extern "C"
