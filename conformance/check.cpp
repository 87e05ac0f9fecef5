#include "check.h"

#include "reference/narrow.h"
#include "report.h"
#include "runner.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>

namespace xhal::conf {

std::vector<float> random_floats(size_t n, uint64_t seed, float lo, float hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) {
    do x = dist(rng);
    while (x == 0.0f);
  }
  return v;
}

std::vector<int64_t> random_indices(size_t n, uint64_t num_rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> dist(0, num_rows - 1);
  std::vector<int64_t> v(n);
  for (auto& x : v) x = static_cast<int64_t>(dist(rng));
  return v;
}

uint64_t seed_base() {
  static const uint64_t base = []() -> uint64_t {
    if (const char* s = std::getenv("XHAL_CONF_SEED")) return std::strtoull(s, nullptr, 0);
    return static_cast<uint64_t>(std::random_device{}()) << 32 | std::random_device{}();
  }();
  return base;
}

uint64_t fresh_seed() {
  // Derived from the base, the test, the device and the call's rank within
  // the test, so XHAL_CONF_SEED=<base> reproduces one test's data alone.
  static std::atomic<uint64_t> outside_tests{0};
  TestRecord* r = report().current();
  uint64_t n = r ? ++r->seed_count : ++outside_tests;
  uint64_t h = r ? std::hash<std::string>{}(r->test) : 0;
  uint64_t seed = seed_base() ^ h;
  seed += 0x9e3779b97f4a7c15ull * n;
  return seed;
}

std::vector<double> random_doubles(size_t n, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) {
    do x = dist(rng);
    while (x == 0.0);
  }
  return v;
}

namespace {
// The bits of an element, as the unsigned integer of its size.
uint32_t bits_of(float v) { return std::bit_cast<uint32_t>(v); }
uint64_t bits_of(double v) { return std::bit_cast<uint64_t>(v); }

template <class T>
std::string describe(size_t i, T got, double want) {
  std::ostringstream s;
  s.precision(sizeof(T) == 4 ? 9 : 17);
  s << "[" << i << "] got " << got << " (0x" << std::hex << bits_of(got) << std::dec << "), want "
    << want;
  if (is_poison(got)) s << " (poison: never written)";
  return s.str();
}

template <class T>
BitCompare compare_bits_t(const std::vector<T>& got, const std::vector<T>& want) {
  BitCompare c;
  if (got.size() != want.size()) {
    c.equal = false;
    c.first = "size " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
    return c;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    bool same = bits_of(got[i]) == bits_of(want[i]) ||
                (std::isnan(got[i]) && std::isnan(want[i]) && !is_poison(got[i]));
    if (same) continue;
    if (c.mismatches++ == 0) {
      std::ostringstream s;
      s << describe(i, got[i], want[i]) << " (0x" << std::hex << bits_of(want[i]) << ")";
      c.first = s.str();
    }
    c.equal = false;
  }
  return c;
}

template <class T>
AccuracyCompare compare_f64_t(const std::vector<T>& got, const ref64::Values& ref,
                              tol::Bound bound);
}  // namespace

BitCompare compare_bits(const std::vector<float>& got, const std::vector<float>& want) {
  return compare_bits_t(got, want);
}
BitCompare compare_bits(const std::vector<double>& got, const std::vector<double>& want) {
  return compare_bits_t(got, want);
}
AccuracyCompare compare_f64(const std::vector<float>& got, const ref64::Values& ref,
                            tol::Bound bound) {
  return compare_f64_t(got, ref, bound);
}
AccuracyCompare compare_f64(const std::vector<double>& got, const ref64::Values& ref,
                            tol::Bound bound) {
  return compare_f64_t(got, ref, bound);
}

bool same_bytes(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, std::string* first) {
  if (a.size() != b.size()) {
    *first = "size " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) {
      *first =
          "byte " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
      return false;
    }
  return true;
}

namespace {
template <class T>
AccuracyCompare compare_f64_t(const std::vector<T>& got, const ref64::Values& ref,
                              tol::Bound bound) {
  AccuracyCompare c;
  if (got.size() != ref.v.size()) {
    c.ok = false;
    c.first = "size mismatch";
    return c;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    double want = ref.v[i];
    bool ok;
    double ratio = 0;
    if (std::isnan(want) || std::isnan(got[i])) {
      ok = std::isnan(want) && std::isnan(got[i]) && !is_poison(got[i]);
    } else if (std::isinf(want) || std::isinf(got[i])) {
      ok = want == static_cast<double>(got[i]);
    } else {
      double allowed = bound.rel * ref.scale[i] + bound.abs;
      ratio = std::fabs(got[i] - want) / allowed;
      ok = ratio <= 1.0;
    }
    c.worst = std::max(c.worst, ratio);
    if (ok) continue;
    if (c.failures++ == 0) {
      std::ostringstream s;
      s << describe(i, got[i], want) << ", allowed +-" << bound.rel * ref.scale[i] + bound.abs;
      c.first = s.str();
    }
    c.ok = false;
  }
  return c;
}

}  // namespace

