// softmax forward and backward over the last dim.
#include <algorithm>
#include <cmath>
#include <limits>

#include "check.h"
#include "reference/canonical.h"
#include "reference/f64.h"
#include "signed_zero.h"

namespace xhal::conf {
namespace {

class SoftmaxTest : public DeviceTest {};

constexpr float kInf = std::numeric_limits<float>::infinity();

// Runs softmax_forward twice (two poisoned outputs) on x [rows, n] and grades.
// T: float (f32) or double (f64, docs/semantics.md 7.3).
template <class T>
void check_forward(xhal_device_t dev, const std::vector<T>& x, int64_t rows, int64_t n) {
  constexpr xhal_dtype_t kDtype = dtype_of<T>();
  BufferGuard g;
  size_t count = static_cast<size_t>(rows * n);
  xhal_buffer_t xb = g.add(upload(dev, x));
  xhal_buffer_t y1 = g.add(poisoned_buffer(dev, count * sizeof(T) + 64)),
                y2 = g.add(poisoned_buffer(dev, count * sizeof(T)));
  ASSERT_NE(y2, nullptr);
  xhal_tensor_t xt = tensor(xb, kDtype, {rows, n});
  xhal_tensor_t t1 = tensor(y1, kDtype, {rows, n}), t2 = tensor(y2, kDtype, {rows, n});
  xhal_counters_t before = counters(dev);
  ASSERT_EQ(xhal_softmax_forward(dev, &xt, &t1), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_softmax_forward(dev, &xt, &t2), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_device_synchronize(dev), XHAL_OK);
  xhal_counters_t after = counters(dev);
  XHAL_CONF_EXPECT_OP_COUNTERS(before, after, 2);
  std::vector<T> canonical(count);
  canon::softmax_forward(x.data(), rows, n, canonical.data());
  Grader grader;
  grader.output("y", download<T>(y1, count), download<T>(y2, count), canonical,
                ref64::softmax_forward(x.data(), rows, n),
                tol::for_dtype<T>(tol::kSoftmaxForward, tol::kSoftmaxForward64));
  grader.finish();
  EXPECT_TRUE(all_poison(download_f32(y1, 16, count * sizeof(T)))) << "wrote past y";
}

template <class T>
void check_backward(xhal_device_t dev, const std::vector<T>& y, const std::vector<T>& dy,
                    int64_t rows, int64_t n) {
  constexpr xhal_dtype_t kDtype = dtype_of<T>();
  BufferGuard g;
  size_t count = static_cast<size_t>(rows * n);
  xhal_buffer_t yb = g.add(upload(dev, y)), dyb = g.add(upload(dev, dy));
  xhal_buffer_t d1 = g.add(poisoned_buffer(dev, count * sizeof(T))),
                d2 = g.add(poisoned_buffer(dev, count * sizeof(T)));
  ASSERT_NE(d2, nullptr);
  xhal_tensor_t yt = tensor(yb, kDtype, {rows, n}), dyt = tensor(dyb, kDtype, {rows, n});
  xhal_tensor_t t1 = tensor(d1, kDtype, {rows, n}), t2 = tensor(d2, kDtype, {rows, n});
  xhal_counters_t before = counters(dev);
  ASSERT_EQ(xhal_softmax_backward(dev, &yt, &dyt, &t1), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_softmax_backward(dev, &yt, &dyt, &t2), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_device_synchronize(dev), XHAL_OK);
  xhal_counters_t after = counters(dev);
  XHAL_CONF_EXPECT_OP_COUNTERS(before, after, 2);
  std::vector<T> canonical(count);
  canon::softmax_backward(y.data(), dy.data(), rows, n, canonical.data());
  Grader grader;
  grader.output("dx", download<T>(d1, count), download<T>(d2, count), canonical,
                ref64::softmax_backward(y.data(), dy.data(), rows, n),
                tol::for_dtype<T>(tol::kSoftmaxBackward, tol::kSoftmaxBackward64));
  grader.finish();
}

TEST_P(SoftmaxTest, ForwardRandomRows) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SOFTMAX_FORWARD);
  check_forward(dev, random_floats(37 * 2500, fresh_seed(), -8.0f, 8.0f), 37, 2500);
  check_forward(dev, random_floats(64 * 1024, fresh_seed(), -8.0f, 8.0f), 64,
                1024);  // one full chunk
  check_forward(dev, random_floats(5 * 33, fresh_seed(), -8.0f, 8.0f), 5, 33);
}

