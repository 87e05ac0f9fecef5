// The baseline: xhal_buffer_copy of n bytes (2n bytes moved), shown next to
// the ops so the copy_ratio counters can be read against it.
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

}  // namespace
}  // namespace xhal_bench
