// Host-side timing of the bench/gpu programs: wall time around work the
// caller drains (a device synchronize), so every library is timed alike.
#pragma once

#include <chrono>
#include <functional>

namespace xhal_gpu_bench {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Mean of 20 calls after 3 warm-up calls, the queue drained around them.
inline double time_ms(const std::function<void()>& op, const std::function<void()>& drain) {
  for (int i = 0; i < 3; ++i) op();
  drain();
  const auto t = Clock::now();
  for (int i = 0; i < 20; ++i) op();
  drain();
  return ms_since(t) / 20;
}

}  // namespace xhal_gpu_bench
