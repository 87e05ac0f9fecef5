// Glue between the sparse references and a device under test: creating
// matrices from a host Csr, dense operands, the bit-exact / accurate level
// decision and the float64 bound checks. Used only by tests/sparse_*.cpp.
#pragma once

#include <gtest/gtest.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "../check.h"
#include "../harness.h"
#include "../runner.h"
#include "sparse_generators.h"
#include "sparse_reference.h"

namespace xhal::conf::sparse {

// Fixture of the tests of one sparse op: a device without the op (no slot,
// or no f32 in its device info) makes each of them "unsupported", not
// failed (xhal_csr_create itself is XHAL_UNSUPPORTED on a device without
// sparse ops). A test that also calls another op adds
// XHAL_CONF_REQUIRE_ALSO(other).
template <xhal_op_t Op>
class SparseOpTest : public DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (HasFatalFailure()) return;
    XHAL_CONF_REQUIRE_OP(Op);
  }
};

// Owns a device matrix handle.
class Matrix {
 public:
  Matrix() = default;
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  ~Matrix() { reset(); }
  void reset() {
    if (m_) xhal_csr_release(m_);
    m_ = nullptr;
  }
  xhal_csr_t get() const { return m_; }
  xhal_csr_t* out() {
    reset();
    return &m_;
  }

 private:
  xhal_csr_t m_ = nullptr;
};

// Host arrays of `a` in `index_dtype`, kept alive with the descriptor.
struct HostDesc {
  std::vector<uint8_t> row_ptr, col_idx;
  std::vector<float> values;
  xhal_csr_desc_t desc{};
  HostDesc(const Csr& a, xhal_dtype_t index_dtype, bool with_values = true)
      : row_ptr(index_bytes(a.row_ptr, index_dtype)),
        col_idx(index_bytes(a.col_idx, index_dtype)),
        values(a.values) {
    desc.struct_size = sizeof(xhal_csr_desc_t);
    desc.rows = a.rows;
    desc.cols = a.cols;
    desc.nnz = a.nnz();
    desc.index_dtype = index_dtype;
    desc.row_ptr = row_ptr.data();
    desc.col_idx = col_idx.empty() ? nullptr : col_idx.data();
    desc.values = with_values && !values.empty() ? values.data() : nullptr;
  }
};

inline xhal_status_t create_from_host(xhal_device_t dev, const Csr& a, xhal_dtype_t index_dtype,
                                      Matrix& m) {
  HostDesc h(a, index_dtype);
  return xhal_csr_create(dev, &h.desc, m.out());
}

// A descriptor of `a` whose pattern and values were uploaded to device
// buffers first (held by `guard`; nnz = 0 gives 0-byte buffers).
inline xhal_csr_desc_t buffers_desc(xhal_device_t dev, const Csr& a, xhal_dtype_t index_dtype,
                                    BufferGuard& guard, bool with_values = true) {
  const auto rp = index_bytes(a.row_ptr, index_dtype);
  const auto ci = index_bytes(a.col_idx, index_dtype);
  xhal_csr_desc_t d{};
  d.struct_size = sizeof(d);
  d.rows = a.rows;
  d.cols = a.cols;
  d.nnz = a.nnz();
  d.index_dtype = index_dtype;
  d.row_ptr_buffer = guard.add(upload(dev, rp.data(), rp.size()));
  d.col_idx_buffer = guard.add(upload(dev, ci.data(), ci.size()));
  if (with_values) d.values_buffer = guard.add(upload(dev, a.values));
  return d;
}

// Pattern and values uploaded to device buffers first (held by `guard`).
inline xhal_status_t create_from_buffers(xhal_device_t dev, const Csr& a, xhal_dtype_t index_dtype,
                                         BufferGuard& guard, Matrix& m, bool with_values = true) {
  const xhal_csr_desc_t d = buffers_desc(dev, a, index_dtype, guard, with_values);
  return xhal_csr_create(dev, &d, m.out());
}

inline std::vector<int64_t> dense_shape(int64_t n, int64_t k, bool as_vector) {
  return as_vector ? std::vector<int64_t>{n} : std::vector<int64_t>{n, k};
}

