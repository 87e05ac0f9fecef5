// sdk.canonical_header: the installed <xhal/xhal_canonical.h> gives the
// bits of the cpu plugin, called through the public API (xhal.hpp), on a few
// hundred rows: softmax forward (xhal_exp, the lane order of 3.2, the (+)
// tree of 3.3) and backward (rowsum), index_add with a hub row (segsum,
// 3.7), LayerNorm backward's dbeta (colsum, 3.5); and the header compiled as
// C gives the same bits as in C++. Exit 0 when all are identical; prints the
// first differing element of each op otherwise.
#include <xhal/xhal_canonical.h>
#include <xhal/xhal.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

extern "C" {
float sdk_c_exp(float x);
float sdk_c_segsum(const float* t, size_t m);
float sdk_c_softmax_row(const float* x, size_t n, float* y);
}

namespace {

int failures = 0;
size_t compared = 0;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Bit-identical, except that any NaN equals any NaN (payloads are not part
// of the contract).
bool same(float a, float b) { return (a != a && b != b) || bits(a) == bits(b); }

void compare(const char* what, const std::vector<float>& device, const std::vector<float>& header) {
  for (size_t i = 0; i < device.size(); ++i) {
    ++compared;
    if (!same(device[i], header[i])) {
      std::printf("FAIL %s: element %zu: device %a (0x%08x), header %a (0x%08x)\n", what, i,
                  static_cast<double>(device[i]), bits(device[i]), static_cast<double>(header[i]),
                  bits(header[i]));
      ++failures;
      return;
    }
  }
  std::printf("ok   %s: %zu values identical\n", what, device.size());
}

std::vector<float> uniform(std::mt19937& rng, size_t count, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(count);
  for (float& x : v) x = d(rng);
  return v;
}

// Softmax forward and backward over `rows` rows of length n.
void softmax_case(const xhal::Device& dev, std::mt19937& rng, const std::vector<float>& x,
                  size_t rows, size_t n, const char* name) {
  const int64_t r = static_cast<int64_t>(rows), c = static_cast<int64_t>(n);
  xhal::Buffer bx = xhal::Buffer::upload(dev, x);
  xhal::Buffer by = xhal::Buffer::allocate(dev, x.size() * sizeof(float));
  xhal::softmax_forward(dev, xhal::tensor<float>(bx, {r, c}), xhal::tensor<float>(by, {r, c}));
  std::vector<float> y = by.read<float>(x.size());
  std::vector<float> want(x.size());
  for (size_t i = 0; i < rows; ++i) xhal_canon_softmax_row(&x[i * n], n, &want[i * n]);
  std::string what = std::string("softmax_forward ") + name;
  compare(what.c_str(), y, want);

  std::vector<float> dy = uniform(rng, x.size(), -1.0f, 1.0f);
  xhal::Buffer bdy = xhal::Buffer::upload(dev, dy);
  xhal::Buffer bdx = xhal::Buffer::allocate(dev, x.size() * sizeof(float));
  xhal::softmax_backward(dev, xhal::tensor<float>(by, {r, c}), xhal::tensor<float>(bdy, {r, c}),
                         xhal::tensor<float>(bdx, {r, c}));
  std::vector<float> dx = bdx.read<float>(x.size());
  std::vector<float> p(n), want_dx(x.size());
  for (size_t i = 0; i < rows; ++i)
    xhal_canon_softmax_backward_row(&y[i * n], &dy[i * n], n, p.data(), &want_dx[i * n]);
  what = std::string("softmax_backward ") + name;
  compare(what.c_str(), dx, want_dx);
}

}  // namespace

int main() {
  try {
    xhal::Device dev = xhal::Device::open("cpu");
    std::mt19937 rng(15);

    // xhal_exp across its whole range (and past both cut-offs): rows [0, t]
    // give y[1] = xhal_exp(t) * (1 / (1 + xhal_exp(t))) for t <= 0 and
    // rows [t, 0] the mirror; 400 rows.
    {
      std::vector<float> x;
      for (int i = 0; i < 200; ++i) {
        float t = -110.0f + 200.0f * static_cast<float>(i) / 199.0f;
        x.insert(x.end(), {0.0f, t, t, 0.0f});
      }
      softmax_case(dev, rng, x, 400, 2, "exp sweep [0,t]");
      std::vector<float> c_exp(x.size()), cxx_exp(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        c_exp[i] = sdk_c_exp(x[i] * 0.9f);
        cxx_exp[i] = xhal_canon_exp(x[i] * 0.9f);
      }
      compare("xhal_canon_exp C against C++", c_exp, cxx_exp);
    }
    // Rows around the lane (128), chunk (1024) and tree-padding boundaries,
    // with entries of several scales, -inf entries and one all -inf row.
    const size_t lengths[] = {1, 3, 127, 129, 1023, 1025, 3000, 9000};
    for (size_t n : lengths) {
      const size_t rows = n > 2000 ? 4 : 24;
      std::vector<float> x = uniform(rng, rows * n, -30.0f, 30.0f);
      for (size_t i = 0; i < rows * n; i += 37) x[i] = -std::numeric_limits<float>::infinity();
      if (n > 1)
        for (size_t i = 0; i < n; ++i) x[i] = -std::numeric_limits<float>::infinity();
      char name[32];
      std::snprintf(name, sizeof name, "n=%zu", n);
      softmax_case(dev, rng, x, rows, n, name);
      std::vector<float> yc(n), ycxx(n);
      sdk_c_softmax_row(&x[n * (rows - 1)], n, yc.data());
      xhal_canon_softmax_row(&x[n * (rows - 1)], n, ycxx.data());
      std::string what = std::string("xhal_canon_softmax_row C against C++ ") + name;
      compare(what.c_str(), yc, ycxx);
    }

    // index_add: 3000 sources into 40 rows of width 3; row 0 is a hub with
    // about 1000 sources (32 chunks), row 39 gets none.
    {
      const size_t count = 3000, rows = 40, w = 3;
      const float alpha = 0.7f;
      std::vector<int64_t> idx(count);
      std::uniform_int_distribution<int64_t> pick(0, static_cast<int64_t>(rows) - 2);
      for (size_t i = 0; i < count; ++i) idx[i] = i % 3 == 0 ? 0 : pick(rng);
      std::vector<float> src = uniform(rng, count * w, -100.0f, 100.0f);
      std::vector<float> dst = uniform(rng, rows * w, -1.0f, 1.0f);
      xhal::IndexPlan plan = xhal::IndexPlan::create(dev, idx, rows);
      xhal::Buffer bsrc = xhal::Buffer::upload(dev, src);
      xhal::Buffer bdst = xhal::Buffer::upload(dev, dst);
      xhal::index_add(dev, plan, alpha,
                      xhal::tensor<float>(bsrc, {static_cast<int64_t>(count), (int64_t)w}),
                      xhal::tensor<float>(bdst, {static_cast<int64_t>(rows), (int64_t)w}));
      std::vector<float> got = bdst.read<float>(rows * w);
      std::vector<float> want = dst, want_c = dst;
      for (size_t r = 0; r < rows; ++r)
        for (size_t j = 0; j < w; ++j) {
          std::vector<float> terms;  // src[i][j] for idx[i] == r, ascending i
          for (size_t i = 0; i < count; ++i)
            if (idx[i] == static_cast<int64_t>(r)) terms.push_back(src[i * w + j]);
          if (terms.empty()) continue;
          float t = alpha * xhal_canon_segsum(terms.data(), terms.size(), 1);
          want[r * w + j] = want[r * w + j] + t;
          float tc = alpha * sdk_c_segsum(terms.data(), terms.size());
          want_c[r * w + j] = want_c[r * w + j] + tc;
        }
      compare("index_add (segsum, hub row of ~1000 sources)", got, want);
      compare("xhal_canon_segsum C against C++", want_c, want);
    }

    // LayerNorm backward: dbeta[j] = colsum(dy[.][j]) over 300 rows (10
    // blocks of 32, padded to 16 in the tree).
    {
      const size_t rows = 300, n = 5;
      const int64_t r = rows, c = n;
      std::vector<float> x = uniform(rng, rows * n, -2.0f, 2.0f);
      std::vector<float> gamma = uniform(rng, n, 0.5f, 1.5f);
      std::vector<float> mean = uniform(rng, rows, -0.1f, 0.1f);
      std::vector<float> rstd = uniform(rng, rows, 0.5f, 2.0f);
      std::vector<float> dy = uniform(rng, rows * n, -50.0f, 50.0f);
      xhal::Buffer bx = xhal::Buffer::upload(dev, x), bg = xhal::Buffer::upload(dev, gamma),
                   bm = xhal::Buffer::upload(dev, mean), br = xhal::Buffer::upload(dev, rstd),
                   bdy = xhal::Buffer::upload(dev, dy);
      xhal::Buffer bdx = xhal::Buffer::allocate(dev, rows * n * sizeof(float));
      xhal::Buffer bdg = xhal::Buffer::allocate(dev, n * sizeof(float));
      xhal::Buffer bdb = xhal::Buffer::allocate(dev, n * sizeof(float));
      xhal::layer_norm_backward(dev, xhal::tensor<float>(bx, {r, c}), xhal::tensor<float>(bg, {c}),
                                xhal::tensor<float>(bm, {r}), xhal::tensor<float>(br, {r}),
                                xhal::tensor<float>(bdy, {r, c}), xhal::tensor<float>(bdx, {r, c}),
                                xhal::tensor<float>(bdg, {c}), xhal::tensor<float>(bdb, {c}));
      std::vector<float> got = bdb.read<float>(n);
      std::vector<float> want(n);
      for (size_t j = 0; j < n; ++j) want[j] = xhal_canon_colsum(dy.data(), rows, n, j);
      compare("layer_norm_backward dbeta (colsum)", got, want);
    }
  } catch (const xhal::Error& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  std::printf("%s: %zu values compared, %d op(s) differ\n", failures ? "FAIL" : "PASS", compared,
              failures);
  return failures ? 1 : 0;
}
