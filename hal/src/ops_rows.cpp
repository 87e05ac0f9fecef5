// Row-wise ops over the last dim: softmax, RMSNorm and LayerNorm forward and
// backward. x is viewed as [rows, n] (rows = product of the leading dims);
// the plugin gets x-shaped tensors as rank 2 and per-row / per-column
// tensors as rank 1.
#include <vector>

#include "internal.h"
#include "validate.h"

using namespace xhal;

namespace {

struct Rows {
  int64_t rows = 0, n = 0;
};

// Norms have per-row statistics; a row of length 0 has no mean or RMS, so
// rows > 0 with n == 0 is a shape error (docs/semantics.md).
xhal_status_t check_row_length(const Checked& x, const Rows& r) {
  if (r.rows > 0 && r.n == 0)
    return fail(XHAL_SHAPE_MISMATCH,
                "argument '%s': shape %s has %lld rows of length 0; a norm needs rows of at "
                "least one element (or no rows)",
                x.name, shape_string(x.rank(), x.shape()).c_str(),
                static_cast<long long>(r.rows));
  return XHAL_OK;
}

xhal_status_t row_view(const Checked& x, Rows* out) {
  if (x.rank() == 0)
    return fail(XHAL_SHAPE_MISMATCH,
                "argument '%s': rank 0, but the op needs rank >= 1 (rows of the last dim)", x.name);
  out->n = x.shape()[x.rank() - 1];
  out->rows = 1;
  for (uint32_t k = 0; k + 1 < x.rank(); ++k) out->rows *= x.shape()[k];
  return XHAL_OK;
}

// An argument shaped like x.
xhal_status_t check_like(const Checked& c, const Checked& x) {
  return check_shape(c, std::span<const int64_t>(x.shape(), x.rank()));
}

// A per-row tensor: [rows], or x's shape without its last dim.
xhal_status_t check_per_row(const Checked& c, const Checked& x, const Rows& r) {
  if (c.rank() == 1 && c.shape()[0] == r.rows) return XHAL_OK;
  if (c.rank() + 1 == x.rank()) {
    bool same = true;
    for (uint32_t k = 0; k < c.rank(); ++k) same = same && c.shape()[k] == x.shape()[k];
    if (same) return XHAL_OK;
  }
  return fail(XHAL_SHAPE_MISMATCH,
              "argument '%s': shape %s but expected [%lld] (one value per row of '%s' %s)", c.name,
              shape_string(c.rank(), c.shape()).c_str(), static_cast<long long>(r.rows), x.name,
              shape_string(x.rank(), x.shape()).c_str());
}

xhal_status_t check_per_column(const Checked& c, const Rows& r) { return check_shape(c, {r.n}); }

// The checks every f32 contiguous tensor argument of these ops gets.
struct Args {
  Device* device;
  const char* op;
  xhal_status_t get(const char* name, const xhal_tensor_t* t, Checked* out) const {
    return check_tensor(device, name, t, op, kF32Only, Layout::kContiguous, out);
  }
};

xhal_status_t disjoint_from_all(const Checked& out, std::initializer_list<const Checked*> others) {
  for (const Checked* o : others) XHAL_TRY(check_no_alias(out, *o));
  return XHAL_OK;
}

xhal_plugin_tensor_t as_matrix(const Checked& c, const Rows& r) {
  return reshape(c, {r.rows, r.n});
}
xhal_plugin_tensor_t as_vector(const Checked& c) { return reshape(c, {c.elements}); }

// Column sums over zero rows are +0: written by the core so that no plugin
// sees an empty row range.
xhal_status_t zero_fill(Device* device, const Checked& c) {
  if (c.elements == 0) return XHAL_OK;
  const uint32_t zero = 0;
  return XHAL_PLUGIN_CALL(device, buffer_fill, c.plugin.buffer, c.plugin.offset,
                          static_cast<uint64_t>(c.elements) * 4, &zero, 4);
}

}  // namespace

