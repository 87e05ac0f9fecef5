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

// xhal_exp (reference) against std::exp in double, in float32 ulps of the
// exact value (ulp of a subnormal result is 2^-149).
constexpr double kExpMaxUlp = 2.0;

// Backward results against central finite differences of the float64
// forward on small inputs (scale as for the analytic reference).
constexpr double kFiniteDifferenceRel = 1e-4;

}  // namespace xhal::conf::tol
