// The plugin table, lifecycle and devices of the GPU plugin (buffers:
// buffers.cpp; ops: one file per op family). Built by nvcc (libxhal-cuda.so)
// or hipcc (libxhal-rocm.so); the backend name comes from gpu_port.h.
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <string>

#include <dlfcn.h>

#include "gpu_plugin.h"

namespace xhal::gpu {
namespace {

const xhal_plugin_host_t* g_host = nullptr;

#if defined(XHAL_GPU_HIP)
#define XHAL_GPU_DRIVER_LIB "libhsa-runtime64.so.1"
#else
#define XHAL_GPU_DRIVER_LIB "libcuda.so.1"
#endif

// The runtime's "driver version is insufficient" also means "no driver".
bool driver_missing() {
  void* h = dlopen(XHAL_GPU_DRIVER_LIB, RTLD_LAZY | RTLD_LOCAL);
  if (h) dlclose(h);
  return h == nullptr;
}

struct Context {
  int device_count = 0;
  std::vector<gpuDeviceProp_t> props;
};

xhal_status_t init(const xhal_plugin_host_t* host, void** out_context, char* out_note,
                   size_t note_capacity) {
  g_host = host;
  auto ctx = std::make_unique<Context>();
  int count = 0;
  gpuError_t e = gpuGetDeviceCount(&count);
  if (e != gpuSuccess || count <= 0) {
    if (out_note && note_capacity)
      std::snprintf(
          out_note, note_capacity, "no %s device found: %s%s", XHAL_GPU_RUNTIME_NAME,
          e != gpuSuccess ? gpuGetErrorString(e) : "the runtime lists none",
          driver_missing() ? " (no driver library " XHAL_GPU_DRIVER_LIB " on this machine)" : "");
    gpuGetLastError();  // clear the sticky-free error so later calls are clean
    count = 0;
  }
  ctx->device_count = count;
  ctx->props.resize(count);
  for (int i = 0; i < count; ++i) {
    e = gpuGetDeviceProperties(&ctx->props[i], i);
    if (e != gpuSuccess) return runtime_error(e, "reading device properties");
  }
  *out_context = ctx.release();
  return XHAL_OK;
}

void shutdown(void* context) { delete static_cast<Context*>(context); }

xhal_status_t device_count(void* context, uint32_t* out) {
  *out = static_cast<uint32_t>(static_cast<Context*>(context)->device_count);
  return XHAL_OK;
}

void format_uuid(const gpuDeviceProp_t& p, char* out, size_t cap) {
#if defined(XHAL_GPU_HIP)
  // HIP 5.2 has no uuid in its properties: the PCI location is stable.
  std::snprintf(out, cap, "pci:%04x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
#else
  const unsigned char* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
  std::snprintf(out, cap,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                u[14], u[15]);
#endif
}

xhal_status_t device_get_info(void* context, uint32_t index, xhal_plugin_device_info_t* info) {
  auto* ctx = static_cast<Context*>(context);
  if (index >= static_cast<uint32_t>(ctx->device_count))
    return fail(XHAL_NOT_FOUND, "%s plugin: no device %u", XHAL_GPU_BACKEND_NAME, index);
  const gpuDeviceProp_t& p = ctx->props[index];
  // The name is cut to fit (the precision says so: no -Wformat-truncation).
  std::snprintf(info->name, sizeof info->name, "%.*s", static_cast<int>(sizeof info->name - 1),
                p.name);
  format_uuid(p, info->stable_id, sizeof info->stable_id);
  info->kind = XHAL_DEVICE_KIND_GPU;
  info->memory_bytes = p.totalGlobalMem;
  const uint32_t f32 = 1u << XHAL_DTYPE_F32;
  const uint32_t any = f32 | (1u << XHAL_DTYPE_F16) | (1u << XHAL_DTYPE_BF16) |
                       (1u << XHAL_DTYPE_I32) | (1u << XHAL_DTYPE_I64) | (1u << XHAL_DTYPE_U8) |
                       (1u << XHAL_DTYPE_F64);
  for (int op = 0; op < XHAL_OP_COUNT_; ++op) info->op_dtypes[op] = f32;
  info->op_dtypes[XHAL_OP_INDEX_SELECT] = any;
  info->op_dtypes[XHAL_OP_PERMUTE] = any;
  // bf16/f16 storage with f32 arithmetic (docs/semantics.md 7.2), and f64
  // with binary64 arithmetic throughout (7.3).
  const uint32_t dense =
      f32 | (1u << XHAL_DTYPE_F16) | (1u << XHAL_DTYPE_BF16) | (1u << XHAL_DTYPE_F64);
  for (int op : {XHAL_OP_INDEX_ADD, XHAL_OP_SOFTMAX_FORWARD, XHAL_OP_SOFTMAX_BACKWARD,
                 XHAL_OP_RMS_NORM_FORWARD, XHAL_OP_RMS_NORM_BACKWARD, XHAL_OP_LAYER_NORM_FORWARD,
                 XHAL_OP_LAYER_NORM_BACKWARD})
    info->op_dtypes[op] = dense;
  // f64 matrices (7.3; the solves over level batches, sparse_matrix.h).
  for (int op :
       {XHAL_OP_SPMV, XHAL_OP_SPMM, XHAL_OP_CSR_SOLVE, XHAL_OP_CSR_SOLVE_BACKWARD, XHAL_OP_SPGEMM})
    info->op_dtypes[op] = f32 | (1u << XHAL_DTYPE_F64);
  // f16/bf16 matrices: spmv and spmm only (7.2).
  info->op_dtypes[XHAL_OP_SPMV] = info->op_dtypes[XHAL_OP_SPMM] = dense;
  return XHAL_OK;
}

// The options are parsed here, once (docs/device-options.md): the ops read
// d->options, never the environment. `queue`: the caller's stream
// (device_open_on_queue), else nullptr and the device makes its own.
xhal_status_t open_device(void* context, uint32_t index, const char* options, bool on_queue,
                          gpuStream_t queue, void** out) {
  auto* ctx = static_cast<Context*>(context);
  if (index >= static_cast<uint32_t>(ctx->device_count))
    return fail(XHAL_NOT_FOUND, "%s plugin: no device %u", XHAL_GPU_BACKEND_NAME, index);
  DeviceOptions parsed;
  std::string error;
  // The core puts "<backend> plugin: device_open_with_options: " before it.
  if (!parse_device_options(options, kBackend, &parsed, &error))
    return fail(XHAL_INVALID_ARGUMENT, "%s", error.c_str());
  auto d = std::make_unique<Device>();
  d->ordinal = static_cast<int>(index);
  d->options = parsed;
  use_device(d->ordinal);
  if (on_queue) {
#if !defined(XHAL_GPU_HIP) && defined(CUDART_VERSION) && CUDART_VERSION >= 12080
    // A stream of another device would run xhal's kernels there.
    if (queue) {
      int owner = -1;
      const gpuError_t e = cudaStreamGetDevice(queue, &owner);
      if (e != gpuSuccess) {
        (void)gpuGetLastError();
        return fail(XHAL_INVALID_ARGUMENT,
                    "argument 'native_queue' (%p) is not a CUDA stream the runtime knows: %s",
                    static_cast<void*>(queue), gpuGetErrorString(e));
      }
      if (owner != d->ordinal)
        return fail(XHAL_INVALID_ARGUMENT,
                    "argument 'native_queue' (%p) is a stream of CUDA device %d, not of device %d",
                    static_cast<void*>(queue), owner, d->ordinal);
    }
#endif
    d->stream = queue;
    d->owns_stream = false;
  } else {
    gpuError_t e = gpuStreamCreateWithFlags(&d->stream, gpuStreamNonBlocking);
    if (e != gpuSuccess) return runtime_error(e, "opening the device");
  }
  int pools = 0;
  if (gpuDeviceGetAttribute(&pools, gpuDevAttrMemoryPoolsSupported, d->ordinal) != gpuSuccess)
    (void)gpuGetLastError();  // not sticky; plain allocations then
  d->stream_ordered_alloc = pools != 0;
  *out = d.release();
  return XHAL_OK;
}

xhal_status_t device_open_with_options(void* context, uint32_t index, const char* options,
                                       void** out) {
  return open_device(context, index, options, false, nullptr, out);
}

xhal_status_t device_open_on_queue(void* context, uint32_t index, const char* options,
                                   void* native_queue, void** out) {
  return open_device(context, index, options, true, static_cast<gpuStream_t>(native_queue), out);
}

xhal_status_t device_open(void* context, uint32_t index, void** out) {
  return device_open_with_options(context, index, "", out);
}

xhal_status_t device_get_options(void* device, char* out, size_t capacity) {
  copy_option_text(format_device_options(static_cast<Device*>(device)->options, kBackend), out,
                   capacity);
  return XHAL_OK;
}

void device_close(void* device) {
  auto* d = static_cast<Device*>(device);
  use_device(d->ordinal);
  gpuStreamSynchronize(d->stream);
  if (d->scratch) gpuFree(d->scratch);
  if (d->sync) gpuFree(d->sync);
  if (d->owns_stream) gpuStreamDestroy(d->stream);
  delete d;
}

xhal_status_t device_synchronize(void* device) {
  auto* d = static_cast<Device*>(device);
  use_device(d->ordinal);
  gpuError_t e = gpuStreamSynchronize(d->stream);
  if (e != gpuSuccess)
    return fail(XHAL_DEVICE_LOST, "%s plugin: asynchronous device fault: %s", XHAL_GPU_BACKEND_NAME,
                gpuGetErrorString(e));
  return XHAL_OK;
}

xhal_status_t device_get_counters(void* device, xhal_counters_t* out) {
  auto* d = static_cast<Device*>(device);
  out->host_to_device_transfers = d->h2d_transfers;
  out->host_to_device_bytes = d->h2d_bytes;
  out->device_to_host_transfers = d->d2h_transfers;
  out->device_to_host_bytes = d->d2h_bytes;
  out->kernel_launches = d->launches;
  return XHAL_OK;
}

}  // namespace

xhal_status_t fail(xhal_status_t st, const char* fmt, ...) {
  char msg[1024];  // an options error lists every known option
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (g_host && g_host->set_error) g_host->set_error(msg);
  return st;
}

uint32_t core_abi_minor() { return g_host ? g_host->abi_minor : 0; }
}  // namespace xhal::gpu

namespace {
using namespace xhal::gpu;

const xhal_plugin_api_t kApi = [] {
  xhal_plugin_api_t a{};
  a.struct_size = sizeof(xhal_plugin_api_t);
  a.abi_major = XHAL_PLUGIN_ABI_MAJOR;
  a.abi_minor = XHAL_PLUGIN_ABI_MINOR;
  a.backend_name = XHAL_GPU_BACKEND_NAME;
  a.plugin_version = "0.1.0";
  a.init = init;
  a.shutdown = shutdown;
  a.device_count = device_count;
  a.device_get_info = device_get_info;
  a.device_open = device_open;
  a.device_open_with_options = device_open_with_options;
  a.device_get_options = device_get_options;
  a.device_close = device_close;
  a.device_synchronize = device_synchronize;
  a.device_get_counters = device_get_counters;
  a.buffer_allocate = buffer_allocate;
  a.buffer_free = buffer_free;
  a.buffer_write = buffer_write;
  a.buffer_read = buffer_read;
  a.buffer_copy = buffer_copy;
  a.buffer_fill = buffer_fill;
  a.device_get_memory_kind = device_get_memory_kind;
  a.buffer_import = buffer_import;
  a.buffer_get_native = buffer_get_native;
  a.device_get_native_queue = device_get_native_queue;
  a.queue_signal_external = queue_signal_external;
  a.queue_wait_external = queue_wait_external;
  a.device_open_on_queue = device_open_on_queue;
  a.index_plan_create_from_buffer = index_plan_create_from_buffer;
#if !defined(XHAL_GPU_HIP)
  // A^T is a radix sort on the device (sparse_transpose.cpp); ROCm has no
  // CUB here and takes the core's host transpose.
  a.csr_create_flags = XHAL_PLUGIN_CSR_OWN_TRANSPOSE;
  // Patterns in device buffers are validated and analysed there
  // (sparse_from_buffers.cpp; CUB's scan, so CUDA only as well).
  a.csr_create_from_buffers = csr_create_from_buffers;
#endif
  a.index_plan_create = index_plan_create;
  a.index_plan_destroy = index_plan_destroy;
  a.index_select = index_select;
  a.index_add = index_add;
  a.permute = permute;
  a.softmax_forward = softmax_forward;
  a.softmax_backward = softmax_backward;
  a.rms_norm_forward = rms_norm_forward;
  a.rms_norm_backward = rms_norm_backward;
  a.layer_norm_forward = layer_norm_forward;
  a.layer_norm_backward = layer_norm_backward;
  a.csr_create = csr_create;
  a.csr_destroy = csr_destroy;
  a.spmv = spmv;
  a.spmm = spmm;
  a.csr_solve = csr_solve;
  a.csr_solve_backward = csr_solve_backward;
  a.spgemm_numeric = spgemm_numeric;
  return a;
}();
}  // namespace

extern "C" XHAL_PLUGIN_EXPORT const xhal_plugin_api_t* xhal_plugin_get_api(void) { return &kApi; }
