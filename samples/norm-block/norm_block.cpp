// norm-block: the normalisation and attention-softmax skeleton of a
// transformer block, forward and backward, over a batch of sequences:
//   xn = RMSNorm(x; g1)                      x, xn [B, T, D], D = H * Dh
//   q = k = v = xn split into H heads        [B, T, H, Dh] -> [B, H, T, Dh]
//   s = q k^T / sqrt(Dh), causal             [B, H, T, T]  (-inf above the diagonal)
//   p = softmax(s) over the last dim
//   o = p v, heads merged back               [B, H, T, Dh] -> [B, T, D]
//   y = LayerNorm(o; g2, b2)
//   loss = mean(y * r) for fixed random weights r
// The backward gives dL/dx, dL/dg1, dL/dg2, dL/db2, and is checked against a
// central finite difference of the loss along a random direction.
//
// What runs where. On the device: RMSNorm and LayerNorm forward and
// backward, softmax forward and backward, and the head split and merge (a
// permute of [B, T, H, Dh] to [B, H, T, Dh] and back). On the host, in plain
// loops: the two small batched matmuls (q k^T and p v) and their gradients
// (xhal has no dense matmul), and the loss. Every host <-> device transfer is
// marked "host <->".
//
// Usage: xhal-norm-block [batch] [seq]; the device is whatever XHAL_DEVICE
// selects. The last line is a digest of the final outputs' bytes, the same on
// every conforming device (samples/README.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

#include <xhal/xhal.hpp>

#include "digest.h"  // samples/common

namespace {

constexpr int64_t kHeads = 4, kHeadDim = 16, kD = kHeads * kHeadDim;
constexpr float kRmsEps = 1e-6f, kLnEps = 1e-5f;
// The finite-difference check fails the program above this relative error.
constexpr double kCheckBound = 1e-2;

struct Rng {  // splitmix64: the same numbers on every machine
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(next() >> 40) * 0x1p-23f - 1.0f; }  // [-1, 1)
};

struct Block {
  xhal::Device& dev;
  int64_t b, t, rows;  // batch, sequence length, rows = b * t tokens
  float scale;         // 1 / sqrt(Dh), one correctly rounded sqrt and divide
  xhal::Buffer x, g1, xn, rstd1, xh, s, p, o, om, g2, b2, y, mean2, rstd2;
  xhal::Buffer dy, dom, dg2, db2, dout, dp, ds, dxh, dxn, dx, dg1;
  std::vector<float> xh_host, p_host;  // kept from the forward for the backward

  xhal::Buffer buf(int64_t floats) { return xhal::Buffer::allocate(dev, floats * sizeof(float)); }
  xhal_tensor_t t2(const xhal::Buffer& buf, int64_t r, int64_t c) const {
    return xhal::tensor<float>(buf, {r, c});
  }
  // [B, T, H, Dh] (tokens, heads split) and [B, H, T, Dh] (heads first).
  xhal_tensor_t tokens(const xhal::Buffer& buf) const {
    return xhal::tensor<float>(buf, {b, t, kHeads, kHeadDim});
  }
  xhal_tensor_t heads(const xhal::Buffer& buf) const {
    return xhal::tensor<float>(buf, {b, kHeads, t, kHeadDim});
  }

  Block(xhal::Device& d, int64_t batch, int64_t seq) : dev(d), b(batch), t(seq), rows(batch * seq) {
    scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    const int64_t n = rows * kD, nt = b * kHeads * t * t;
    x = buf(n), g1 = buf(kD), xn = buf(n), rstd1 = buf(rows), xh = buf(n), s = buf(nt);
    p = buf(nt), o = buf(n), om = buf(n), g2 = buf(kD), b2 = buf(kD), y = buf(n);
    mean2 = buf(rows), rstd2 = buf(rows), dy = buf(n), dom = buf(n), dg2 = buf(kD);
    db2 = buf(kD), dout = buf(n), dp = buf(nt), ds = buf(nt), dxh = buf(n), dxn = buf(n);
    dx = buf(n), dg1 = buf(kD);
  }