// Device copy of `v` (f32 or f64) viewed with `shape`.
template <class T>
inline xhal_tensor_t dense(xhal_device_t dev, BufferGuard& guard, const std::vector<T>& v,
                           std::vector<int64_t> shape) {
  xhal_buffer_t b = guard.add(upload(dev, v.data(), v.size() * sizeof(T)));
  return tensor(b, dtype_of<T>(), std::move(shape));
}
// f32, also from a braced list.
inline xhal_tensor_t dense(xhal_device_t dev, BufferGuard& guard, const std::vector<float>& v,
                           std::vector<int64_t> shape) {
  return dense<float>(dev, guard, v, std::move(shape));
}

// A poisoned (NaN pattern) device tensor of `count` elements of T.
template <class T = float>
inline xhal_tensor_t poisoned(xhal_device_t dev, BufferGuard& guard, int64_t count,
                              std::vector<int64_t> shape) {
  std::vector<T> zeros(static_cast<size_t>(count), T(0));
  xhal_buffer_t b = guard.add(upload(dev, zeros.data(), zeros.size() * sizeof(T)));
  poison(b);
  return tensor(b, dtype_of<T>(), std::move(shape));
}

inline int64_t elements(const xhal_tensor_t& t) {
  int64_t n = 1;
  for (uint32_t d = 0; d < t.rank; ++d) n *= t.shape[d];
  return n;
}

template <class T = float>
inline std::vector<T> read(const xhal_tensor_t& t) {
  return download<T>(t.buffer, static_cast<size_t>(elements(t)), t.offset);
}

template <class T>
inline void rewrite(const xhal_tensor_t& t, const std::vector<T>& v) {
  ASSERT_EQ(xhal_buffer_write(t.buffer, t.offset, v.data(), v.size() * sizeof(T)), XHAL_OK)
      << xhal_last_error();
}

// Runs `op` between two counter snapshots (after a synchronize) and expects
// no host transfer and at least `launches` kernel launches (one per op call
// that reaches the plugin; 0 for work the core does itself). d2h_only:
// host-to-device uploads are allowed (spgemm uploads the pattern it
// computed on the host).
inline xhal_status_t run_on_device(xhal_device_t dev, const std::function<xhal_status_t()>& op,
                                   bool d2h_only = false, uint64_t launches = 1) {
  EXPECT_EQ(xhal_device_synchronize(dev), XHAL_OK);
  const xhal_counters_t before = counters(dev);
  const xhal_status_t st = op();
  const std::string message = st == XHAL_OK ? "" : xhal_last_error();
  EXPECT_EQ(xhal_device_synchronize(dev), XHAL_OK);
  const xhal_counters_t after = counters(dev);
  if (d2h_only) {
    EXPECT_EQ(before.device_to_host_transfers, after.device_to_host_transfers);
    EXPECT_GE(after.kernel_launches, before.kernel_launches + launches);
  } else {
    XHAL_CONF_EXPECT_OP_COUNTERS(before, after, launches);
  }
  EXPECT_EQ(st, XHAL_OK) << xhal_status_name(st) << ": " << message;
  return st;
}

inline uint32_t bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

inline uint64_t bits(double v) {
  uint64_t u;
  std::memcpy(&u, &v, 8);
  return u;
}

inline std::string describe(float v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g (0x%08" PRIx32 ")", double(v), bits(v));
  return buf;
}

inline std::string describe(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g (0x%016" PRIx64 ")", v, bits(v));
  return buf;
}

template <class T>
inline bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <class T>
inline std::string first_difference(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size())
    return "sizes " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  size_t count = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (bits(got[i]) != bits(want[i]) && count++ == 0) first = i;
  if (count == 0) return "identical";
  return std::to_string(count) + " of " + std::to_string(got.size()) + " differ; first [" +
         std::to_string(first) + "] got " + describe(got[first]) + " canonical " +
         describe(want[first]);
}

template <class T>
inline bool any_poison(const std::vector<T>& v) {
  for (T x : v)
    if (is_poison(x)) return true;
  return false;
}

// The runner's seed for this test: XHAL_CONF_SEED=<base printed at start>
// reproduces a run's data.
inline uint64_t test_seed() { return ::xhal::conf::fresh_seed(); }