TEST_P(SoftmaxTest, ForwardLargeTinyEqualAndInfiniteEntries) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SOFTMAX_FORWARD);
  const int64_t n = 3000;
  std::vector<float> x;
  auto row = [&](std::vector<float> r) { x.insert(x.end(), r.begin(), r.end()); };
  row(random_floats(n, fresh_seed(), 60.0f, 88.0f));     // large: exp would overflow unshifted
  row(random_floats(n, fresh_seed(), -1e-30f, 1e-30f));  // tiny: all nearly equal
  row(std::vector<float>(n, 3.25f));                     // equal
  std::vector<float> r = random_floats(n, fresh_seed(), -5.0f, 5.0f);
  for (int64_t i = 0; i < n; i += 3) r[i] = -kInf;  // -inf entries give exact 0
  row(r);
  row(std::vector<float>(n, -kInf));                    // all -inf: NaN row
  r = random_floats(n, fresh_seed(), -120.0f, -90.0f);  // subnormal exps beside one 0
  r[1777] = 0.0f;
  row(r);
  r = random_floats(n, fresh_seed(), -3.0f, 3.0f);  // -inf only in the last chunk
  r[n - 1] = -kInf;
  row(r);
  r = random_floats(n, fresh_seed(), -3.0f, 3.0f);  // a whole chunk of -inf
  std::fill(r.begin() + 1024, r.begin() + 2048, -kInf);
  row(r);
  r = random_floats(n, fresh_seed(), -3.0f, 3.0f);  // one +inf: NaN row
  r[2100] = kInf;
  row(r);
  r = random_floats(n, fresh_seed(), -3.0f, 3.0f);  // one NaN: NaN row
  r[5] = std::numeric_limits<float>::quiet_NaN();
  row(r);
  check_forward(dev, x, 10, n);
}

TEST_P(SoftmaxTest, ForwardRowOf200001Columns) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SOFTMAX_FORWARD);
  check_forward(dev, random_floats(200001, fresh_seed(), -10.0f, 10.0f), 1, 200001);
  check_forward(dev, random_floats(2 * 70001, fresh_seed(), -10.0f, 10.0f), 2, 70001);
}

// Many rows longer than a GPU block: more row segments than a GPU holds
// blocks at once, so a block that keeps its segment in registers while the
// row's other segments arrive (the cuda plugin's resident form) takes
// several rows in turn; the backward rows are 256 chunks long.
TEST_P(SoftmaxTest, ForwardManyLongRows) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SOFTMAX_FORWARD);
  check_forward(dev, random_floats(96 * 100000, fresh_seed(), -10.0f, 10.0f), 96, 100000);
}

TEST_P(SoftmaxTest, BackwardManyLongRows) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SOFTMAX_BACKWARD);
  const int64_t rows = 48, n = 262144;
  std::vector<float> x = random_floats(rows * n, fresh_seed(), -6.0f, 6.0f), y(rows * n);
  canon::softmax_forward(x.data(), rows, n, y.data());
  check_backward(dev, y, random_floats(rows * n, fresh_seed(), -2.0f, 2.0f), rows, n);
}

TEST_P(SoftmaxTest, ForwardSingleRowSingleElementAndEmpty) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SOFTMAX_FORWARD);
  check_forward(dev, std::vector<float>{-3.5f}, 1, 1);
  check_forward(dev, random_floats(7, fresh_seed()), 1, 7);
  BufferGuard g;
  xhal_buffer_t xb = g.add(poisoned_buffer(dev, 16)), yb = g.add(poisoned_buffer(dev, 16));
  xhal_tensor_t xt = tensor(xb, XHAL_DTYPE_F32, {0, 5}), yt = tensor(yb, XHAL_DTYPE_F32, {0, 5});
  {
    OpCounters work(dev, 0);  // empty: the core returns before the plugin
    EXPECT_EQ(xhal_softmax_forward(dev, &xt, &yt), XHAL_OK) << xhal_last_error();
  }
  EXPECT_TRUE(all_poison(download_f32(yb, 4)));
}

