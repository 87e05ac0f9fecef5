// The device option `trace` (docs/device-options.md) for the creation steps
// of a CSR matrix: lap(what) prints the time since the previous lap, the
// stream drained first so that the device's share is in it. Nothing (not
// even a clock read) without the option.
#pragma once

#include <chrono>
#include <cstdio>

#include "gpu_plugin.h"

namespace xhal::gpu {

class TraceLaps {
 public:
  TraceLaps(Device* d, const char* op) : d_(d), op_(op) {
    if (d_->options.trace) t_ = std::chrono::steady_clock::now();
  }
  void lap(const char* what) {
    if (!d_->options.trace) return;
    gpuStreamSynchronize(d_->stream);
    const auto t = std::chrono::steady_clock::now();
    std::fprintf(stderr, "[xhal-%s] %s %s: %.2f ms\n", XHAL_GPU_BACKEND_NAME, op_, what,
                 std::chrono::duration<double, std::milli>(t - t_).count());
    t_ = t;
  }

 private:
  Device* d_;
  const char* op_;
  std::chrono::steady_clock::time_point t_;
};

}  // namespace xhal::gpu
