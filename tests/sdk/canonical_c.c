/* The installed canonical header compiled as C99 (-pedantic): these wrappers
 * let canonical_header_test.cpp check that C and C++ get the same bits. */
#include <xhal/xhal_canonical.h>

float sdk_c_exp(float x) { return xhal_canon_exp(x); }
float sdk_c_segsum(const float* t, size_t m) { return xhal_canon_segsum(t, m, 1); }
float sdk_c_softmax_row(const float* x, size_t n, float* y) {
  return xhal_canon_softmax_row(x, n, y).s;
}