void Grader::output(const std::string& name, const std::vector<float>& got,
                    const std::vector<float>& rerun, const std::vector<float>& canonical,
                    const ref64::Values& ref, tol::Bound bound) {
  output_t(name, got, rerun, canonical, ref, bound, "float32", "float64");
}
void Grader::output(const std::string& name, const std::vector<double>& got,
                    const std::vector<double>& rerun, const std::vector<double>& canonical,
                    const ref64::Values& ref, tol::Bound bound) {
  output_t(name, got, rerun, canonical, ref, bound, "float64", "long double");
}

template <class T>
void Grader::output_t(const std::string& name, const std::vector<T>& got,
                      const std::vector<T>& rerun, const std::vector<T>& canonical,
                      const ref64::Values& ref, tol::Bound bound, const char* canonical_type,
                      const char* reference_type) {
  BitCompare exact = compare_bits(got, canonical);
  BitCompare again = compare_bits(got, rerun);
  AccuracyCompare acc = compare_f64(got, ref, bound);
  if (!exact.equal) {
    bit_exact_ = false;
    details_ += "\n  " + name + ": " + std::to_string(exact.mismatches) +
                " element(s) differ from the canonical " + canonical_type + " reference; first " +
                exact.first;
  }
  if (!again.equal) {
    accurate_ = false;
    details_ += "\n  " + name + ": not deterministic, a second identical call differs; first " +
                again.first;
  }
  if (!acc.ok) {
    accurate_ = false;
    details_ += "\n  " + name + ": " + std::to_string(acc.failures) +
                " element(s) outside the bound around the " + reference_type +
                " reference; first " + acc.first;
  }
}

void Grader::output_narrow(const std::string& name, xhal_dtype_t dtype,
                           const std::vector<uint16_t>& got, const std::vector<uint16_t>& rerun,
                           const std::vector<uint16_t>& canonical, const ref64::Values& ref,
                           tol::Bound f32_bound, uint16_t poison) {
  const char* type = xhal_dtype_name(dtype);
  auto hex = [](uint16_t v) {
    char b[8];
    std::snprintf(b, sizeof b, "0x%04x", v);
    return std::string(b);
  };
  auto first_difference = [&](const std::vector<uint16_t>& a, const std::vector<uint16_t>& b,
                              size_t* count) {
    std::string first;
    *count = 0;
    if (a.size() != b.size()) {
      *count = 1;
      return "size " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
    }
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] == b[i] && a[i] != poison) continue;
      if ((*count)++ == 0) {
        // Appended piece by piece: gcc 12's -Wrestrict misfires on a chain
        // of operator+ starting from a literal here.
        first.append("[").append(std::to_string(i)).append("] got ").append(hex(a[i]));
        first.append(" (").append(std::to_string(narrow::widen(dtype, a[i]))).append(")");
        if (a[i] == poison) first.append(" (poison: never written)");
        first.append(", want ").append(hex(b[i])).append(" (");
        first.append(std::to_string(narrow::widen(dtype, b[i]))).append(")");
      }
    }
    return first;
  };
  size_t count = 0;
  std::string first = first_difference(got, canonical, &count);
  if (count) {
    bit_exact_ = false;
    details_ += "\n  " + name + ": " + std::to_string(count) +
                " element(s) differ from the canonical " + type + " reference; first " + first;
  }
  first = first_difference(got, rerun, &count);
  if (count) {
    accurate_ = false;
    details_ +=
        "\n  " + name + ": not deterministic, a second identical call differs; first " + first;
  }
  const tol::Bound bound{f32_bound.rel + narrow::unit_roundoff(dtype),
                         std::max(f32_bound.abs, narrow::abs_floor(dtype))};
  const double max_finite = narrow::max_finite(dtype);
  size_t failures = 0;
  first.clear();
  for (size_t i = 0; i < got.size() && i < ref.v.size(); ++i) {
    const double g = narrow::widen(dtype, got[i]), want = ref.v[i];
    bool ok;
    if (got[i] == poison) {
      ok = false;
    } else if (std::isnan(want) || std::isnan(g)) {
      ok = std::isnan(want) && std::isnan(g);
    } else if (std::isinf(g)) {  // overflow: the infinity of the reference's sign
      ok = (std::isinf(want) && g == want) ||
           (std::fabs(want) >= max_finite && std::signbit(g) == std::signbit(want));
    } else if (std::isinf(want)) {
      ok = false;
    } else {
      ok = std::fabs(g - want) <= bound.rel * ref.scale[i] + bound.abs;
    }
    if (ok) continue;
    if (failures++ == 0) {
      std::ostringstream s;
      s.precision(9);
      s << "[" << i << "] got " << g << " (" << hex(got[i]) << "), want " << want << ", allowed +-"
        << bound.rel * ref.scale[i] + bound.abs;
      first = s.str();
    }
  }
  if (got.size() != ref.v.size()) failures = std::max<size_t>(failures, 1);
  if (failures) {
    accurate_ = false;
    details_ += "\n  " + name + ": " + std::to_string(failures) +
                " element(s) outside the bound around the float64 reference; first " + first;
  }
}

