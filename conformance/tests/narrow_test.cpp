// f16 and bf16 (docs/semantics.md 7.1, 7.2, 7.5) for index_add, softmax
// forward/backward, RMSNorm and LayerNorm forward/backward, at both levels:
// bit-exact against the canonical narrow reference (widen every input, the
// canonical float32 op, one narrowing per output element) and accurate
// against the float64 reference of the widened inputs with the f32 bound
// plus one rounding to the narrow type. Every test runs once per dtype
// (...Bf16, ...F16) and is "unsupported" on a device without the dtype's
// op_dtypes bit.
//
// Besides random rows with tails (partial 1024-chunks, partial 32-row
// blocks, more than 32 sources per row, a hub row): rows whose f32 sums
// round differently when a partial sum is narrowed (1 followed by many
// terms below half an ulp of 1 in the narrow type: kept in f32 they add up,
// narrowed after each step they vanish), so an implementation that keeps
// partials in the narrow type fails the bit-exact level; f16 results in the
// subnormal range and past 65504 (infinity); NaN rows, whose NaN must be
// stored as the one positive quiet NaN; gamma/beta in the narrow type and in
// f32, dgamma/dbeta in gamma's dtype; mean/rstd in f32.
#include <cmath>
#include <limits>
#include <random>

#include "check.h"
#include "reference/canonical.h"
#include "reference/f64.h"
#include "reference/narrow.h"
#include "signed_zero.h"

namespace xhal::conf {
namespace {

// What an unwritten narrow output holds: a negative NaN, never the
// canonical one (0x7E00 f16, 0x7FC0 bf16), so no conforming write makes it.
constexpr uint16_t kPoison16 = 0xFFFF;

using Bits = std::vector<uint16_t>;

class NarrowTest : public DeviceTest {
 public:
  xhal_dtype_t dt = XHAL_DTYPE_BF16;

  Bits random(size_t n, float lo, float hi) {
    return narrow::random_narrow(dt, n, fresh_seed(), lo, hi);
  }
  std::vector<float> wide(const Bits& b) const { return narrow::widen(dt, b); }
  Bits narrowed(const std::vector<float>& f) const { return narrow::narrow(dt, f); }
  xhal_buffer_t poisoned16(BufferGuard& g, size_t count) {
    return g.add(upload(dev, Bits(count + 32, kPoison16)));  // 32 elements of guard
  }
  // The tail past `count` elements still holds the poison.
  void expect_guard(xhal_buffer_t b, size_t count, const char* what) {
    const Bits tail = download<uint16_t>(b, 32, count * 2);
    for (uint16_t v : tail) ASSERT_EQ(v, kPoison16) << "wrote past " << what;
  }
  // 1 then `terms` random values between a quarter and a half of an ulp
  // of 1 in the narrow type, the rest random in [lo, hi]: kept in f32 the
  // small terms add up, narrowed after each step they vanish or round, so
  // the sum's bits change when its partials are narrowed.
  Bits partial_sum_row(size_t n, size_t terms, float lo = -1.0f, float hi = 1.0f) {
    Bits r = random(n, lo, hi);
    const float quarter = dt == XHAL_DTYPE_BF16 ? 0x1p-9f : 0x1p-12f;
    const Bits small = random(terms, quarter, 2 * quarter);
    r[0] = narrow::narrow(dt, 1.0f);
    for (size_t i = 1; i <= terms && i < n; ++i) r[i] = small[i - 1];
    return r;
  }
  uint16_t value(float f) const { return narrow::narrow(dt, f); }

  // The canonical bits of the last call's x-shaped output (y, dx, dst), for
  // the tests that must reach a special value.
  Bits last;
  size_t count_last(bool (*pred)(xhal_dtype_t, uint16_t)) const {
    size_t c = 0;
    for (uint16_t v : last) c += pred(dt, v);
    return c;
  }

  // ---- softmax ----------------------------------------------------------
  void softmax_forward(const Bits& x, int64_t rows, int64_t n) {
    BufferGuard g;
    const size_t count = static_cast<size_t>(rows * n);
    xhal_buffer_t xb = g.add(upload(dev, x)), y1 = poisoned16(g, count), y2 = poisoned16(g, count);
    xhal_tensor_t xt = tensor(xb, dt, {rows, n}), t1 = tensor(y1, dt, {rows, n}),
                  t2 = tensor(y2, dt, {rows, n});
    {
      OpCounters work(dev, 2);
      ASSERT_EQ(xhal_softmax_forward(dev, &xt, &t1), XHAL_OK) << xhal_last_error();
      ASSERT_EQ(xhal_softmax_forward(dev, &xt, &t2), XHAL_OK) << xhal_last_error();
    }
    const std::vector<float> xf = wide(x);
    std::vector<float> y(count);
    canon::softmax_forward(xf.data(), rows, n, y.data());
    Grader grader;
    last = narrowed(y);
    grader.output_narrow("y", dt, download<uint16_t>(y1, count), download<uint16_t>(y2, count),
                         last, ref64::softmax_forward(xf.data(), rows, n), tol::kSoftmaxForward,
                         kPoison16);
    grader.finish();
    expect_guard(y1, count, "y");
  }

