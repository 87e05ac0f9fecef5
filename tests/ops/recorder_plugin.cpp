// A recording fake backend for the op front-end tests. It stores every slot
// call (tests/ops/recorder.h) so a test can check what reached the plugin
// and with which reduced shapes. Buffers are host memory; buffer_* and
// permute really move bytes (so a permute's reduced problem can be checked
// by its result); the other op slots only record.
//   device 0: every dtype the spec allows for every op
//   device 1: f32 only
// RECORDER_MINIMAL (backend "recmin"): no permute, index-plan or sparse
// slots, one device. RECORDER_SILENT (backend "silent"): records nothing,
// for the front-end overhead benchmark.
#include <cstdio>
#include <cstring>
#include <new>

#include "recorder.h"
#include "xhal/xhal_plugin.h"

#ifndef RECORDER_BACKEND
#define RECORDER_BACKEND "recorder"
#endif
// The ABI minor the table reports. 0 by default, so the core hands index
// plans over in the full row_ptr form that index_test.cpp checks; the
// "reccompact" build reports 1 and records the compact form instead.
#ifndef RECORDER_ABI_MINOR
#define RECORDER_ABI_MINOR 0
#endif

using xhal::recorder::Call;
using xhal::recorder::State;

namespace {

State g_state;
const xhal_plugin_host_t* g_host = nullptr;

struct Buffer {
  std::vector<unsigned char> bytes;
};
struct Device {
  uint32_t index = 0;
  xhal_counters_t counters{};
};

unsigned char* data(void* b) { return static_cast<Buffer*>(b)->bytes.data(); }

Call& record(const char* slot, std::initializer_list<const xhal_plugin_tensor_t*> tensors = {}) {
#ifdef RECORDER_SILENT
  // The front-end benchmark's backend: slots do nothing measurable.
  (void)slot;
  (void)tensors;
  static thread_local Call sink;
  return sink;
#endif
  Call c;
  c.slot = slot;
  for (const xhal_plugin_tensor_t* t : tensors) {
    xhal_plugin_tensor_t copy{};
    if (t) copy = *t;
    else copy.rank = 99;
    c.tensors.push_back(copy);
  }
  g_state.calls.push_back(c);
  return g_state.calls.back();
}

xhal_status_t op_result() {
  const xhal_status_t s = g_state.fail_next_op;
  g_state.fail_next_op = XHAL_OK;
  if (s != XHAL_OK) g_host->set_error("recorder: planted failure");
  return s;
}

xhal_status_t init(const xhal_plugin_host_t* host, void** ctx, char*, size_t) {
  g_host = host;
  *ctx = &g_state;
  return XHAL_OK;
}
void shutdown(void*) {}

xhal_status_t device_count(void*, uint32_t* n) {
#ifdef RECORDER_MINIMAL
  *n = 1;
#else
  *n = 2;
#endif
  return XHAL_OK;
}

xhal_status_t device_get_info(void*, uint32_t index, xhal_plugin_device_info_t* out) {
  std::snprintf(out->name, sizeof out->name, "%s device %u", RECORDER_BACKEND, index);
  std::snprintf(out->stable_id, sizeof out->stable_id, "%s-%u", RECORDER_BACKEND, index);
  out->kind = XHAL_DEVICE_KIND_OTHER;
  out->memory_bytes = uint64_t{1} << 30;
  const uint32_t f32 = 1u << XHAL_DTYPE_F32;
  uint32_t any = 0;
  for (uint32_t d = 1; d < XHAL_DTYPE_COUNT_; ++d) any |= 1u << d;
  for (uint32_t op = 0; op < XHAL_OP_COUNT_; ++op) out->op_dtypes[op] = f32;
  if (index == 0) {
    out->op_dtypes[XHAL_OP_INDEX_SELECT] = any;
    out->op_dtypes[XHAL_OP_PERMUTE] = any;
  }
  return XHAL_OK;
}

xhal_status_t device_open(void*, uint32_t index, void** out) {
  auto* d = new Device;
  d->index = index;
  *out = d;
  return XHAL_OK;
}
void device_close(void* d) { delete static_cast<Device*>(d); }
xhal_status_t device_synchronize(void*) { return XHAL_OK; }
xhal_status_t device_get_counters(void* d, xhal_counters_t* out) {
  *out = static_cast<Device*>(d)->counters;
  return XHAL_OK;
}

xhal_status_t buffer_allocate(void*, uint64_t size, void** out) {
  auto* b = new (std::nothrow) Buffer;
  if (!b) return XHAL_OUT_OF_MEMORY;
  b->bytes.assign(size, 0);
  ++g_state.live_buffers;
  *out = b;
  Call& c = record("buffer_allocate");
  c.size = size;
  c.dst = b;
  return XHAL_OK;
}
void buffer_free(void*, void* b) {
  --g_state.live_buffers;
  record("buffer_free").dst = b;
  delete static_cast<Buffer*>(b);
}
xhal_status_t buffer_write(void* dev, void* dst, uint64_t offset, const void* src, uint64_t size) {
  std::memcpy(data(dst) + offset, src, size);
  auto& k = static_cast<Device*>(dev)->counters;
  ++k.host_to_device_transfers;
  k.host_to_device_bytes += size;
  Call& c = record("buffer_write");
  c.dst = dst;
  c.dst_offset = offset;
  c.size = size;
  return XHAL_OK;
}
xhal_status_t buffer_read(void* dev, void* src, uint64_t offset, void* dst, uint64_t size) {
  std::memcpy(dst, data(src) + offset, size);
  auto& k = static_cast<Device*>(dev)->counters;
  ++k.device_to_host_transfers;
  k.device_to_host_bytes += size;
  Call& c = record("buffer_read");
  c.src = src;
  c.src_offset = offset;
  c.size = size;
  return XHAL_OK;
}
xhal_status_t buffer_copy(void* dev, void* src, uint64_t so, void* dst, uint64_t dof,
                          uint64_t size) {
  std::memmove(data(dst) + dof, data(src) + so, size);
  ++static_cast<Device*>(dev)->counters.kernel_launches;
  Call& c = record("buffer_copy");
  c.src = src;
  c.dst = dst;
  c.src_offset = so;
  c.dst_offset = dof;
  c.size = size;
  return XHAL_OK;
}
xhal_status_t buffer_fill(void* dev, void* dst, uint64_t offset, uint64_t size, const void* pattern,
                          uint32_t psize) {
  for (uint64_t i = 0; i < size; i += psize) std::memcpy(data(dst) + offset + i, pattern, psize);
  ++static_cast<Device*>(dev)->counters.kernel_launches;
  Call& c = record("buffer_fill");
  c.dst = dst;
  c.dst_offset = offset;
  c.size = size;
  return XHAL_OK;
}

#ifndef RECORDER_MINIMAL
xhal_status_t index_plan_create(void*, const xhal_plugin_index_plan_desc_t* d, void** out) {
  Call& call = record("index_plan_create");
  if (xhal_status_t s = op_result(); s != XHAL_OK) return s;
  xhal::recorder::Plan p;
  p.count = d->count;
  p.num_rows = d->num_rows;
  p.max_sources_per_row = d->max_sources_per_row;
  p.indices.assign(d->indices, d->indices + d->count);
  p.row_ptr_null = d->row_ptr == nullptr;
  if (d->row_ptr) p.row_ptr.assign(d->row_ptr, d->row_ptr + d->num_rows + 1);
  p.row_sources.assign(d->row_sources, d->row_sources + d->count);
#if RECORDER_ABI_MINOR >= 1
  // The touched_* fields exist only in a 1.1 core's desc, which says so by
  // leaving row_ptr NULL.
  if (!d->row_ptr) {
    p.touched_count = d->touched_count;
    p.touched_rows.assign(d->touched_rows, d->touched_rows + d->touched_count);
    p.touched_ptr.assign(d->touched_ptr, d->touched_ptr + d->touched_count + 1);
  }
#endif
  g_state.plans.push_back(p);
  ++g_state.live_plans;
  *out = new int(0);
  call.plan_or_matrix = *out;
  return XHAL_OK;
}
void index_plan_destroy(void*, void* plan) {
  --g_state.live_plans;
  record("index_plan_destroy").plan_or_matrix = plan;
  delete static_cast<int*>(plan);
}
xhal_status_t index_select(void*, void* plan, const xhal_plugin_tensor_t* src,
                           const xhal_plugin_tensor_t* out) {
  record("index_select", {src, out}).plan_or_matrix = plan;
  return op_result();
}
xhal_status_t index_add(void*, void* plan, float alpha, const xhal_plugin_tensor_t* src,
                        const xhal_plugin_tensor_t* dst) {
  Call& c = record("index_add", {src, dst});
  c.plan_or_matrix = plan;
  c.alpha = alpha;
  return op_result();
}

// Strided gather exactly as xhal_plugin.h describes it, any element size.
xhal_status_t permute(void* dev, const xhal_plugin_tensor_t* src, const xhal_plugin_tensor_t* dst) {
  record("permute", {src, dst});
  static const uint32_t kSize[] = {0, 4, 2, 2, 4, 8, 1, 8};
  const uint32_t es = kSize[src->dtype];
  uint64_t total = 1;
  for (uint32_t k = 0; k < dst->rank; ++k) total *= static_cast<uint64_t>(dst->shape[k]);
  int64_t i[XHAL_MAX_RANK] = {};
  for (uint64_t n = 0; n < total; ++n) {
    int64_t from = 0;
    for (uint32_t k = 0; k < dst->rank; ++k) from += i[k] * src->strides[k];
    std::memcpy(data(dst->buffer) + dst->offset + n * es,
                data(src->buffer) + src->offset + static_cast<uint64_t>(from) * es, es);
    for (int k = static_cast<int>(dst->rank) - 1; k >= 0; --k) {
      if (++i[k] < dst->shape[k]) break;
      i[k] = 0;
    }
  }
  ++static_cast<Device*>(dev)->counters.kernel_launches;
  return op_result();
}
#endif

xhal_status_t softmax_forward(void*, const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* y) {
  record("softmax_forward", {x, y});
  return op_result();
}
xhal_status_t softmax_backward(void*, const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* dy,
                               const xhal_plugin_tensor_t* dx) {
  record("softmax_backward", {y, dy, dx});
  return op_result();
}
xhal_status_t rms_norm_forward(void*, const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* g,
                               float eps, const xhal_plugin_tensor_t* y,
                               const xhal_plugin_tensor_t* r) {
  record("rms_norm_forward", {x, g, y, r}).eps = eps;
  return op_result();
}
xhal_status_t rms_norm_backward(void*, const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* g,
                                const xhal_plugin_tensor_t* r, const xhal_plugin_tensor_t* dy,
                                const xhal_plugin_tensor_t* dx, const xhal_plugin_tensor_t* dg) {
  record("rms_norm_backward", {x, g, r, dy, dx, dg});
  return op_result();
}
xhal_status_t layer_norm_forward(void*, const xhal_plugin_tensor_t* x,
                                 const xhal_plugin_tensor_t* g, const xhal_plugin_tensor_t* b,
                                 float eps, const xhal_plugin_tensor_t* y,
                                 const xhal_plugin_tensor_t* m, const xhal_plugin_tensor_t* r) {
  record("layer_norm_forward", {x, g, b, y, m, r}).eps = eps;
  return op_result();
}
xhal_status_t layer_norm_backward(void*, const xhal_plugin_tensor_t* x,
                                  const xhal_plugin_tensor_t* g, const xhal_plugin_tensor_t* m,
                                  const xhal_plugin_tensor_t* r, const xhal_plugin_tensor_t* dy,
                                  const xhal_plugin_tensor_t* dx, const xhal_plugin_tensor_t* dg,
                                  const xhal_plugin_tensor_t* db) {
  record("layer_norm_backward", {x, g, m, r, dy, dx, dg, db});
  return op_result();
}

#ifndef RECORDER_MINIMAL
xhal_status_t csr_create(void*, const xhal_plugin_csr_desc_t* d, void** out) {
  Call& call = record("csr_create");
  if (xhal_status_t s = op_result(); s != XHAL_OK) return s;
  xhal::recorder::Matrix m;
  m.rows = d->rows;
  m.cols = d->cols;
  m.nnz = d->nnz;
  m.row_ptr.assign(d->row_ptr, d->row_ptr + d->rows + 1);
  m.col_idx.assign(d->col_idx, d->col_idx + d->nnz);
  m.row_idx.assign(d->row_idx, d->row_idx + d->nnz);
  m.t_row_ptr.assign(d->t_row_ptr, d->t_row_ptr + d->cols + 1);
  m.t_col_idx.assign(d->t_col_idx, d->t_col_idx + d->nnz);
  m.t_perm.assign(d->t_perm, d->t_perm + d->nnz);
  m.values_buffer = d->values_buffer;
  g_state.matrices.push_back(m);
  ++g_state.live_matrices;
  *out = new int(0);
  call.plan_or_matrix = *out;
  return XHAL_OK;
}
void csr_destroy(void*, void* m) {
  --g_state.live_matrices;
  record("csr_destroy").plan_or_matrix = m;
  delete static_cast<int*>(m);
}
xhal_status_t spmv(void*, void* a, xhal_transpose_t t, float alpha, const xhal_plugin_tensor_t* x,
                   float beta, const xhal_plugin_tensor_t* y) {
  Call& c = record("spmv", {x, y});
  c.plan_or_matrix = a;
  c.trans = t;
  c.alpha = alpha;
  c.beta = beta;
  return op_result();
}
xhal_status_t spmm(void*, void* a, xhal_transpose_t t, float alpha, const xhal_plugin_tensor_t* x,
                   float beta, const xhal_plugin_tensor_t* y) {
  Call& c = record("spmm", {x, y});
  c.plan_or_matrix = a;
  c.trans = t;
  c.alpha = alpha;
  c.beta = beta;
  return op_result();
}
xhal_status_t csr_solve(void*, void* a, xhal_transpose_t t, xhal_triangle_t tri,
                        xhal_diagonal_t diag, const xhal_plugin_tensor_t* b,
                        const xhal_plugin_tensor_t* x) {
  Call& c = record("csr_solve", {b, x});
  c.plan_or_matrix = a;
  c.trans = t;
  c.triangle = tri;
  c.diagonal = diag;
  return op_result();
}
xhal_status_t csr_solve_backward(void*, void* a, xhal_transpose_t t, xhal_triangle_t tri,
                                 xhal_diagonal_t diag, const xhal_plugin_tensor_t* x,
                                 const xhal_plugin_tensor_t* dx, const xhal_plugin_tensor_t* gb,
                                 const xhal_plugin_tensor_t* ga) {
  Call& c = record("csr_solve_backward", {x, dx, gb, ga});
  c.plan_or_matrix = a;
  c.trans = t;
  c.triangle = tri;
  c.diagonal = diag;
  return op_result();
}
xhal_status_t spgemm_numeric(void*, void* a, void* b, void* c) {
  Call& call = record("spgemm_numeric");
  call.src = a;
  call.dst = c;
  call.plan_or_matrix = b;
  return op_result();
}
#endif

xhal_plugin_api_t make_api() {
  xhal_plugin_api_t api{};
  api.struct_size = sizeof api;
  api.abi_major = XHAL_PLUGIN_ABI_MAJOR;
  api.abi_minor = RECORDER_ABI_MINOR;
  api.backend_name = RECORDER_BACKEND;
  api.plugin_version = "test";
  api.init = init;
  api.shutdown = shutdown;
  api.device_count = device_count;
  api.device_get_info = device_get_info;
  api.device_open = device_open;
  api.device_close = device_close;
  api.device_synchronize = device_synchronize;
  api.device_get_counters = device_get_counters;
  api.buffer_allocate = buffer_allocate;
  api.buffer_free = buffer_free;
  api.buffer_write = buffer_write;
  api.buffer_read = buffer_read;
  api.buffer_copy = buffer_copy;
  api.buffer_fill = buffer_fill;
  api.softmax_forward = softmax_forward;
  api.softmax_backward = softmax_backward;
  api.rms_norm_forward = rms_norm_forward;
  api.rms_norm_backward = rms_norm_backward;
  api.layer_norm_forward = layer_norm_forward;
  api.layer_norm_backward = layer_norm_backward;
#ifndef RECORDER_MINIMAL
  api.index_plan_create = index_plan_create;
  api.index_plan_destroy = index_plan_destroy;
  api.index_select = index_select;
  api.index_add = index_add;
  api.permute = permute;
  api.csr_create = csr_create;
  api.csr_destroy = csr_destroy;
  api.spmv = spmv;
  api.spmm = spmm;
  api.csr_solve = csr_solve;
  api.csr_solve_backward = csr_solve_backward;
  api.spgemm_numeric = spgemm_numeric;
#endif
  return api;
}

const xhal_plugin_api_t g_api = make_api();

}  // namespace

extern "C" XHAL_PLUGIN_EXPORT const xhal_plugin_api_t* xhal_plugin_get_api(void) { return &g_api; }
extern "C" XHAL_PLUGIN_EXPORT State* xhal_recorder_state(void) { return &g_state; }