Level Grader::finish() {
  Level level = bit_exact_ && accurate_ ? Level::kBitExact
                : accurate_             ? Level::kAccurate
                                        : Level::kNone;
  // A bit-exact result that misses the float64 bound means the reference or
  // the bound is wrong; report it rather than hide it.
  if (bit_exact_ && !accurate_) level = Level::kNone;
  record_level(level);
  EXPECT_NE(level, Level::kNone) << "neither bit-exact nor accurate:" << details_;
  if (require_bit_exact()) {
    EXPECT_NE(level, Level::kAccurate)
        << "accurate but not bit-exact (--require-bit-exact):" << details_;
  }
  if (level == Level::kAccurate) std::printf("  [accurate, not bit-exact]%s\n", details_.c_str());
  return level;
}

xhal_buffer_t poisoned_buffer(xhal_device_t dev, uint64_t bytes) {
  xhal_buffer_t b = nullptr;
  EXPECT_EQ(xhal_buffer_allocate(dev, bytes, &b), XHAL_OK) << xhal_last_error();
  if (b) poison(b);
  return b;
}

bool all_poison(const std::vector<float>& v) {
  return std::all_of(v.begin(), v.end(), [](float f) { return is_poison(f); });
}
bool all_poison(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double f) { return is_poison(f); });
}

namespace {
void make_plan_into(xhal_device_t dev, const std::vector<int64_t>& idx, uint64_t num_rows,
                    xhal_dtype_t dtype, xhal_index_plan_t* out) {
  std::vector<int32_t> idx32(idx.begin(), idx.end());
  const void* data = dtype == XHAL_DTYPE_I32 ? static_cast<const void*>(idx32.data()) : idx.data();
  ASSERT_EQ(xhal_index_plan_create(dev, data, dtype, idx.size(), num_rows, out), XHAL_OK)
      << xhal_last_error();
}
}  // namespace

xhal_index_plan_t make_plan(xhal_device_t dev, const std::vector<int64_t>& idx, uint64_t num_rows,
                            xhal_dtype_t dtype) {
  xhal_index_plan_t plan = nullptr;
  make_plan_into(dev, idx, num_rows, dtype, &plan);
  return plan;
}

uint32_t device_dtypes(xhal_device_t dev, xhal_op_t op) {
  xhal_device_info_t info{};
  info.struct_size = sizeof info;
  if (xhal_device_query(dev, &info) != XHAL_OK) return 0;
  return (info.supported_ops >> op & 1) ? info.op_dtypes[op] : 0;
}

bool device_has_sparse_ops(xhal_device_t dev) {
  for (xhal_op_t op :
       {XHAL_OP_SPMV, XHAL_OP_SPMM, XHAL_OP_CSR_SOLVE, XHAL_OP_CSR_SOLVE_BACKWARD, XHAL_OP_SPGEMM})
    if (device_dtypes(dev, op) != 0) return true;
  return false;
}

bool device_supports(xhal_device_t dev, xhal_op_t op, xhal_dtype_t dtype) {
  xhal_device_info_t info{};
  info.struct_size = sizeof info;
  if (xhal_device_query(dev, &info) != XHAL_OK) return false;
  return (info.supported_ops >> op & 1) && (info.op_dtypes[op] >> dtype & 1);
}

}  // namespace xhal::conf