  void softmax_backward(const Bits& y, const Bits& dy, int64_t rows, int64_t n,
                        bool in_place = false) {
    BufferGuard g;
    const size_t count = static_cast<size_t>(rows * n);
    xhal_buffer_t yb = g.add(upload(dev, y)), dyb = g.add(upload(dev, dy));
    xhal_buffer_t d1 = in_place ? dyb : poisoned16(g, count), d2 = poisoned16(g, count);
    xhal_tensor_t yt = tensor(yb, dt, {rows, n}), dyt = tensor(dyb, dt, {rows, n}),
                  t1 = tensor(d1, dt, {rows, n}), t2 = tensor(d2, dt, {rows, n});
    {
      OpCounters work(dev, 2);
      ASSERT_EQ(xhal_softmax_backward(dev, &yt, &dyt, &t2), XHAL_OK) << xhal_last_error();
      ASSERT_EQ(xhal_softmax_backward(dev, &yt, &dyt, &t1), XHAL_OK) << xhal_last_error();
    }
    const std::vector<float> yf = wide(y), dyf = wide(dy);
    std::vector<float> dx(count);
    canon::softmax_backward(yf.data(), dyf.data(), rows, n, dx.data());
    Grader grader;
    grader.output_narrow(in_place ? "dx (in place on dy)" : "dx", dt, download<uint16_t>(d1, count),
                         download<uint16_t>(d2, count), narrowed(dx),
                         ref64::softmax_backward(yf.data(), dyf.data(), rows, n),
                         tol::kSoftmaxBackward, kPoison16);
    grader.finish();
  }

  // ---- RMSNorm / LayerNorm ------------------------------------------------
  // gamma (and beta) in `pdt`: the narrow dtype or f32.
  struct Params {
    xhal_dtype_t pdt;
    Bits narrow_g, narrow_b;          // pdt narrow
    std::vector<float> f32_g, f32_b;  // pdt f32
    std::vector<float> g, b;          // widened (what the references take)
  };
  Params params(xhal_dtype_t pdt, int64_t n, float lo, float hi) {
    Params p;
    p.pdt = pdt;
    if (pdt == XHAL_DTYPE_F32) {
      p.f32_g = random_floats(n, fresh_seed(), lo, hi);
      p.f32_b = random_floats(n, fresh_seed(), -1.0f, 1.0f);
      p.g = p.f32_g;
      p.b = p.f32_b;
    } else {
      p.narrow_g = random(n, lo, hi);
      p.narrow_b = random(n, -1.0f, 1.0f);
      p.g = wide(p.narrow_g);
      p.b = wide(p.narrow_b);
    }
    return p;
  }
  xhal_buffer_t upload_param(BufferGuard& g, const Params& p, bool beta) {
    if (p.pdt == XHAL_DTYPE_F32) return g.add(upload(dev, beta ? p.f32_b : p.f32_g));
    return g.add(upload(dev, beta ? p.narrow_b : p.narrow_g));
  }
  // Downloads a per-column output in pdt as narrow bits (pdt narrow) or
  // floats, graded against the f32 canonical values `want`.
  void grade_param(Grader& grader, const char* name, const Params& p, xhal_buffer_t b1,
                   xhal_buffer_t b2, const std::vector<float>& want, const ref64::Values& ref,
                   size_t n) {
    if (p.pdt == XHAL_DTYPE_F32) {
      grader.output(name, download_f32(b1, n), download_f32(b2, n), want, ref, tol::kNorm);
    } else {
      grader.output_narrow(name, dt, download<uint16_t>(b1, n), download<uint16_t>(b2, n),
                           narrowed(want), ref, tol::kNorm, kPoison16);
    }
  }
  xhal_buffer_t poisoned_param(BufferGuard& g, const Params& p, size_t n) {
    return p.pdt == XHAL_DTYPE_F32 ? g.add(poisoned_buffer(dev, n * 4)) : poisoned16(g, n);
  }

  void rms_forward(const Bits& x, const Params& p, int64_t rows, int64_t n, float eps = 1e-5f) {
    BufferGuard g;
    const size_t count = static_cast<size_t>(rows * n), r = static_cast<size_t>(rows);
    xhal_buffer_t xb = g.add(upload(dev, x)), gb = upload_param(g, p, false);
    xhal_buffer_t y1 = poisoned16(g, count), y2 = poisoned16(g, count);
    xhal_buffer_t r1 = g.add(poisoned_buffer(dev, r * 4)), r2 = g.add(poisoned_buffer(dev, r * 4));
    xhal_tensor_t xt = tensor(xb, dt, {rows, n}), gt = tensor(gb, p.pdt, {n});
    xhal_tensor_t yt1 = tensor(y1, dt, {rows, n}), yt2 = tensor(y2, dt, {rows, n});
    xhal_tensor_t rt1 = tensor(r1, XHAL_DTYPE_F32, {rows}),
                  rt2 = tensor(r2, XHAL_DTYPE_F32, {rows});
    {
      OpCounters work(dev, 2);
      ASSERT_EQ(xhal_rms_norm_forward(dev, &xt, &gt, eps, &yt1, &rt1), XHAL_OK)
          << xhal_last_error();
      ASSERT_EQ(xhal_rms_norm_forward(dev, &xt, &gt, eps, &yt2, &rt2), XHAL_OK)
          << xhal_last_error();
    }
    const std::vector<float> xf = wide(x);
    std::vector<float> y(count), rstd(r);
    canon::rms_norm_forward(xf.data(), p.g.data(), rows, n, eps, y.data(), rstd.data());
    ref64::NormForward ref = ref64::rms_norm_forward(xf.data(), p.g.data(), rows, n, eps);
    Grader grader;
    last = narrowed(y);
    grader.output_narrow("y", dt, download<uint16_t>(y1, count), download<uint16_t>(y2, count),
                         last, ref.y, tol::kNorm, kPoison16);
    grader.output("rstd (f32)", download_f32(r1, r), download_f32(r2, r), rstd, ref.rstd,
                  tol::kNorm);
    grader.finish();
    expect_guard(y1, count, "y");
  }

