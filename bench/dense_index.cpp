// Gather (index_select) and deterministic scatter-add (index_add) of f32
// rows of width 256: random indices, and a hub case with half of the indices
// on row 0 (the case a per-row serial sum makes slow).
#include <cstdint>
#include <vector>

#include "bench_common.h"

namespace xhal_bench {
namespace {

enum Pattern : int64_t { kRandom = 0, kHalfOnRowZero = 1 };

std::vector<int64_t> make_indices(int64_t count, int64_t num_rows, Pattern pattern) {
  std::vector<int64_t> idx(count);
  uint64_t state = 12345;
  for (int64_t i = 0; i < count; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    idx[i] = static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(num_rows));
    if (pattern == kHalfOnRowZero && (i % 2 == 0)) idx[i] = 0;
  }
  return idx;
}

struct IndexCase {
  int64_t rows, width;
  Pattern pattern;
  std::vector<int64_t> indices;
  xhal_index_plan_t plan = nullptr;
  IndexCase(benchmark::State& state)
      : rows(state.range(0)), width(state.range(1)), pattern(static_cast<Pattern>(state.range(2))) {
    indices = make_indices(rows, rows, pattern);
    check(xhal_index_plan_create(device(), indices.data(), XHAL_DTYPE_I64, rows, rows, &plan),
          "xhal_index_plan_create");
    state.SetLabel(pattern == kRandom ? "random" : "half on row 0");
  }
  ~IndexCase() { xhal_index_plan_release(plan); }
  int64_t touched_rows() const {
    std::vector<char> seen(rows, 0);
    int64_t n = 0;
    for (int64_t i : indices) n += seen[i] ? 0 : (seen[i] = 1);
    return n;
  }
};

void BM_IndexSelect(benchmark::State& state) {
  IndexCase c(state);
  const uint64_t row_bytes = c.width * sizeof(float);
  Buffer src(c.rows * row_bytes), out(c.rows * row_bytes);
  fill_random(src, c.rows * c.width, 2);
  const xhal_tensor_t s = tensor(src, {c.rows, c.width}), o = tensor(out, {c.rows, c.width});
  run_timed(state, 2 * c.rows * row_bytes,
            [&] { check(xhal_index_select(device(), c.plan, &s, &o), "xhal_index_select"); });
}

void BM_IndexAdd(benchmark::State& state) {
  IndexCase c(state);
  const uint64_t row_bytes = c.width * sizeof(float);
  Buffer src(c.rows * row_bytes), dst(c.rows * row_bytes);
  fill_random(src, c.rows * c.width, 3);
  fill_random(dst, c.rows * c.width, 4);
  const xhal_tensor_t s = tensor(src, {c.rows, c.width}), d = tensor(dst, {c.rows, c.width});
  // Reads every source row, reads and writes every touched destination row.
  const uint64_t moved = c.rows * row_bytes + 2 * c.touched_rows() * row_bytes;
  run_timed(state, moved,
            [&] { check(xhal_index_add(device(), c.plan, 0.5f, &s, &d), "xhal_index_add"); });
}

// index_add on bf16 rows (f32 sums, one rounding per touched element;
// docs/semantics.md 7.2); bytes as BM_IndexAdd at 2 bytes per element.
void BM_IndexAddBf16(benchmark::State& state) {
  IndexCase c(state);
  const uint64_t row_bytes = c.width * 2;
  Buffer src(c.rows * row_bytes), dst(c.rows * row_bytes);
  fill_random_bf16(src, c.rows * c.width, 3);
  fill_random_bf16(dst, c.rows * c.width, 4);
  const xhal_tensor_t s = tensor(src, {c.rows, c.width}, XHAL_DTYPE_BF16),
                      d = tensor(dst, {c.rows, c.width}, XHAL_DTYPE_BF16);
  const xhal_status_t st = xhal_index_add(device(), c.plan, 0.5f, &s, &d);
  if (st == XHAL_UNSUPPORTED) {
    state.SkipWithError(xhal_last_error());
    return;
  }
  check(st, "xhal_index_add");
  const uint64_t moved = c.rows * row_bytes + 2 * c.touched_rows() * row_bytes;
  run_timed(state, moved,
            [&] { check(xhal_index_add(device(), c.plan, 0.5f, &s, &d), "xhal_index_add"); });
}

// {rows (= number of indices), width, pattern}
void index_sizes(benchmark::internal::Benchmark* b) {
  for (int64_t pattern : {kRandom, kHalfOnRowZero}) {
    b->Args({100000, 256, pattern});   // finishes fast on small machines
    b->Args({1000000, 256, pattern});  // 10^6 x 256: 1 GiB per tensor
  }
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_IndexSelect)->Apply(index_sizes);
BENCHMARK(BM_IndexAdd)->Apply(index_sizes);
BENCHMARK(BM_IndexAddBf16)->Apply(index_sizes);

}  // namespace
}  // namespace xhal_bench
