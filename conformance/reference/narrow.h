// f16 and bf16 for the conformance suite (docs/semantics.md 7.1, 7.2): the
// storage conversions written from the rule as arithmetic on the value
// (frexp/ldexp and a round-to-nearest-even in double), deliberately not the
// plugins' bit manipulation, and the canonical narrow ops built from them:
// widen every input, the canonical float32 op (canonical.h), narrow every
// output element once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "xhal/xhal.h"

namespace xhal::conf::narrow {

// dtype: XHAL_DTYPE_F16 or XHAL_DTYPE_BF16.
float widen(xhal_dtype_t dtype, uint16_t h);
uint16_t narrow(xhal_dtype_t dtype, float f);

std::vector<float> widen(xhal_dtype_t dtype, const std::vector<uint16_t>& h);
std::vector<uint16_t> narrow(xhal_dtype_t dtype, const std::vector<float>& f);
// narrow(widen(v)) for random data in the narrow type: the inputs a test
// uploads, already representable.
std::vector<uint16_t> random_narrow(xhal_dtype_t dtype, size_t n, uint64_t seed, float lo,
                                    float hi);

// Unit roundoff of the narrow type (2^-11 f16, 2^-8 bf16) and the absolute
// floor of its bound (7.5: half of f16's subnormal spacing plus f32's floor;
// f32's floor for bf16, whose subnormals are f32's).
double unit_roundoff(xhal_dtype_t dtype);
double abs_floor(xhal_dtype_t dtype);
// The largest finite value.
double max_finite(xhal_dtype_t dtype);

}  // namespace xhal::conf::narrow
