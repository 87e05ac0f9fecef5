// The row ops on bf16 activations with float32 weights and statistics
// (docs/semantics.md 7.2), at the shapes of dense_rows.cpp: the training
// case of issue 13. Bytes moved count 2 bytes per activation element. A
// device without bf16 for the op skips the benchmark with the op's message.
#include <functional>

#include "bench_common.h"

namespace xhal_bench {
namespace {

struct Bf16Case {
  int64_t rows, n;
  explicit Bf16Case(benchmark::State& state) : rows(state.range(0)), n(state.range(1)) {}
  uint64_t matrix_bytes() const { return rows * n * 2; }
  xhal_tensor_t matrix(const Buffer& b) const { return tensor(b, {rows, n}, XHAL_DTYPE_BF16); }
};

// Runs op once; false (benchmark skipped) when the device lacks it.
bool try_once(benchmark::State& state, const std::function<xhal_status_t()>& op, const char* what) {
  const xhal_status_t st = op();
  if (st == XHAL_UNSUPPORTED) {
    state.SkipWithError(xhal_last_error());
    return false;
  }
  check(st, what);
  return true;
}

void BM_SoftmaxForwardBf16(benchmark::State& state) {
  Bf16Case c(state);
  Buffer x(c.matrix_bytes()), y(c.matrix_bytes());
  fill_random_bf16(x, c.rows * c.n, 7, 0.5f, 8.0f);
  const xhal_tensor_t xt = c.matrix(x), yt = c.matrix(y);
  auto op = [&] { return xhal_softmax_forward(device(), &xt, &yt); };
  if (!try_once(state, op, "xhal_softmax_forward")) return;
  run_timed(state, 2 * c.matrix_bytes(), [&] { check(op(), "xhal_softmax_forward"); });
}

void BM_SoftmaxBackwardBf16(benchmark::State& state) {
  Bf16Case c(state);
  Buffer y(c.matrix_bytes()), dy(c.matrix_bytes()), dx(c.matrix_bytes());
  fill_random_bf16(y, c.rows * c.n, 8, 1e-6f, 1e-3f);
  fill_random_bf16(dy, c.rows * c.n, 9);
  const xhal_tensor_t yt = c.matrix(y), dyt = c.matrix(dy), dxt = c.matrix(dx);
  auto op = [&] { return xhal_softmax_backward(device(), &yt, &dyt, &dxt); };
  if (!try_once(state, op, "xhal_softmax_backward")) return;
  run_timed(state, 3 * c.matrix_bytes(), [&] { check(op(), "xhal_softmax_backward"); });
}

void BM_RmsNormForwardBf16(benchmark::State& state) {
  Bf16Case c(state);
  Buffer x(c.matrix_bytes()), y(c.matrix_bytes()), gamma(c.n * 4), rstd(c.rows * 4);
  fill_random_bf16(x, c.rows * c.n, 10);
  fill_random(gamma, c.n, 11);
  const xhal_tensor_t xt = c.matrix(x), yt = c.matrix(y), gt = tensor(gamma, {c.n}),
                      rt = tensor(rstd, {c.rows});
  auto op = [&] { return xhal_rms_norm_forward(device(), &xt, &gt, 1e-5f, &yt, &rt); };
  if (!try_once(state, op, "xhal_rms_norm_forward")) return;
  run_timed(state, 2 * c.matrix_bytes(), [&] { check(op(), "xhal_rms_norm_forward"); });
}

void BM_RmsNormBackwardBf16(benchmark::State& state) {
  Bf16Case c(state);
  Buffer x(c.matrix_bytes()), y(c.matrix_bytes()), dy(c.matrix_bytes()), dx(c.matrix_bytes()),
      gamma(c.n * 4), rstd(c.rows * 4), dgamma(c.n * 4);
  fill_random_bf16(x, c.rows * c.n, 12);
  fill_random_bf16(dy, c.rows * c.n, 13);
  fill_random(gamma, c.n, 14);
  const xhal_tensor_t xt = c.matrix(x), yt = c.matrix(y), dyt = c.matrix(dy), dxt = c.matrix(dx),
                      gt = tensor(gamma, {c.n}), rt = tensor(rstd, {c.rows}),
                      dgt = tensor(dgamma, {c.n});
  if (!try_once(
          state, [&] { return xhal_rms_norm_forward(device(), &xt, &gt, 1e-5f, &yt, &rt); },
          "xhal_rms_norm_forward"))
    return;
  run_timed(state, 3 * c.matrix_bytes(), [&] {
    check(xhal_rms_norm_backward(device(), &xt, &gt, &rt, &dyt, &dxt, &dgt),
          "xhal_rms_norm_backward");
  });
}

void BM_LayerNormForwardBf16(benchmark::State& state) {
  Bf16Case c(state);
  Buffer x(c.matrix_bytes()), y(c.matrix_bytes()), gamma(c.n * 4), beta(c.n * 4), mean(c.rows * 4),
      rstd(c.rows * 4);
  fill_random_bf16(x, c.rows * c.n, 15);
  fill_random(gamma, c.n, 16);
  fill_random(beta, c.n, 17);
  const xhal_tensor_t xt = c.matrix(x), yt = c.matrix(y), gt = tensor(gamma, {c.n}),
                      bt = tensor(beta, {c.n}), mt = tensor(mean, {c.rows}),
                      rt = tensor(rstd, {c.rows});
  auto op = [&] { return xhal_layer_norm_forward(device(), &xt, &gt, &bt, 1e-5f, &yt, &mt, &rt); };
  if (!try_once(state, op, "xhal_layer_norm_forward")) return;
  run_timed(state, 2 * c.matrix_bytes(), [&] { check(op(), "xhal_layer_norm_forward"); });
}

void BM_LayerNormBackwardBf16(benchmark::State& state) {
  Bf16Case c(state);
  Buffer x(c.matrix_bytes()), y(c.matrix_bytes()), dy(c.matrix_bytes()), dx(c.matrix_bytes()),
      gamma(c.n * 4), beta(c.n * 4), mean(c.rows * 4), rstd(c.rows * 4), dgamma(c.n * 4),
      dbeta(c.n * 4);
  fill_random_bf16(x, c.rows * c.n, 18);
  fill_random_bf16(dy, c.rows * c.n, 19);
  fill_random(gamma, c.n, 20);
  fill_random(beta, c.n, 21);
  const xhal_tensor_t xt = c.matrix(x), yt = c.matrix(y), dyt = c.matrix(dy), dxt = c.matrix(dx),
                      gt = tensor(gamma, {c.n}), bt = tensor(beta, {c.n}),
                      mt = tensor(mean, {c.rows}), rt = tensor(rstd, {c.rows}),
                      dgt = tensor(dgamma, {c.n}), dbt = tensor(dbeta, {c.n});
  if (!try_once(
          state,
          [&] { return xhal_layer_norm_forward(device(), &xt, &gt, &bt, 1e-5f, &yt, &mt, &rt); },
          "xhal_layer_norm_forward"))
    return;
  run_timed(state, 3 * c.matrix_bytes(), [&] {
    check(xhal_layer_norm_backward(device(), &xt, &gt, &mt, &rt, &dyt, &dxt, &dgt, &dbt),
          "xhal_layer_norm_backward");
  });
}

void row_sizes(benchmark::internal::Benchmark* b) {
  b->Args({16384, 4096})->Args({64, 262144})->UseRealTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_SoftmaxForwardBf16)->Apply(row_sizes);
BENCHMARK(BM_SoftmaxBackwardBf16)->Apply(row_sizes);
BENCHMARK(BM_RmsNormForwardBf16)->Apply(row_sizes);
BENCHMARK(BM_RmsNormBackwardBf16)->Apply(row_sizes);
BENCHMARK(BM_LayerNormForwardBf16)->Apply(row_sizes);
BENCHMARK(BM_LayerNormBackwardBf16)->Apply(row_sizes);

}  // namespace
}  // namespace xhal_bench