  void rms_backward(const Bits& x, const Params& p, const Bits& dy, int64_t rows, int64_t n) {
    const size_t count = static_cast<size_t>(rows * n), r = static_cast<size_t>(rows),
                 nn = static_cast<size_t>(n);
    const std::vector<float> xf = wide(x), dyf = wide(dy);
    std::vector<float> yscratch(count), rstd(r);
    canon::rms_norm_forward(xf.data(), p.g.data(), rows, n, 1e-5f, yscratch.data(), rstd.data());
    BufferGuard g;
    xhal_buffer_t xb = g.add(upload(dev, x)), gb = upload_param(g, p, false),
                  rb = g.add(upload(dev, rstd)), dyb = g.add(upload(dev, dy));
    xhal_buffer_t dx1 = poisoned16(g, count), dx2 = poisoned16(g, count);
    xhal_buffer_t dg1 = poisoned_param(g, p, nn), dg2 = poisoned_param(g, p, nn);
    xhal_tensor_t xt = tensor(xb, dt, {rows, n}), gt = tensor(gb, p.pdt, {n}),
                  rt = tensor(rb, XHAL_DTYPE_F32, {rows}), dyt = tensor(dyb, dt, {rows, n});
    xhal_tensor_t dxt1 = tensor(dx1, dt, {rows, n}), dxt2 = tensor(dx2, dt, {rows, n});
    xhal_tensor_t dgt1 = tensor(dg1, p.pdt, {n}), dgt2 = tensor(dg2, p.pdt, {n});
    {
      OpCounters work(dev, 2);
      ASSERT_EQ(xhal_rms_norm_backward(dev, &xt, &gt, &rt, &dyt, &dxt1, &dgt1), XHAL_OK)
          << xhal_last_error();
      ASSERT_EQ(xhal_rms_norm_backward(dev, &xt, &gt, &rt, &dyt, &dxt2, &dgt2), XHAL_OK)
          << xhal_last_error();
    }
    std::vector<float> dx(count), dgamma(nn);
    canon::rms_norm_backward(xf.data(), p.g.data(), rstd.data(), dyf.data(), rows, n, dx.data(),
                             dgamma.data());
    ref64::NormBackward ref =
        ref64::rms_norm_backward(xf.data(), p.g.data(), rstd.data(), dyf.data(), rows, n);
    Grader grader;
    grader.output_narrow("dx", dt, download<uint16_t>(dx1, count), download<uint16_t>(dx2, count),
                         narrowed(dx), ref.dx, tol::kNorm, kPoison16);
    grade_param(grader, "dgamma", p, dg1, dg2, dgamma, ref.dgamma, nn);
    grader.finish();
  }

  void ln_forward(const Bits& x, const Params& p, int64_t rows, int64_t n, float eps = 1e-5f) {
    BufferGuard g;
    const size_t count = static_cast<size_t>(rows * n), r = static_cast<size_t>(rows);
    xhal_buffer_t xb = g.add(upload(dev, x)), gb = upload_param(g, p, false),
                  bb = upload_param(g, p, true);
    xhal_buffer_t y1 = poisoned16(g, count), y2 = poisoned16(g, count);
    xhal_buffer_t m1 = g.add(poisoned_buffer(dev, r * 4)), m2 = g.add(poisoned_buffer(dev, r * 4)),
                  r1 = g.add(poisoned_buffer(dev, r * 4)), r2 = g.add(poisoned_buffer(dev, r * 4));
    xhal_tensor_t xt = tensor(xb, dt, {rows, n}), gt = tensor(gb, p.pdt, {n}),
                  bt = tensor(bb, p.pdt, {n});
    xhal_tensor_t yt1 = tensor(y1, dt, {rows, n}), yt2 = tensor(y2, dt, {rows, n});
    xhal_tensor_t mt1 = tensor(m1, XHAL_DTYPE_F32, {rows}),
                  mt2 = tensor(m2, XHAL_DTYPE_F32, {rows});
    xhal_tensor_t rt1 = tensor(r1, XHAL_DTYPE_F32, {rows}),
                  rt2 = tensor(r2, XHAL_DTYPE_F32, {rows});
    {
      OpCounters work(dev, 2);
      ASSERT_EQ(xhal_layer_norm_forward(dev, &xt, &gt, &bt, eps, &yt1, &mt1, &rt1), XHAL_OK)
          << xhal_last_error();
      ASSERT_EQ(xhal_layer_norm_forward(dev, &xt, &gt, &bt, eps, &yt2, &mt2, &rt2), XHAL_OK)
          << xhal_last_error();
    }
    const std::vector<float> xf = wide(x);
    std::vector<float> y(count), mean(r), rstd(r);
    canon::layer_norm_forward(xf.data(), p.g.data(), p.b.data(), rows, n, eps, y.data(),
                              mean.data(), rstd.data());
    ref64::NormForward ref =
        ref64::layer_norm_forward(xf.data(), p.g.data(), p.b.data(), rows, n, eps);
    Grader grader;
    last = narrowed(y);
    grader.output_narrow("y", dt, download<uint16_t>(y1, count), download<uint16_t>(y2, count),
                         last, ref.y, tol::kNorm, kPoison16);
    grader.output("mean (f32)", download_f32(m1, r), download_f32(m2, r), mean, ref.mean,
                  tol::kNorm);
    grader.output("rstd (f32)", download_f32(r1, r), download_f32(r2, r), rstd, ref.rstd,
                  tol::kNorm);
    grader.finish();
    expect_guard(y1, count, "y");
  }

