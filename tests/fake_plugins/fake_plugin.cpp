// A configurable fake backend for the core's tests: one source, compiled
// once per scenario with FAKE_* definitions (xhal_fake_plugin() in
// tests/fake_plugins/CMakeLists.txt, xhal_recorder_plugin() in
// tests/ops/CMakeLists.txt). Buffers live in host memory; buffer_* and
// permute really move bytes; counters count writes, reads and "kernels".
//   FAKE_BACKEND        backend_name in the table (string)
//   FAKE_ABI_MAJOR/MINOR  ABI numbers it declares (default: the header's;
//                       0 for a recorder)
//   FAKE_TABLE_SHORT    struct_size ends before the op slots (an older table)
//   FAKE_TABLE_LONG     table with extra slots after the current ones (newer)
//   FAKE_TABLE_TINY     struct_size smaller than the table header
//   FAKE_TABLE_CUT      struct_size ends inside the required slot buffer_fill
//   FAKE_NO_ENTRY       does not export the entry symbol
//   FAKE_NULL_ENTRY     entry returns NULL
//   FAKE_INIT_FAILS     init fails with a message
//   FAKE_DROP_BUFFER_FILL  required slot buffer_fill is NULL
//   FAKE_DEVICES        device count (default 2); 0 gives a note
//   FAKE_KIND           XHAL_DEVICE_KIND_* of its devices (default OTHER)
//   FAKE_STABLE_PREFIX  stable id of device i is prefix + i
//   FAKE_USES_DEPENDENCY  init calls into libxhal-fake-dependency.so
//   FAKE_MARKER         on load, creates $XHAL_FAKE_MARKER_DIR/<backend>.loaded
// Faulty plugins (the corpus of tests/loader/faulty_plugin_test.cpp):
//   FAKE_THROW_IN=<where>  throws std::runtime_error("fake <where> exploded") from
//                       FAKE_AT_ENTRY, FAKE_AT_INIT, FAKE_AT_DEVICE_COUNT,
//                       FAKE_AT_DEVICE_GET_INFO (device 1 only), FAKE_AT_DEVICE_OPEN,
//                       FAKE_AT_BUFFER_ALLOCATE or FAKE_AT_PERMUTE (an op slot)
//   FAKE_THROW_INT      init throws an int (not a std::exception)
//   FAKE_INIT_STATUS    init returns this status (e.g. 1234, outside the enum)
//   FAKE_REENTER        init calls xhal_plugin_count and xhal_device_count (the
//                       app API) and fails with what they returned
//   FAKE_SEGV_AT=<where>  a real segmentation fault at FAKE_AT_INIT or
//                       FAKE_AT_BUFFER_FILL
//   FAKE_HANG_IN_INIT   init never returns
//   (absurd counts and garbage kinds: FAKE_DEVICES=0xFFFFFFFFu, FAKE_KIND=57)
// Without FAKE_RECORDER the table has two op slots: permute (4-byte
// elements) and index_select (never reached: there are no plan slots), and
// each device claims more than that (permute f32 and i32, softmax_forward,
// index_select f32): the core must report only permute.
// The recorder of the op front-end tests (tests/ops):
//   FAKE_RECORDER       every op slot; each slot call is stored (recorder.h)
//                       for the tests, which read it through the exported
//                       xhal_recorder_state(). Op slots other than permute
//                       only record; State::fail_next_op fails the next one.
//                       Device 0 claims every dtype the spec allows for
//                       index_select and permute, f32 for the other ops;
//                       device 1 f32 only.
//   FAKE_RECORDER_MINIMAL  no permute, index-plan or sparse slots, one device
//   FAKE_RECORDER_SILENT   records nothing (the front-end overhead benchmark)
//   FAKE_OWN_TRANSPOSE     sets XHAL_PLUGIN_CSR_OWN_TRANSPOSE (the core must
//                       pass csr_create no transpose)
//   FAKE_CSR_FROM_BUFFERS  has csr_create_from_buffers (ABI 1.9): records
//                       the pattern read where it lies, answers its facts
//                       from a plain row walk, or a planted fault
//                       (State::csr_fault)
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "recorder.h"
#include "xhal/xhal_plugin.h"

