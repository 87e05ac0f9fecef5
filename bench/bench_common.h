// Shared helpers of xhal-bench: the device under test (opened once in
// main.cpp through the public API, XHAL_DEVICE honoured), device buffers
// filled with random non-zero data, tensor descriptors, and the reporting of
// bytes moved, GB/s and the ratio to a plain device copy of the same bytes
// measured in the same run.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "xhal/xhal.h"

namespace xhal_bench {

// The device every benchmark runs on.
xhal_device_t device();

// Aborts the run with the call, status and xhal_last_error() on failure.
void check(xhal_status_t status, const char* what);

// An owned device buffer.
class Buffer {
 public:
  explicit Buffer(uint64_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  xhal_buffer_t get() const { return handle_; }
  uint64_t bytes() const { return bytes_; }

 private:
  xhal_buffer_t handle_ = nullptr;
  uint64_t bytes_ = 0;
};

// Uniform floats with |x| in [lo, hi) and a random sign (never zero), as
// host data or written into a buffer (in slices, so host memory stays small).
std::vector<float> random_floats(uint64_t count, uint64_t seed, float lo = 0.5f, float hi = 1.5f);
void fill_random(Buffer& buffer, uint64_t count, uint64_t seed, float lo = 0.5f,
                 float hi = 1.5f);

// A contiguous f32 (or `dtype`) tensor over the start of `buffer`.
xhal_tensor_t tensor(const Buffer& buffer, std::initializer_list<int64_t> shape,
                     xhal_dtype_t dtype = XHAL_DTYPE_F32);

// GB/s of xhal_buffer_copy moving `bytes_moved` bytes (reading half and
// writing half): the median of several timings, measured once per size and
// remembered.
double copy_gbps(uint64_t bytes_moved);

// Records the bytes one iteration moves over `seconds` of timed work:
// bytes_per_second, and the plain counters "GB/s" and "copy_ratio" (GB/s
// over copy_gbps of the same bytes).
void report_bytes(benchmark::State& state, uint64_t bytes_per_iteration, double seconds);

// Runs `op` once per iteration with a device synchronize inside the timing.
template <class Op>
void run_timed(benchmark::State& state, uint64_t bytes_per_iteration, Op&& op) {
  copy_gbps(bytes_per_iteration);  // measured before this op's timing starts
  op();                            // warm-up: first touch of every page
  check(xhal_device_synchronize(device()), "xhal_device_synchronize");
  double seconds = 0.0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    op();
    check(xhal_device_synchronize(device()), "xhal_device_synchronize");
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  report_bytes(state, bytes_per_iteration, seconds);
}

}  // namespace xhal_bench
