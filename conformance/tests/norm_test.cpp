// RMSNorm and LayerNorm forward and backward: rows wider than one 1024-chunk,
// row counts that are not multiples of the 32-row colsum block, in place,
// finite differences of the float64 forward.
#include <cmath>

#include "check.h"
#include "reference/canonical.h"
#include "reference/f64.h"
#include "signed_zero.h"

namespace xhal::conf {
namespace {

class RmsNormTest : public DeviceTest {};
class LayerNormTest : public DeviceTest {};

constexpr float kEps = 1e-5f;

struct Shape {
  int64_t rows, n;
};
// Several chunks per row (4099, 20000), partial chunks, rows not a multiple
// of 32 (45, 70, 33, 100), one row, one column.
// The last two have over 4,096 rows (ragged in rows and in n): a GPU that
// fuses the dgamma/dbeta column sums into its row walk only from there on
// (the cuda plugin does) is checked in that form too. 40 x 70001: rows
// longer than any one GPU block, ragged (a partial unit of four).
const Shape kShapes[] = {{45, 7}, {70, 1024}, {33, 1500}, {5, 4099},  {3, 20000},  {100, 33},
                         {1, 1},  {1, 5},     {64, 1},    {4100, 40}, {4127, 300}, {40, 70001}};

// T: float (f32) or double (f64, docs/semantics.md 7.3; gamma, beta and the
// saved mean and rstd in f64 too).
template <class T = float>
struct Data {
  std::vector<T> x, gamma, beta, dy;
};
template <class T = float>
Data<T> make_data(const Shape& s) {
  if constexpr (sizeof(T) == 8)
    return {random_doubles(s.rows * s.n, fresh_seed(), -3.0, 3.0),
            random_doubles(s.n, fresh_seed(), 0.5, 2.0), random_doubles(s.n, fresh_seed()),
            random_doubles(s.rows * s.n, fresh_seed())};
  else
    return {random_floats(s.rows * s.n, fresh_seed(), -3.0f, 3.0f),
            random_floats(s.n, fresh_seed(), 0.5f, 2.0f), random_floats(s.n, fresh_seed()),
            random_floats(s.rows * s.n, fresh_seed())};
}

// Two poisoned outputs of `count` elements for the two identical runs.
template <class T = float>
struct Out {
  xhal_buffer_t a = nullptr, b = nullptr;
  xhal_tensor_t ta{}, tb{};
  size_t count = 0;
  Out(xhal_device_t dev, BufferGuard& g, std::vector<int64_t> shape) {
    count = 1;
    for (auto d : shape) count *= d;
    a = g.add(poisoned_buffer(dev, count * sizeof(T)));
    b = g.add(poisoned_buffer(dev, count * sizeof(T)));
    ta = tensor(a, dtype_of<T>(), shape);
    tb = tensor(b, dtype_of<T>(), shape);
  }
  std::vector<T> first() const { return download<T>(a, count); }
  std::vector<T> second() const { return download<T>(b, count); }
};

template <class T>
void rms_forward(xhal_device_t dev) {
  const tol::Bound bound = tol::for_dtype<T>(tol::kNorm, tol::kNorm64);
  for (const Shape& s : kShapes) {
    SCOPED_TRACE("rows " + std::to_string(s.rows) + " n " + std::to_string(s.n));
    Data<T> d = make_data<T>(s);
    BufferGuard g;
    xhal_buffer_t xb = g.add(upload(dev, d.x)), gb = g.add(upload(dev, d.gamma));
    xhal_tensor_t xt = tensor(xb, dtype_of<T>(), {s.rows, s.n}),
                  gt = tensor(gb, dtype_of<T>(), {s.n});
    Out<T> y(dev, g, {s.rows, s.n}), rstd(dev, g, {s.rows});
    xhal_counters_t before = counters(dev);
    ASSERT_EQ(xhal_rms_norm_forward(dev, &xt, &gt, kEps, &y.ta, &rstd.ta), XHAL_OK)
        << xhal_last_error();
    ASSERT_EQ(xhal_rms_norm_forward(dev, &xt, &gt, kEps, &y.tb, &rstd.tb), XHAL_OK)
        << xhal_last_error();
    ASSERT_EQ(xhal_device_synchronize(dev), XHAL_OK);
    xhal_counters_t after = counters(dev);
    XHAL_CONF_EXPECT_OP_COUNTERS(before, after, 2);
    std::vector<T> cy(y.count), cr(rstd.count);
    canon::rms_norm_forward(d.x.data(), d.gamma.data(), s.rows, s.n, kEps, cy.data(), cr.data());
    auto r = ref64::rms_norm_forward(d.x.data(), d.gamma.data(), s.rows, s.n, kEps);
    Grader grader;
    grader.output("y", y.first(), y.second(), cy, r.y, bound);
    grader.output("rstd", rstd.first(), rstd.second(), cr, r.rstd, bound);
    grader.finish();
  }
}

TEST_P(RmsNormTest, Forward) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_RMS_NORM_FORWARD);
  rms_forward<float>(dev);
}

