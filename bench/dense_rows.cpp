// Row-wise ops over the last dim, forward and backward, at a wide-batch
// shape (16384 x 4096) and a long-row shape (64 x 262144), in four dtypes
// (docs/semantics.md 7): f32 (BM_SoftmaxForward, ...), bf16 activations
// with f32 weights and statistics, the training case of issue 13
// (BM_SoftmaxForwardBf16, ...), the same with f16 (BM_SoftmaxForwardF16,
// ...), and f64 throughout (BM_SoftmaxForwardF64, ...). Bytes moved count
// the activation's element size. A device without the dtype for the op
// skips the benchmark with the op's message.
#include <functional>

#include "bench_common.h"

namespace xhal_bench {
namespace {

// D: the activations' dtype. Weights are f32 for bf16/f16 activations, else D;
// saved statistics f64 for f64, else f32.
template <xhal_dtype_t D>
struct RowCase {
  static constexpr bool kNarrow = D == XHAL_DTYPE_BF16 || D == XHAL_DTYPE_F16;
  static constexpr uint64_t kSize = D == XHAL_DTYPE_F64 ? 8 : kNarrow ? 2 : 4;
  static constexpr xhal_dtype_t kWeights = kNarrow ? XHAL_DTYPE_F32 : D;
  static constexpr xhal_dtype_t kStats = D == XHAL_DTYPE_F64 ? XHAL_DTYPE_F64 : XHAL_DTYPE_F32;
  static constexpr uint64_t kWeightSize = kWeights == XHAL_DTYPE_F64 ? 8 : 4;
  int64_t rows, n;
  explicit RowCase(benchmark::State& state) : rows(state.range(0)), n(state.range(1)) {}
  uint64_t matrix_bytes() const { return rows * n * kSize; }
  uint64_t weight_bytes() const { return n * kWeightSize; }
  uint64_t stat_bytes() const { return rows * (kStats == XHAL_DTYPE_F64 ? 8 : 4); }
  xhal_tensor_t matrix(const Buffer& b) const { return tensor(b, {rows, n}, D); }
  xhal_tensor_t weights(const Buffer& b) const { return tensor(b, {n}, kWeights); }
  xhal_tensor_t stats(const Buffer& b) const { return tensor(b, {rows}, kStats); }
  void fill_matrix(Buffer& b, uint64_t seed, float lo = 0.5f, float hi = 1.5f) const {
    fill_random_as(b, D, rows * n, seed, lo, hi);
  }
  void fill_weights(Buffer& b, uint64_t seed) const { fill_random_as(b, kWeights, n, seed); }
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

template <xhal_dtype_t D>
void softmax_forward(benchmark::State& state) {
  RowCase<D> c(state);
  Buffer x(c.matrix_bytes()), y(c.matrix_bytes());
  c.fill_matrix(x, 7, 0.5f, 8.0f);
  const xhal_tensor_t xt = c.matrix(x), yt = c.matrix(y);
  auto op = [&] { return xhal_softmax_forward(device(), &xt, &yt); };
  if (!try_once(state, op, "xhal_softmax_forward")) return;
  run_timed(state, 2 * c.matrix_bytes(), [&] { check(op(), "xhal_softmax_forward"); });
}

template <xhal_dtype_t D>
void softmax_backward(benchmark::State& state) {
  RowCase<D> c(state);
  Buffer y(c.matrix_bytes()), dy(c.matrix_bytes()), dx(c.matrix_bytes());
  c.fill_matrix(y, 8, 1e-6f, 1e-3f);
  c.fill_matrix(dy, 9);
  const xhal_tensor_t yt = c.matrix(y), dyt = c.matrix(dy), dxt = c.matrix(dx);
  auto op = [&] { return xhal_softmax_backward(device(), &yt, &dyt, &dxt); };
  if (!try_once(state, op, "xhal_softmax_backward")) return;
  run_timed(state, 3 * c.matrix_bytes(), [&] { check(op(), "xhal_softmax_backward"); });
}

template <xhal_dtype_t D>
void rms_norm_forward(benchmark::State& state) {
  RowCase<D> c(state);
  Buffer x(c.matrix_bytes()), y(c.matrix_bytes()), gamma(c.weight_bytes()), rstd(c.stat_bytes());
  c.fill_matrix(x, 10);
  c.fill_weights(gamma, 11);
  const xhal_tensor_t xt = c.matrix(x), yt = c.matrix(y), gt = c.weights(gamma), rt = c.stats(rstd);
  auto op = [&] { return xhal_rms_norm_forward(device(), &xt, &gt, 1e-5f, &yt, &rt); };
  if (!try_once(state, op, "xhal_rms_norm_forward")) return;
  run_timed(state, 2 * c.matrix_bytes(), [&] { check(op(), "xhal_rms_norm_forward"); });
}

template <xhal_dtype_t D>
void rms_norm_backward(benchmark::State& state) {
  RowCase<D> c(state);
  Buffer x(c.matrix_bytes()), y(c.matrix_bytes()), dy(c.matrix_bytes()), dx(c.matrix_bytes()),
      gamma(c.weight_bytes()), rstd(c.stat_bytes()), dgamma(c.weight_bytes());
  c.fill_matrix(x, 12);
  c.fill_matrix(dy, 13);
  c.fill_weights(gamma, 14);
  const xhal_tensor_t xt = c.matrix(x), yt = c.matrix(y), dyt = c.matrix(dy), dxt = c.matrix(dx),
                      gt = c.weights(gamma), rt = c.stats(rstd), dgt = c.weights(dgamma);
  if (!try_once(
          state, [&] { return xhal_rms_norm_forward(device(), &xt, &gt, 1e-5f, &yt, &rt); },
          "xhal_rms_norm_forward"))
    return;
  run_timed(state, 3 * c.matrix_bytes(), [&] {
    check(xhal_rms_norm_backward(device(), &xt, &gt, &rt, &dyt, &dxt, &dgt),
          "xhal_rms_norm_backward");
  });
}

template <xhal_dtype_t D>
void layer_norm_forward(benchmark::State& state) {
  RowCase<D> c(state);
  Buffer x(c.matrix_bytes()), y(c.matrix_bytes()), gamma(c.weight_bytes()), beta(c.weight_bytes()),
      mean(c.stat_bytes()), rstd(c.stat_bytes());
  c.fill_matrix(x, 15);
  c.fill_weights(gamma, 16);
  c.fill_weights(beta, 17);
  const xhal_tensor_t xt = c.matrix(x), yt = c.matrix(y), gt = c.weights(gamma),
                      bt = c.weights(beta), mt = c.stats(mean), rt = c.stats(rstd);
  auto op = [&] { return xhal_layer_norm_forward(device(), &xt, &gt, &bt, 1e-5f, &yt, &mt, &rt); };
  if (!try_once(state, op, "xhal_layer_norm_forward")) return;
  run_timed(state, 2 * c.matrix_bytes(), [&] { check(op(), "xhal_layer_norm_forward"); });
}

template <xhal_dtype_t D>
void layer_norm_backward(benchmark::State& state) {
  RowCase<D> c(state);
  Buffer x(c.matrix_bytes()), y(c.matrix_bytes()), dy(c.matrix_bytes()), dx(c.matrix_bytes()),
      gamma(c.weight_bytes()), beta(c.weight_bytes()), mean(c.stat_bytes()), rstd(c.stat_bytes()),
      dgamma(c.weight_bytes()), dbeta(c.weight_bytes());
  c.fill_matrix(x, 18);
  c.fill_matrix(dy, 19);
  c.fill_weights(gamma, 20);
  c.fill_weights(beta, 21);
  const xhal_tensor_t xt = c.matrix(x), yt = c.matrix(y), dyt = c.matrix(dy), dxt = c.matrix(dx),
                      gt = c.weights(gamma), bt = c.weights(beta), mt = c.stats(mean),
                      rt = c.stats(rstd), dgt = c.weights(dgamma), dbt = c.weights(dbeta);
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

// The registered names: BM_<Op> (f32), BM_<Op>Bf16, BM_<Op>F16, BM_<Op>F64.
#define XHAL_BENCH_ROWS(Name, fn)                                       \
  void BM_##Name(benchmark::State& s) { fn<XHAL_DTYPE_F32>(s); }        \
  void BM_##Name##Bf16(benchmark::State& s) { fn<XHAL_DTYPE_BF16>(s); } \
  void BM_##Name##F16(benchmark::State& s) { fn<XHAL_DTYPE_F16>(s); }   \
  void BM_##Name##F64(benchmark::State& s) { fn<XHAL_DTYPE_F64>(s); }   \
  BENCHMARK(BM_##Name)->Apply(row_sizes);                               \
  BENCHMARK(BM_##Name##Bf16)->Apply(row_sizes);                         \
  BENCHMARK(BM_##Name##F16)->Apply(row_sizes);                          \
  BENCHMARK(BM_##Name##F64)->Apply(row_sizes)

XHAL_BENCH_ROWS(SoftmaxForward, softmax_forward);
XHAL_BENCH_ROWS(SoftmaxBackward, softmax_backward);
XHAL_BENCH_ROWS(RmsNormForward, rms_norm_forward);
XHAL_BENCH_ROWS(RmsNormBackward, rms_norm_backward);
XHAL_BENCH_ROWS(LayerNormForward, layer_norm_forward);
XHAL_BENCH_ROWS(LayerNormBackward, layer_norm_backward);

#undef XHAL_BENCH_ROWS

}  // namespace
}  // namespace xhal_bench
