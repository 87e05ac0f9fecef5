// What an index plan costs as the table grows while the index list does not:
// creating (and uploading) a plan of 1000 random indices into 2^14 .. 2^40
// rows, and index_add of 1000 source rows into a 10^6 x 64 table. Both
// should depend on the number of indices, not on num_rows.
#include <cstdint>
#include <vector>

#include "bench_common.h"

namespace xhal_bench {
namespace {

constexpr int64_t kIndices = 1000;

std::vector<int64_t> spread_indices(int64_t count, uint64_t num_rows) {
  std::vector<int64_t> idx(count);
  uint64_t state = 777;
  for (int64_t i = 0; i < count; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    idx[i] = static_cast<int64_t>((state >> 11) % num_rows);
  }
  return idx;
}

// Arg: log2 of num_rows. A create that fails (out of memory on a build that
// sizes plans by num_rows) is reported as skipped, so the run goes on.
void BM_IndexPlanCreate(benchmark::State& state) {
  const uint64_t num_rows = uint64_t{1} << state.range(0);
  const std::vector<int64_t> idx = spread_indices(kIndices, num_rows);
  for (auto _ : state) {
    xhal_index_plan_t plan = nullptr;
    const xhal_status_t s =
        xhal_index_plan_create(device(), idx.data(), XHAL_DTYPE_I64, kIndices, num_rows, &plan);
    if (s != XHAL_OK) {
      state.SkipWithError(xhal_last_error());
      break;
    }
    check(xhal_index_plan_release(plan), "xhal_index_plan_release");
  }
  state.counters["indices"] = static_cast<double>(kIndices);
}
BENCHMARK(BM_IndexPlanCreate)
    ->Arg(14)
    ->Arg(24)
    ->Arg(32)
    ->Arg(40)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// 1000 sources into a {rows, 64} table (the plan is built outside the timing);
// the time should not grow with rows.
void BM_IndexAddFewRows(benchmark::State& state) {
  const int64_t rows = state.range(0), w = 64;
  const std::vector<int64_t> idx = spread_indices(kIndices, static_cast<uint64_t>(rows));
  xhal_index_plan_t plan = nullptr;
  check(xhal_index_plan_create(device(), idx.data(), XHAL_DTYPE_I64, kIndices, rows, &plan),
        "xhal_index_plan_create");
  {
    Buffer src(kIndices * w * 4), dst(rows * w * 4);
    fill_random(src, kIndices * w, 5);
    fill_random(dst, rows * w, 6);
    const xhal_tensor_t s = tensor(src, {kIndices, w}), d = tensor(dst, {rows, w});
    // Reads every source row, reads and writes each touched row (about
    // kIndices of them).
    run_timed(state, 3 * kIndices * w * 4,
              [&] { check(xhal_index_add(device(), plan, 0.5f, &s, &d), "xhal_index_add"); });
  }
  check(xhal_index_plan_release(plan), "xhal_index_plan_release");
}
BENCHMARK(BM_IndexAddFewRows)
    ->Arg(10000)
    ->Arg(1000000)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace xhal_bench
