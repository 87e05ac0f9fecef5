// Helpers the op tests share: fresh random data, bit comparison against the
// canonical reference, bound comparison against the float64 reference, and
// the grading of a test into a conformance level.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness.h"
#include "reference/f64.h"
#include "tolerances.h"

namespace xhal::conf {

// Uniform in [lo, hi], never exactly zero (a zero would hide a missing
// multiply or an unwritten output). Different seeds give different data.
std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f);
// The same in double (f64 ops).
std::vector<double> random_doubles(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0);
std::vector<int64_t> random_indices(size_t n, uint64_t num_rows, uint64_t seed);
// A fresh seed per call: the data differ between runs unless the
// XHAL_CONF_SEED environment variable fixes the base (printed at start).
uint64_t fresh_seed();
uint64_t seed_base();

// Same bits; NaN matches any NaN except the poison pattern (an unwritten
// output). `first` describes the first mismatch.
struct BitCompare {
  bool equal = true;
  size_t mismatches = 0;
  std::string first;
};
BitCompare compare_bits(const std::vector<float>& got, const std::vector<float>& want);
BitCompare compare_bits(const std::vector<double>& got, const std::vector<double>& want);
// Same bytes.
bool same_bytes(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, std::string* first);

struct AccuracyCompare {
  bool ok = true;
  size_t failures = 0;
  double worst = 0;  // max |got - ref| / (rel * scale + abs)
  std::string first;
};
AccuracyCompare compare_f64(const std::vector<float>& got, const ref64::Values& ref,
                            tol::Bound bound);
AccuracyCompare compare_f64(const std::vector<double>& got, const ref64::Values& ref,
                            tol::Bound bound);

// Grades the outputs of one op call. For each output give the device result,
// the device result of an identical second call, the canonical float32
// reference and the float64 reference with its bound. finish() records the
// level (bit-exact if every output matched the canonical bits; accurate if
// every output is within its bound and identical across the two runs; else
// none) and fails the test with the details when the level is none.
class Grader {
 public:
  void output(const std::string& name, const std::vector<float>& got,
              const std::vector<float>& rerun, const std::vector<float>& canonical,
              const ref64::Values& ref, tol::Bound bound);
  // f64 outputs: the canonical float64 reference and the long double one.
  void output(const std::string& name, const std::vector<double>& got,
              const std::vector<double>& rerun, const std::vector<double>& canonical,
              const ref64::Values& ref, tol::Bound bound);
  // f16/bf16 outputs (docs/semantics.md 7.2, 7.5): the bits against the
  // canonical narrow reference (widen, f32 canonical op, narrow once), the
  // widened values against the float64 reference with `f32_bound` plus one
  // rounding to the narrow type; an output that overflows the narrow type
  // must be the infinity of the reference's sign. `poison` is the pattern an
  // unwritten element holds.
  void output_narrow(const std::string& name, xhal_dtype_t dtype, const std::vector<uint16_t>& got,
                     const std::vector<uint16_t>& rerun, const std::vector<uint16_t>& canonical,
                     const ref64::Values& ref, tol::Bound f32_bound, uint16_t poison);
  Level finish();

 private:
  template <class T>
  void output_t(const std::string& name, const std::vector<T>& got, const std::vector<T>& rerun,
                const std::vector<T>& canonical, const ref64::Values& ref, tol::Bound bound,
                const char* canonical_type, const char* reference_type);
  bool bit_exact_ = true, accurate_ = true;
  std::string details_;
};

// Float32 downloads of a tensor-sized buffer region.
inline std::vector<float> download_f32(xhal_buffer_t buf, size_t count, uint64_t offset = 0) {
  return download<float>(buf, count, offset);
}

inline std::vector<double> download_f64(xhal_buffer_t buf, size_t count, uint64_t offset = 0) {
  return download<double>(buf, count, offset);
}

// A freshly allocated buffer of `bytes`, filled with the poison pattern.
xhal_buffer_t poisoned_buffer(xhal_device_t dev, uint64_t bytes);
// True when every float of `v` still holds the poison pattern.
bool all_poison(const std::vector<float>& v);
bool all_poison(const std::vector<double>& v);

// RAII index plan.
struct PlanGuard {
  xhal_index_plan_t plan = nullptr;
  ~PlanGuard() {
    if (plan) xhal_index_plan_release(plan);
  }
};
// Builds a plan from int64 indices (or int32 when `dtype` says so); ASSERTs.
xhal_index_plan_t make_plan(xhal_device_t dev, const std::vector<int64_t>& idx, uint64_t num_rows,
                            xhal_dtype_t dtype = XHAL_DTYPE_I64);

// Dtypes (bit per xhal_dtype_t) the device claims for `op`.
uint32_t device_dtypes(xhal_device_t dev, xhal_op_t op);

// Name of an op as the report writes it ("softmax_forward").
const char* op_name(xhal_op_t op);

// Records `op` for the running test and skips the test as "unsupported"
// when the fixture's device does not implement it (an absent plugin slot).
#define XHAL_CONF_REQUIRE_OP(op)                                            \
  do {                                                                      \
    ::xhal::conf::record_op(op);                                            \
    if (!::xhal::conf::device_supports(dev, op))                            \
      XHAL_CONF_UNSUPPORTED(std::string("the device does not implement ") + \
                            ::xhal::conf::op_name(op));                     \
  } while (0)

// XHAL_CONF_REQUIRE_OP for a test of one dtype: "unsupported" unless the
// device claims `dtype` for `op` (an f64 test on a backend without f64).
#define XHAL_CONF_REQUIRE_OP_DTYPE(op, dtype)                                              \
  do {                                                                                     \
    XHAL_CONF_REQUIRE_OP(op);                                                              \
    if (!::xhal::conf::device_supports(dev, op, dtype))                                    \
      XHAL_CONF_UNSUPPORTED(std::string("the device does not implement ") +                \
                            ::xhal::conf::op_name(op) + " for " + xhal_dtype_name(dtype)); \
  } while (0)

// The dtype of an element type (f32, f64).
template <class T>
constexpr xhal_dtype_t dtype_of() {
  return sizeof(T) == 8 ? XHAL_DTYPE_F64 : XHAL_DTYPE_F32;
}

// For a test that exercises one op (recorded with XHAL_CONF_REQUIRE_OP) and
// also calls `other` to set up or check it: "unsupported" unless the device
// implements `other` too. Records nothing.
#define XHAL_CONF_REQUIRE_ALSO(other)                                                            \
  do {                                                                                           \
    if (!::xhal::conf::device_supports(dev, other))                                              \
      XHAL_CONF_UNSUPPORTED(std::string("the test also needs ") + ::xhal::conf::op_name(other) + \
                            ", which the device does not implement");                            \
  } while (0)

// True when the device implements at least one of the sparse ops (each of
// them needs CSR matrices, so xhal_csr_create works; without any,
// xhal_csr_create is XHAL_UNSUPPORTED).
bool device_has_sparse_ops(xhal_device_t dev);

// True when the device implements `op` for `dtype`.
bool device_supports(xhal_device_t dev, xhal_op_t op, xhal_dtype_t dtype = XHAL_DTYPE_F32);

}  // namespace xhal::conf