TEST_P(RmsNormTest, ForwardF64) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_RMS_NORM_FORWARD, XHAL_DTYPE_F64);
  rms_forward<double>(dev);
}

// One backward call pair on d (x, gamma, dy), with the canonical rstd of x.
template <class T>
void rms_backward_case(xhal_device_t dev, const Shape& s, const Data<T>& d) {
  const tol::Bound bound = tol::for_dtype<T>(tol::kNorm, tol::kNorm64);
  std::vector<T> y(s.rows * s.n), rs(s.rows);
  canon::rms_norm_forward(d.x.data(), d.gamma.data(), s.rows, s.n, kEps, y.data(), rs.data());
  BufferGuard g;
  xhal_buffer_t xb = g.add(upload(dev, d.x)), gb = g.add(upload(dev, d.gamma)),
                rb = g.add(upload(dev, rs)), dyb = g.add(upload(dev, d.dy));
  xhal_tensor_t xt = tensor(xb, dtype_of<T>(), {s.rows, s.n}),
                gt = tensor(gb, dtype_of<T>(), {s.n});
  xhal_tensor_t rt = tensor(rb, dtype_of<T>(), {s.rows}),
                dyt = tensor(dyb, dtype_of<T>(), {s.rows, s.n});
  Out<T> dx(dev, g, {s.rows, s.n}), dg(dev, g, {s.n});
  xhal_counters_t before = counters(dev);
  ASSERT_EQ(xhal_rms_norm_backward(dev, &xt, &gt, &rt, &dyt, &dx.ta, &dg.ta), XHAL_OK)
      << xhal_last_error();
  ASSERT_EQ(xhal_rms_norm_backward(dev, &xt, &gt, &rt, &dyt, &dx.tb, &dg.tb), XHAL_OK)
      << xhal_last_error();
  ASSERT_EQ(xhal_device_synchronize(dev), XHAL_OK);
  xhal_counters_t after = counters(dev);
  XHAL_CONF_EXPECT_OP_COUNTERS(before, after, 2);
  std::vector<T> cdx(dx.count), cdg(dg.count);
  canon::rms_norm_backward(d.x.data(), d.gamma.data(), rs.data(), d.dy.data(), s.rows, s.n,
                           cdx.data(), cdg.data());
  auto r =
      ref64::rms_norm_backward(d.x.data(), d.gamma.data(), rs.data(), d.dy.data(), s.rows, s.n);
  Grader grader;
  grader.output("dx", dx.first(), dx.second(), cdx, r.dx, bound);
  grader.output("dgamma", dg.first(), dg.second(), cdg, r.dgamma, bound);
  grader.finish();
}

template <class T>
void rms_backward(xhal_device_t dev) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE("rows " + std::to_string(s.rows) + " n " + std::to_string(s.n));
    rms_backward_case<T>(dev, s, make_data<T>(s));
  }
}

TEST_P(RmsNormTest, Backward) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_RMS_NORM_BACKWARD);
  rms_backward<float>(dev);
}

TEST_P(RmsNormTest, BackwardF64) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_RMS_NORM_BACKWARD, XHAL_DTYPE_F64);
  rms_backward<double>(dev);
}

