// Exit-on-error checks for the bench/gpu programs (a benchmark that hits an
// error has nothing to report).
#pragma once

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#include "xhal/xhal.h"

#define CK(x)                                                                         \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)
#define XK(x)                                                                          \
  do {                                                                                 \
    xhal_status_t s_ = (x);                                                            \
    if (s_ != XHAL_OK) {                                                               \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, xhal_status_name(s_), \
                   xhal_last_error());                                                 \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

// The device XHAL_DEVICE selects, named on stdout so that a log says what
// was measured.
inline xhal_device_t open_device_and_say_which(xhal_device_info_t* out_info = nullptr) {
  xhal_device_t dev;
  XK(xhal_device_open(nullptr, &dev));
  xhal_device_info_t info{};
  info.struct_size = sizeof info;
  XK(xhal_device_query(dev, &info));
  std::printf("xhal device: %s %s (%s)\n", info.backend, info.name, info.stable_id);
  if (out_info) *out_info = info;
  return dev;
}