extern "C" {

xhal_status_t xhal_softmax_forward(xhal_device_t device_handle, const xhal_tensor_t* x,
                                   const xhal_tensor_t* y) {
  return entry("xhal_softmax_forward", [&]() -> xhal_status_t {
    Device* device;
    XHAL_TRY(get_device(device_handle, "device", &device));
    std::lock_guard queue(device->queue);
    const Args a{device, "softmax_forward"};
    Checked cx, cy;
    XHAL_TRY(a.get("x", x, &cx));
    XHAL_TRY(a.get("y", y, &cy));
    Rows r;
    XHAL_TRY(row_view(cx, &r));
    XHAL_TRY(check_like(cy, cx));
    XHAL_TRY(check_in_place_or_disjoint(cy, cx));
    XHAL_TRY(check_supported(device, XHAL_OP_SOFTMAX_FORWARD, device->api->softmax_forward != nullptr,
                             XHAL_DTYPE_F32, "x"));
    if (cx.elements == 0) return XHAL_OK;
    const auto px = as_matrix(cx, r), py = as_matrix(cy, r);
    return XHAL_PLUGIN_CALL(device, softmax_forward, &px, &py);
  });
}

xhal_status_t xhal_softmax_backward(xhal_device_t device_handle, const xhal_tensor_t* y,
                                    const xhal_tensor_t* dy, const xhal_tensor_t* dx) {
  return entry("xhal_softmax_backward", [&]() -> xhal_status_t {
    Device* device;
    XHAL_TRY(get_device(device_handle, "device", &device));
    std::lock_guard queue(device->queue);
    const Args a{device, "softmax_backward"};
    Checked cy, cdy, cdx;
    XHAL_TRY(a.get("y", y, &cy));
    XHAL_TRY(a.get("dy", dy, &cdy));
    XHAL_TRY(a.get("dx", dx, &cdx));
    Rows r;
    XHAL_TRY(row_view(cy, &r));
    XHAL_TRY(check_like(cdy, cy));
    XHAL_TRY(check_like(cdx, cy));
    XHAL_TRY(check_in_place_or_disjoint(cdx, cdy));
    XHAL_TRY(check_no_alias(cdx, cy));
    XHAL_TRY(check_supported(device, XHAL_OP_SOFTMAX_BACKWARD,
                             device->api->softmax_backward != nullptr, XHAL_DTYPE_F32, "y"));
    if (cy.elements == 0) return XHAL_OK;
    const auto py = as_matrix(cy, r), pdy = as_matrix(cdy, r), pdx = as_matrix(cdx, r);
    return XHAL_PLUGIN_CALL(device, softmax_backward, &py, &pdy, &pdx);
  });
}

xhal_status_t xhal_rms_norm_forward(xhal_device_t device_handle, const xhal_tensor_t* x,
                                    const xhal_tensor_t* gamma, float eps, const xhal_tensor_t* y,
                                    const xhal_tensor_t* rstd) {
  return entry("xhal_rms_norm_forward", [&]() -> xhal_status_t {
    Device* device;
    XHAL_TRY(get_device(device_handle, "device", &device));
    std::lock_guard queue(device->queue);
    const Args a{device, "rms_norm_forward"};
    Checked cx, cg, cy, cr;
    XHAL_TRY(a.get("x", x, &cx));
    XHAL_TRY(a.get("gamma", gamma, &cg));
    XHAL_TRY(a.get("y", y, &cy));
    XHAL_TRY(a.get("rstd", rstd, &cr));
    Rows r;
    XHAL_TRY(row_view(cx, &r));
    XHAL_TRY(check_row_length(cx, r));
    XHAL_TRY(check_per_column(cg, r));
    XHAL_TRY(check_like(cy, cx));
    XHAL_TRY(check_per_row(cr, cx, r));
    XHAL_TRY(check_in_place_or_disjoint(cy, cx));
    XHAL_TRY(check_no_alias(cy, cg));
    XHAL_TRY(disjoint_from_all(cr, {&cx, &cg, &cy}));
    XHAL_TRY(check_supported(device, XHAL_OP_RMS_NORM_FORWARD,
                             device->api->rms_norm_forward != nullptr, XHAL_DTYPE_F32, "x"));
    if (cx.elements == 0) return XHAL_OK;
    const auto px = as_matrix(cx, r), pg = as_vector(cg), py = as_matrix(cy, r), pr = as_vector(cr);
    return XHAL_PLUGIN_CALL(device, rms_norm_forward, &px, &pg, eps, &py, &pr);
  });
}

xhal_status_t xhal_rms_norm_backward(xhal_device_t device_handle, const xhal_tensor_t* x,
                                     const xhal_tensor_t* gamma, const xhal_tensor_t* rstd,
                                     const xhal_tensor_t* dy, const xhal_tensor_t* dx,
                                     const xhal_tensor_t* dgamma) {
  return entry("xhal_rms_norm_backward", [&]() -> xhal_status_t {
    Device* device;
    XHAL_TRY(get_device(device_handle, "device", &device));
    std::lock_guard queue(device->queue);
    const Args a{device, "rms_norm_backward"};
    Checked cx, cg, cr, cdy, cdx, cdg;
    XHAL_TRY(a.get("x", x, &cx));
    XHAL_TRY(a.get("gamma", gamma, &cg));
    XHAL_TRY(a.get("rstd", rstd, &cr));
    XHAL_TRY(a.get("dy", dy, &cdy));
    XHAL_TRY(a.get("dx", dx, &cdx));
    XHAL_TRY(a.get("dgamma", dgamma, &cdg));
    Rows r;
    XHAL_TRY(row_view(cx, &r));
    XHAL_TRY(check_row_length(cx, r));
    XHAL_TRY(check_per_column(cg, r));
    XHAL_TRY(check_per_row(cr, cx, r));
    XHAL_TRY(check_like(cdy, cx));
    XHAL_TRY(check_like(cdx, cx));
    XHAL_TRY(check_per_column(cdg, r));
    XHAL_TRY(check_in_place_or_disjoint(cdx, cdy));
    XHAL_TRY(disjoint_from_all(cdx, {&cx, &cg, &cr}));
    XHAL_TRY(disjoint_from_all(cdg, {&cx, &cg, &cr, &cdy, &cdx}));
    XHAL_TRY(check_supported(device, XHAL_OP_RMS_NORM_BACKWARD,
                             device->api->rms_norm_backward != nullptr, XHAL_DTYPE_F32, "x"));
    if (cx.elements == 0) return zero_fill(device, cdg);
    const auto px = as_matrix(cx, r), pg = as_vector(cg), pr = as_vector(cr), pdy = as_matrix(cdy, r),
               pdx = as_matrix(cdx, r), pdg = as_vector(cdg);
    return XHAL_PLUGIN_CALL(device, rms_norm_backward, &px, &pg, &pr, &pdy, &pdx, &pdg);
  });
}

xhal_status_t xhal_layer_norm_forward(xhal_device_t device_handle, const xhal_tensor_t* x,
                                      const xhal_tensor_t* gamma, const xhal_tensor_t* beta,
                                      float eps, const xhal_tensor_t* y, const xhal_tensor_t* mean,
                                      const xhal_tensor_t* rstd) {
  return entry("xhal_layer_norm_forward", [&]() -> xhal_status_t {
    Device* device;
    XHAL_TRY(get_device(device_handle, "device", &device));
    std::lock_guard queue(device->queue);
    const Args a{device, "layer_norm_forward"};
    Checked cx, cg, cb, cy, cm, cr;
    XHAL_TRY(a.get("x", x, &cx));
    XHAL_TRY(a.get("gamma", gamma, &cg));
    XHAL_TRY(a.get("beta", beta, &cb));
    XHAL_TRY(a.get("y", y, &cy));
    XHAL_TRY(a.get("mean", mean, &cm));
    XHAL_TRY(a.get("rstd", rstd, &cr));
    Rows r;
    XHAL_TRY(row_view(cx, &r));
    XHAL_TRY(check_row_length(cx, r));
    XHAL_TRY(check_per_column(cg, r));
    XHAL_TRY(check_per_column(cb, r));
    XHAL_TRY(check_like(cy, cx));
    XHAL_TRY(check_per_row(cm, cx, r));
    XHAL_TRY(check_per_row(cr, cx, r));
    XHAL_TRY(check_in_place_or_disjoint(cy, cx));
    XHAL_TRY(disjoint_from_all(cy, {&cg, &cb}));
    XHAL_TRY(disjoint_from_all(cm, {&cx, &cg, &cb, &cy}));
    XHAL_TRY(disjoint_from_all(cr, {&cx, &cg, &cb, &cy, &cm}));
    XHAL_TRY(check_supported(device, XHAL_OP_LAYER_NORM_FORWARD,
                             device->api->layer_norm_forward != nullptr, XHAL_DTYPE_F32, "x"));
    if (cx.elements == 0) return XHAL_OK;
    const auto px = as_matrix(cx, r), pg = as_vector(cg), pb = as_vector(cb), py = as_matrix(cy, r),
               pm = as_vector(cm), pr = as_vector(cr);
    return XHAL_PLUGIN_CALL(device, layer_norm_forward, &px, &pg, &pb, eps, &py, &pm, &pr);
  });
}

xhal_status_t xhal_layer_norm_backward(xhal_device_t device_handle, const xhal_tensor_t* x,
                                       const xhal_tensor_t* gamma, const xhal_tensor_t* mean,
                                       const xhal_tensor_t* rstd, const xhal_tensor_t* dy,
                                       const xhal_tensor_t* dx, const xhal_tensor_t* dgamma,
                                       const xhal_tensor_t* dbeta) {
  return entry("xhal_layer_norm_backward", [&]() -> xhal_status_t {
    Device* device;
    XHAL_TRY(get_device(device_handle, "device", &device));
    std::lock_guard queue(device->queue);
    const Args a{device, "layer_norm_backward"};
    Checked cx, cg, cm, cr, cdy, cdx, cdg, cdb;
    XHAL_TRY(a.get("x", x, &cx));
    XHAL_TRY(a.get("gamma", gamma, &cg));
    XHAL_TRY(a.get("mean", mean, &cm));
    XHAL_TRY(a.get("rstd", rstd, &cr));
    XHAL_TRY(a.get("dy", dy, &cdy));
    XHAL_TRY(a.get("dx", dx, &cdx));
    XHAL_TRY(a.get("dgamma", dgamma, &cdg));
    XHAL_TRY(a.get("dbeta", dbeta, &cdb));
    Rows r;
    XHAL_TRY(row_view(cx, &r));
    XHAL_TRY(check_row_length(cx, r));
    XHAL_TRY(check_per_column(cg, r));
    XHAL_TRY(check_per_row(cm, cx, r));
    XHAL_TRY(check_per_row(cr, cx, r));
    XHAL_TRY(check_like(cdy, cx));
    XHAL_TRY(check_like(cdx, cx));
    XHAL_TRY(check_per_column(cdg, r));
    XHAL_TRY(check_per_column(cdb, r));
    XHAL_TRY(check_in_place_or_disjoint(cdx, cdy));
    XHAL_TRY(disjoint_from_all(cdx, {&cx, &cg, &cm, &cr}));
    XHAL_TRY(disjoint_from_all(cdg, {&cx, &cg, &cm, &cr, &cdy, &cdx}));
    XHAL_TRY(disjoint_from_all(cdb, {&cx, &cg, &cm, &cr, &cdy, &cdx, &cdg}));
    XHAL_TRY(check_supported(device, XHAL_OP_LAYER_NORM_BACKWARD,
                             device->api->layer_norm_backward != nullptr, XHAL_DTYPE_F32, "x"));
    if (cx.elements == 0) {
      XHAL_TRY(zero_fill(device, cdg));
      return zero_fill(device, cdb);
    }
    const auto px = as_matrix(cx, r), pg = as_vector(cg), pm = as_vector(cm), pr = as_vector(cr),
               pdy = as_matrix(cdy, r), pdx = as_matrix(cdx, r), pdg = as_vector(cdg),
               pdb = as_vector(cdb);
    return XHAL_PLUGIN_CALL(device, layer_norm_backward, &px, &pg, &pm, &pr, &pdy, &pdx, &pdg, &pdb);
  });
}

}  // extern "C"