// One forward call pair on d (x, gamma, beta).
template <class T>
void layer_forward_case(xhal_device_t dev, const Shape& s, const Data<T>& d) {
  const tol::Bound bound = tol::for_dtype<T>(tol::kNorm, tol::kNorm64);
  BufferGuard g;
  xhal_buffer_t xb = g.add(upload(dev, d.x)), gb = g.add(upload(dev, d.gamma)),
                bb = g.add(upload(dev, d.beta));
  xhal_tensor_t xt = tensor(xb, dtype_of<T>(), {s.rows, s.n}),
                gt = tensor(gb, dtype_of<T>(), {s.n});
  xhal_tensor_t bt = tensor(bb, dtype_of<T>(), {s.n});
  Out<T> y(dev, g, {s.rows, s.n}), mean(dev, g, {s.rows}), rstd(dev, g, {s.rows});
  xhal_counters_t before = counters(dev);
  ASSERT_EQ(xhal_layer_norm_forward(dev, &xt, &gt, &bt, kEps, &y.ta, &mean.ta, &rstd.ta), XHAL_OK)
      << xhal_last_error();
  ASSERT_EQ(xhal_layer_norm_forward(dev, &xt, &gt, &bt, kEps, &y.tb, &mean.tb, &rstd.tb), XHAL_OK)
      << xhal_last_error();
  ASSERT_EQ(xhal_device_synchronize(dev), XHAL_OK);
  xhal_counters_t after = counters(dev);
  XHAL_CONF_EXPECT_OP_COUNTERS(before, after, 2);
  std::vector<T> cy(y.count), cm(mean.count), cr(rstd.count);
  canon::layer_norm_forward(d.x.data(), d.gamma.data(), d.beta.data(), s.rows, s.n, kEps, cy.data(),
                            cm.data(), cr.data());
  auto r = ref64::layer_norm_forward(d.x.data(), d.gamma.data(), d.beta.data(), s.rows, s.n, kEps);
  Grader grader;
  grader.output("y", y.first(), y.second(), cy, r.y, bound);
  grader.output("mean", mean.first(), mean.second(), cm, r.mean, bound);
  grader.output("rstd", rstd.first(), rstd.second(), cr, r.rstd, bound);
  grader.finish();
}

template <class T>
void layer_forward(xhal_device_t dev) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE("rows " + std::to_string(s.rows) + " n " + std::to_string(s.n));
    layer_forward_case<T>(dev, s, make_data<T>(s));
  }
}

TEST_P(LayerNormTest, Forward) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_LAYER_NORM_FORWARD);
  layer_forward<float>(dev);
}

TEST_P(LayerNormTest, ForwardF64) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_LAYER_NORM_FORWARD, XHAL_DTYPE_F64);
  layer_forward<double>(dev);
}

// One backward call pair on d (x, gamma, beta, dy), with the canonical mean
// and rstd of x.
template <class T>
void layer_backward_case(xhal_device_t dev, const Shape& s, const Data<T>& d) {
  const tol::Bound bound = tol::for_dtype<T>(tol::kNorm, tol::kNorm64);
  std::vector<T> y(s.rows * s.n), mu(s.rows), rs(s.rows);
  canon::layer_norm_forward(d.x.data(), d.gamma.data(), d.beta.data(), s.rows, s.n, kEps, y.data(),
                            mu.data(), rs.data());
  BufferGuard g;
  xhal_buffer_t xb = g.add(upload(dev, d.x)), gb = g.add(upload(dev, d.gamma)),
                mb = g.add(upload(dev, mu)), rb = g.add(upload(dev, rs)),
                dyb = g.add(upload(dev, d.dy));
  xhal_tensor_t xt = tensor(xb, dtype_of<T>(), {s.rows, s.n}),
                gt = tensor(gb, dtype_of<T>(), {s.n});
  xhal_tensor_t mt = tensor(mb, dtype_of<T>(), {s.rows}), rt = tensor(rb, dtype_of<T>(), {s.rows});
  xhal_tensor_t dyt = tensor(dyb, dtype_of<T>(), {s.rows, s.n});
  Out<T> dx(dev, g, {s.rows, s.n}), dg(dev, g, {s.n}), db(dev, g, {s.n});
  xhal_counters_t before = counters(dev);
  ASSERT_EQ(xhal_layer_norm_backward(dev, &xt, &gt, &mt, &rt, &dyt, &dx.ta, &dg.ta, &db.ta),
            XHAL_OK)
      << xhal_last_error();
  ASSERT_EQ(xhal_layer_norm_backward(dev, &xt, &gt, &mt, &rt, &dyt, &dx.tb, &dg.tb, &db.tb),
            XHAL_OK)
      << xhal_last_error();
  ASSERT_EQ(xhal_device_synchronize(dev), XHAL_OK);
  xhal_counters_t after = counters(dev);
  XHAL_CONF_EXPECT_OP_COUNTERS(before, after, 2);
  std::vector<T> cdx(dx.count), cdg(dg.count), cdb(db.count);
  canon::layer_norm_backward(d.x.data(), d.gamma.data(), mu.data(), rs.data(), d.dy.data(), s.rows,
                             s.n, cdx.data(), cdg.data(), cdb.data());
  auto r = ref64::layer_norm_backward(d.x.data(), d.gamma.data(), mu.data(), rs.data(), d.dy.data(),
                                      s.rows, s.n);
  Grader grader;
  grader.output("dx", dx.first(), dx.second(), cdx, r.dx, bound);
  grader.output("dgamma", dg.first(), dg.second(), cdg, r.dgamma, bound);
  grader.output("dbeta", db.first(), db.second(), cdb, r.dbeta, bound);
  grader.finish();
}

