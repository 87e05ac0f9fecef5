// Implementation of bench_common.h.
#include "bench_common.h"

#include "../plugins/gpu/narrow.h"  // the canonical f32 -> bf16/f16 rounding (host code)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace xhal_bench {

void check(xhal_status_t status, const char* what) {
  if (status == XHAL_OK) return;
  std::fprintf(stderr, "xhal-bench: %s failed: %s: %s\n", what, xhal_status_name(status),
               xhal_last_error());
  std::exit(1);
}

Buffer::Buffer(uint64_t bytes) : bytes_(bytes) {
  check(xhal_buffer_allocate(device(), bytes, &handle_), "xhal_buffer_allocate");
}

Buffer::~Buffer() {
  if (handle_ != nullptr) xhal_buffer_release(handle_);
}

namespace {
// splitmix64: fast, and good enough for benchmark data.
uint64_t next(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

std::vector<float> random_floats(uint64_t count, uint64_t seed, float lo, float hi) {
  std::vector<float> v(count);
  uint64_t state = seed * 0x2545f4914f6cdd1dull + 1;
  for (auto& x : v) {
    const uint64_t r = next(state);
    const float u = static_cast<float>(r >> 40) * 0x1p-24f;  // [0, 1)
    const float magnitude = lo + (hi - lo) * u;
    x = (r & 1) ? -magnitude : magnitude;
  }
  return v;
}

void fill_random(Buffer& buffer, uint64_t count, uint64_t seed, float lo, float hi) {
  constexpr uint64_t kSlice = 1ull << 22;  // floats per upload
  for (uint64_t start = 0; start < count; start += kSlice) {
    const uint64_t n = std::min(kSlice, count - start);
    const std::vector<float> host = random_floats(n, seed + start, lo, hi);
    check(xhal_buffer_write(buffer.get(), start * sizeof(float), host.data(), n * sizeof(float)),
          "xhal_buffer_write");
  }
}

namespace {
// random_floats rounded once (to nearest even, docs/semantics.md 7.1) to
// 16-bit storage by `narrow`, in slices.
void fill_random_16(Buffer& buffer, uint64_t count, uint64_t seed, float lo, float hi,
                    uint16_t (*narrow)(uint32_t)) {
  constexpr uint64_t kSlice = 1ull << 22;
  std::vector<uint16_t> bits;
  for (uint64_t start = 0; start < count; start += kSlice) {
    const uint64_t n = std::min(kSlice, count - start);
    const std::vector<float> host = random_floats(n, seed + start, lo, hi);
    bits.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      uint32_t u;
      std::memcpy(&u, &host[i], 4);
      bits[i] = narrow(u);
    }
    check(xhal_buffer_write(buffer.get(), start * 2, bits.data(), n * 2), "xhal_buffer_write");
  }
}
}  // namespace

void fill_random_bf16(Buffer& buffer, uint64_t count, uint64_t seed, float lo, float hi) {
  fill_random_16(buffer, count, seed, lo, hi, xhal::gpu::bf16_bits_from_f32);
}

void fill_random_as(Buffer& buffer, xhal_dtype_t dtype, uint64_t count, uint64_t seed, float lo,
                    float hi) {
  if (dtype == XHAL_DTYPE_BF16) return fill_random_bf16(buffer, count, seed, lo, hi);
  if (dtype == XHAL_DTYPE_F16)
    return fill_random_16(buffer, count, seed, lo, hi, xhal::gpu::f16_bits_from_f32);
  if (dtype != XHAL_DTYPE_F64) return fill_random(buffer, count, seed, lo, hi);
  constexpr uint64_t kSlice = 1ull << 22;
  for (uint64_t start = 0; start < count; start += kSlice) {
    const uint64_t n = std::min(kSlice, count - start);
    const std::vector<float> host = random_floats(n, seed + start, lo, hi);
    const std::vector<double> wide(host.begin(), host.end());
    check(xhal_buffer_write(buffer.get(), start * 8, wide.data(), n * 8), "xhal_buffer_write");
  }
}

xhal_tensor_t tensor(const Buffer& buffer, std::initializer_list<int64_t> shape,
                     xhal_dtype_t dtype) {
  xhal_tensor_t t{};
  const std::vector<int64_t> dims(shape);
  check(
      xhal_tensor_init(buffer.get(), 0, dtype, static_cast<uint32_t>(dims.size()), dims.data(), &t),
      "xhal_tensor_init");
  return t;
}

namespace {
// One pair of buffers, kept while consecutive benchmarks use the same size;
// released by release_copy_buffers before main releases the device.
std::unique_ptr<Buffer> g_copy_src, g_copy_dst;
}  // namespace

void release_copy_buffers() {
  g_copy_src.reset();
  g_copy_dst.reset();
}

double time_copy(uint64_t bytes_moved) {
  std::unique_ptr<Buffer>& src = g_copy_src;
  std::unique_ptr<Buffer>& dst = g_copy_dst;
  const uint64_t half = std::max<uint64_t>(bytes_moved / 2, 4);
  if (!src || src->bytes() != half) {
    src.reset();
    dst.reset();
    src = std::make_unique<Buffer>(half);
    dst = std::make_unique<Buffer>(half);
    fill_random(*src, half / sizeof(float), 99);
    check(xhal_buffer_copy(src->get(), 0, dst->get(), 0, half), "xhal_buffer_copy");
  }
  const auto t0 = std::chrono::steady_clock::now();
  check(xhal_buffer_copy(src->get(), 0, dst->get(), 0, half), "xhal_buffer_copy");
  check(xhal_device_synchronize(device()), "xhal_device_synchronize");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double copy_gbps(uint64_t bytes_moved) {
  static std::mutex mutex;
  static std::map<uint64_t, double> measured;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = measured.find(bytes_moved); it != measured.end()) return it->second;
  std::vector<double> rates;
  const auto begin = std::chrono::steady_clock::now();
  time_copy(bytes_moved);  // first touch
  for (int rep = 0; rep < 51; ++rep) {
    rates.push_back(bytes_moved * 1e-9 / time_copy(bytes_moved));
    if (rep >= 4 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count() > 0.2)
      break;
  }
  std::sort(rates.begin(), rates.end());
  const double median = rates[rates.size() / 2];
  measured[bytes_moved] = median;
  return median;
}

void report_bytes(benchmark::State& state, uint64_t bytes_per_iteration, double seconds) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes_per_iteration));
  if (seconds <= 0.0) return;
  const double gbps =
      static_cast<double>(state.iterations()) * bytes_per_iteration * 1e-9 / seconds;
  state.counters["GB/s"] = gbps;
  state.counters["copy_ratio"] = gbps / copy_gbps(bytes_per_iteration);
}