  void ln_backward(const Bits& x, const Params& p, const Bits& dy, int64_t rows, int64_t n,
                   bool in_place = false) {
    const size_t count = static_cast<size_t>(rows * n), r = static_cast<size_t>(rows),
                 nn = static_cast<size_t>(n);
    const std::vector<float> xf = wide(x), dyf = wide(dy);
    std::vector<float> yscratch(count), mean(r), rstd(r);
    canon::layer_norm_forward(xf.data(), p.g.data(), p.b.data(), rows, n, 1e-5f, yscratch.data(),
                              mean.data(), rstd.data());
    BufferGuard g;
    xhal_buffer_t xb = g.add(upload(dev, x)), gb = upload_param(g, p, false),
                  mb = g.add(upload(dev, mean)), rb = g.add(upload(dev, rstd)),
                  dyb = g.add(upload(dev, dy));
    xhal_buffer_t dx1 = in_place ? dyb : poisoned16(g, count), dx2 = poisoned16(g, count);
    xhal_buffer_t dg1 = poisoned_param(g, p, nn), dg2 = poisoned_param(g, p, nn),
                  db1 = poisoned_param(g, p, nn), db2 = poisoned_param(g, p, nn);
    xhal_tensor_t xt = tensor(xb, dt, {rows, n}), gt = tensor(gb, p.pdt, {n}),
                  mt = tensor(mb, XHAL_DTYPE_F32, {rows}), rt = tensor(rb, XHAL_DTYPE_F32, {rows}),
                  dyt = tensor(dyb, dt, {rows, n});
    xhal_tensor_t dxt1 = tensor(dx1, dt, {rows, n}), dxt2 = tensor(dx2, dt, {rows, n});
    xhal_tensor_t dgt1 = tensor(dg1, p.pdt, {n}), dgt2 = tensor(dg2, p.pdt, {n}),
                  dbt1 = tensor(db1, p.pdt, {n}), dbt2 = tensor(db2, p.pdt, {n});
    {
      OpCounters work(dev, 2);
      // The second (out of place) call first: the in-place one overwrites dy.
      ASSERT_EQ(xhal_layer_norm_backward(dev, &xt, &gt, &mt, &rt, &dyt, &dxt2, &dgt2, &dbt2),
                XHAL_OK)
          << xhal_last_error();
      ASSERT_EQ(xhal_layer_norm_backward(dev, &xt, &gt, &mt, &rt, &dyt, &dxt1, &dgt1, &dbt1),
                XHAL_OK)
          << xhal_last_error();
    }
    std::vector<float> dx(count), dgamma(nn), dbeta(nn);
    canon::layer_norm_backward(xf.data(), p.g.data(), mean.data(), rstd.data(), dyf.data(), rows, n,
                               dx.data(), dgamma.data(), dbeta.data());
    ref64::NormBackward ref = ref64::layer_norm_backward(xf.data(), p.g.data(), mean.data(),
                                                         rstd.data(), dyf.data(), rows, n);
    Grader grader;
    grader.output_narrow(in_place ? "dx (in place on dy)" : "dx", dt,
                         download<uint16_t>(dx1, count), download<uint16_t>(dx2, count),
                         narrowed(dx), ref.dx, tol::kNorm, kPoison16);
    grade_param(grader, "dgamma", p, dg1, dg2, dgamma, ref.dgamma, nn);
    grade_param(grader, "dbeta", p, db1, db2, dbeta, ref.dbeta, nn);
    grader.finish();
  }