template <class T>
void layer_backward(xhal_device_t dev) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE("rows " + std::to_string(s.rows) + " n " + std::to_string(s.n));
    layer_backward_case<T>(dev, s, make_data<T>(s));
  }
}

TEST_P(LayerNormTest, Backward) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_LAYER_NORM_BACKWARD);
  layer_backward<float>(dev);
}

TEST_P(LayerNormTest, BackwardF64) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_LAYER_NORM_BACKWARD, XHAL_DTYPE_F64);
  layer_backward<double>(dev);
}

// ---- sums of -0 terms (signed_zero.h) ----------------------------------------
// A canonical sum of -0 terms only is +0; a backend whose sums start from -0
// or fold `0 + t` into `t` gets -0 there. LayerNorm forward: rows of all -0
// x have mean +0 (the saved mean shows it), and y = ((-0 - mean) * rstd) *
// gamma + beta keeps the sign of -0 - mean where beta = -0; rows of +0, of
// both zeros and random ones beside them. RMSNorm forward has no such sum
// (its terms x * x are never -0) and no such test.
template <class T>
void layer_forward_signed_zero(xhal_device_t dev) {
  for (int64_t n : signed_zero::kRowLengths) {
    SCOPED_TRACE("n " + std::to_string(n));
    Data<T> d;
    signed_zero::layer_norm_rows<T>(n, d.x, d.gamma, d.beta);
    layer_forward_case<T>(dev, {signed_zero::kLayerNormRows, n}, d);
  }
}

TEST_P(LayerNormTest, ForwardSignedZeroRows) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_LAYER_NORM_FORWARD);
  layer_forward_signed_zero<float>(dev);
}

TEST_P(LayerNormTest, ForwardF64SignedZeroRows) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_LAYER_NORM_FORWARD, XHAL_DTYPE_F64);
  layer_forward_signed_zero<double>(dev);
}

// Backward with dy of -0 and +0 chosen per element (random x): every
// dy * gamma -0 (LayerNorm's a = rowsum(g) / n, and dbeta's column sums
// where gamma > 0), or every dy * gamma * xh -0 (LayerNorm's b, RMSNorm's c,
// and dgamma's column sums where gamma > 0). a, b and c reach dx =
// ((g - a) - xh * b) * rstd (RMSNorm: (g - xh * c) * rstd) as a sign where
// g = -0 and xh > 0. Row lengths of one to 64 chunks, 1, 2 and 4 colsum
// blocks.
template <class T>
void norm_backward_signed_zero(xhal_device_t dev, bool layer_norm) {
  using signed_zero::Pattern;
  for (const signed_zero::RowsN shape : signed_zero::kNormShapes)
    for (Pattern pattern : {Pattern::kGradient, Pattern::kProjection}) {
      if (!layer_norm && pattern == Pattern::kGradient) continue;  // RMSNorm has no rowsum(g)
      const Shape s{shape.rows, shape.n};
      SCOPED_TRACE("rows " + std::to_string(s.rows) + " n " + std::to_string(s.n) + ", " +
                   signed_zero::pattern_name(pattern));
      const size_t n = static_cast<size_t>(s.n), count = static_cast<size_t>(s.rows * s.n);
      Data<T> d;
      d.x = signed_zero::random_values<T>(count, T(-3), T(3));
      d.gamma = signed_zero::backward_gamma<T>(s.n);
      d.beta = signed_zero::random_values<T>(n, T(-1), T(1));
      std::vector<T> y(count), mean(s.rows), rstd(s.rows);
      if (layer_norm)
        canon::layer_norm_forward(d.x.data(), d.gamma.data(), d.beta.data(), s.rows, s.n, kEps,
                                  y.data(), mean.data(), rstd.data());
      else
        canon::rms_norm_forward(d.x.data(), d.gamma.data(), s.rows, s.n, kEps, y.data(),
                                rstd.data());
      d.dy.resize(count);
      for (size_t k = 0; k < count; ++k) {
        const size_t r = k / n;
        const T xh = layer_norm ? (d.x[k] - mean[r]) * rstd[r] : d.x[k] * rstd[r];
        d.dy[k] = signed_zero::zero_dy(pattern, d.gamma[k % n], xh);
      }
      if (layer_norm) layer_backward_case<T>(dev, s, d);
      else rms_backward_case<T>(dev, s, d);
    }
}