  // Forward; returns y on the host. g1, g2, b2 are already on the device.
  std::vector<float> forward(const std::vector<float>& x_host) {
    const int64_t n = rows * kD, bh = b * kHeads;
    x.write(x_host);  // host -> device: x
    xhal::rms_norm_forward(dev, t2(x, rows, kD), xhal::tensor<float>(g1, {kD}), kRmsEps,
                           t2(xn, rows, kD), xhal::tensor<float>(rstd1, {rows}));
    // Split heads: xh[b][h][t][:] = xn[b][t][h][:].
    xhal::permute(dev, tokens(xn), {0, 2, 1, 3}, heads(xh));
    xh_host = xh.read<float>(n);  // device -> host: the heads

    // Host: scores of every head, -inf above the diagonal (causal mask).
    std::vector<float> s_host(bh * t * t);
    for (int64_t g = 0; g < bh; ++g)
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j < t; ++j) {
          float acc = 0.0f;
          for (int64_t c = 0; c < kHeadDim && j <= i; ++c)
            acc = acc + xh_host[(g * t + i) * kHeadDim + c] * xh_host[(g * t + j) * kHeadDim + c];
          s_host[(g * t + i) * t + j] =
              j <= i ? acc * scale : -std::numeric_limits<float>::infinity();
        }
    s.write(s_host);  // host -> device: scores
    // Softmax over each row of T scores; the -inf entries become exactly +0.
    xhal::softmax_forward(dev, t2(s, bh * t, t), t2(p, bh * t, t));
    p_host = p.read<float>(bh * t * t);  // device -> host: probabilities

    // Host: o = p v.
    std::vector<float> o_host(n, 0.0f);
    for (int64_t g = 0; g < bh; ++g)
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j <= i; ++j)
          for (int64_t c = 0; c < kHeadDim; ++c) {
            float& out = o_host[(g * t + i) * kHeadDim + c];
            out = out + p_host[(g * t + i) * t + j] * xh_host[(g * t + j) * kHeadDim + c];
          }
    o.write(o_host);  // host -> device: o
    // Merge heads: om[b][t][h][:] = o[b][h][t][:], i.e. rows of D features.
    xhal::permute(dev, heads(o), {0, 2, 1, 3}, tokens(om));
    xhal::layer_norm_forward(
        dev, t2(om, rows, kD), xhal::tensor<float>(g2, {kD}), xhal::tensor<float>(b2, {kD}), kLnEps,
        t2(y, rows, kD), xhal::tensor<float>(mean2, {rows}), xhal::tensor<float>(rstd2, {rows}));
    return y.read<float>(n);  // device -> host: y
  }

  // Backward from dL/dy; leaves dx, dg1, dg2, db2 on the device.
  void backward(const std::vector<float>& dy_host) {
    const int64_t n = rows * kD, bh = b * kHeads;
    dy.write(dy_host);  // host -> device: dy
    xhal::layer_norm_backward(
        dev, t2(om, rows, kD), xhal::tensor<float>(g2, {kD}), xhal::tensor<float>(mean2, {rows}),
        xhal::tensor<float>(rstd2, {rows}), t2(dy, rows, kD), t2(dom, rows, kD),
        xhal::tensor<float>(dg2, {kD}), xhal::tensor<float>(db2, {kD}));
    // Split the gradient into heads. The same permute as in the forward,
    // written as a view: xhal_tensor_permute_view only reorders the shape and
    // strides (no data moves); xhal_permute accepts the strided view and,
    // with the identity order, writes it out contiguously.
    const xhal_tensor_t heads_view = xhal::permute_view(tokens(dom), {0, 2, 1, 3});
    xhal::permute(dev, heads_view, {0, 1, 2, 3}, heads(dout));
    const std::vector<float> do_host = dout.read<float>(n);  // device -> host: do

    // Host: dp = do v^T (causal part only), and v's share of dxh: p^T do.
    std::vector<float> dp_host(bh * t * t, 0.0f), dxh_host(n, 0.0f);
    for (int64_t g = 0; g < bh; ++g)
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j <= i; ++j) {
          const float pij = p_host[(g * t + i) * t + j];
          float acc = 0.0f;
          for (int64_t c = 0; c < kHeadDim; ++c) {
            const float doc = do_host[(g * t + i) * kHeadDim + c];
            acc = acc + doc * xh_host[(g * t + j) * kHeadDim + c];
            float& dv = dxh_host[(g * t + j) * kHeadDim + c];
            dv = dv + pij * doc;
          }
          dp_host[(g * t + i) * t + j] = acc;
        }
    dp.write(dp_host);  // host -> device: dp
    xhal::softmax_backward(dev, t2(p, bh * t, t), t2(dp, bh * t, t), t2(ds, bh * t, t));
    const std::vector<float> ds_host = ds.read<float>(bh * t * t);  // device -> host: ds

    // Host: q's and k's shares of dxh (q = k = xh): scale ds k and scale ds^T q.
    for (int64_t g = 0; g < bh; ++g)
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j <= i; ++j) {
          const float dsij = scale * ds_host[(g * t + i) * t + j];
          for (int64_t c = 0; c < kHeadDim; ++c) {
            float& dq = dxh_host[(g * t + i) * kHeadDim + c];
            dq = dq + dsij * xh_host[(g * t + j) * kHeadDim + c];
            float& dk = dxh_host[(g * t + j) * kHeadDim + c];
            dk = dk + dsij * xh_host[(g * t + i) * kHeadDim + c];
          }
        }
    dxh.write(dxh_host);  // host -> device: dxh
    // Merge heads back to tokens, then through RMSNorm.
    xhal::permute(dev, heads(dxh), {0, 2, 1, 3}, tokens(dxn));
    xhal::rms_norm_backward(dev, t2(x, rows, kD), xhal::tensor<float>(g1, {kD}),
                            xhal::tensor<float>(rstd1, {rows}), t2(dxn, rows, kD), t2(dx, rows, kD),
                            xhal::tensor<float>(dg1, {kD}));
  }
};

