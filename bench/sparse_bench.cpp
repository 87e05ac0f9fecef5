// Sparse CSR benchmarks: SpMV (A and A^T), the lower triangular solve (A
// and A^T) and its backward on two matrices of 10^6 rows, through the public API, with
// Eigen's sparse routines on the same matrices in the same binary.
//   river:  I - W of a generated river network, one off-diagonal per row
//           pointing downstream (a lower number), ~4000 levels deep;
//   random: lower triangular, ~10 entries per row, power-law hub rows and
//           columns skewed to low indices (hub columns of A^T), ~10^7 entries.
// Bytes moved are the same minimal model for xhal and Eigen: values and
// int32 column indices once, row pointers once, each dense vector once.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench_common.h"
#include "bench_matrices.h"

#ifdef XHAL_BENCH_HAVE_EIGEN
#include <Eigen/SparseCore>
#endif

namespace xhal_bench {
namespace {

// Host matrices are generated once per process (no device objects here:
// they must be gone before main releases the device).
const HostCsr& host_matrix(int64_t which) {
  static const HostCsr river = make_river();
  if (which == 0) return river;
  static const HostCsr random = make_random();
  return random;
}

// ---- bytes models (int32 indices, f32 values) ----
uint64_t spmv_bytes(const HostCsr& a) { return 8 * a.nnz() + 4 * (a.n + 1) + 4 * a.n + 4 * a.n; }
uint64_t solve_bytes(const HostCsr& a) { return 8 * a.nnz() + 4 * (a.n + 1) + 4 * a.n + 4 * a.n; }
// gb = solve(A^T, dx), then ga over the pattern (read indices, x and gb; write ga).
uint64_t backward_bytes(const HostCsr& a) {
  return solve_bytes(a) + 4 * a.nnz() + 4 * (a.n + 1) + 4 * a.nnz() + 8 * a.n;
}

// ---- xhal ----
struct XhalMatrix {
  xhal_csr_t csr = nullptr;
  // f64: the same values widened, an f64 matrix (docs/semantics.md 7.3);
  // f16/bf16: random values in [0.5, 1.5] written to a device buffer first
  // (7.2: such a matrix takes spmv/spmm only).
  explicit XhalMatrix(const HostCsr& a, xhal_dtype_t dtype = XHAL_DTYPE_F32) {
    const bool f64 = dtype == XHAL_DTYPE_F64, narrow = xhal_dtype_size(dtype) == 2;
    const std::vector<double> wide =
        f64 ? std::vector<double>(a.values.begin(), a.values.end()) : std::vector<double>();
    std::optional<Buffer> narrow_values;
    xhal_csr_desc_t d{};
    d.struct_size = sizeof d;
    d.rows = a.n;
    d.cols = a.n;
    d.nnz = a.nnz();
    d.index_dtype = XHAL_DTYPE_I32;
    d.row_ptr = a.row_ptr.data();
    d.col_idx = a.col_idx.data();
    d.values = dtype == XHAL_DTYPE_F32 ? a.values.data() : nullptr;
    d.values_dtype = dtype;
    d.values_data = f64 ? wide.data() : nullptr;
    if (narrow) {
      narrow_values.emplace(2 * a.nnz());
      fill_random_as(*narrow_values, dtype, a.nnz(), 3);
      d.values_buffer = narrow_values->get();
    }
    check(xhal_csr_create(device(), &d, &csr), "xhal_csr_create");
  }
  ~XhalMatrix() { xhal_csr_release(csr); }
};

// Values and vectors of `kDtype` (f32, f64, bf16, f16); the bytes model
// counts their width, indices stay 4 bytes.
template <xhal_dtype_t kDtype>
void spmv_bench(benchmark::State& state) {
  const HostCsr& a = host_matrix(state.range(0));
  const auto trans = static_cast<xhal_transpose_t>(state.range(1));
  XhalMatrix m(a, kDtype);
  const uint64_t w = xhal_dtype_size(kDtype);
  Buffer xb(w * a.n), yb(w * a.n);
  fill_random_as(xb, kDtype, a.n, 1);
  const xhal_tensor_t x = tensor(xb, {a.n}, kDtype), y = tensor(yb, {a.n}, kDtype);
  state.SetLabel(a.label);
  const uint64_t bytes = (4 + w) * a.nnz() + 4 * (a.n + 1) + 2 * w * a.n;
  run_timed(state, bytes,
            [&] { check(xhal_spmv(device(), m.csr, trans, 1.0f, &x, 0.0f, &y), "xhal_spmv"); });
}
void BM_SparseSpmv(benchmark::State& state) { spmv_bench<XHAL_DTYPE_F32>(state); }
void BM_SparseSpmvF64(benchmark::State& state) { spmv_bench<XHAL_DTYPE_F64>(state); }
void BM_SparseSpmvBf16(benchmark::State& state) { spmv_bench<XHAL_DTYPE_BF16>(state); }

// Y = A X with X [n, k] row-major (k = 8, 64), f32: the bytes model counts
// the matrix once and X and Y once each.
void BM_SparseSpmm(benchmark::State& state) {
  const HostCsr& a = host_matrix(state.range(0));
  const auto trans = static_cast<xhal_transpose_t>(state.range(1));
  const int64_t k = state.range(2);
  XhalMatrix m(a);
  Buffer xb(4 * a.n * k), yb(4 * a.n * k);
  fill_random(xb, a.n * k, 1);
  const xhal_tensor_t x = tensor(xb, {a.n, k}), y = tensor(yb, {a.n, k});
  state.SetLabel(a.label);
  const uint64_t bytes = 8 * a.nnz() + 4 * (a.n + 1) + 8 * a.n * k;
  run_timed(state, bytes,
            [&] { check(xhal_spmm(device(), m.csr, trans, 1.0f, &x, 0.0f, &y), "xhal_spmm"); });
}

template <bool kF64>
void solve_bench(benchmark::State& state) {
  const HostCsr& a = host_matrix(state.range(0));
  const auto trans = static_cast<xhal_transpose_t>(state.range(1));
  XhalMatrix m(a, kF64 ? XHAL_DTYPE_F64 : XHAL_DTYPE_F32);
  const uint64_t w = kF64 ? 8 : 4;
  const xhal_dtype_t dt = kF64 ? XHAL_DTYPE_F64 : XHAL_DTYPE_F32;
  Buffer bb(w * a.n), xb(w * a.n);
  fill_random_as(bb, dt, a.n, 2);
  const xhal_tensor_t b = tensor(bb, {a.n}, dt), x = tensor(xb, {a.n}, dt);
  state.SetLabel(a.label);
  const uint64_t bytes = kF64 ? solve_bytes(a) + 4 * a.nnz() + 8 * a.n : solve_bytes(a);
  run_timed(state, bytes, [&] {
    check(xhal_csr_solve(device(), m.csr, trans, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, &b, &x),
          "xhal_csr_solve");
  });
}
void BM_SparseSolve(benchmark::State& state) { solve_bench<false>(state); }
void BM_SparseSolveF64(benchmark::State& state) { solve_bench<true>(state); }
void BM_SparseSolveBackward(benchmark::State& state) {
  const HostCsr& a = host_matrix(state.range(0));
  XhalMatrix m(a);
  Buffer xb(4 * a.n), dxb(4 * a.n), gbb(4 * a.n), gab(4 * a.nnz());
  fill_random(xb, a.n, 3);
  fill_random(dxb, a.n, 4);
  const xhal_tensor_t x = tensor(xb, {a.n}), dx = tensor(dxb, {a.n}), gb = tensor(gbb, {a.n}),
                      ga = tensor(gab, {a.nnz()});
  state.SetLabel(a.label);
  run_timed(state, backward_bytes(a), [&] {
    check(xhal_csr_solve_backward(device(), m.csr, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                  XHAL_DIAGONAL_STORED, &x, &dx, &gb, &ga),
          "xhal_csr_solve_backward");
  });
}

// xhal_csr_create and xhal_csr_release of the whole matrix from host arrays
// (validation, transposition, the plugin's uploads and solve schedules):
// what a simulation with a changing network or a GNN with a new graph per
// batch pays each time. No copy reference: the time is mostly host work.
void BM_SparseCreate(benchmark::State& state) {
  const HostCsr& a = host_matrix(state.range(0));
  state.SetLabel(a.label);
  { XhalMatrix warm(a); }  // first touch of the host arrays and the allocator
  for (auto _ : state) {
    XhalMatrix m(a);
    check(xhal_device_synchronize(device()), "xhal_device_synchronize");
  }
  state.counters["nnz"] = static_cast<double>(a.nnz());
}

// {matrix: 0 river, 1 random, transpose}
void spmv_cases(benchmark::internal::Benchmark* b) {
  for (int64_t which : {0, 1})
    for (int64_t trans : {0, 1}) b->Args({which, trans});
  b->ArgNames({"matrix", "trans"})->UseRealTime()->Unit(benchmark::kMillisecond);
}
void matrix_cases(benchmark::internal::Benchmark* b) {
  b->Arg(0)->Arg(1)->ArgName("matrix")->UseRealTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_SparseSpmv)->Apply(spmv_cases);
BENCHMARK(BM_SparseSpmm)
    ->ArgsProduct({{0, 1}, {0, 1}, {8, 64}})
    ->ArgNames({"matrix", "trans", "k"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SparseSolve)->Apply(spmv_cases);
BENCHMARK(BM_SparseSpmvF64)->Apply(spmv_cases);
BENCHMARK(BM_SparseSpmvBf16)->Apply(spmv_cases);
BENCHMARK(BM_SparseSolveF64)->Apply(spmv_cases);
BENCHMARK(BM_SparseSolveBackward)->Apply(matrix_cases);
BENCHMARK(BM_SparseCreate)->Apply(matrix_cases);

// ---- Eigen on the same matrices (host memory, its own threading) ----
#ifdef XHAL_BENCH_HAVE_EIGEN
using EigenCsr = Eigen::SparseMatrix<float, Eigen::RowMajor, int32_t>;

EigenCsr to_eigen(const HostCsr& a) {
  return Eigen::Map<const EigenCsr>(a.n, a.n, a.nnz(), a.row_ptr.data(), a.col_idx.data(),
                                    a.values.data());
}

Eigen::VectorXf random_vector(int64_t n, uint64_t seed) {
  const std::vector<float> v = random_floats(n, seed);
  return Eigen::Map<const Eigen::VectorXf>(v.data(), n);
}

// As run_timed for xhal, so that both start each iteration from the same
// cache state: after each iteration (outside the timing) the same copy of
// the same bytes, unless XHAL_BENCH_REFERENCE_COPY=0 leaves it out for both.
template <class Op>
void run_timed_host(benchmark::State& state, uint64_t bytes, Op&& op) {
  const bool reference = reference_copy_enabled();
  copy_gbps(bytes);
  op();
  double seconds = 0.0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    op();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!reference) continue;
    state.PauseTiming();
    time_copy(bytes);
    state.ResumeTiming();
  }
  report_bytes(state, bytes, seconds);
}

void BM_EigenSpmv(benchmark::State& state) {
  const HostCsr& a = host_matrix(state.range(0));
  const EigenCsr m = to_eigen(a);
  const Eigen::VectorXf x = random_vector(a.n, 1);
  Eigen::VectorXf y(a.n);
  state.SetLabel(a.label);
  if (state.range(1) == 0) run_timed_host(state, spmv_bytes(a), [&] { y.noalias() = m * x; });
  else run_timed_host(state, spmv_bytes(a), [&] { y.noalias() = m.transpose() * x; });
  benchmark::DoNotOptimize(y.data());
}

void BM_EigenSolve(benchmark::State& state) {
  const HostCsr& a = host_matrix(state.range(0));
  const EigenCsr m = to_eigen(a);
  const Eigen::VectorXf b = random_vector(a.n, 2);
  Eigen::VectorXf x(a.n);
  state.SetLabel(a.label);
  // A^T of the row-major A is column-major upper: Eigen pushes each solved
  // x[i] into the rows it feeds, in descending i (the same work as xhal's).
  if (state.range(1) == 0) {
    run_timed_host(state, solve_bytes(a), [&] {
      x = b;
      m.triangularView<Eigen::Lower>().solveInPlace(x);
    });
  } else {
    run_timed_host(state, solve_bytes(a), [&] {
      x = b;
      m.transpose().triangularView<Eigen::Upper>().solveInPlace(x);
    });
  }
  benchmark::DoNotOptimize(x.data());
}

void BM_EigenSolveBackward(benchmark::State& state) {
  const HostCsr& a = host_matrix(state.range(0));
  const EigenCsr m = to_eigen(a);
  const Eigen::VectorXf x = random_vector(a.n, 3), dx = random_vector(a.n, 4);
  Eigen::VectorXf gb(a.n);
  std::vector<float> ga(a.nnz());
  state.SetLabel(a.label);
  run_timed_host(state, backward_bytes(a), [&] {
    gb = dx;
    m.transpose().triangularView<Eigen::Upper>().solveInPlace(gb);
    for (int64_t i = 0; i < a.n; ++i)
      for (int32_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) ga[e] = -(gb[i] * x[a.col_idx[e]]);
  });
  benchmark::DoNotOptimize(ga.data());
}

BENCHMARK(BM_EigenSpmv)->Apply(spmv_cases);
BENCHMARK(BM_EigenSolve)->Apply(spmv_cases);
BENCHMARK(BM_EigenSolveBackward)->Apply(matrix_cases);
#endif

}  // namespace
}  // namespace xhal_bench
