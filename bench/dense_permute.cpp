// Permute: the 2-D transpose and the batched last-two-dims swap.
#include "bench_common.h"

namespace xhal_bench {
namespace {

void BM_Transpose2D(benchmark::State& state) {
  const int64_t r = state.range(0), c = state.range(1);
  Buffer src(r * c * 4), dst(r * c * 4);
  fill_random(src, r * c, 5);
  const xhal_tensor_t s = tensor(src, {r, c}), d = tensor(dst, {c, r});
  const uint32_t perm[] = {1, 0};
  run_timed(state, 2 * r * c * 4,
            [&] { check(xhal_permute(device(), &s, perm, &d), "xhal_permute"); });
}
BENCHMARK(BM_Transpose2D)->Args({8192, 8192})->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_PermuteLastTwo(benchmark::State& state) {
  const int64_t b = state.range(0), r = state.range(1), c = state.range(2);
  Buffer src(b * r * c * 4), dst(b * r * c * 4);
  fill_random(src, b * r * c, 6);
  const xhal_tensor_t s = tensor(src, {b, r, c}), d = tensor(dst, {b, c, r});
  const uint32_t perm[] = {0, 2, 1};
  run_timed(state, 2 * b * r * c * 4,
            [&] { check(xhal_permute(device(), &s, perm, &d), "xhal_permute"); });
}
BENCHMARK(BM_PermuteLastTwo)->Args({64, 512, 512})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace xhal_bench
