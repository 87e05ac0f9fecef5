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