TEST_P(LayerNormTest, BackwardSignedZeroRows) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_LAYER_NORM_BACKWARD);
  norm_backward_signed_zero<float>(dev, true);
}

TEST_P(LayerNormTest, BackwardF64SignedZeroRows) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_LAYER_NORM_BACKWARD, XHAL_DTYPE_F64);
  norm_backward_signed_zero<double>(dev, true);
}

TEST_P(RmsNormTest, BackwardSignedZeroRows) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_RMS_NORM_BACKWARD);
  norm_backward_signed_zero<float>(dev, false);
}

TEST_P(RmsNormTest, BackwardF64SignedZeroRows) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_RMS_NORM_BACKWARD, XHAL_DTYPE_F64);
  norm_backward_signed_zero<double>(dev, false);
}

// In place: y may be x (forward), dx may be dy (backward).
TEST_P(RmsNormTest, InPlace) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_RMS_NORM_FORWARD);
  XHAL_CONF_REQUIRE_ALSO(XHAL_OP_RMS_NORM_BACKWARD);
  const Shape s{37, 3000};
  Data d = make_data(s);
  std::vector<float> cy(s.rows * s.n), cr(s.rows), cdx(s.rows * s.n), cdg(s.n);
  canon::rms_norm_forward(d.x.data(), d.gamma.data(), s.rows, s.n, kEps, cy.data(), cr.data());
  canon::rms_norm_backward(d.x.data(), d.gamma.data(), cr.data(), d.dy.data(), s.rows, s.n,
                           cdx.data(), cdg.data());
  BufferGuard g;
  xhal_buffer_t xb = g.add(upload(dev, d.x)), x2 = g.add(upload(dev, d.x)),
                gb = g.add(upload(dev, d.gamma));
  xhal_buffer_t dyb = g.add(upload(dev, d.dy)), rb = g.add(poisoned_buffer(dev, s.rows * 4)),
                dgb = g.add(poisoned_buffer(dev, s.n * 4));
  xhal_tensor_t xt = tensor(xb, XHAL_DTYPE_F32, {s.rows, s.n}),
                x2t = tensor(x2, XHAL_DTYPE_F32, {s.rows, s.n});
  xhal_tensor_t gt = tensor(gb, XHAL_DTYPE_F32, {s.n}), rt = tensor(rb, XHAL_DTYPE_F32, {s.rows});
  xhal_tensor_t dyt = tensor(dyb, XHAL_DTYPE_F32, {s.rows, s.n}),
                dgt = tensor(dgb, XHAL_DTYPE_F32, {s.n});
  {
    OpCounters work(dev, 2);
    ASSERT_EQ(xhal_rms_norm_forward(dev, &xt, &gt, kEps, &xt, &rt), XHAL_OK) << xhal_last_error();
    ASSERT_EQ(xhal_rms_norm_backward(dev, &x2t, &gt, &rt, &dyt, &dyt, &dgt), XHAL_OK)
        << xhal_last_error();
  }
  auto rf = ref64::rms_norm_forward(d.x.data(), d.gamma.data(), s.rows, s.n, kEps);
  auto rbk =
      ref64::rms_norm_backward(d.x.data(), d.gamma.data(), cr.data(), d.dy.data(), s.rows, s.n);
  std::vector<float> y = download_f32(xb, cy.size()), dx = download_f32(dyb, cdx.size());
  // In place there is no second run to compare: determinism is checked by
  // the out-of-place tests.
  Grader grader;
  grader.output("y (in place)", y, y, cy, rf.y, tol::kNorm);
  grader.output("dx (in place on dy)", dx, dx, cdx, rbk.dx, tol::kNorm);
  grader.finish();
}

