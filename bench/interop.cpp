// DLPack round trips on the device under test (issue 12's goal: under 2 us
// per tensor on the host): an xhal tensor exported, imported back, and the
// import released (which runs the export's deleter), so each iteration is
// one complete hand-over in each direction with nothing left alive. The two
// halves are timed alone too.
#include <vector>

#include "bench_common.h"

namespace xhal_bench {
namespace {

void BM_DlpackRoundTrip(benchmark::State& state) {
  Buffer buffer(64 * 64 * sizeof(float));
  const xhal_tensor_t t = tensor(buffer, {64, 64});
  for (auto _ : state) {
    xhal_dlpack_managed_tensor_versioned_t* m = nullptr;
    check(xhal_tensor_export_dlpack(&t, 0, &m), "xhal_tensor_export_dlpack");
    xhal_tensor_t back;
    check(xhal_tensor_import_dlpack(device(), m, &back), "xhal_tensor_import_dlpack");
    check(xhal_buffer_release(back.buffer), "xhal_buffer_release");
  }
}
BENCHMARK(BM_DlpackRoundTrip);

// Export and the consumer's deleter call.
void BM_DlpackExport(benchmark::State& state) {
  Buffer buffer(64 * 64 * sizeof(float));
  const xhal_tensor_t t = tensor(buffer, {64, 64});
  for (auto _ : state) {
    xhal_dlpack_managed_tensor_versioned_t* m = nullptr;
    check(xhal_tensor_export_dlpack(&t, 0, &m), "xhal_tensor_export_dlpack");
    m->deleter(m);
  }
}
BENCHMARK(BM_DlpackExport);

// Import of a producer's tensor (memory of an xhal buffer, so it is the
// device's on every backend) and the release that runs its deleter.
void BM_DlpackImport(benchmark::State& state) {
  Buffer buffer(64 * 64 * sizeof(float));
  xhal_native_memory_t n{};
  n.struct_size = sizeof n;
  check(xhal_buffer_get_native(buffer.get(), &n), "xhal_buffer_get_native");
  int64_t shape[2] = {64, 64};
  xhal_dlpack_managed_tensor_versioned_t m{};
  m.version = {1, 0};
  m.deleter = [](xhal_dlpack_managed_tensor_versioned_t*) {};
  m.dl_tensor.data = n.pointer;
  m.dl_tensor.device = {static_cast<int32_t>(n.kind), n.device_ordinal};
  m.dl_tensor.ndim = 2;
  m.dl_tensor.dtype = {XHAL_DLPACK_DTYPE_FLOAT, 32, 1};
  m.dl_tensor.shape = shape;
  for (auto _ : state) {
    xhal_tensor_t t;
    check(xhal_tensor_import_dlpack(device(), &m, &t), "xhal_tensor_import_dlpack");
    check(xhal_buffer_release(t.buffer), "xhal_buffer_release");
  }
}
BENCHMARK(BM_DlpackImport);

// Issue 12's plan comparison: an index plan of 10^6 random i64 indices from
// a device tensor (xhal_index_plan_create_from_tensor) against the same
// list from host memory (xhal_index_plan_create). Arg: num_rows. A GPU
// plugin builds the tensor's plan on the device (plugin ABI 1.5); the cpu
// plugin reads the list (a memcpy) and takes the host path.
constexpr uint64_t kPlanIndices = 1000000;

std::vector<int64_t> random_indices(uint64_t count, uint64_t num_rows) {
  std::vector<int64_t> idx(count);
  uint64_t state = 0x9e3779b97f4a7c15u;
  for (int64_t& v : idx) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    v = static_cast<int64_t>((state >> 11) % num_rows);
  }
  return idx;
}

void BM_IndexPlanFromHost(benchmark::State& state) {
  const uint64_t num_rows = static_cast<uint64_t>(state.range(0));
  const std::vector<int64_t> idx = random_indices(kPlanIndices, num_rows);
  for (auto _ : state) {
    xhal_index_plan_t plan = nullptr;
    check(
        xhal_index_plan_create(device(), idx.data(), XHAL_DTYPE_I64, kPlanIndices, num_rows, &plan),
        "xhal_index_plan_create");
    check(xhal_index_plan_release(plan), "xhal_index_plan_release");
  }
}
BENCHMARK(BM_IndexPlanFromHost)
    ->Arg(1000000)
    ->Arg(100000000)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_IndexPlanFromTensor(benchmark::State& state) {
  const uint64_t num_rows = static_cast<uint64_t>(state.range(0));
  const std::vector<int64_t> idx = random_indices(kPlanIndices, num_rows);
  Buffer indices(kPlanIndices * sizeof(int64_t));
  check(xhal_buffer_write(indices.get(), 0, idx.data(), kPlanIndices * sizeof(int64_t)),
        "xhal_buffer_write");
  const xhal_tensor_t t = tensor(indices, {static_cast<int64_t>(kPlanIndices)}, XHAL_DTYPE_I64);
  for (auto _ : state) {
    xhal_index_plan_t plan = nullptr;
    check(xhal_index_plan_create_from_tensor(device(), &t, num_rows, &plan),
          "xhal_index_plan_create_from_tensor");
    check(xhal_index_plan_release(plan), "xhal_index_plan_release");
  }
}
BENCHMARK(BM_IndexPlanFromTensor)
    ->Arg(1000000)
    ->Arg(100000000)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace xhal_bench
