// Per-call cost of the smallest op, split into its parts, on the cuda device:
//   bare  - an empty kernel <<<1, 32>>> on a stream of this program
//   slot  - the cuda plugin's softmax_forward slot called directly (plugin only)
//   op    - xhal_softmax_forward through the C ABI (core + plugin)
// for a [1, 32] f32 tensor, each timed three ways:
//   host   - enqueue time only: batches of kBatch calls on an idle GPU, the
//            drain after each batch not timed; median over batches. The
//            queue never fills, so this is host work alone. The issue-5
//            goal (op - bare < 1 us) is about this row.
//   queued - kQueued calls back to back, then one synchronize: per call
//            max(host, GPU) once the launch queue is full. This is what
//            cusparse_compare's call_overhead reports.
//   sync   - one call followed by a synchronize, repeated: the latency.
// "queued - host" growing for the op but not for bare means the kernel's GPU
// time, not the host path, sets the queued figure.
// Usage: XHAL_DEVICE=cuda xhal-call-overhead [out.json]
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "check.h"
#include "xhal/xhal.h"
#include "xhal/xhal_plugin.h"

namespace {

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

constexpr int kBatch = 64;  // far below the driver's launch queue depth
constexpr int kBatches = 400;
constexpr int kQueued = 20000;  // as cusparse_compare
constexpr int kSync = 2000;

__global__ void empty_kernel(float*) {}

struct Row {
  double host = 0, queued = 0, sync = 0;
};

// call: issues the op once; drain: waits for everything issued. Templates,
// so that the harness adds no indirect call of its own.
template <class Call, class Drain>
Row measure(Call call, Drain drain) {
  for (int i = 0; i < 200; ++i) call();  // lazy module loading, caches
  drain();
  Row r;
  std::vector<double> per_call;
  per_call.reserve(kBatches);
  for (int b = 0; b < kBatches; ++b) {
    const auto t = Clock::now();
    for (int i = 0; i < kBatch; ++i) call();
    per_call.push_back(us_since(t) / kBatch);
    drain();
  }
  std::nth_element(per_call.begin(), per_call.begin() + kBatches / 2, per_call.end());
  r.host = per_call[kBatches / 2];
  auto t = Clock::now();
  for (int i = 0; i < kQueued; ++i) call();
  drain();
  r.queued = us_since(t) / kQueued;
  t = Clock::now();
  for (int i = 0; i < kSync; ++i) {
    call();
    drain();
  }
  r.sync = us_since(t) / kSync;
  return r;
}

void quiet_set_error(const char* message) {
  std::fprintf(stderr, "plugin message: %s\n", message ? message : "(null)");
}

// The plugin file the runtime loaded for `backend`.
std::string loaded_plugin_path(const char* backend) {
  uint32_t n = 0;
  XK(xhal_plugin_count(&n));
  for (uint32_t i = 0; i < n; ++i) {
    xhal_plugin_info_t info{};
    info.struct_size = sizeof info;
    XK(xhal_plugin_get_info(i, &info));
    if (info.state == XHAL_PLUGIN_LOADED && std::strcmp(info.backend, backend) == 0)
      return info.path;
  }
  return {};
}

xhal_plugin_tensor_t plugin_row(void* buffer, uint64_t offset) {
  xhal_plugin_tensor_t t{};
  t.buffer = buffer;
  t.offset = offset;
  t.dtype = XHAL_DTYPE_F32;
  t.rank = 2;
  t.shape[0] = 1;
  t.shape[1] = 32;
  t.strides[0] = 32;
  t.strides[1] = 1;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  xhal_device_info_t info{};
  xhal_device_t dev = open_device_and_say_which(&info);

  // bare
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // op: y follows x in one buffer, as in cusparse_compare.
  xhal_buffer_t b;
  XK(xhal_buffer_allocate(dev, 256, &b));
  XK(xhal_buffer_fill(b, 0, 256, "\0\0\x80\x3f", 4));
  xhal_tensor_t x{};
  x.buffer = b;
  x.dtype = XHAL_DTYPE_F32;
  x.rank = 2;
  x.shape[0] = 1;
  x.shape[1] = 32;
  xhal_tensor_t y = x;
  y.offset = 128;

  // slot: the same library instance the runtime loaded, with a device of
  // its own (a second init only adds a context; its host table replaces the
  // runtime's, which matters only for messages and is done last).
  const std::string path = loaded_plugin_path(info.backend);
  void* lib = path.empty() ? nullptr : dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  using GetApi = const xhal_plugin_api_t* (*)();
  auto get_api = lib ? reinterpret_cast<GetApi>(dlsym(lib, "xhal_plugin_get_api")) : nullptr;
  const xhal_plugin_api_t* api = get_api ? get_api() : nullptr;

  std::vector<std::pair<const char*, Row>> rows;
  rows.emplace_back("bare", measure([&] { empty_kernel<<<1, 32, 0, stream>>>(nullptr); },
                                    [&] { CK(cudaStreamSynchronize(stream)); }));
  rows.emplace_back("op", measure([&] { XK(xhal_softmax_forward(dev, &x, &y)); },
                                  [&] { XK(xhal_device_synchronize(dev)); }));

  void* ctx = nullptr;
  void* pdev = nullptr;
  void* pbuf = nullptr;
  // Static: the plugin keeps the pointer until the runtime unloads it at exit.
  static const xhal_plugin_host_t host = {sizeof(xhal_plugin_host_t), XHAL_PLUGIN_ABI_MAJOR,
                                          XHAL_PLUGIN_ABI_MINOR, &quiet_set_error,
                                          /*options=*/nullptr};
  char note[256] = {};
  if (api && api->init(&host, &ctx, note, sizeof note) == XHAL_OK &&
      api->device_open(ctx, 0, &pdev) == XHAL_OK &&
      api->buffer_allocate(pdev, 256, &pbuf) == XHAL_OK) {
    const uint32_t one = 0x3f800000u;
    api->buffer_fill(pdev, pbuf, 0, 256, &one, 4);
    const xhal_plugin_tensor_t px = plugin_row(pbuf, 0), py = plugin_row(pbuf, 128);
    rows.emplace_back("slot", measure(
                                  [&] {
                                    if (api->softmax_forward(pdev, &px, &py) != XHAL_OK)
                                      std::exit(1);
                                  },
                                  [&] {
                                    if (api->device_synchronize(pdev) != XHAL_OK) std::exit(1);
                                  }));
  } else {
    std::printf("(plugin slot not measured: could not reach %s directly)\n", path.c_str());
  }

  // cudaGetLastError: what check_launch adds to every launch.
  const auto t = Clock::now();
  constexpr int kErr = 1000000;
  for (int i = 0; i < kErr; ++i) (void)cudaGetLastError();
  const double get_last_error_us = us_since(t) / kErr;

  std::printf("== per-call time in us, [1,32] f32 softmax forward (host: batches of %d, median)\n",
              kBatch);
  std::printf("%-6s %10s %10s %10s\n", "", "host", "queued", "sync");
  for (const auto& [name, r] : rows)
    std::printf("%-6s %10.3f %10.3f %10.3f\n", name, r.host, r.queued, r.sync);
  auto find = [&](const char* n) -> const Row* {
    for (const auto& [name, r] : rows)
      if (std::strcmp(name, n) == 0) return &r;
    return nullptr;
  };
  const Row* rb = find("bare");
  const Row* ro = find("op");
  const Row* rs = find("slot");
  std::printf("op - bare (host): %.3f us   <- issue 5 goal: < 1 us\n", ro->host - rb->host);
  std::printf("op - bare (queued, as cusparse_compare): %.3f us\n", ro->queued - rb->queued);
  if (rs) {
    std::printf("core + C ABI (op - slot, host): %.3f us\n", ro->host - rs->host);
    std::printf("plugin above a bare launch (slot - bare, host): %.3f us\n", rs->host - rb->host);
  }
  std::printf("cudaGetLastError: %.4f us per call\n", get_last_error_us);

  if (argc > 1) {
    FILE* f = std::fopen(argv[1], "w");
    if (f) {
      std::fprintf(f, "{\n  \"unit\": \"us per call\",\n  \"batch\": %d,\n", kBatch);
      for (const auto& [name, r] : rows)
        std::fprintf(f, "  \"%s\": {\"host\": %.4f, \"queued\": %.4f, \"sync\": %.4f},\n", name,
                     r.host, r.queued, r.sync);
      std::fprintf(f, "  \"cudaGetLastError\": %.5f\n}\n", get_last_error_us);
      std::fclose(f);
    }
  }

  if (pbuf) api->buffer_free(pdev, pbuf);
  if (pdev) api->device_close(pdev);
  if (ctx) api->shutdown(ctx);
  XK(xhal_buffer_release(b));
  CK(cudaStreamDestroy(stream));
  XK(xhal_device_release(dev));
  return 0;
}
