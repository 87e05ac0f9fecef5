// Row-wise ops over the last dim, forward and backward, at a wide-batch
// shape (16384 x 4096) and a long-row shape (64 x 262144).
#include "bench_common.h"

namespace xhal_bench {
namespace {

struct RowCase {
  int64_t rows, n;
  explicit RowCase(benchmark::State& state) : rows(state.range(0)), n(state.range(1)) {}
  uint64_t matrix_bytes() const { return rows * n * sizeof(float); }
};

void BM_SoftmaxForward(benchmark::State& state) {
  RowCase c(state);
  Buffer x(c.matrix_bytes()), y(c.matrix_bytes());
  fill_random(x, c.rows * c.n, 7, 0.5f, 8.0f);
  const xhal_tensor_t xt = tensor(x, {c.rows, c.n}), yt = tensor(y, {c.rows, c.n});
  run_timed(state, 2 * c.matrix_bytes(),
            [&] { check(xhal_softmax_forward(device(), &xt, &yt), "xhal_softmax_forward"); });
}

void BM_SoftmaxBackward(benchmark::State& state) {
  RowCase c(state);
  Buffer y(c.matrix_bytes()), dy(c.matrix_bytes()), dx(c.matrix_bytes());
  fill_random(y, c.rows * c.n, 8, 1e-6f, 1e-3f);
  fill_random(dy, c.rows * c.n, 9);
  const xhal_tensor_t yt = tensor(y, {c.rows, c.n}), dyt = tensor(dy, {c.rows, c.n}),
                      dxt = tensor(dx, {c.rows, c.n});
  run_timed(state, 3 * c.matrix_bytes(), [&] {
    check(xhal_softmax_backward(device(), &yt, &dyt, &dxt), "xhal_softmax_backward");
  });
}

void BM_RmsNormForward(benchmark::State& state) {
  RowCase c(state);
  Buffer x(c.matrix_bytes()), y(c.matrix_bytes()), gamma(c.n * 4), rstd(c.rows * 4);
  fill_random(x, c.rows * c.n, 10);
  fill_random(gamma, c.n, 11);
  const xhal_tensor_t xt = tensor(x, {c.rows, c.n}), yt = tensor(y, {c.rows, c.n}),
                      gt = tensor(gamma, {c.n}), rt = tensor(rstd, {c.rows});
  run_timed(state, 2 * c.matrix_bytes(), [&] {
    check(xhal_rms_norm_forward(device(), &xt, &gt, 1e-5f, &yt, &rt), "xhal_rms_norm_forward");
  });
}

void BM_RmsNormBackward(benchmark::State& state) {
  RowCase c(state);
  Buffer x(c.matrix_bytes()), dy(c.matrix_bytes()), dx(c.matrix_bytes()), gamma(c.n * 4),
      rstd(c.rows * 4), dgamma(c.n * 4), y(c.matrix_bytes());
  fill_random(x, c.rows * c.n, 12);
  fill_random(dy, c.rows * c.n, 13);
  fill_random(gamma, c.n, 14);
  const xhal_tensor_t xt = tensor(x, {c.rows, c.n}), dyt = tensor(dy, {c.rows, c.n}),
                      dxt = tensor(dx, {c.rows, c.n}), gt = tensor(gamma, {c.n}),
                      rt = tensor(rstd, {c.rows}), dgt = tensor(dgamma, {c.n}),
                      yt = tensor(y, {c.rows, c.n});
  check(xhal_rms_norm_forward(device(), &xt, &gt, 1e-5f, &yt, &rt), "xhal_rms_norm_forward");
  run_timed(state, 3 * c.matrix_bytes(), [&] {
    check(xhal_rms_norm_backward(device(), &xt, &gt, &rt, &dyt, &dxt, &dgt),
          "xhal_rms_norm_backward");
  });
}

void BM_LayerNormForward(benchmark::State& state) {
  RowCase c(state);
  Buffer x(c.matrix_bytes()), y(c.matrix_bytes()), gamma(c.n * 4), beta(c.n * 4), mean(c.rows * 4),
      rstd(c.rows * 4);
  fill_random(x, c.rows * c.n, 15);
  fill_random(gamma, c.n, 16);
  fill_random(beta, c.n, 17);
  const xhal_tensor_t xt = tensor(x, {c.rows, c.n}), yt = tensor(y, {c.rows, c.n}),
                      gt = tensor(gamma, {c.n}), bt = tensor(beta, {c.n}),
                      mt = tensor(mean, {c.rows}), rt = tensor(rstd, {c.rows});
  run_timed(state, 2 * c.matrix_bytes(), [&] {
    check(xhal_layer_norm_forward(device(), &xt, &gt, &bt, 1e-5f, &yt, &mt, &rt),
          "xhal_layer_norm_forward");
  });
}

void BM_LayerNormBackward(benchmark::State& state) {
  RowCase c(state);
  Buffer x(c.matrix_bytes()), y(c.matrix_bytes()), dy(c.matrix_bytes()), dx(c.matrix_bytes()),
      gamma(c.n * 4), beta(c.n * 4), mean(c.rows * 4), rstd(c.rows * 4), dgamma(c.n * 4),
      dbeta(c.n * 4);
  fill_random(x, c.rows * c.n, 18);
  fill_random(dy, c.rows * c.n, 19);
  fill_random(gamma, c.n, 20);
  fill_random(beta, c.n, 21);
  const xhal_tensor_t xt = tensor(x, {c.rows, c.n}), yt = tensor(y, {c.rows, c.n}),
                      dyt = tensor(dy, {c.rows, c.n}), dxt = tensor(dx, {c.rows, c.n}),
                      gt = tensor(gamma, {c.n}), bt = tensor(beta, {c.n}),
                      mt = tensor(mean, {c.rows}), rt = tensor(rstd, {c.rows}),
                      dgt = tensor(dgamma, {c.n}), dbt = tensor(dbeta, {c.n});
  check(xhal_layer_norm_forward(device(), &xt, &gt, &bt, 1e-5f, &yt, &mt, &rt),
        "xhal_layer_norm_forward");
  run_timed(state, 3 * c.matrix_bytes(), [&] {
    check(xhal_layer_norm_backward(device(), &xt, &gt, &mt, &rt, &dyt, &dxt, &dgt, &dbt),
          "xhal_layer_norm_backward");
  });
}

void row_sizes(benchmark::internal::Benchmark* b) {
  b->Args({16384, 4096})->Args({64, 262144})->UseRealTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_SoftmaxForward)->Apply(row_sizes);
BENCHMARK(BM_SoftmaxBackward)->Apply(row_sizes);
BENCHMARK(BM_RmsNormForward)->Apply(row_sizes);
BENCHMARK(BM_RmsNormBackward)->Apply(row_sizes);
BENCHMARK(BM_LayerNormForward)->Apply(row_sizes);
BENCHMARK(BM_LayerNormBackward)->Apply(row_sizes);

}  // namespace
}  // namespace xhal_bench