  // ---- index_add ----------------------------------------------------------
  // Rows without a source hold a non-canonical NaN and must keep its bits
  // (they are neither read nor rewritten). src, dst: random when empty.
  void index_add(const std::vector<int64_t>& idx, size_t num_rows, int64_t w, float alpha,
                 Bits src = {}, Bits dst = {}) {
    const uint16_t untouched = dt == XHAL_DTYPE_BF16 ? 0x7f81 : 0x7d01;
    const size_t count = idx.size(), ww = static_cast<size_t>(w);
    if (src.empty()) src = random(count * ww, -1.0f, 1.0f);
    if (dst.empty()) dst = random(num_rows * ww, -1.0f, 1.0f);
    std::vector<uint64_t> sources(num_rows, 0);
    for (int64_t r : idx) ++sources[r];
    for (size_t r = 0; r < num_rows; ++r)
      if (!sources[r])
        for (size_t j = 0; j < ww; ++j) dst[r * ww + j] = untouched;
    BufferGuard g;
    PlanGuard p;
    p.plan = make_plan(dev, idx, num_rows);
    ASSERT_NE(p.plan, nullptr);
    xhal_buffer_t sb = g.add(upload(dev, src)), d1 = g.add(upload(dev, dst)),
                  d2 = g.add(upload(dev, dst));
    xhal_tensor_t st = tensor(sb, dt, {static_cast<int64_t>(count), w});
    xhal_tensor_t t1 = tensor(d1, dt, {static_cast<int64_t>(num_rows), w});
    xhal_tensor_t t2 = tensor(d2, dt, {static_cast<int64_t>(num_rows), w});
    {
      OpCounters work(dev, 2);
      ASSERT_EQ(xhal_index_add(dev, p.plan, alpha, &st, &t1), XHAL_OK) << xhal_last_error();
      ASSERT_EQ(xhal_index_add(dev, p.plan, alpha, &st, &t2), XHAL_OK) << xhal_last_error();
    }
    const Bits got = download<uint16_t>(d1, num_rows * ww),
               again = download<uint16_t>(d2, num_rows * ww);
    const std::vector<float> srcf = wide(src), dstf = wide(dst);
    std::vector<float> canonical = dstf;
    canon::index_add(canonical.data(), num_rows, srcf.data(), idx, ww, alpha);
    ref64::Values r64 = ref64::index_add(dstf.data(), num_rows, srcf.data(), idx, ww, alpha);
    const Bits want = narrowed(canonical);
    last = want;
    Bits g_t, a_t, c_t;
    ref64::Values r_t;
    uint64_t max_sources = 0;
    size_t untouched_changed = 0;
    for (size_t r = 0; r < num_rows; ++r) {
      max_sources = std::max(max_sources, sources[r]);
      for (size_t j = 0; j < ww; ++j) {
        const size_t k = r * ww + j;
        if (!sources[r]) {
          untouched_changed += got[k] != untouched;
          continue;
        }
        g_t.push_back(got[k]);
        a_t.push_back(again[k]);
        c_t.push_back(want[k]);
        r_t.v.push_back(r64.v[k]);
        r_t.scale.push_back(r64.scale[k]);
      }
    }
    EXPECT_EQ(untouched_changed, 0u) << "rows without sources were rewritten";
    Grader grader;
    grader.output_narrow("dst", dt, g_t, a_t, c_t, r_t, tol::index_add(max_sources), kPoison16);
    grader.finish();
  }
};

#define XHAL_NARROW_TEST(Name, op)                   \
  void Name##_body(NarrowTest& t);                   \
  TEST_P(NarrowTest, Name##Bf16) {                   \
    dt = XHAL_DTYPE_BF16;                            \
    XHAL_CONF_REQUIRE_OP_DTYPE(op, XHAL_DTYPE_BF16); \
    Name##_body(*this);                              \
  }                                                  \
  TEST_P(NarrowTest, Name##F16) {                    \
    dt = XHAL_DTYPE_F16;                             \
    XHAL_CONF_REQUIRE_OP_DTYPE(op, XHAL_DTYPE_F16);  \
    Name##_body(*this);                              \
  }                                                  \
  void Name##_body(NarrowTest& t)

constexpr float kInf = std::numeric_limits<float>::infinity();

bool is_inf16(xhal_dtype_t d, uint16_t v) {
  return (v & 0x7fff) == (d == XHAL_DTYPE_BF16 ? 0x7f80 : 0x7c00);
}
bool is_subnormal16(xhal_dtype_t d, uint16_t v) {
  const uint16_t exp = d == XHAL_DTYPE_BF16 ? 0x7f80 : 0x7c00;
  return (v & exp) == 0 && (v & 0x7fff) != 0;
}
bool is_canonical_nan16(xhal_dtype_t d, uint16_t v) {
  return v == (d == XHAL_DTYPE_BF16 ? 0x7fc0 : 0x7e00);
}
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// ---- softmax ------------------------------------------------------------------
XHAL_NARROW_TEST(SoftmaxForwardRowsAndTails, XHAL_OP_SOFTMAX_FORWARD) {
  t.softmax_forward(t.random(37 * 2500, -8.0f, 8.0f), 37, 2500);  // partial last chunk
  t.softmax_forward(t.random(3 * 1024, -8.0f, 8.0f), 3, 1024);    // one full chunk
  t.softmax_forward(t.random(5 * 33, -8.0f, 8.0f), 5, 33);
  t.softmax_forward(t.random(2 * 9000, -8.0f, 8.0f), 2, 9000);
  t.softmax_forward(t.random(1, -3.0f, 3.0f), 1, 1);
}

// Large entries, -inf entries (exact 0), all -inf / +inf / NaN rows (the
// canonical NaN), and a row whose outputs fall into f16's subnormal range and
// below it (zero).
XHAL_NARROW_TEST(SoftmaxForwardSpecialRows, XHAL_OP_SOFTMAX_FORWARD) {
  const int64_t n = 3000;
  Bits x;
  auto row = [&](Bits r) { x.insert(x.end(), r.begin(), r.end()); };
  row(t.random(n, 60.0f, 88.0f));
  Bits r = t.random(n, -5.0f, 5.0f);
  for (int64_t i = 0; i < n; i += 3) r[i] = t.value(-kInf);
  row(r);
  row(Bits(n, t.value(-kInf)));
  r = t.random(n, -3.0f, 3.0f);
  r[2100] = t.value(kInf);
  row(r);
  r = t.random(n, -3.0f, 3.0f);
  r[5] = t.value(-kNaN);
  row(r);
  r = t.random(n, -22.0f, -8.0f);  // exp(x - 0) down to 2^-31: subnormal and zero in f16
  r[1777] = t.value(0.0f);
  row(r);
  t.softmax_forward(x, 6, n);
  EXPECT_GE(t.count_last(is_canonical_nan16), 3u * n) << "the NaN rows";
  if (t.dt == XHAL_DTYPE_F16) {
    EXPECT_GT(t.count_last(is_subnormal16), 0u) << "f16 subnormal y";
  }
}

XHAL_NARROW_TEST(SoftmaxBackwardRowsTailsAndPartialSums, XHAL_OP_SOFTMAX_BACKWARD) {
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{37, 2500}, {70, 33}, {1, 1}, {3, 5000}}) {
    const std::vector<float> x = t.wide(t.random(rows * n, -6.0f, 6.0f));
    std::vector<float> y(x.size());
    canon::softmax_forward(x.data(), rows, n, y.data());
    t.softmax_backward(t.narrowed(y), t.random(rows * n, -2.0f, 2.0f), rows, n);
  }
  // d = rowsum(y * dy) with dy = 1: the sum of 1 and 1500 small terms.
  const int64_t rows = 4, n = 2000;
  Bits y;
  for (int64_t r = 0; r < rows; ++r) {
    Bits row = t.partial_sum_row(n, 1500, 0.25f, 0.5f);
    y.insert(y.end(), row.begin(), row.end());
  }
  t.softmax_backward(y, Bits(rows * n, t.value(1.0f)), rows, n);
  t.softmax_backward(y, t.random(rows * n, -2.0f, 2.0f), rows, n, /*in_place=*/true);
}

