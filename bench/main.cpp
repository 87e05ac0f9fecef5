// xhal-bench entry: opens the device under test through the public API
// (XHAL_DEVICE selects it; without it the default, best-first device), then
// runs Google Benchmark as usual (--benchmark_filter, --benchmark_min_time).
#include <cstdio>
#include <cstdlib>

#include "bench_common.h"

namespace xhal_bench {
namespace {
xhal_device_t g_device = nullptr;
}
xhal_device_t device() { return g_device; }
}  // namespace xhal_bench

int main(int argc, char** argv) {
  using xhal_bench::check;
  const char* selector = std::getenv("XHAL_DEVICE");
  check(xhal_device_open(selector, &xhal_bench::g_device), "xhal_device_open");
  xhal_device_info_t info{};
  info.struct_size = sizeof info;
  check(xhal_device_query(xhal_bench::g_device, &info), "xhal_device_query");
  benchmark::AddCustomContext("xhal_device", info.name != nullptr ? info.name : "?");
  benchmark::AddCustomContext("xhal_backend", info.backend != nullptr ? info.backend : "?");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  // Every buffer, plan and matrix of the device is gone before its release
  // (else XHAL_BUSY).
  xhal_bench::release_copy_buffers();
  check(xhal_device_release(xhal_bench::g_device), "xhal_device_release");
  return 0;
}
