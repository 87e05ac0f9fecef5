#include "reference/narrow.h"

#include <cmath>
#include <random>

namespace xhal::conf::narrow {
namespace {

struct Format {
  int mant_bits;  // stored fraction bits
  int emin;       // exponent of the smallest normal
  int emax;       // exponent of the largest finite
  uint16_t quiet_nan;
};
Format format_of(xhal_dtype_t dtype) {
  if (dtype == XHAL_DTYPE_BF16) return {7, -126, 127, 0x7FC0};
  return {10, -14, 15, 0x7E00};
}

// Round to nearest, ties to even, of a double holding an integer plus a
// fraction (exact: every value here has at most 53 significant bits).
double round_even(double v) {
  double f = std::floor(v);
  double d = v - f;
  if (d > 0.5 || (d == 0.5 && std::fmod(f, 2.0) != 0.0)) f += 1.0;
  return f;
}

}  // namespace

float widen(xhal_dtype_t dtype, uint16_t h) {
  const Format fmt = format_of(dtype);
  const int exp_bits = 15 - fmt.mant_bits;
  const int bias = (1 << (exp_bits - 1)) - 1;
  const bool negative = h & 0x8000;
  const int e = (h >> fmt.mant_bits) & ((1 << exp_bits) - 1);
  const int m = h & ((1 << fmt.mant_bits) - 1);
  double v;
  if (e == (1 << exp_bits) - 1) {
    v = m ? std::nan("") : INFINITY;
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), fmt.emin - fmt.mant_bits);
  } else {
    v = std::ldexp(static_cast<double>(m + (1 << fmt.mant_bits)), e - bias - fmt.mant_bits);
  }
  return static_cast<float>(negative ? -v : v);  // exact: every value fits in f32
}

uint16_t narrow(xhal_dtype_t dtype, float f) {
  const Format fmt = format_of(dtype);
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isnan(f)) return fmt.quiet_nan;  // one pattern whatever the NaN's sign (7.1)
  const int exp_bits = 15 - fmt.mant_bits;
  const int bias = (1 << (exp_bits - 1)) - 1;
  const uint16_t inf = static_cast<uint16_t>(((1 << exp_bits) - 1) << fmt.mant_bits);
  const double v = std::fabs(static_cast<double>(f));
  if (std::isinf(v)) return sign | inf;
  if (v < std::ldexp(1.0, fmt.emin)) {  // subnormal grid: multiples of 2^(emin - mant_bits)
    const double q = round_even(std::ldexp(v, fmt.mant_bits - fmt.emin));
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(q));  // q = 2^mant_bits: min normal
  }
  int e = std::ilogb(v);
  double m = round_even(std::ldexp(v, fmt.mant_bits - e));  // in [2^mb, 2^(mb+1)]
  if (m == std::ldexp(1.0, fmt.mant_bits + 1)) {
    m /= 2;
    ++e;
  }
  if (e > fmt.emax) return sign | inf;
  return static_cast<uint16_t>(sign | ((e + bias) << fmt.mant_bits) |
                               (static_cast<int>(m) - (1 << fmt.mant_bits)));
}

std::vector<float> widen(xhal_dtype_t dtype, const std::vector<uint16_t>& h) {
  std::vector<float> v(h.size());
  for (size_t i = 0; i < h.size(); ++i) v[i] = widen(dtype, h[i]);
  return v;
}

std::vector<uint16_t> narrow(xhal_dtype_t dtype, const std::vector<float>& f) {
  std::vector<uint16_t> v(f.size());
  for (size_t i = 0; i < f.size(); ++i) v[i] = narrow(dtype, f[i]);
  return v;
}

std::vector<uint16_t> random_narrow(xhal_dtype_t dtype, size_t n, uint64_t seed, float lo,
                                    float hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<uint16_t> v(n);
  for (auto& x : v) {
    do x = narrow(dtype, dist(rng));
    while ((x & 0x7fff) == 0);  // never zero (a zero hides a missing multiply)
  }
  return v;
}

double unit_roundoff(xhal_dtype_t dtype) { return dtype == XHAL_DTYPE_BF16 ? 0x1p-8 : 0x1p-11; }

double abs_floor(xhal_dtype_t dtype) {
  return dtype == XHAL_DTYPE_BF16 ? 0x1p-126 : 0x1p-25 + 0x1p-126;
}

double max_finite(xhal_dtype_t dtype) { return dtype == XHAL_DTYPE_BF16 ? 0x1.fep127 : 65504.0; }

}  // namespace xhal::conf::narrow