double warmup_seconds() {
  static const double seconds = [] {
    if (const char* v = std::getenv("XHAL_BENCH_WARMUP_SECONDS")) return std::atof(v);
    xhal_device_info_t info{};
    info.struct_size = sizeof info;
    if (xhal_device_query(device(), &info) != XHAL_OK) return 0.0;
    return info.kind == XHAL_DEVICE_KIND_GPU ? 0.5 : 0.0;
  }();
  return seconds;
}

bool reference_copy_enabled() {
  const char* v = std::getenv("XHAL_BENCH_REFERENCE_COPY");
  return !(v && std::string(v) == "0");
}

void report_bytes(benchmark::State& state, uint64_t bytes_per_iteration, double op_seconds,
                  double copy_seconds) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes_per_iteration));
  if (op_seconds <= 0.0) return;
  const double gigabytes = static_cast<double>(state.iterations()) * bytes_per_iteration * 1e-9;
  state.counters["GB/s"] = gigabytes / op_seconds;
  if (copy_seconds <= 0.0) return;  // no reference copies ran (XHAL_BENCH_REFERENCE_COPY=0)
  state.counters["copy_GB/s"] = gigabytes / copy_seconds;
  state.counters["copy_ratio"] = copy_seconds / op_seconds;
}

}  // namespace xhal_bench
