// The host helpers every op file uses (declared in gpu_plugin.h); fail(),
// which reports through the host table the core passed to init, lives in
// plugin.cpp.
#include "gpu_plugin.h"

namespace xhal::gpu {

xhal_status_t runtime_error(gpuError_t e, const char* what) {
  gpuGetLastError();
  return fail(e == gpuErrorMemoryAllocation ? XHAL_OUT_OF_MEMORY : XHAL_PLUGIN_ERROR,
              "%s plugin: %s failed: %s", XHAL_GPU_BACKEND_NAME, what, gpuGetErrorString(e));
}

xhal_status_t check_launch(Device* d, const char* op, int launches) {
  // A statistic read on its own by device_get_counters: no ordering needed
  // (a seq_cst add also orders memory on ARM hosts such as the GH200).
  d->launches.fetch_add(static_cast<uint64_t>(launches), std::memory_order_relaxed);
  // The one runtime call per op besides the launch: it turns a failed launch
  // (bad configuration, missing kernel image) into this op's status and
  // clears it so the next op is not blamed. Faults inside a kernel surface at
  // device_synchronize instead.
  const gpuError_t e = gpuGetLastError();
  if (__builtin_expect(e != gpuSuccess, 0))
    return fail(XHAL_PLUGIN_ERROR, "%s plugin: %s: kernel launch failed: %s", XHAL_GPU_BACKEND_NAME,
                op, gpuGetErrorString(e));
  return XHAL_OK;
}

xhal_status_t scratch(Device* d, size_t bytes, void** out) {
  if (bytes > d->scratch_size) {
    gpuStreamSynchronize(d->stream);
    if (d->scratch) gpuFree(d->scratch);
    d->scratch = nullptr;
    d->scratch_size = 0;
    gpuError_t e = gpuMalloc(&d->scratch, bytes);
    if (e != gpuSuccess) return runtime_error(e, "allocating scratch memory");
    d->scratch_size = bytes;
  }
  *out = d->scratch;
  return XHAL_OK;
}

xhal_status_t sync_counters(Device* d, size_t words, unsigned** out) {
  if (words > d->sync_words) {
    gpuStreamSynchronize(d->stream);
    if (d->sync) gpuFree(d->sync);
    d->sync = nullptr;
    d->sync_words = 0;
    gpuError_t e = gpuMalloc(reinterpret_cast<void**>(&d->sync), words * sizeof(unsigned));
    if (e != gpuSuccess) return runtime_error(e, "allocating counters");
    e = gpuMemsetAsync(d->sync, 0, words * sizeof(unsigned), d->stream);
    if (e != gpuSuccess) return runtime_error(e, "clearing counters");
    d->sync_words = words;
  }
  *out = d->sync;
  return XHAL_OK;
}

xhal_status_t upload(Device* d, const void* host, size_t bytes, void** out) {
  *out = nullptr;
  if (!bytes) return XHAL_OK;
  gpuError_t e = gpuMalloc(out, bytes);
  if (e != gpuSuccess) return runtime_error(e, "allocating plan memory");
  // On the device's stream, then wait: a plain cudaMemcpy from pageable
  // memory may return before its DMA lands, and the non-blocking stream
  // that later kernels run on would not wait for it.
  e = gpuMemcpyAsync(*out, host, bytes, gpuMemcpyHostToDevice, d->stream);
  if (e == gpuSuccess) e = gpuStreamSynchronize(d->stream);
  d->h2d_transfers++;
  d->h2d_bytes += bytes;
  if (e != gpuSuccess) {
    gpuFree(*out);
    *out = nullptr;
    return runtime_error(e, "uploading plan data");
  }
  return XHAL_OK;
}

size_t dtype_size(xhal_dtype_t t) {
  switch (t) {
    case XHAL_DTYPE_F16:
    case XHAL_DTYPE_BF16:
      return 2;
    case XHAL_DTYPE_I64:
    case XHAL_DTYPE_F64:
      return 8;
    case XHAL_DTYPE_U8:
      return 1;
    default:
      return 4;
  }
}

}  // namespace xhal::gpu