// ---- RMSNorm ------------------------------------------------------------------
XHAL_NARROW_TEST(RmsNormForwardRowsTailsAndGammaDtypes, XHAL_OP_RMS_NORM_FORWARD) {
  for (xhal_dtype_t pdt : {t.dt, XHAL_DTYPE_F32}) {
    SCOPED_TRACE(std::string("gamma ") + xhal_dtype_name(pdt));
    for (auto [rows, n] : {std::pair<int64_t, int64_t>{37, 2500}, {5, 33}, {1, 1}, {3, 5000}})
      t.rms_forward(t.random(rows * n, -3.0f, 3.0f), t.params(pdt, n, 0.5f, 2.0f), rows, n);
    // sum of squares of 1 and 1500 small terms
    Bits x;
    for (int r = 0; r < 3; ++r) {
      Bits row = t.partial_sum_row(2000, 1500, -0.02f, 0.02f);
      x.insert(x.end(), row.begin(), row.end());
    }
    t.rms_forward(x, t.params(pdt, 2000, 0.5f, 2.0f), 3, 2000);
  }
}

// A spike row with a large gamma overflows f16 (y = sqrt(1000) * 3000 >
// 65504: infinity); a tiny gamma gives f16 subnormal outputs; a NaN in x
// makes its row the canonical NaN.
XHAL_NARROW_TEST(RmsNormForwardOverflowSubnormalAndNaN, XHAL_OP_RMS_NORM_FORWARD) {
  const int64_t n = 1000;
  Bits x = t.random(3 * n, -0.01f, 0.01f);
  x[0] = t.value(100.0f);
  x[n + 7] = t.value(-100.0f);
  x[2 * n + 3] = t.value(kNaN);
  NarrowTest::Params big = t.params(t.dt, n, 2900.0f, 3000.0f);
  t.rms_forward(x, big, 3, n);
  EXPECT_EQ(t.count_last(is_canonical_nan16), static_cast<size_t>(n)) << "the NaN row";
  if (t.dt == XHAL_DTYPE_F16) {
    EXPECT_EQ(t.count_last(is_inf16), 2u) << "f16 overflow to +-inf";
  }
  NarrowTest::Params tiny = t.params(t.dt, n, 1e-7f, 1e-6f);
  t.rms_forward(t.random(3 * n, -1.0f, 1.0f), tiny, 3, n);
  if (t.dt == XHAL_DTYPE_F16) {
    EXPECT_GT(t.count_last(is_subnormal16), 0u) << "f16 subnormal y";
  }
}

XHAL_NARROW_TEST(RmsNormBackwardBlocksTailsAndGammaDtypes, XHAL_OP_RMS_NORM_BACKWARD) {
  for (xhal_dtype_t pdt : {t.dt, XHAL_DTYPE_F32}) {
    SCOPED_TRACE(std::string("gamma ") + xhal_dtype_name(pdt));
    for (auto [rows, n] :
         {std::pair<int64_t, int64_t>{70, 300}, {37, 2500}, {1, 1}, {100, 33}, {5000, 3}})
      t.rms_backward(t.random(rows * n, -3.0f, 3.0f), t.params(pdt, n, 0.5f, 2.0f),
                     t.random(rows * n, -1.0f, 1.0f), rows, n);
    // dgamma's column sums: 1 then 1500 small dy * xhat terms (x = 1).
    const int64_t rows = 1501, n = 3;
    Bits x(rows * n, t.value(1.0f)), dy(rows * n);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j)
        dy[r * n + j] = r == 0 ? t.value(1.0f) : t.random(1, 0x1p-10f, 0x1p-9f)[0];
    t.rms_backward(x, t.params(pdt, n, 0.5f, 2.0f), dy, rows, n);
  }
}