// Device forward then backward against central finite differences of the
// float64 forward (loss = sum dy * y): dx, dgamma (and dbeta).
TEST_P(RmsNormTest, BackwardMatchesFiniteDifferences) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_RMS_NORM_BACKWARD);
  XHAL_CONF_REQUIRE_ALSO(XHAL_OP_RMS_NORM_FORWARD);
  const Shape s{3, 9};
  Data d = make_data(s);
  BufferGuard g;
  xhal_buffer_t xb = g.add(upload(dev, d.x)), gb = g.add(upload(dev, d.gamma)),
                dyb = g.add(upload(dev, d.dy));
  xhal_buffer_t yb = g.add(poisoned_buffer(dev, 27 * 4)), rb = g.add(poisoned_buffer(dev, 3 * 4));
  xhal_buffer_t dxb = g.add(poisoned_buffer(dev, 27 * 4)), dgb = g.add(poisoned_buffer(dev, 9 * 4));
  xhal_tensor_t xt = tensor(xb, XHAL_DTYPE_F32, {3, 9}), gt = tensor(gb, XHAL_DTYPE_F32, {9});
  xhal_tensor_t dyt = tensor(dyb, XHAL_DTYPE_F32, {3, 9}), yt = tensor(yb, XHAL_DTYPE_F32, {3, 9});
  xhal_tensor_t rt = tensor(rb, XHAL_DTYPE_F32, {3}), dxt = tensor(dxb, XHAL_DTYPE_F32, {3, 9});
  xhal_tensor_t dgt = tensor(dgb, XHAL_DTYPE_F32, {9});
  {
    OpCounters work(dev, 2);
    ASSERT_EQ(xhal_rms_norm_forward(dev, &xt, &gt, kEps, &yt, &rt), XHAL_OK) << xhal_last_error();
    ASSERT_EQ(xhal_rms_norm_backward(dev, &xt, &gt, &rt, &dyt, &dxt, &dgt), XHAL_OK)
        << xhal_last_error();
  }
  std::vector<float> dx = download_f32(dxb, 27), dg = download_f32(dgb, 9);
  std::vector<double> x(d.x.begin(), d.x.end()), gm(d.gamma.begin(), d.gamma.end()),
      dy(d.dy.begin(), d.dy.end());
  auto loss = [&] { return ref64::rms_norm_loss(x, gm, dy, 3, 9, kEps); };
  auto fd = [&](std::vector<double>& v, size_t i) {
    double h = 1e-5, keep = v[i];
    v[i] = keep + h;
    double up = loss();
    v[i] = keep - h;
    double down = loss();
    v[i] = keep;
    return (up - down) / (2 * h);
  };
  for (size_t i = 0; i < 27; ++i) EXPECT_NEAR(dx[i], fd(x, i), 1e-3) << "dx " << i;
  for (size_t j = 0; j < 9; ++j) EXPECT_NEAR(dg[j], fd(gm, j), 1e-3) << "dgamma " << j;
}

TEST_P(LayerNormTest, BackwardMatchesFiniteDifferences) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_LAYER_NORM_BACKWARD);
  XHAL_CONF_REQUIRE_ALSO(XHAL_OP_LAYER_NORM_FORWARD);
  const Shape s{3, 9};
  Data d = make_data(s);
  BufferGuard g;
  xhal_buffer_t xb = g.add(upload(dev, d.x)), gb = g.add(upload(dev, d.gamma)),
                bb = g.add(upload(dev, d.beta));
  xhal_buffer_t dyb = g.add(upload(dev, d.dy)), yb = g.add(poisoned_buffer(dev, 27 * 4));
  xhal_buffer_t mb = g.add(poisoned_buffer(dev, 12)), rb = g.add(poisoned_buffer(dev, 12));
  xhal_buffer_t dxb = g.add(poisoned_buffer(dev, 27 * 4)), dgb = g.add(poisoned_buffer(dev, 36)),
                dbb = g.add(poisoned_buffer(dev, 36));
  xhal_tensor_t xt = tensor(xb, XHAL_DTYPE_F32, {3, 9}), gt = tensor(gb, XHAL_DTYPE_F32, {9});
  xhal_tensor_t bt = tensor(bb, XHAL_DTYPE_F32, {9}), dyt = tensor(dyb, XHAL_DTYPE_F32, {3, 9});
  xhal_tensor_t yt = tensor(yb, XHAL_DTYPE_F32, {3, 9}), mt = tensor(mb, XHAL_DTYPE_F32, {3});
  xhal_tensor_t rt = tensor(rb, XHAL_DTYPE_F32, {3}), dxt = tensor(dxb, XHAL_DTYPE_F32, {3, 9});
  xhal_tensor_t dgt = tensor(dgb, XHAL_DTYPE_F32, {9}), dbt = tensor(dbb, XHAL_DTYPE_F32, {9});
  {
    OpCounters work(dev, 2);
    ASSERT_EQ(xhal_layer_norm_forward(dev, &xt, &gt, &bt, kEps, &yt, &mt, &rt), XHAL_OK)
        << xhal_last_error();
    ASSERT_EQ(xhal_layer_norm_backward(dev, &xt, &gt, &mt, &rt, &dyt, &dxt, &dgt, &dbt), XHAL_OK)
        << xhal_last_error();
  }
  std::vector<float> dx = download_f32(dxb, 27), dg = download_f32(dgb, 9),
                     db = download_f32(dbb, 9);
  std::vector<double> x(d.x.begin(), d.x.end()), gm(d.gamma.begin(), d.gamma.end()),
      bt64(d.beta.begin(), d.beta.end()), dy(d.dy.begin(), d.dy.end());
  auto loss = [&] { return ref64::layer_norm_loss(x, gm, bt64, dy, 3, 9, kEps); };
  auto fd = [&](std::vector<double>& v, size_t i) {
    double h = 1e-5, keep = v[i];
    v[i] = keep + h;
    double up = loss();
    v[i] = keep - h;
    double down = loss();
    v[i] = keep;
    return (up - down) / (2 * h);
  };
  for (size_t i = 0; i < 27; ++i) EXPECT_NEAR(dx[i], fd(x, i), 1e-3) << "dx " << i;
  for (size_t j = 0; j < 9; ++j) {
    EXPECT_NEAR(dg[j], fd(gm, j), 1e-3) << "dgamma " << j;
    EXPECT_NEAR(db[j], fd(bt64, j), 1e-3) << "dbeta " << j;
  }
}