#ifndef FAKE_BACKEND
#error "FAKE_BACKEND must name the backend"
#endif
#if defined(FAKE_RECORDER_MINIMAL) || defined(FAKE_RECORDER_SILENT)
#ifndef FAKE_RECORDER
#define FAKE_RECORDER
#endif
#endif
// A recorder with every op slot (not FAKE_RECORDER_MINIMAL).
#if defined(FAKE_RECORDER) && !defined(FAKE_RECORDER_MINIMAL)
#define FAKE_RECORDER_FULL
#endif
#ifndef FAKE_ABI_MAJOR
#define FAKE_ABI_MAJOR XHAL_PLUGIN_ABI_MAJOR
#endif
// A recorder says minor 0 by default, so the core hands index plans over in
// the full row_ptr form that tests/ops/index_test.cpp checks; "reccompact"
// says 1 and records the compact form instead.
#ifndef FAKE_ABI_MINOR
#ifdef FAKE_RECORDER
#define FAKE_ABI_MINOR 0
#else
#define FAKE_ABI_MINOR XHAL_PLUGIN_ABI_MINOR
#endif
#endif
#ifndef FAKE_DEVICES
#ifdef FAKE_RECORDER_MINIMAL
#define FAKE_DEVICES 1
#else
#define FAKE_DEVICES 2
#endif
#endif
#ifndef FAKE_KIND
#define FAKE_KIND XHAL_DEVICE_KIND_OTHER
#endif
#ifndef FAKE_STABLE_PREFIX
#define FAKE_STABLE_PREFIX "fake-" FAKE_BACKEND "-"
#endif

// Places a fault can be planted (FAKE_THROW_IN, FAKE_SEGV_AT).
#define FAKE_AT_ENTRY 1
#define FAKE_AT_INIT 2
#define FAKE_AT_DEVICE_COUNT 3
#define FAKE_AT_DEVICE_GET_INFO 4
#define FAKE_AT_DEVICE_OPEN 5
#define FAKE_AT_BUFFER_ALLOCATE 6
#define FAKE_AT_PERMUTE 7
#define FAKE_AT_BUFFER_FILL 8
#ifndef FAKE_THROW_IN
#define FAKE_THROW_IN 0
#endif
#ifndef FAKE_SEGV_AT
#define FAKE_SEGV_AT 0
#endif

using xhal::recorder::Call;
using xhal::recorder::State;