// ---- LayerNorm ----------------------------------------------------------------
XHAL_NARROW_TEST(LayerNormForwardRowsTailsAndGammaDtypes, XHAL_OP_LAYER_NORM_FORWARD) {
  for (xhal_dtype_t pdt : {t.dt, XHAL_DTYPE_F32}) {
    SCOPED_TRACE(std::string("gamma ") + xhal_dtype_name(pdt));
    for (auto [rows, n] : {std::pair<int64_t, int64_t>{37, 2500}, {5, 33}, {1, 1}, {3, 5000}})
      t.ln_forward(t.random(rows * n, -3.0f, 3.0f), t.params(pdt, n, 0.5f, 2.0f), rows, n);
    Bits x;
    for (int r = 0; r < 3; ++r) {
      Bits row = t.partial_sum_row(2000, 1500, -0.02f, 0.02f);
      x.insert(x.end(), row.begin(), row.end());
    }
    t.ln_forward(x, t.params(pdt, 2000, 0.5f, 2.0f), 3, 2000);
  }
  // A constant row (variance 0), a NaN row, a row that overflows f16 with a
  // large gamma.
  const int64_t n = 1000;
  Bits x = t.random(3 * n, -0.01f, 0.01f);
  for (int64_t j = 0; j < n; ++j) x[j] = t.value(0.75f);
  x[n + 9] = t.value(-kNaN);
  x[2 * n] = t.value(50.0f);
  t.ln_forward(x, t.params(t.dt, n, 2900.0f, 3000.0f), 3, n);
  EXPECT_EQ(t.count_last(is_canonical_nan16), static_cast<size_t>(n)) << "the NaN row";
  if (t.dt == XHAL_DTYPE_F16) {
    EXPECT_EQ(t.count_last(is_inf16), 1u) << "f16 overflow to inf";
  }
}

XHAL_NARROW_TEST(LayerNormBackwardBlocksTailsAndGammaDtypes, XHAL_OP_LAYER_NORM_BACKWARD) {
  for (xhal_dtype_t pdt : {t.dt, XHAL_DTYPE_F32}) {
    SCOPED_TRACE(std::string("gamma ") + xhal_dtype_name(pdt));
    for (auto [rows, n] :
         {std::pair<int64_t, int64_t>{70, 300}, {37, 2500}, {1, 1}, {100, 33}, {5000, 3}})
      t.ln_backward(t.random(rows * n, -3.0f, 3.0f), t.params(pdt, n, 0.5f, 2.0f),
                    t.random(rows * n, -1.0f, 1.0f), rows, n);
    // dbeta's column sums: 1 then 1500 small dy.
    const int64_t rows = 1501, n = 3;
    Bits dy(rows * n);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j)
        dy[r * n + j] = r == 0 ? t.value(1.0f) : t.random(1, 0x1p-10f, 0x1p-9f)[0];
    t.ln_backward(t.random(rows * n, -3.0f, 3.0f), t.params(pdt, n, 0.5f, 2.0f), dy, rows, n);
    t.ln_backward(t.random(37 * 300, -3.0f, 3.0f), t.params(pdt, 300, 0.5f, 2.0f),
                  t.random(37 * 300, -1.0f, 1.0f), 37, 300, /*in_place=*/true);
  }
}

// ---- index_add ------------------------------------------------------------------
XHAL_NARROW_TEST(IndexAddDuplicatesUntouchedRowsAndHub, XHAL_OP_INDEX_ADD) {
  // Sources land in rows [0, 400); rows [400, 500) are untouched.
  std::vector<int64_t> idx = random_indices(3000, 400, fresh_seed());
  for (int i = 0; i < 40; ++i) idx[10 + i] = 5;  // more than 32 sources on row 5
  t.index_add(idx, 500, 19, 1.0f);
  t.index_add(idx, 500, 19, -0.375f);
  t.index_add(random_indices(2000, 40, fresh_seed()), 50, 300, 0.1f);  // a partial column tile
  // 15,000 of 20,000 sources on row 0 (a hub row), the rest spread.
  idx = random_indices(20000, 1000, fresh_seed());
  std::mt19937_64 rng(fresh_seed());
  for (auto& i : idx)
    if (rng() % 4 != 0) i = 0;
  t.index_add(idx, 1000, 4, 0.5f);
}

// Row 0's sources: 1 then 1999 small values (a sum that a narrowed partial
// loses); f16: 33000 + 33000 overflows to infinity (-40000 - 40000 to
// -infinity); a NaN source makes the canonical NaN.
XHAL_NARROW_TEST(IndexAddPartialSumsOverflowAndNaN, XHAL_OP_INDEX_ADD) {
  const int64_t w = 5;
  Bits src;
  for (int64_t j = 0; j < w; ++j) {
    Bits column = t.partial_sum_row(2000, 1999);
    if (src.empty()) src.resize(2000 * w);
    for (int64_t k = 0; k < 2000; ++k) src[k * w + j] = column[k];
  }
  t.index_add(std::vector<int64_t>(2000, 0), 2, w, 1.0f, src);
  t.index_add(std::vector<int64_t>(2000, 1), 3, w, -0.5f, src);
  Bits big = t.random(4 * w, 33000.0f, 34000.0f);
  for (int64_t j = 0; j < 2 * w; ++j) big[2 * w + j] = t.value(-40000.0f);
  big[3 * w + 2] = t.value(kNaN);
  t.index_add({0, 0, 1, 1}, 2, w, 1.0f, big);
  EXPECT_EQ(t.count_last(is_canonical_nan16), 1u) << "the NaN source";
  if (t.dt == XHAL_DTYPE_F16) {
    EXPECT_EQ(t.count_last(is_inf16), 2u * w - 1) << "f16 +-inf";
  }
}