TEST_P(SoftmaxTest, ForwardInPlace) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SOFTMAX_FORWARD);
  const int64_t rows = 9, n = 1500;
  std::vector<float> x = random_floats(rows * n, fresh_seed(), -6.0f, 6.0f);
  BufferGuard g;
  xhal_buffer_t b = g.add(upload(dev, x));
  xhal_tensor_t t = tensor(b, XHAL_DTYPE_F32, {rows, n});
  {
    OpCounters work(dev, 1);  // in place, still no host round trip
    ASSERT_EQ(xhal_softmax_forward(dev, &t, &t), XHAL_OK) << xhal_last_error();
  }
  std::vector<float> canonical(x.size());
  canon::softmax_forward(x.data(), rows, n, canonical.data());
  std::vector<float> got = download_f32(b, x.size());
  Grader grader;  // determinism: checked by the out-of-place tests
  grader.output("y (in place)", got, got, canonical, ref64::softmax_forward(x.data(), rows, n),
                tol::kSoftmaxForward);
  grader.finish();
}

TEST_P(SoftmaxTest, BackwardRandomRows) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SOFTMAX_BACKWARD);
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{37, 2500}, {3, 200001}, {1, 1}, {70, 33}}) {
    std::vector<float> x = random_floats(rows * n, fresh_seed(), -6.0f, 6.0f), y(rows * n);
    canon::softmax_forward(x.data(), rows, n, y.data());
    check_backward(dev, y, random_floats(rows * n, fresh_seed(), -2.0f, 2.0f), rows, n);
  }
}

TEST_P(SoftmaxTest, BackwardInPlaceOnDy) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SOFTMAX_BACKWARD);
  const int64_t rows = 4, n = 3000;
  std::vector<float> x = random_floats(rows * n, fresh_seed(), -6.0f, 6.0f), y(rows * n),
                     want(rows * n);
  canon::softmax_forward(x.data(), rows, n, y.data());
  std::vector<float> dy = random_floats(rows * n, fresh_seed());
  BufferGuard g;
  xhal_buffer_t yb = g.add(upload(dev, y)), dyb = g.add(upload(dev, dy));
  xhal_tensor_t yt = tensor(yb, XHAL_DTYPE_F32, {rows, n}),
                dyt = tensor(dyb, XHAL_DTYPE_F32, {rows, n});
  {
    OpCounters work(dev, 1);
    ASSERT_EQ(xhal_softmax_backward(dev, &yt, &dyt, &dyt), XHAL_OK) << xhal_last_error();
  }
  canon::softmax_backward(y.data(), dy.data(), rows, n, want.data());
  std::vector<float> got = download_f32(dyb, want.size());
  Grader grader;
  grader.output("dx (in place on dy)", got, got, want,
                ref64::softmax_backward(y.data(), dy.data(), rows, n), tol::kSoftmaxBackward);
  grader.finish();
}

// The device's forward then backward against central finite differences of
// the float64 forward: catches a backward formula that matches a wrong
// reference.
TEST_P(SoftmaxTest, BackwardMatchesFiniteDifferences) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SOFTMAX_BACKWARD);
  XHAL_CONF_REQUIRE_ALSO(XHAL_OP_SOFTMAX_FORWARD);
  const int64_t rows = 3, n = 9;
  std::vector<float> x = random_floats(rows * n, fresh_seed(), -3.0f, 3.0f);
  std::vector<float> dy = random_floats(rows * n, fresh_seed());
  BufferGuard g;
  xhal_buffer_t xb = g.add(upload(dev, x)), dyb = g.add(upload(dev, dy));
  xhal_buffer_t yb = g.add(poisoned_buffer(dev, x.size() * 4)),
                dxb = g.add(poisoned_buffer(dev, x.size() * 4));
  xhal_tensor_t xt = tensor(xb, XHAL_DTYPE_F32, {rows, n}),
                yt = tensor(yb, XHAL_DTYPE_F32, {rows, n});
  xhal_tensor_t dyt = tensor(dyb, XHAL_DTYPE_F32, {rows, n}),
                dxt = tensor(dxb, XHAL_DTYPE_F32, {rows, n});
  {
    OpCounters work(dev, 2);
    ASSERT_EQ(xhal_softmax_forward(dev, &xt, &yt), XHAL_OK) << xhal_last_error();
    ASSERT_EQ(xhal_softmax_backward(dev, &yt, &dyt, &dxt), XHAL_OK) << xhal_last_error();
  }
  std::vector<float> dx = download_f32(dxb, x.size());
  std::vector<double> xd(x.begin(), x.end()), dyd(dy.begin(), dy.end());
  for (size_t i = 0; i < x.size(); ++i) {
    double h = 1e-5, keep = xd[i];
    xd[i] = keep + h;
    double up = ref64::softmax_loss(xd, dyd, rows, n);
    xd[i] = keep - h;
    double down = ref64::softmax_loss(xd, dyd, rows, n);
    xd[i] = keep;
    EXPECT_NEAR(dx[i], (up - down) / (2 * h), 1e-4) << "element " << i;
  }
}