namespace {

// Throws when the fault is planted at `where`.
void maybe_throw(int where, const char* name) {
  if (FAKE_THROW_IN == where) throw std::runtime_error(std::string("fake ") + name + " exploded");
}

// A genuine invalid access (not raise()): what a buggy plugin does. Not
// NULL itself, which UBSan would report (and exit) before the access.
void maybe_segfault(int where) {
  if (FAKE_SEGV_AT != where) return;
  int* volatile nowhere = reinterpret_cast<int*>(uintptr_t{8});
  *nowhere = 1;
}

#ifdef FAKE_REENTER
// Calls an app API function of the libxhal that loaded this plugin, found
// at run time so that the fake does not link libxhal.
std::string call_back(const char* function) {
  using Count = xhal_status_t (*)(uint32_t*);
  using Name = const char* (*)(xhal_status_t);
  using Last = const char* (*)();
  auto count = reinterpret_cast<Count>(dlsym(RTLD_DEFAULT, function));
  auto name = reinterpret_cast<Name>(dlsym(RTLD_DEFAULT, "xhal_status_name"));
  auto last = reinterpret_cast<Last>(dlsym(RTLD_DEFAULT, "xhal_last_error"));
  if (!count || !name || !last) return std::string(function) + " not found";
  uint32_t n = 12345;
  const xhal_status_t s = count(&n);
  return std::string(function) + " gave " + name(s) + " (" + last() + ")";
}
#endif

const xhal_plugin_host_t* g_host = nullptr;
State g_state;  // what the recorder saw

struct FakeBuffer {
  std::vector<unsigned char> bytes;
};

struct FakeDevice {
  uint32_t index = 0;
  void* queue = nullptr;  // device_open_on_queue
  std::atomic<uint64_t> h2d{0}, h2d_bytes{0}, d2h{0}, d2h_bytes{0}, launches{0};
};

unsigned char* bytes(void* buffer) { return static_cast<FakeBuffer*>(buffer)->bytes.data(); }

// Stores one slot call with copies of its tensors (a NULL tensor as rank
// 99) and returns it for the slot's other arguments. Without recording,
// a scratch call that nobody reads.
Call& record(const char* slot, std::initializer_list<const xhal_plugin_tensor_t*> tensors = {}) {
#if !defined(FAKE_RECORDER) || defined(FAKE_RECORDER_SILENT)
  (void)slot;
  (void)tensors;
  static thread_local Call sink;
  return sink;
#else
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
#endif
}

// An op slot's status: XHAL_OK unless a test planted a failure.
xhal_status_t op_result() {
  const xhal_status_t s = g_state.fail_next_op;
  g_state.fail_next_op = XHAL_OK;
  if (s != XHAL_OK) g_host->set_error("recorder: planted failure");
  return s;
}

#ifdef FAKE_MARKER
// Runs when the library is dlopen'ed: proves whether its code ever ran.
__attribute__((constructor)) void write_marker() {
  const char* dir = std::getenv("XHAL_FAKE_MARKER_DIR");
  if (!dir) return;
  const std::string path = std::string(dir) + "/" FAKE_BACKEND ".loaded";
  if (FILE* f = std::fopen(path.c_str(), "w")) std::fclose(f);
}
#endif

#ifdef FAKE_USES_DEPENDENCY
extern "C" int xhal_fake_dependency_value();
#endif

// ---- lifecycle and devices ---------------------------------------------------

xhal_status_t fake_init(const xhal_plugin_host_t* host, void** out_context, char* out_note,
                        size_t note_capacity) {
  g_host = host;
  maybe_throw(FAKE_AT_INIT, "init");
  maybe_segfault(FAKE_AT_INIT);
#ifdef FAKE_THROW_INT
  throw 42;
#endif
#ifdef FAKE_HANG_IN_INIT
  for (;;) pause();
#endif
#ifdef FAKE_INIT_STATUS
  return static_cast<xhal_status_t>(FAKE_INIT_STATUS);
#endif
#ifdef FAKE_REENTER
  const std::string seen = call_back("xhal_plugin_count") + "; " + call_back("xhal_device_count");
  host->set_error(seen.c_str());
  return XHAL_PLUGIN_ERROR;
#endif
#ifdef FAKE_USES_DEPENDENCY
  if (xhal_fake_dependency_value() != 42) return XHAL_INTERNAL;
#endif
#ifdef FAKE_INIT_FAILS
  (void)out_context;
  (void)out_note;
  (void)note_capacity;
  host->set_error("fake licence server unreachable");
  return XHAL_PLUGIN_ERROR;
#else
  *out_context = &g_state;
  if (FAKE_DEVICES == 0) std::snprintf(out_note, note_capacity, "no fake device found");
  return XHAL_OK;
#endif
}

void fake_shutdown(void*) { g_host = nullptr; }

xhal_status_t fake_device_count(void*, uint32_t* out_count) {
  maybe_throw(FAKE_AT_DEVICE_COUNT, "device_count");
  *out_count = FAKE_DEVICES;
  return XHAL_OK;
}

xhal_status_t fake_device_get_info(void*, uint32_t index, xhal_plugin_device_info_t* out) {
  if (index == 1) maybe_throw(FAKE_AT_DEVICE_GET_INFO, "device_get_info");
  std::snprintf(out->name, sizeof(out->name), "%s fake device %u", FAKE_BACKEND, index);
  std::snprintf(out->stable_id, sizeof(out->stable_id), "%s%u", FAKE_STABLE_PREFIX, index);
  out->kind = static_cast<xhal_device_kind_t>(FAKE_KIND);
  out->memory_bytes = (uint64_t{1} << 30) + index;
  const uint32_t f32 = 1u << XHAL_DTYPE_F32;
#ifdef FAKE_RECORDER
  uint32_t any = 0;
  for (uint32_t d = 1; d < XHAL_DTYPE_COUNT_; ++d) any |= 1u << d;
  for (uint32_t op = 0; op < XHAL_OP_COUNT_; ++op) out->op_dtypes[op] = f32;
  if (index == 0) {
    out->op_dtypes[XHAL_OP_INDEX_SELECT] = any;
    out->op_dtypes[XHAL_OP_PERMUTE] = any;
  } else {
    // More than the spec allows (softmax takes f32 and f64 only): the core
    // reports f32 (RowsTest.DtypeClaimsAreMaskedBySpec).
    out->op_dtypes[XHAL_OP_SOFTMAX_FORWARD] = any;
  }
#else
  // Claims more than its slots cover: the core must report only permute.
  out->op_dtypes[XHAL_OP_PERMUTE] = f32 | (1u << XHAL_DTYPE_I32);
  out->op_dtypes[XHAL_OP_SOFTMAX_FORWARD] = f32;  // slot absent
  out->op_dtypes[XHAL_OP_INDEX_SELECT] = f32;     // slot present, no plan slots
#endif
  return XHAL_OK;
}

xhal_status_t fake_device_open(void*, uint32_t index, void** out_device) {
  maybe_throw(FAKE_AT_DEVICE_OPEN, "device_open");
  auto* d = new (std::nothrow) FakeDevice;
  if (!d) return XHAL_OUT_OF_MEMORY;
  d->index = index;
  *out_device = d;
  return XHAL_OK;
}

void fake_device_close(void* device) { delete static_cast<FakeDevice*>(device); }

#ifdef FAKE_RECORDER_FULL
// Any queue is taken; its device_get_native_queue gives it back.
xhal_status_t fake_device_open_on_queue(void* context, uint32_t index, const char*,
                                        void* native_queue, void** out_device) {
  xhal_status_t s = fake_device_open(context, index, out_device);
  if (s != XHAL_OK) return s;
  static_cast<FakeDevice*>(*out_device)->queue = native_queue;
  g_state.opens_on_queue += 1;
  g_state.last_open_queue = native_queue;
  return XHAL_OK;
}
xhal_status_t fake_device_get_native_queue(void* device, void** out_queue) {
  *out_queue = static_cast<FakeDevice*>(device)->queue;
  return XHAL_OK;
}
#endif

xhal_status_t fake_device_synchronize(void*) { return XHAL_OK; }

xhal_status_t fake_device_get_counters(void* device, xhal_counters_t* out) {
  auto* d = static_cast<FakeDevice*>(device);
  out->host_to_device_transfers = d->h2d;
  out->host_to_device_bytes = d->h2d_bytes;
  out->device_to_host_transfers = d->d2h;
  out->device_to_host_bytes = d->d2h_bytes;
  out->kernel_launches = d->launches;
  return XHAL_OK;
}

// ---- buffers -------------------------------------------------------------------

xhal_status_t fake_buffer_allocate(void*, uint64_t size, void** out_buffer) {
  maybe_throw(FAKE_AT_BUFFER_ALLOCATE, "buffer_allocate");
  if (size > (uint64_t{1} << 32)) {
    g_host->set_error("fake backend allocates at most 4 GiB");
    return XHAL_OUT_OF_MEMORY;
  }
  auto* b = new (std::nothrow) FakeBuffer;
  if (!b) return XHAL_OUT_OF_MEMORY;
  b->bytes.assign(size, 0);
  ++g_state.live_buffers;
  *out_buffer = b;
  Call& c = record("buffer_allocate");
  c.size = size;
  c.dst = b;
  return XHAL_OK;
}

void fake_buffer_free(void*, void* buffer) {
  --g_state.live_buffers;
  record("buffer_free").dst = buffer;
  delete static_cast<FakeBuffer*>(buffer);
}

xhal_status_t fake_buffer_write(void* device, void* dst, uint64_t offset, const void* src,
                                uint64_t size) {
  auto* d = static_cast<FakeDevice*>(device);
  std::memcpy(bytes(dst) + offset, src, size);
  d->h2d += 1;
  d->h2d_bytes += size;
  Call& c = record("buffer_write");
  c.dst = dst;
  c.dst_offset = offset;
  c.size = size;
  return XHAL_OK;
}

xhal_status_t fake_buffer_read(void* device, void* src, uint64_t offset, void* dst, uint64_t size) {
  auto* d = static_cast<FakeDevice*>(device);
  std::memcpy(dst, bytes(src) + offset, size);
  d->d2h += 1;
  d->d2h_bytes += size;
  Call& c = record("buffer_read");
  c.src = src;
  c.src_offset = offset;
  c.size = size;
  return XHAL_OK;
}

xhal_status_t fake_buffer_copy(void* device, void* src, uint64_t src_offset, void* dst,
                               uint64_t dst_offset, uint64_t size) {
  std::memmove(bytes(dst) + dst_offset, bytes(src) + src_offset, size);
  static_cast<FakeDevice*>(device)->launches += 1;
  Call& c = record("buffer_copy");
  c.src = src;
  c.dst = dst;
  c.src_offset = src_offset;
  c.dst_offset = dst_offset;
  c.size = size;
  return XHAL_OK;
}

xhal_status_t fake_buffer_fill(void* device, void* dst, uint64_t offset, uint64_t size,
                               const void* pattern, uint32_t pattern_size) {
  maybe_segfault(FAKE_AT_BUFFER_FILL);
  for (uint64_t i = 0; i < size; i += pattern_size) {
    std::memcpy(bytes(dst) + offset + i, pattern, pattern_size);
  }
  static_cast<FakeDevice*>(device)->launches += 1;
  Call& c = record("buffer_fill");
  c.dst = dst;
  c.dst_offset = offset;
  c.size = size;
  return XHAL_OK;
}

// ---- ops -------------------------------------------------------------------------

#ifndef FAKE_RECORDER_MINIMAL
// Strided gather exactly as xhal_plugin.h describes it, any element size.
xhal_status_t fake_permute(void* device, const xhal_plugin_tensor_t* src,
                           const xhal_plugin_tensor_t* dst) {
  maybe_throw(FAKE_AT_PERMUTE, "permute");
  record("permute", {src, dst});
  static const uint32_t kSize[] = {0, 4, 2, 2, 4, 8, 1, 8};  // by xhal_dtype_t
  const uint32_t es = kSize[src->dtype];
  uint64_t total = 1;
  for (uint32_t k = 0; k < dst->rank; ++k) total *= static_cast<uint64_t>(dst->shape[k]);
  int64_t i[XHAL_MAX_RANK] = {};
  for (uint64_t n = 0; n < total; ++n) {
    int64_t from = 0;
    for (uint32_t k = 0; k < dst->rank; ++k) from += i[k] * src->strides[k];
    std::memcpy(bytes(dst->buffer) + dst->offset + n * es,
                bytes(src->buffer) + src->offset + static_cast<uint64_t>(from) * es, es);
    for (int k = static_cast<int>(dst->rank) - 1; k >= 0; --k) {
      if (++i[k] < dst->shape[k]) break;
      i[k] = 0;
    }
  }
  static_cast<FakeDevice*>(device)->launches += 1;
  return op_result();
}

xhal_status_t fake_index_select(void*, void* plan, const xhal_plugin_tensor_t* src,
                                const xhal_plugin_tensor_t* out) {
  record("index_select", {src, out}).plan_or_matrix = plan;
  return op_result();
}
#endif  // FAKE_RECORDER_MINIMAL

#ifdef FAKE_RECORDER_FULL
xhal_status_t fake_index_plan_create(void*, const xhal_plugin_index_plan_desc_t* d, void** out) {
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
#if FAKE_ABI_MINOR >= 1
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

// The plan of indices in one of its buffers, read where they are (the
// recorder's buffers are host memory); a planted fault instead when set.
xhal_status_t fake_index_plan_create_from_buffer(void*, void* buffer, uint64_t offset,
                                                 xhal_dtype_t dtype, uint64_t count,
                                                 uint64_t num_rows, void** out,
                                                 xhal_plugin_index_fault_t* fault) {
  Call& call = record("index_plan_create_from_buffer");
  call.src = buffer;
  call.src_offset = offset;
  call.size = count;
  call.index_dtype = static_cast<int>(dtype);
  call.num_rows = num_rows;
  if (g_state.fault_status != XHAL_OK) {
    const xhal_status_t s = g_state.fault_status;
    g_state.fault_status = XHAL_OK;
    *fault = g_state.fault;
    g_host->set_error("recorder: planted fault");
    return s;
  }
  xhal::recorder::Plan p;
  p.count = count;
  p.num_rows = num_rows;
  const unsigned char* at = bytes(buffer) + offset;
  for (uint64_t i = 0; i < count; ++i) {
    if (dtype == XHAL_DTYPE_I32) {
      int32_t v;
      std::memcpy(&v, at + 4 * i, 4);
      p.indices.push_back(v);
    } else {
      int64_t v;
      std::memcpy(&v, at + 8 * i, 8);
      p.indices.push_back(v);
    }
  }
  g_state.plans.push_back(p);
  ++g_state.live_plans;
  *out = new int(0);
  call.plan_or_matrix = *out;
  return XHAL_OK;
}

void fake_index_plan_destroy(void*, void* plan) {
  --g_state.live_plans;
  record("index_plan_destroy").plan_or_matrix = plan;
  delete static_cast<int*>(plan);
}

xhal_status_t fake_index_add(void*, void* plan, float alpha, const xhal_plugin_tensor_t* src,
                             const xhal_plugin_tensor_t* dst) {
  Call& c = record("index_add", {src, dst});
  c.plan_or_matrix = plan;
  c.alpha = alpha;
  return op_result();
}

#endif  // FAKE_RECORDER_FULL

#ifdef FAKE_RECORDER
xhal_status_t fake_softmax_forward(void* device, const xhal_plugin_tensor_t* x,
                                   const xhal_plugin_tensor_t* y) {
  if (static_cast<FakeDevice*>(device)->index == 0 && g_state.hold.exchange(false)) {
    g_state.held = true;  // other threads may record meanwhile: this call does not
    while (!g_state.release.load()) usleep(1000);
    g_state.release = false;
    g_state.held = false;
    return XHAL_OK;
  }
  record("softmax_forward", {x, y});
  return op_result();
}

xhal_status_t fake_softmax_backward(void*, const xhal_plugin_tensor_t* y,
                                    const xhal_plugin_tensor_t* dy,
                                    const xhal_plugin_tensor_t* dx) {
  record("softmax_backward", {y, dy, dx});
  return op_result();
}

xhal_status_t fake_rms_norm_forward(void*, const xhal_plugin_tensor_t* x,
                                    const xhal_plugin_tensor_t* g, float eps,
                                    const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* r) {
  record("rms_norm_forward", {x, g, y, r}).eps = eps;
  return op_result();
}

xhal_status_t fake_rms_norm_backward(void*, const xhal_plugin_tensor_t* x,
                                     const xhal_plugin_tensor_t* g, const xhal_plugin_tensor_t* r,
                                     const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx,
                                     const xhal_plugin_tensor_t* dg) {
  record("rms_norm_backward", {x, g, r, dy, dx, dg});
  return op_result();
}

xhal_status_t fake_layer_norm_forward(void*, const xhal_plugin_tensor_t* x,
                                      const xhal_plugin_tensor_t* g, const xhal_plugin_tensor_t* b,
                                      float eps, const xhal_plugin_tensor_t* y,
                                      const xhal_plugin_tensor_t* m,
                                      const xhal_plugin_tensor_t* r) {
  record("layer_norm_forward", {x, g, b, y, m, r}).eps = eps;
  return op_result();
}

xhal_status_t fake_layer_norm_backward(void*, const xhal_plugin_tensor_t* x,
                                       const xhal_plugin_tensor_t* g, const xhal_plugin_tensor_t* m,
                                       const xhal_plugin_tensor_t* r,
                                       const xhal_plugin_tensor_t* dy,
                                       const xhal_plugin_tensor_t* dx,
                                       const xhal_plugin_tensor_t* dg,
                                       const xhal_plugin_tensor_t* db) {
  record("layer_norm_backward", {x, g, m, r, dy, dx, dg, db});
  return op_result();
}

#endif  // FAKE_RECORDER

#ifdef FAKE_RECORDER_FULL
xhal_status_t fake_csr_create(void*, const xhal_plugin_csr_desc_t* d, void** out) {
  Call& call = record("csr_create");
  if (xhal_status_t s = op_result(); s != XHAL_OK) return s;
  xhal::recorder::Matrix m;
  m.rows = d->rows;
  m.cols = d->cols;
  m.nnz = d->nnz;
  m.row_ptr.assign(d->row_ptr, d->row_ptr + d->rows + 1);
  m.col_idx.assign(d->col_idx, d->col_idx + d->nnz);
  m.row_idx.assign(d->row_idx, d->row_idx + d->nnz);
  m.transpose_given = d->t_row_ptr != nullptr;
  m.transpose_fields_null = !d->t_row_ptr && !d->t_col_idx && !d->t_perm;
  if (m.transpose_given) {
    m.t_row_ptr.assign(d->t_row_ptr, d->t_row_ptr + d->cols + 1);
    m.t_col_idx.assign(d->t_col_idx, d->t_col_idx + d->nnz);
    m.t_perm.assign(d->t_perm, d->t_perm + d->nnz);
  }
  m.values_buffer = d->values_buffer;
  g_state.matrices.push_back(m);
  ++g_state.live_matrices;
  *out = new int(0);
  call.plan_or_matrix = *out;
  return XHAL_OK;
}

#ifdef FAKE_CSR_FROM_BUFFERS
std::vector<int64_t> read_indices(void* buffer, xhal_dtype_t dtype, int64_t count) {
  std::vector<int64_t> v;
  const unsigned char* at = buffer ? bytes(buffer) : nullptr;
  for (int64_t i = 0; i < count; ++i) {
    if (dtype == XHAL_DTYPE_I32) {
      int32_t x;
      std::memcpy(&x, at + 4 * i, 4);
      v.push_back(x);
    } else {
      int64_t x;
      std::memcpy(&x, at + 8 * i, 8);
      v.push_back(x);
    }
  }
  return v;
}

xhal_status_t fake_csr_create_from_buffers(void*, const xhal_plugin_csr_buffers_desc_t* d,
                                           void** out, xhal_plugin_csr_fault_t* fault,
                                           xhal_plugin_csr_facts_t* facts) {
  Call& call = record("csr_create_from_buffers");
  call.src = d->row_ptr_buffer;
  call.dst = d->col_idx_buffer;
  call.index_dtype = static_cast<int>(d->index_dtype);
  if (g_state.csr_fault_status != XHAL_OK) {
    const xhal_status_t s = g_state.csr_fault_status;
    g_state.csr_fault_status = XHAL_OK;
    *fault = g_state.csr_fault;
    return s;
  }
  xhal::recorder::Matrix m;
  m.rows = d->rows;
  m.cols = d->cols;
  m.nnz = d->nnz;
  m.row_ptr = read_indices(d->row_ptr_buffer, d->index_dtype, d->rows + 1);
  m.col_idx = read_indices(d->col_idx_buffer, d->index_dtype, d->nnz);
  m.values_buffer = d->values_buffer;
  *facts = {-1, 0, -1, 0, -1};
  for (int64_t i = 0; i < m.rows; ++i) {
    bool diag = false;
    for (int64_t k = m.row_ptr[i]; k < m.row_ptr[i + 1]; ++k) {
      const int64_t c = m.col_idx[k];
      if (c > i && facts->above_row < 0) facts->above_row = i, facts->above_col = c;
      if (c < i && facts->below_row < 0) facts->below_row = i, facts->below_col = c;
      diag = diag || c == i;
    }
    if (!diag && i < std::min(m.rows, m.cols) && facts->missing_diagonal_row < 0)
      facts->missing_diagonal_row = i;
  }
  g_state.matrices.push_back(m);
  ++g_state.live_matrices;
  *out = new int(0);
  call.plan_or_matrix = *out;
  return XHAL_OK;
}
#endif

void fake_csr_destroy(void*, void* m) {
  --g_state.live_matrices;
  record("csr_destroy").plan_or_matrix = m;
  delete static_cast<int*>(m);
}

// spmv and spmm record the same arguments.
xhal_status_t record_sp_mul(const char* slot, void* a, xhal_transpose_t t, float alpha,
                            const xhal_plugin_tensor_t* x, float beta,
                            const xhal_plugin_tensor_t* y) {
  Call& c = record(slot, {x, y});
  c.plan_or_matrix = a;
  c.trans = t;
  c.alpha = alpha;
  c.beta = beta;
  return op_result();
}

xhal_status_t fake_spmv(void*, void* a, xhal_transpose_t t, float alpha,
                        const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  return record_sp_mul("spmv", a, t, alpha, x, beta, y);
}

xhal_status_t fake_spmm(void*, void* a, xhal_transpose_t t, float alpha,
                        const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  return record_sp_mul("spmm", a, t, alpha, x, beta, y);
}

xhal_status_t fake_csr_solve(void*, void* a, xhal_transpose_t t, xhal_triangle_t tri,
                             xhal_diagonal_t diag, const xhal_plugin_tensor_t* b,
                             const xhal_plugin_tensor_t* x) {
  Call& c = record("csr_solve", {b, x});
  c.plan_or_matrix = a;
  c.trans = t;
  c.triangle = tri;
  c.diagonal = diag;
  return op_result();
}

xhal_status_t fake_csr_solve_backward(void*, void* a, xhal_transpose_t t, xhal_triangle_t tri,
                                      xhal_diagonal_t diag, const xhal_plugin_tensor_t* x,
                                      const xhal_plugin_tensor_t* dx,
                                      const xhal_plugin_tensor_t* gb,
                                      const xhal_plugin_tensor_t* ga) {
  Call& c = record("csr_solve_backward", {x, dx, gb, ga});
  c.plan_or_matrix = a;
  c.trans = t;
  c.triangle = tri;
  c.diagonal = diag;
  return op_result();
}

xhal_status_t fake_spgemm_numeric(void*, void* a, void* b, void* c) {
  Call& call = record("spgemm_numeric");
  call.src = a;
  call.dst = c;
  call.plan_or_matrix = b;
  return op_result();
}
#endif  // FAKE_RECORDER_FULL

// ---- the table -------------------------------------------------------------------

#ifdef FAKE_TABLE_LONG
[[noreturn]] void future_slot() { std::abort(); }  // a newer core would call it
#endif

struct LongTable {
  xhal_plugin_api_t current;
  void (*future_a)();
  void (*future_b)();
};

LongTable make_table() {
  LongTable t{};
  xhal_plugin_api_t& a = t.current;
  a.struct_size = sizeof(xhal_plugin_api_t);
  a.abi_major = FAKE_ABI_MAJOR;
  a.abi_minor = FAKE_ABI_MINOR;
  a.backend_name = FAKE_BACKEND;
  a.plugin_version = "0.0.1-fake";
  a.init = fake_init;
  a.shutdown = fake_shutdown;
  a.device_count = fake_device_count;
  a.device_get_info = fake_device_get_info;
  a.device_open = fake_device_open;
  a.device_close = fake_device_close;
  a.device_synchronize = fake_device_synchronize;
  a.device_get_counters = fake_device_get_counters;
  a.buffer_allocate = fake_buffer_allocate;
  a.buffer_free = fake_buffer_free;
  a.buffer_write = fake_buffer_write;
  a.buffer_read = fake_buffer_read;
  a.buffer_copy = fake_buffer_copy;
  a.buffer_fill = fake_buffer_fill;
#ifndef FAKE_RECORDER
  a.permute = fake_permute;
  a.index_select = fake_index_select;
#else
  a.softmax_forward = fake_softmax_forward;
  a.softmax_backward = fake_softmax_backward;
  a.rms_norm_forward = fake_rms_norm_forward;
  a.rms_norm_backward = fake_rms_norm_backward;
  a.layer_norm_forward = fake_layer_norm_forward;
  a.layer_norm_backward = fake_layer_norm_backward;
#ifdef FAKE_RECORDER_FULL
  a.index_plan_create = fake_index_plan_create;
  a.index_plan_destroy = fake_index_plan_destroy;
  a.index_select = fake_index_select;
  a.index_add = fake_index_add;
  a.permute = fake_permute;
  a.csr_create = fake_csr_create;
  a.csr_destroy = fake_csr_destroy;
  a.spmv = fake_spmv;
  a.spmm = fake_spmm;
  a.csr_solve = fake_csr_solve;
  a.csr_solve_backward = fake_csr_solve_backward;
  a.spgemm_numeric = fake_spgemm_numeric;
  a.device_open_on_queue = fake_device_open_on_queue;
  a.device_get_native_queue = fake_device_get_native_queue;
  a.index_plan_create_from_buffer = fake_index_plan_create_from_buffer;
#ifdef FAKE_OWN_TRANSPOSE
  a.csr_create_flags = XHAL_PLUGIN_CSR_OWN_TRANSPOSE;
#endif
#ifdef FAKE_CSR_FROM_BUFFERS
  a.csr_create_from_buffers = fake_csr_create_from_buffers;
#endif
#endif
#endif
#ifdef FAKE_DROP_BUFFER_FILL
  a.buffer_fill = nullptr;
#endif
#ifdef FAKE_TABLE_SHORT
  // Built against a table that ended before the op slots: bytes past
  // struct_size are garbage the core must never read.
  a.struct_size = offsetof(xhal_plugin_api_t, index_plan_create);
  std::memset(reinterpret_cast<char*>(&a) + a.struct_size, 0xA5,
              sizeof(xhal_plugin_api_t) - a.struct_size);
#endif
#ifdef FAKE_TABLE_LONG
  a.struct_size = sizeof(LongTable);
  t.future_a = future_slot;
  t.future_b = future_slot;
#endif
#ifdef FAKE_TABLE_TINY
  a.struct_size = sizeof(size_t);
#endif
#ifdef FAKE_TABLE_CUT
  // struct_size ends 4 bytes into the required slot buffer_fill: half a
  // function pointer that the core must not take for a slot.
  a.struct_size = offsetof(xhal_plugin_api_t, buffer_fill) + 4;
#endif
  return t;
}

const LongTable g_table = make_table();

}  // namespace

#ifndef FAKE_NO_ENTRY
extern "C" XHAL_PLUGIN_EXPORT const xhal_plugin_api_t* xhal_plugin_get_api(void) {
  maybe_throw(FAKE_AT_ENTRY, "entry");
#ifdef FAKE_NULL_ENTRY
  return nullptr;
#else
  return &g_table.current;
#endif
}
#endif

#ifdef FAKE_RECORDER
extern "C" XHAL_PLUGIN_EXPORT State* xhal_recorder_state(void) { return &g_state; }
#endif
