// The baseline: xhal_buffer_copy of n bytes (2n bytes moved), shown next to
// the ops so the copy_ratio counters can be read against it.
#include <algorithm>
#include <vector>

#include "bench_common.h"

namespace xhal_bench {
namespace {

void BM_Copy(benchmark::State& state) {
  const uint64_t bytes = static_cast<uint64_t>(state.range(0));
  Buffer src(bytes), dst(bytes);
  fill_random(src, bytes / sizeof(float), 1);
  run_timed(state, 2 * bytes, [&] {
    check(xhal_buffer_copy(src.get(), 0, dst.get(), 0, bytes), "xhal_buffer_copy");
  });
}
BENCHMARK(BM_Copy)->Arg(64 << 20)->Arg(256 << 20)->Arg(1 << 30)->UseRealTime()->Unit(
    benchmark::kMillisecond);

// The same copy on sources made four ways, to tell whether a backend's copy
// time depends on how its source was written or what it holds: 0 random
// floats in [0.5, 1.5) written from the host (BM_Copy's), 1 zeros from
// xhal_buffer_fill, 2 random 32-bit words written from the host, 3 the
// float 1.0 from xhal_buffer_fill. The destination is filled with zeros
// first.
void BM_CopySource(benchmark::State& state) {
  const uint64_t bytes = static_cast<uint64_t>(state.range(0));
  const int64_t kind = state.range(1);
  Buffer src(bytes), dst(bytes);
  const uint32_t zero = 0, one = 0x3f800000u;
  if (kind == 0) fill_random(src, bytes / sizeof(float), 1);
  if (kind == 1 || kind == 3)
    check(xhal_buffer_fill(src.get(), 0, bytes, kind == 1 ? &zero : &one, 4), "xhal_buffer_fill");
  if (kind == 2) {
    constexpr uint64_t kSlice = 1ull << 22;  // words per upload
    std::vector<uint32_t> host(kSlice);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (uint64_t start = 0; start < bytes / 4; start += kSlice) {
      const uint64_t n = std::min(kSlice, bytes / 4 - start);
      for (uint64_t i = 0; i < n; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        host[i] = static_cast<uint32_t>(x);
      }
      check(xhal_buffer_write(src.get(), start * 4, host.data(), n * 4), "xhal_buffer_write");
    }
  }
  check(xhal_buffer_fill(dst.get(), 0, bytes, &zero, 4), "xhal_buffer_fill");
  run_timed(state, 2 * bytes, [&] {
    check(xhal_buffer_copy(src.get(), 0, dst.get(), 0, bytes), "xhal_buffer_copy");
  });
}
BENCHMARK(BM_CopySource)
    ->ArgsProduct({{1 << 30}, {0, 1, 2, 3}})
    ->ArgNames({"bytes", "source"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace xhal_bench