// The level a test demonstrated: bit-exact while every output matched the
// canonical reference bit for bit; accurate once an output differed but a
// rerun reproduced it exactly (the bound checks are separate EXPECTs).
// Records the level when it goes out of scope (kNone if the test failed).
class LevelTracker {
 public:
  explicit LevelTracker(xhal_op_t op) { record_op(op); }
  ~LevelTracker() { record_level(::testing::Test::HasFailure() ? Level::kNone : level_); }
  template <class T>
  void compare(const std::string& what, const std::vector<T>& got, const std::vector<T>& canonical,
               const std::function<std::vector<std::type_identity_t<T>>()>& rerun) {
    EXPECT_FALSE(any_poison(got)) << what << ": output not fully written";
    if (same_bits(got, canonical)) return;
    const std::string diff = first_difference(got, canonical);
    std::printf("[ sparse   ] %s: not bit-exact: %s\n", what.c_str(), diff.c_str());
    // --require-bit-exact: accurate is not enough (the CPU backend claims bits).
    if (::xhal::conf::require_bit_exact()) ADD_FAILURE() << what << ": not bit-exact: " << diff;
    const std::vector<T> again = rerun();
    EXPECT_TRUE(same_bits(got, again))
        << what << ": not deterministic across two runs: " << first_difference(again, got);
    if (level_ == Level::kBitExact) level_ = Level::kAccurate;
  }
  Level level() const { return level_; }

 private:
  Level level_ = Level::kBitExact;
};

// |got - ref| <= bound elementwise; reports the first few violations.
inline void expect_within(const std::string& what, const std::vector<float>& got,
                          const std::vector<double>& ref, const std::vector<double>& bound) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - ref[i]);
    if (!(err <= bound[i])) {
      if (reported++ < 5)
        ADD_FAILURE() << what << "[" << i << "]: got " << describe(got[i]) << " float64 " << ref[i]
                      << " error " << err << " > bound " << bound[i];
    }
  }
}

// Section 5 bound for spmv/spmm: (terms + 2) * 2^-23 * (|alpha| sum|A x| +
// |beta y|): the row's products plus the alpha and beta roundings.
inline std::vector<double> spmm_bound(const Csr& a, xhal_transpose_t trans, float alpha,
                                      const std::vector<float>& x, float beta,
                                      const std::vector<float>& y, int64_t k) {
  std::vector<int64_t> terms;
  auto mag = spmm_magnitude(a, trans, alpha, to_f64(x), beta,
                            beta == 0.0f ? std::vector<double>() : to_f64(y), k, &terms);
  for (int64_t i = 0; i < op_rows(a, trans); ++i)
    for (int64_t c = 0; c < k; ++c) mag[i * k + c] *= double(terms[i] + 2) * 0x1p-23;
  return mag;
}

// Section 5 residual bound of a solve: |op(A) x - b| <= 1e-5 (|op(A)||x| + |b|).
inline void expect_solve_residual(const std::string& what, const Csr& a, xhal_transpose_t trans,
                                  xhal_diagonal_t diagonal, const std::vector<float>& x,
                                  const std::vector<float>& b, int64_t k) {
  const auto xd = to_f64(x);
  const auto ax = triangular_apply_f64(a, trans, diagonal, xd, k, false);
  const auto mag = triangular_apply_f64(a, trans, diagonal, xd, k, true);
  int reported = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    const double r = std::fabs(ax[i] - double(b[i]));
    const double bound = 1e-5 * (mag[i] + std::fabs(double(b[i])));
    if (!(r <= bound) && reported++ < 5)
      ADD_FAILURE() << what << ": residual [" << i << "] " << r << " > " << bound
                    << " (x = " << describe(x[i]) << ")";
  }
}

// SCOPED_TRACE text for a seed.
inline std::string seed_note(const Rng& rng) {
  return "seed " + std::to_string(rng.seed()) +
         " (replay the run: XHAL_CONF_SEED=" + std::to_string(::xhal::conf::seed_base()) + ")";
}

inline const char* index_name(xhal_dtype_t d) { return d == XHAL_DTYPE_I32 ? "i32" : "i64"; }
inline const char* trans_name(xhal_transpose_t t) { return t == XHAL_TRANSPOSE ? "A^T" : "A"; }
inline const char* tri_name(xhal_triangle_t t) {
  return t == XHAL_TRIANGLE_LOWER ? "lower" : "upper";
}
inline const char* diag_name(xhal_diagonal_t d) {
  return d == XHAL_DIAGONAL_UNIT ? "unit" : "stored";
}

}  // namespace xhal::conf::sparse