// ---- sums of -0 terms (signed_zero.h) ---------------------------------------------
// The f32 tests' inputs, narrowed (-0 is 0x8000 in both types): a canonical
// sum of -0 terms only is +0, one that starts from -0 or folds `0 + t` into
// `t` is -0, and these outputs show the sign.
XHAL_NARROW_TEST(IndexAddSignedZeroSums, XHAL_OP_INDEX_ADD) {
  for (const auto& [w, alpha] : {std::pair<int64_t, float>{19, 1.0f}, {8, -0.375f}}) {
    SCOPED_TRACE("w " + std::to_string(w) + ", alpha " + std::to_string(alpha));
    const signed_zero::Scatter<float> s = signed_zero::scatter<float>(w);
    t.index_add(s.idx, s.num_rows, w, alpha, t.narrowed(s.src), t.narrowed(s.dst));
  }
}

XHAL_NARROW_TEST(SoftmaxBackwardSignedZeroRows, XHAL_OP_SOFTMAX_BACKWARD) {
  for (int64_t n : signed_zero::kRowLengths) {
    SCOPED_TRACE("n " + std::to_string(n));
    const int64_t rows = signed_zero::kSoftmaxRows;
    std::vector<float> x, dy, y(rows * n);
    signed_zero::softmax_rows<float>(n, x, dy);
    const std::vector<float> xw = t.wide(t.narrowed(x));
    canon::softmax_forward(xw.data(), rows, n, y.data());
    t.softmax_backward(t.narrowed(y), t.narrowed(dy), rows, n);
  }
}

XHAL_NARROW_TEST(LayerNormForwardSignedZeroRows, XHAL_OP_LAYER_NORM_FORWARD) {
  for (int64_t n : signed_zero::kRowLengths) {
    SCOPED_TRACE("n " + std::to_string(n));
    std::vector<float> x, gamma, beta;
    signed_zero::layer_norm_rows<float>(n, x, gamma, beta);
    NarrowTest::Params p;
    p.pdt = t.dt;
    p.narrow_g = t.narrowed(gamma);
    p.narrow_b = t.narrowed(beta);
    p.g = t.wide(p.narrow_g);
    p.b = t.wide(p.narrow_b);
    t.ln_forward(t.narrowed(x), p, signed_zero::kLayerNormRows, n);
  }
}

// dy of -0 and +0 (signed_zero::zero_dy) on the widened x, gamma and the
// f32 mean and rstd the backward helpers compute.
void norm_backward_signed_zero(NarrowTest& t, bool layer_norm) {
  using signed_zero::Pattern;
  for (const signed_zero::RowsN shape : signed_zero::kNormShapes)
    for (Pattern pattern : {Pattern::kGradient, Pattern::kProjection}) {
      if (!layer_norm && pattern == Pattern::kGradient) continue;  // RMSNorm has no rowsum(g)
      const int64_t rows = shape.rows, n = shape.n;
      SCOPED_TRACE("rows " + std::to_string(rows) + " n " + std::to_string(n) + ", " +
                   signed_zero::pattern_name(pattern));
      const size_t nn = static_cast<size_t>(n), count = static_cast<size_t>(rows * n);
      const Bits x = t.random(count, -3.0f, 3.0f);
      NarrowTest::Params p;
      p.pdt = t.dt;
      p.narrow_g = t.narrowed(signed_zero::backward_gamma<float>(n));
      p.narrow_b = t.random(nn, -1.0f, 1.0f);
      p.g = t.wide(p.narrow_g);
      p.b = t.wide(p.narrow_b);
      const std::vector<float> xf = t.wide(x);
      std::vector<float> y(count), mean(rows), rstd(rows), dy(count);
      if (layer_norm)
        canon::layer_norm_forward(xf.data(), p.g.data(), p.b.data(), rows, n, 1e-5f, y.data(),
                                  mean.data(), rstd.data());
      else canon::rms_norm_forward(xf.data(), p.g.data(), rows, n, 1e-5f, y.data(), rstd.data());
      for (size_t k = 0; k < count; ++k) {
        const size_t r = k / nn;
        const float xh = layer_norm ? (xf[k] - mean[r]) * rstd[r] : xf[k] * rstd[r];
        dy[k] = signed_zero::zero_dy(pattern, p.g[k % nn], xh);
      }
      if (layer_norm) t.ln_backward(x, p, t.narrowed(dy), rows, n);
      else t.rms_backward(x, p, t.narrowed(dy), rows, n);
    }
}

XHAL_NARROW_TEST(LayerNormBackwardSignedZeroRows, XHAL_OP_LAYER_NORM_BACKWARD) {
  norm_backward_signed_zero(t, true);
}

XHAL_NARROW_TEST(RmsNormBackwardSignedZeroRows, XHAL_OP_RMS_NORM_BACKWARD) {
  norm_backward_signed_zero(t, false);
}

XHAL_CONF_INSTANTIATE(NarrowTest);

}  // namespace
}  // namespace xhal::conf
