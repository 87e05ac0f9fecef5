// Accuracy bounds of the accurate-and-deterministic level (docs/semantics.md
// section 5 states the same numbers). A float32 result `got` passes against
// the float64 reference value `ref` with its magnitude `scale` (reference/
// f64.h: the sum of the magnitudes of the terms that form the value) when
//     |got - ref| <= rel * scale + abs,
// and NaN results match NaN references. Bounds are a few times above the
// worst rounding error of the canonical orders, so a reordered but sound
// implementation (a vendor library) passes and a wrong formula does not.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace xhal::conf::tol {

struct Bound {
  double rel;
  double abs;
};

constexpr double kU = 0x1p-24;          // float32 unit roundoff
constexpr double kFloatMin = 0x1p-126;  // absolute floor: subnormal results

// Gather and permute move bits: any difference fails (no bound).

// softmax forward: element-wise relative (scale = |y|).
constexpr Bound kSoftmaxForward{1e-5, kFloatMin};
// softmax backward: scale = |y_i| * (|dy_i| + sum_k |y_k dy_k|).
constexpr Bound kSoftmaxBackward{1e-5, kFloatMin};
// RMSNorm / LayerNorm forward and backward, every output (y, mean, rstd, dx,
// dgamma, dbeta); scales in reference/f64.cpp.
constexpr Bound kNorm{1e-5, kFloatMin};

// index_add into a row with `m` sources: segsum depth (32 sequential adds and
// the chunk tree) plus alpha * T and the final add; scale = |dst| + |alpha| sum|src|.
inline Bound index_add(uint64_t m) {
  double chunks = std::ceil(static_cast<double>(m) / 32.0);
  double depth = static_cast<double>(std::min<uint64_t>(m, 32)) +
                 (chunks > 1 ? std::ceil(std::log2(chunks)) : 0) + 2;
  return {2 * kU * depth, kFloatMin};
}

// f64 ops (docs/semantics.md 7.5): the same scales against a long double
// reference, with the float64 unit roundoff in place of float32's and 1e-13
// in place of 1e-5; results below 2^-1022 are compared absolutely.
constexpr double kU64 = 0x1p-53;
constexpr double kDoubleMin = 0x1p-1022;
constexpr Bound kSoftmaxForward64{1e-13, kDoubleMin};
constexpr Bound kSoftmaxBackward64{1e-13, kDoubleMin};
constexpr Bound kNorm64{1e-13, kDoubleMin};
inline Bound index_add64(uint64_t m) {
  const Bound b = index_add(m);
  return {b.rel / kU * kU64, kDoubleMin};
}
// The bound an op's f32 bound becomes for T.
template <class T>
constexpr Bound for_dtype(Bound f32, Bound f64) {
  return sizeof(T) == 8 ? f64 : f32;
}

// xhal_exp64 (reference) against expl in x87 long double, in float64 ulps
// of the exact value (ulp of a subnormal result is 2^-1074).
constexpr double kExp64MaxUlp = 2.0;

// xhal_exp (reference) against std::exp in double, in float32 ulps of the
// exact value (ulp of a subnormal result is 2^-149).
constexpr double kExpMaxUlp = 2.0;

// Backward results against central finite differences of the float64
// forward on small inputs (scale as for the analytic reference).
constexpr double kFiniteDifferenceRel = 1e-4;

}  // namespace xhal::conf::tol
