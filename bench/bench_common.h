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
void fill_random(Buffer& buffer, uint64_t count, uint64_t seed, float lo = 0.5f, float hi = 1.5f);
// The same values rounded to bf16 (count 2-byte elements).
void fill_random_bf16(Buffer& buffer, uint64_t count, uint64_t seed, float lo = 0.5f,
                      float hi = 1.5f);
// The same values in `dtype`: f32, bf16 or f16 (rounded) or f64 (widened).
void fill_random_as(Buffer& buffer, xhal_dtype_t dtype, uint64_t count, uint64_t seed,
                    float lo = 0.5f, float hi = 1.5f);

// A contiguous f32 (or `dtype`) tensor over the start of `buffer`.
xhal_tensor_t tensor(const Buffer& buffer, std::initializer_list<int64_t> shape,
                     xhal_dtype_t dtype = XHAL_DTYPE_F32);

// GB/s of xhal_buffer_copy moving `bytes_moved` bytes: the median of
// several timings, measured once per size and remembered (for benchmarks
// that cannot interleave copies, e.g. host-side comparisons).
double copy_gbps(uint64_t bytes_moved);

// As below, with the ratio taken against copy_gbps(bytes_per_iteration).
void report_bytes(benchmark::State& state, uint64_t bytes_per_iteration, double seconds);

// Times one xhal_buffer_copy moving `bytes_moved` bytes (reading half and
// writing half) on buffers kept for that size; returns seconds.
double time_copy(uint64_t bytes_moved);
// Releases the buffers time_copy keeps between calls (main, before the
// device is released).
void release_copy_buffers();

// Records `bytes_per_iteration` over `op_seconds` of timed work: the
// bytes_per_second field and the counters "GB/s", "copy_GB/s" and
// "copy_ratio" (op GB/s over copy GB/s; the copies ran interleaved with the
// op's iterations, so both saw the same machine). copy_seconds 0: no
// reference copies ran, and only "GB/s" is set.
void report_bytes(benchmark::State& state, uint64_t bytes_per_iteration, double op_seconds,
                  double copy_seconds);

// False when XHAL_BENCH_REFERENCE_COPY=0: run_timed then leaves out its
// interleaved copies (and the copy_ratio counter), to see whether the
// alternation between the op's buffers and the copy's changes the op's time.
bool reference_copy_enabled();

// Seconds run_timed repeats the op before timing it: XHAL_BENCH_WARMUP_SECONDS,
// else 0.5 on a GPU and 0 on a CPU device (docs/performance.md, "Method":
// NVIDIA's Vulkan driver runs a burst after an idle host phase at a fraction
// of the SM clock).
double warmup_seconds();

// Runs `op` once per iteration with a device synchronize inside the timing,
// and after each iteration (outside the timing) one copy of the same bytes.
template <class Op>
void run_timed(benchmark::State& state, uint64_t bytes_per_iteration, Op&& op) {
  const bool reference = reference_copy_enabled();
  if (reference) time_copy(bytes_per_iteration);  // allocates and touches the copy buffers
  op();                                           // warm-up: first touch of every page
  check(xhal_device_synchronize(device()), "xhal_device_synchronize");
  // Then the op again for warmup_seconds(): a GPU that lowers its clocks
  // while the host prepares the inputs raises them only under sustained load.
  const double warmup = warmup_seconds();
  for (const auto w0 = std::chrono::steady_clock::now();
       std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count() < warmup;) {
    op();
    check(xhal_device_synchronize(device()), "xhal_device_synchronize");
  }
  double op_seconds = 0.0, copy_seconds = 0.0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    op();
    check(xhal_device_synchronize(device()), "xhal_device_synchronize");
    op_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!reference) continue;
    state.PauseTiming();
    copy_seconds += time_copy(bytes_per_iteration);
    state.ResumeTiming();
  }
  report_bytes(state, bytes_per_iteration, op_seconds, copy_seconds);
}

}  // namespace xhal_bench