// loss = mean(y * r), summed in double in index order.
double loss(const std::vector<float>& y, const std::vector<float>& r) {
  double sum = 0.0;
  for (size_t i = 0; i < y.size(); ++i) sum += static_cast<double>(y[i]) * r[i];
  return sum / static_cast<double>(y.size());
}

int run(int64_t batch, int64_t seq) {
  // XHAL_DEVICE chooses the device (unset: the best one, CPU last).
  xhal::Device dev = xhal::Device::open();
  std::printf("device: %s \"%s\"\n", dev.label().c_str(), dev.info().name);
  std::printf("block: batch %" PRId64 ", sequence %" PRId64 ", %" PRId64 " heads of %" PRId64
              " (D = %" PRId64 ")\n",
              batch, seq, kHeads, kHeadDim, kD);
  Block block(dev, batch, seq);
  const int64_t n = batch * seq * kD;

  Rng rng{2024};
  std::vector<float> x(n), r(n), dir(n), g1(kD), g2(kD), b2(kD);
  for (float& v : x) v = 2.0f * rng.uniform();
  for (float& v : r) v = rng.uniform();
  for (float& v : dir) v = rng.uniform();
  for (int64_t c = 0; c < kD; ++c) {
    g1[c] = 1.0f + 0.25f * rng.uniform();
    g2[c] = 1.0f + 0.25f * rng.uniform();
    b2[c] = 0.25f * rng.uniform();
  }
  block.g1.write(g1), block.g2.write(g2), block.b2.write(b2);  // host -> device, once

  const std::vector<float> y = block.forward(x);
  const double l = loss(y, r);
  std::vector<float> dy(n);
  for (int64_t i = 0; i < n; ++i) dy[i] = r[i] / static_cast<float>(n);  // dL/dy
  block.backward(dy);
  // device -> host: the gradients.
  const std::vector<float> dx = block.dx.read<float>(n), dg1 = block.dg1.read<float>(kD);
  const std::vector<float> dg2 = block.dg2.read<float>(kD), db2 = block.db2.read<float>(kD);
  double dx_norm2 = 0.0, directional = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    dx_norm2 += static_cast<double>(dx[i]) * dx[i];
    directional += static_cast<double>(dx[i]) * dir[i];
  }
  std::printf("loss %.9g\n|dL/dx| %.9g\n", l, std::sqrt(dx_norm2));

  // Central finite difference of the loss along dir, against <dL/dx, dir>.
  const float h = 1e-2f;
  std::vector<float> xs(n);
  for (int64_t i = 0; i < n; ++i) xs[i] = x[i] + h * dir[i];
  const double lp = loss(block.forward(xs), r);
  for (int64_t i = 0; i < n; ++i) xs[i] = x[i] - h * dir[i];
  const double lm = loss(block.forward(xs), r);
  const double fd = (lp - lm) / (2.0 * h);
  const double err = std::fabs(fd - directional) / std::max(std::fabs(fd), std::fabs(directional));
  std::printf("check <dL/dx, dir>: adjoint %.6e, finite difference %.6e, rel err %.2e\n",
              directional, fd, err);
  if (!(err <= kCheckBound)) {
    std::fprintf(stderr,
                 "norm-block: the gradient differs from its finite difference by more "
                 "than %g\n",
                 kCheckBound);
    return 1;
  }
  Digest digest;  // y and every gradient
  for (const auto* v : {&y, &dx, &dg1, &dg2, &db2}) digest.add(*v);
  digest.print();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 8;
  const int64_t seq = argc > 2 ? std::atoll(argv[2]) : 64;
  if (batch < 1 || seq < 1 || argc > 3) {
    std::fprintf(stderr, "usage: xhal-norm-block [batch >= 1] [seq >= 1]\n");
    return 2;
  }
  // Every xhal call is checked: xhal.hpp turns a status other than XHAL_OK
  // into xhal::Error carrying the status and xhal_last_error()'s message.
  try {
    return run(batch, seq);
  } catch (const xhal::Error& e) {
    std::fprintf(stderr, "norm-block: xhal error %s: %s\n", xhal_status_name(e.status()),
                 e.message().c_str());
    return 1;
  }
}
