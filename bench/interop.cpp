// DLPack round trips on the device under test (issue 12's goal: under 2 us
// per tensor on the host): an xhal tensor exported, imported back, and the
// import released (which runs the export's deleter), so each iteration is
// one complete hand-over in each direction with nothing left alive. The two
// halves are timed alone too.
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

}  // namespace
}  // namespace xhal_bench