TEST_P(LayerNormTest, EmptyRows) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_LAYER_NORM_FORWARD);
  XHAL_CONF_REQUIRE_ALSO(XHAL_OP_RMS_NORM_FORWARD);
  // rows = 0: y, mean and rstd are empty; nothing is written.
  BufferGuard g;
  std::vector<float> gamma = random_floats(5, fresh_seed()), beta = random_floats(5, fresh_seed());
  xhal_buffer_t xb = g.add(poisoned_buffer(dev, 16)), yb = g.add(poisoned_buffer(dev, 16));
  xhal_buffer_t gb = g.add(upload(dev, gamma)), bb = g.add(upload(dev, beta));
  xhal_buffer_t mb = g.add(poisoned_buffer(dev, 16)), rb = g.add(poisoned_buffer(dev, 16));
  xhal_tensor_t xt = tensor(xb, XHAL_DTYPE_F32, {0, 5}), yt = tensor(yb, XHAL_DTYPE_F32, {0, 5});
  xhal_tensor_t gt = tensor(gb, XHAL_DTYPE_F32, {5}), bt = tensor(bb, XHAL_DTYPE_F32, {5});
  xhal_tensor_t mt = tensor(mb, XHAL_DTYPE_F32, {0}), rt = tensor(rb, XHAL_DTYPE_F32, {0});
  {
    OpCounters work(dev, 0);  // empty: the core returns before the plugin
    EXPECT_EQ(xhal_layer_norm_forward(dev, &xt, &gt, &bt, kEps, &yt, &mt, &rt), XHAL_OK)
        << xhal_last_error();
    EXPECT_EQ(xhal_rms_norm_forward(dev, &xt, &gt, kEps, &yt, &rt), XHAL_OK) << xhal_last_error();
  }
  for (xhal_buffer_t b : {yb, mb, rb}) EXPECT_TRUE(all_poison(download_f32(b, 4)));
}

// rows = 0: dx is empty, but dgamma and dbeta are [n] sums over no rows,
// which section 3.5 defines as tree() = +0. (Read together with "an empty
// tensor is written nothing": dgamma is not empty.)
TEST_P(LayerNormTest, ZeroRowsGiveZeroParameterGradients) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_LAYER_NORM_BACKWARD);
  const int64_t n = 5;
  std::vector<float> gamma = random_floats(n, fresh_seed());
  BufferGuard g;
  xhal_buffer_t empty = g.add(poisoned_buffer(dev, 16)), gb = g.add(upload(dev, gamma));
  xhal_buffer_t dgb = g.add(poisoned_buffer(dev, n * 4)), dbb = g.add(poisoned_buffer(dev, n * 4));
  xhal_tensor_t x = tensor(empty, XHAL_DTYPE_F32, {0, n}),
                stats = tensor(empty, XHAL_DTYPE_F32, {0});
  xhal_tensor_t dx = tensor(empty, XHAL_DTYPE_F32, {0, n}), gt = tensor(gb, XHAL_DTYPE_F32, {n});
  xhal_tensor_t dgt = tensor(dgb, XHAL_DTYPE_F32, {n}), dbt = tensor(dbb, XHAL_DTYPE_F32, {n});
  {
    OpCounters work(dev, 0);  // the core writes the +0 sums with a fill
    ASSERT_EQ(xhal_layer_norm_backward(dev, &x, &gt, &stats, &stats, &x, &dx, &dgt, &dbt), XHAL_OK)
        << xhal_last_error();
  }
  std::vector<float> zeros(n, 0.0f);
  BitCompare c = compare_bits(download_f32(dgb, n), zeros);
  EXPECT_TRUE(c.equal) << "dgamma: " << c.first;
  c = compare_bits(download_f32(dbb, n), zeros);
  EXPECT_TRUE(c.equal) << "dbeta: " << c.first;
  EXPECT_TRUE(all_poison(download_f32(empty, 4))) << "an empty tensor was written";
}