// Rows whose products y * dy are all -0 (signed_zero.h): d = rowsum(y * dy)
// is +0, so dx = y * (-0 - d) is -0 where dy = -0; a backend whose rowsum
// starts from -0 or folds `0 + t` into `t` gives d = -0 and dx = +0 there.
// Row lengths of one to 64 chunks, rows of dy +0, of y = +0 beside
// negative dy, half -0 and random.
template <class T>
void backward_signed_zero_rows(xhal_device_t dev) {
  for (int64_t n : signed_zero::kRowLengths) {
    SCOPED_TRACE("n " + std::to_string(n));
    const int64_t rows = signed_zero::kSoftmaxRows;
    std::vector<T> x, dy, y(rows * n);
    signed_zero::softmax_rows<T>(n, x, dy);
    canon::softmax_forward(x.data(), rows, n, y.data());
    check_backward(dev, y, dy, rows, n);
  }
}

TEST_P(SoftmaxTest, BackwardSignedZeroRows) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SOFTMAX_BACKWARD);
  backward_signed_zero_rows<float>(dev);
}

TEST_P(SoftmaxTest, BackwardF64SignedZeroRows) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_SOFTMAX_BACKWARD, XHAL_DTYPE_F64);
  backward_signed_zero_rows<double>(dev);
}

// f64 (docs/semantics.md 7.3): the same chunk and lane order in binary64,
// xhal_exp64. Row lengths with partial chunks (tails) and several chunks.
TEST_P(SoftmaxTest, ForwardF64RandomRowsAndTails) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_SOFTMAX_FORWARD, XHAL_DTYPE_F64);
  check_forward(dev, random_doubles(37 * 2500, fresh_seed(), -8.0, 8.0), 37, 2500);
  check_forward(dev, random_doubles(8 * 1024, fresh_seed(), -30.0, 30.0), 8, 1024);
  check_forward(dev, random_doubles(5 * 33, fresh_seed(), -8.0, 8.0), 5, 33);
  check_forward(dev, random_doubles(2 * 70001, fresh_seed(), -20.0, 20.0), 2, 70001);
  check_forward(dev, std::vector<double>{-3.5}, 1, 1);
}

TEST_P(SoftmaxTest, ForwardF64LargeTinyAndInfiniteEntries) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_SOFTMAX_FORWARD, XHAL_DTYPE_F64);
  const int64_t n = 3000;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> x;
  auto row = [&](std::vector<double> r) { x.insert(x.end(), r.begin(), r.end()); };
  row(random_doubles(n, fresh_seed(), 600.0, 709.0));  // exp64 would overflow unshifted
  row(random_doubles(n, fresh_seed(), -1e-300, 1e-300));
  std::vector<double> r = random_doubles(n, fresh_seed(), -5.0, 5.0);
  for (int64_t i = 0; i < n; i += 3) r[i] = -inf;
  row(r);
  row(std::vector<double>(n, -inf));                    // NaN row
  r = random_doubles(n, fresh_seed(), -740.0, -700.0);  // subnormal exps beside one 0
  r[1777] = 0.0;
  row(r);
  r = random_doubles(n, fresh_seed(), -3.0, 3.0);  // a whole chunk of -inf
  std::fill(r.begin() + 1024, r.begin() + 2048, -inf);
  row(r);
  r = random_doubles(n, fresh_seed(), -3.0, 3.0);  // one NaN: NaN row
  r[5] = std::numeric_limits<double>::quiet_NaN();
  row(r);
  check_forward(dev, x, 7, n);
}

TEST_P(SoftmaxTest, BackwardF64RandomRows) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_SOFTMAX_BACKWARD, XHAL_DTYPE_F64);
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{37, 2500}, {2, 70001}, {1, 1}, {70, 33}}) {
    std::vector<double> x = random_doubles(rows * n, fresh_seed(), -6.0, 6.0), y(rows * n);
    canon::softmax_forward(x.data(), rows, n, y.data());
    check_backward(dev, y, random_doubles(rows * n, fresh_seed(), -2.0, 2.0), rows, n);
  }
}

XHAL_CONF_INSTANTIATE(SoftmaxTest);

}  // namespace
}  // namespace xhal::conf
