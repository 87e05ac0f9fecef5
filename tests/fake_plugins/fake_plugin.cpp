// A configurable fake backend for the core's tests. Each scenario compiles
// this file with FAKE_* definitions (tests/fake_plugins/CMakeLists.txt):
//   FAKE_BACKEND        backend_name in the table (string)
//   FAKE_ABI_MAJOR/MINOR  ABI numbers it declares
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
// Buffers live in host memory; counters count writes, reads and "kernels".
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "xhal/xhal_plugin.h"

#ifndef FAKE_BACKEND
#error "FAKE_BACKEND must name the backend"
#endif
#ifndef FAKE_ABI_MAJOR
#define FAKE_ABI_MAJOR XHAL_PLUGIN_ABI_MAJOR
#endif
#ifndef FAKE_ABI_MINOR
#define FAKE_ABI_MINOR XHAL_PLUGIN_ABI_MINOR
#endif
#ifndef FAKE_DEVICES
#define FAKE_DEVICES 2
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

struct FakeBuffer {
  std::vector<unsigned char> bytes;
};

struct FakeDevice {
  uint32_t index = 0;
  std::atomic<uint64_t> h2d{0}, h2d_bytes{0}, d2h{0}, d2h_bytes{0}, launches{0};
};

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
  *out_context = &g_host;
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
  // Claims more than its slots cover: the core must report only permute.
  out->op_dtypes[XHAL_OP_PERMUTE] = f32 | (1u << XHAL_DTYPE_I32);
  out->op_dtypes[XHAL_OP_SOFTMAX_FORWARD] = f32;  // slot absent
  out->op_dtypes[XHAL_OP_INDEX_SELECT] = f32;     // slot present, no plan slots
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

xhal_status_t fake_buffer_allocate(void*, uint64_t size, void** out_buffer) {
  maybe_throw(FAKE_AT_BUFFER_ALLOCATE, "buffer_allocate");
  if (size > (uint64_t{1} << 32)) {
    g_host->set_error("fake backend allocates at most 4 GiB");
    return XHAL_OUT_OF_MEMORY;
  }
  auto* b = new (std::nothrow) FakeBuffer;
  if (!b) return XHAL_OUT_OF_MEMORY;
  b->bytes.assign(size, 0);
  *out_buffer = b;
  return XHAL_OK;
}

void fake_buffer_free(void*, void* buffer) { delete static_cast<FakeBuffer*>(buffer); }

unsigned char* bytes(void* buffer) { return static_cast<FakeBuffer*>(buffer)->bytes.data(); }

xhal_status_t fake_buffer_write(void* device, void* dst, uint64_t offset, const void* src,
                                uint64_t size) {
  auto* d = static_cast<FakeDevice*>(device);
  std::memcpy(bytes(dst) + offset, src, size);
  d->h2d += 1;
  d->h2d_bytes += size;
  return XHAL_OK;
}

xhal_status_t fake_buffer_read(void* device, void* src, uint64_t offset, void* dst, uint64_t size) {
  auto* d = static_cast<FakeDevice*>(device);
  std::memcpy(dst, bytes(src) + offset, size);
  d->d2h += 1;
  d->d2h_bytes += size;
  return XHAL_OK;
}

xhal_status_t fake_buffer_copy(void* device, void* src, uint64_t src_offset, void* dst,
                               uint64_t dst_offset, uint64_t size) {
  std::memcpy(bytes(dst) + dst_offset, bytes(src) + src_offset, size);
  static_cast<FakeDevice*>(device)->launches += 1;
  return XHAL_OK;
}

xhal_status_t fake_buffer_fill(void* device, void* dst, uint64_t offset, uint64_t size,
                               const void* pattern, uint32_t pattern_size) {
  maybe_segfault(FAKE_AT_BUFFER_FILL);
  for (uint64_t i = 0; i < size; i += pattern_size) {
    std::memcpy(bytes(dst) + offset + i, pattern, pattern_size);
  }
  static_cast<FakeDevice*>(device)->launches += 1;
  return XHAL_OK;
}

// 4-byte elements only: enough to be a real slot behind the permute claim.
xhal_status_t fake_permute(void* device, const xhal_plugin_tensor_t* src,
                           const xhal_plugin_tensor_t* dst) {
  maybe_throw(FAKE_AT_PERMUTE, "permute");
  uint64_t total = 1;
  for (uint32_t k = 0; k < dst->rank; ++k) total *= static_cast<uint64_t>(dst->shape[k]);
  int64_t index[XHAL_MAX_RANK] = {};
  for (uint64_t n = 0; n < total; ++n) {
    int64_t from = 0;
    for (uint32_t k = 0; k < src->rank; ++k) from += index[k] * src->strides[k];
    std::memcpy(bytes(dst->buffer) + dst->offset + n * 4,
                bytes(src->buffer) + src->offset + static_cast<uint64_t>(from) * 4, 4);
    for (int k = static_cast<int>(dst->rank) - 1; k >= 0; --k) {
      if (++index[k] < dst->shape[k]) break;
      index[k] = 0;
    }
  }
  static_cast<FakeDevice*>(device)->launches += 1;
  return XHAL_OK;
}

xhal_status_t fake_index_select(void*, void*, const xhal_plugin_tensor_t*,
                                const xhal_plugin_tensor_t*) {
  std::abort();  // unreachable: without index_plan_create the op is unsupported
}

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
  a.permute = fake_permute;
  a.index_select = fake_index_select;
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