TEST_P(RmsNormTest, ZeroRowsGiveZeroParameterGradients) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_RMS_NORM_BACKWARD);
  const int64_t n = 5;
  std::vector<float> gamma = random_floats(n, fresh_seed());
  BufferGuard g;
  xhal_buffer_t empty = g.add(poisoned_buffer(dev, 16)), gb = g.add(upload(dev, gamma));
  xhal_buffer_t dgb = g.add(poisoned_buffer(dev, n * 4));
  xhal_tensor_t x = tensor(empty, XHAL_DTYPE_F32, {0, n}),
                stats = tensor(empty, XHAL_DTYPE_F32, {0});
  xhal_tensor_t dx = tensor(empty, XHAL_DTYPE_F32, {0, n}), gt = tensor(gb, XHAL_DTYPE_F32, {n});
  xhal_tensor_t dgt = tensor(dgb, XHAL_DTYPE_F32, {n});
  {
    OpCounters work(dev, 0);  // the core writes the +0 sums with a fill
    ASSERT_EQ(xhal_rms_norm_backward(dev, &x, &gt, &stats, &x, &dx, &dgt), XHAL_OK)
        << xhal_last_error();
  }
  BitCompare c = compare_bits(download_f32(dgb, n), std::vector<float>(n, 0.0f));
  EXPECT_TRUE(c.equal) << "dgamma: " << c.first;
  EXPECT_TRUE(all_poison(download_f32(empty, 4))) << "an empty tensor was written";
}

// f64 with zero rows: dgamma and dbeta are +0 in every one of their 8 bytes
// (the core's fill covers the f64 element size, not 4 bytes of each).
TEST_P(LayerNormTest, ZeroRowsGiveZeroParameterGradientsF64) {
  XHAL_CONF_REQUIRE_OP_DTYPE(XHAL_OP_LAYER_NORM_BACKWARD, XHAL_DTYPE_F64);
  const int64_t n = 5;
  std::vector<double> gamma = random_doubles(n, fresh_seed());
  BufferGuard g;
  xhal_buffer_t empty = g.add(poisoned_buffer(dev, 16)), gb = g.add(upload(dev, gamma));
  xhal_buffer_t dgb = g.add(poisoned_buffer(dev, n * 8)), dbb = g.add(poisoned_buffer(dev, n * 8));
  xhal_tensor_t x = tensor(empty, XHAL_DTYPE_F64, {0, n}),
                stats = tensor(empty, XHAL_DTYPE_F64, {0});
  xhal_tensor_t dx = tensor(empty, XHAL_DTYPE_F64, {0, n}), gt = tensor(gb, XHAL_DTYPE_F64, {n});
  xhal_tensor_t dgt = tensor(dgb, XHAL_DTYPE_F64, {n}), dbt = tensor(dbb, XHAL_DTYPE_F64, {n});
  {
    OpCounters work(dev, 0);  // the core writes the +0 sums with a fill
    ASSERT_EQ(xhal_layer_norm_backward(dev, &x, &gt, &stats, &stats, &x, &dx, &dgt, &dbt), XHAL_OK)
        << xhal_last_error();
  }
  std::vector<double> zeros(n, 0.0);
  BitCompare c = compare_bits(download_f64(dgb, n), zeros);
  EXPECT_TRUE(c.equal) << "dgamma: " << c.first;
  c = compare_bits(download_f64(dbb, n), zeros);
  EXPECT_TRUE(c.equal) << "dbeta: " << c.first;
  EXPECT_TRUE(all_poison(download_f32(empty, 4))) << "an empty tensor was written";
}

XHAL_CONF_INSTANTIATE(RmsNormTest);
XHAL_CONF_INSTANTIATE(LayerNormTest);

}  // namespace
}  // namespace xhal::conf
