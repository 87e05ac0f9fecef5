// Cost of the core's validation and dispatch per op call, measured against a
// backend whose slots do nothing (libxhal-silent.so). Not a test: run
//   build/bin/xhal-ops-frontend-bench
// The baseline is xhal_device_synchronize (handle check + one slot call).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "xhal/xhal.h"

namespace {

struct Env {
  xhal_device_t dev = nullptr;
  std::vector<xhal_buffer_t> bufs;
  xhal_tensor_t t(std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    xhal_buffer_t b = nullptr;
    if (xhal_buffer_allocate(dev, n * 4, &b) != XHAL_OK) std::abort();
    bufs.push_back(b);
    xhal_tensor_t out{};
    xhal_tensor_init(b, 0, XHAL_DTYPE_F32, static_cast<uint32_t>(shape.size()), shape.data(), &out);
    return out;
  }
};

Env& env() {
  static Env e = [] {
    Env e;
    const std::string path = std::string(XHAL_RECORDER_DIR) + "/libxhal-silent.so";
    xhal_runtime_options_t o{};
    o.struct_size = sizeof o;
    o.device_selector = "";
    o.plugin_path = path.c_str();
    o.plugin_path_only = 1;
    if (xhal_runtime_init(&o) != XHAL_OK || xhal_device_open_index(0, &e.dev) != XHAL_OK)
      std::abort();
    return e;
  }();
  return e;
}

void check(xhal_status_t s, benchmark::State& state) {
  if (s != XHAL_OK) state.SkipWithError(xhal_last_error());
}

void BM_Synchronize(benchmark::State& state) {
  Env& e = env();
  for (auto _ : state) check(xhal_device_synchronize(e.dev), state);
}
BENCHMARK(BM_Synchronize);

void BM_IndexSelect(benchmark::State& state) {
  Env& e = env();
  const int64_t idx[] = {1, 0, 1};
  xhal_index_plan_t p = nullptr;
  check(xhal_index_plan_create(e.dev, idx, XHAL_DTYPE_I64, 3, 2, &p), state);
  xhal_tensor_t src = e.t({2, 8}), out = e.t({3, 8});
  for (auto _ : state) check(xhal_index_select(e.dev, p, &src, &out), state);
  xhal_index_plan_release(p);
}
BENCHMARK(BM_IndexSelect);

// The op the H200 per-call figure uses (bench/gpu/cusparse_compare.cu
// call_overhead): one row of 32, y after x in the same buffer.
void BM_SoftmaxForward1x32(benchmark::State& state) {
  Env& e = env();
  xhal_tensor_t x = e.t({2, 32}), y = x;
  x.shape[0] = 1;
  y.shape[0] = 1;
  y.offset = 128;
  for (auto _ : state) check(xhal_softmax_forward(e.dev, &x, &y), state);
}
BENCHMARK(BM_SoftmaxForward1x32);

void BM_RmsNormForward1x32(benchmark::State& state) {
  Env& e = env();
  xhal_tensor_t x = e.t({1, 32}), g = e.t({32}), y = e.t({1, 32}), r = e.t({1});
  for (auto _ : state) check(xhal_rms_norm_forward(e.dev, &x, &g, 1e-5f, &y, &r), state);
}
BENCHMARK(BM_RmsNormForward1x32);

void BM_PermuteRank4(benchmark::State& state) {
  Env& e = env();
  xhal_tensor_t src = e.t({2, 1, 2, 2}), dst = e.t({2, 2, 1, 2});
  const uint32_t perm[] = {3, 2, 1, 0};
  dst.shape[0] = 2, dst.shape[1] = 2, dst.shape[2] = 1, dst.shape[3] = 2;
  for (auto _ : state) check(xhal_permute(e.dev, &src, perm, &dst), state);
}
BENCHMARK(BM_PermuteRank4);

void BM_LayerNormBackward(benchmark::State& state) {
  Env& e = env();
  xhal_tensor_t x = e.t({4, 8}), g = e.t({8}), m = e.t({4}), r = e.t({4}), dy = e.t({4, 8}),
                dx = e.t({4, 8}), dg = e.t({8}), db = e.t({8});
  for (auto _ : state)
    check(xhal_layer_norm_backward(e.dev, &x, &g, &m, &r, &dy, &dx, &dg, &db), state);
}
BENCHMARK(BM_LayerNormBackward);

void BM_CsrSolve(benchmark::State& state) {
  Env& e = env();
  const int64_t rp[] = {0, 1, 3, 5, 7}, ci[] = {0, 0, 1, 0, 2, 2, 3};
  const float v[] = {2, 1, 3, 1, 4, 1, 5};
  xhal_csr_desc_t d{};
  d.struct_size = sizeof d;
  d.rows = d.cols = 4;
  d.nnz = 7;
  d.index_dtype = XHAL_DTYPE_I64;
  d.row_ptr = rp;
  d.col_idx = ci;
  d.values = v;
  xhal_csr_t a = nullptr;
  check(xhal_csr_create(e.dev, &d, &a), state);
  xhal_tensor_t b = e.t({4}), x = e.t({4});
  for (auto _ : state)
    check(xhal_csr_solve(e.dev, a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED,
                         &b, &x),
          state);
  xhal_csr_release(a);
}
BENCHMARK(BM_CsrSolve);

}  // namespace

BENCHMARK_MAIN();
