// gnn: one graph-attention message-passing layer, trained for a few steps of
// plain SGD, on a generated graph with hub nodes.
//
// The layer (GraphSAGE-style: a node keeps its own features and adds an
// attention-weighted sum over K sampled in-neighbours):
//   Z      = X W                                   [N, F]   node features
//   s[d,k] = leaky_relu(u[src(d,k)] + v[d]),  u = Z a_src, v = Z a_dst
//   alpha  = softmax over k of s[d, :]             [N, K]   per destination
//   h[d]   = Z[d] + sum_k alpha[d,k] Z[src(d,k)]            message passing
//   y      = LayerNorm(h; gamma, beta)
//   loss   = mean((y - y_teacher)^2), y_teacher from the same layer with
//            other ("teacher") parameters.
// Each destination has exactly K sampled in-edges (fixed fan-out), so the
// edge scores form a dense [N, K] matrix and a row softmax is exactly the
// per-destination softmax. Half the sampled sources are one of 8 hub nodes,
// so the backward scatter-add into sources has rows with thousands of terms.
//
// What runs where. xhal has the data-movement and row ops, no elementwise
// arithmetic and no dense matmul. On the device: the gather of source rows
// (xhal_index_select), the softmax, the weighting of every edge's message
// (a diagonal sparse matrix whose values are alpha, see below), the
// scatter-add into destinations and into sources (xhal_index_add), LayerNorm
// forward and backward. On the host, in plain loops: X W and its gradient,
// the per-node score scalars u and v, the loss and SGD. Every host <-> device
// transfer is one marked "host <->": per step, [N, F], [N, K] and [F] arrays
// only; the [E, F] per-edge tensors never leave the device.
//
// Usage: xhal-gnn [nodes] [steps]; the device is whatever XHAL_DEVICE
// selects. The last line is a digest of the final outputs' bytes, the same on
// every conforming device (samples/README.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <xhal/xhal.hpp>

#include "digest.h"  // samples/common

namespace {

constexpr int64_t kFanout = 8;  // K sampled in-edges per destination
constexpr int64_t kIn = 16;     // input features
constexpr int64_t kF = 32;      // hidden features
constexpr int64_t kHubs = 8;    // hub nodes; half of all edges start at one
constexpr float kSlope = 0.2f;  // leaky_relu's negative slope
constexpr float kEps = 1e-5f;   // LayerNorm epsilon
constexpr float kRate = 4.0f;   // SGD learning rate
// The gradient check fails the program above this relative error.
constexpr double kCheckBound = 1e-2;

// splitmix64: the same numbers on every machine (no std:: distributions).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(next() >> 40) * 0x1p-23f - 1.0f; }  // [-1, 1)
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
};

// FNV-1a 64 over raw bytes.
struct Params {
  std::vector<float> w, a_src, a_dst, gamma, beta;  // [kIn, kF], [kF] x 4
};
std::vector<float> Params::*const kFields[] = {&Params::w, &Params::a_src, &Params::a_dst,
                                               &Params::gamma, &Params::beta};

Params random_params(Rng& rng, float scale) {
  Params p{std::vector<float>(kIn * kF), std::vector<float>(kF), std::vector<float>(kF),
           std::vector<float>(kF, 1.0f), std::vector<float>(kF, 0.0f)};
  for (float& v : p.w) v = scale * rng.uniform();
  for (float& v : p.a_src) v = scale * rng.uniform();
  for (float& v : p.a_dst) v = scale * rng.uniform();
  return p;
}

// The layer's device state: index plans and the diagonal matrix are built
// once per graph; buffers are reused by every step.
struct Layer {
  xhal::Device& dev;
  int64_t n, e;              // nodes, edges (e = n * K)
  std::vector<int32_t> src;  // src[d * K + k]: the k-th sampled in-neighbour of d
  xhal::IndexPlan by_src;    // edge e -> its source row
  xhal::IndexPlan by_dst;    // edge e -> its destination row (e / K)
  xhal::Csr diag;            // [E, E] diagonal; values = alpha (set on the device)
  xhal::Buffer z, zs, s, alpha, msg, h, y, mean, rstd, gamma, beta;
  xhal::Buffer dy, dh, dgamma, dbeta, dmsg, dzs, dz, dalpha, ds;
  // Host copies kept from the forward for the backward.
  std::vector<float> z_host, pre;  // Z [N, F]; score pre-activations [N, K]

  xhal_tensor_t t(const xhal::Buffer& b, std::initializer_list<int64_t> shape) const {
    return xhal::tensor<float>(b, shape);
  }
  xhal::Buffer buf(int64_t floats) { return xhal::Buffer::allocate(dev, floats * sizeof(float)); }

  Layer(xhal::Device& d, int64_t nodes, Rng& rng) : dev(d), n(nodes), e(nodes * kFanout) {
    src.resize(e);
    std::vector<int32_t> dst(e), diagonal_ptr(e + 1), diagonal_col(e);
    for (int64_t i = 0; i < e; ++i) {
      // Half the sources are a hub: node 0, N/8, 2N/8, ... (8 of them).
      const bool hub = rng.next() & 1;
      src[i] = static_cast<int32_t>(hub ? rng.below(kHubs) * (n / kHubs) : rng.below(n));
      dst[i] = static_cast<int32_t>(i / kFanout);
      diagonal_ptr[i] = static_cast<int32_t>(i);
      diagonal_col[i] = static_cast<int32_t>(i);
    }
    diagonal_ptr[e] = static_cast<int32_t>(e);
    // Plans validate and upload the index lists once; every later gather and
    // scatter-add reuses them (host ->, once).
    by_src = xhal::IndexPlan::create(dev, src, n);
    by_dst = xhal::IndexPlan::create(dev, dst, n);
    diag = xhal::Csr::create(dev, e, e, diagonal_ptr, diagonal_col);  // values start at 0
    z = buf(n * kF), zs = buf(e * kF), s = buf(e), alpha = buf(e), msg = buf(e * kF);
    h = buf(n * kF), y = buf(n * kF), mean = buf(n), rstd = buf(n), gamma = buf(kF);
    beta = buf(kF), dy = buf(n * kF), dh = buf(n * kF), dgamma = buf(kF), dbeta = buf(kF);
    dmsg = buf(e * kF), dzs = buf(e * kF), dz = buf(n * kF), dalpha = buf(e), ds = buf(e);
  }

  // Forward; returns y on the host.
  std::vector<float> forward(const std::vector<float>& x, const Params& p) {
    // Host: Z = X W, u = Z a_src, v = Z a_dst, s = leaky_relu(u[src] + v[dst]).
    z_host.assign(n * kF, 0.0f);
    std::vector<float> u(n), v(n), score(e);
    pre.resize(e);
    for (int64_t r = 0; r < n; ++r) {
      float* zr = &z_host[r * kF];
      for (int64_t i = 0; i < kIn; ++i)
        for (int64_t f = 0; f < kF; ++f) zr[f] = zr[f] + x[r * kIn + i] * p.w[i * kF + f];
      u[r] = v[r] = 0.0f;
      for (int64_t f = 0; f < kF; ++f) u[r] = u[r] + zr[f] * p.a_src[f];
      for (int64_t f = 0; f < kF; ++f) v[r] = v[r] + zr[f] * p.a_dst[f];
    }
    for (int64_t i = 0; i < e; ++i) {
      pre[i] = u[src[i]] + v[i / kFanout];
      score[i] = pre[i] > 0.0f ? pre[i] : kSlope * pre[i];
    }
    z.write(z_host);  // host -> device: Z, the scores, gamma and beta
    s.write(score);
    gamma.write(p.gamma);
    beta.write(p.beta);

    // Device. Gather every edge's source row: zs[e] = Z[src[e]].
    xhal::index_select(dev, by_src, t(z, {n, kF}), t(zs, {e, kF}));
    // Per-destination softmax: one row of K scores per destination.
    xhal::softmax_forward(dev, t(s, {n, kFanout}), t(alpha, {n, kFanout}));
    // msg[e] = alpha[e] * zs[e]: xhal has no elementwise multiply, but a
    // sparse matrix can scale rows. diag(alpha) takes its values straight
    // from the softmax output (device to device), and diag(alpha) zs is then
    // exactly alpha[e] * zs[e, f] for every element (one product each).
    diag.set_values(t(alpha, {e}));
    xhal::spmm(dev, diag, XHAL_TRANSPOSE_NONE, 1.0f, t(zs, {e, kF}), 0.0f, t(msg, {e, kF}));
    // h = Z, then h[dst[e]] += msg[e]: the scatter-add into destinations, in
    // the canonical order (ascending edge), so the sum has the same bits on
    // every device.
    z.copy_to(h, n * kF * sizeof(float));
    xhal::index_add(dev, by_dst, 1.0f, t(msg, {e, kF}), t(h, {n, kF}));
    xhal::layer_norm_forward(dev, t(h, {n, kF}), t(gamma, {kF}), t(beta, {kF}), kEps, t(y, {n, kF}),
                             t(mean, {n}), t(rstd, {n}));
    return y.read<float>(n * kF);  // device -> host: y
  }

  // Backward of the loss, given dloss/dy; returns the parameter gradients.
  Params backward(const std::vector<float>& x, const Params& p, const std::vector<float>& dy_host) {
    dy.write(dy_host);  // host -> device: dy
    xhal::layer_norm_backward(dev, t(h, {n, kF}), t(gamma, {kF}), t(mean, {n}), t(rstd, {n}),
                              t(dy, {n, kF}), t(dh, {n, kF}), t(dgamma, {kF}), t(dbeta, {kF}));
    // The scatter-add into destinations has a gather as its gradient:
    // dmsg[e] = dh[dst[e]].
    xhal::index_select(dev, by_dst, t(dh, {n, kF}), t(dmsg, {e, kF}));
    // dzs[e] = alpha[e] * dmsg[e] (the same diagonal matrix).
    xhal::spmm(dev, diag, XHAL_TRANSPOSE_NONE, 1.0f, t(dmsg, {e, kF}), 0.0f, t(dzs, {e, kF}));
    // dZ = dh (the self term), then dZ[src[e]] += dzs[e]: the gather's
    // gradient is a scatter-add into the sources; a hub row sums thousands
    // of edges, in the canonical order.
    dh.copy_to(dz, n * kF * sizeof(float));
    xhal::index_add(dev, by_src, 1.0f, t(dzs, {e, kF}), t(dz, {n, kF}));

    // dalpha[e] = dmsg[e] . zs[e] = dh[dst[e]] . Z[src[e]]: a dot product
    // per edge, on the host from dh and the host's own Z.
    std::vector<float> dh_host = dh.read<float>(n * kF);  // device -> host: dh
    std::vector<float> dalpha_host(e);
    for (int64_t i = 0; i < e; ++i) {
      float acc = 0.0f;
      for (int64_t f = 0; f < kF; ++f)
        acc = acc + dh_host[(i / kFanout) * kF + f] * z_host[src[i] * kF + f];
      dalpha_host[i] = acc;
    }
    dalpha.write(dalpha_host);  // host -> device: dalpha
    xhal::softmax_backward(dev, t(alpha, {n, kFanout}), t(dalpha, {n, kFanout}),
                           t(ds, {n, kFanout}));

    // device -> host: ds, dZ, dgamma, dbeta.
    std::vector<float> ds_host = ds.read<float>(e), dz_host = dz.read<float>(n * kF);
    Params g{std::vector<float>(kIn * kF, 0.0f), std::vector<float>(kF, 0.0f),
             std::vector<float>(kF, 0.0f), dgamma.read<float>(kF), dbeta.read<float>(kF)};
    // Host: through leaky_relu into u and v, then into Z, a_src, a_dst, W.
    std::vector<float> du(n, 0.0f), dv(n, 0.0f);
    for (int64_t i = 0; i < e; ++i) {
      const float dpre = pre[i] > 0.0f ? ds_host[i] : kSlope * ds_host[i];
      du[src[i]] = du[src[i]] + dpre;
      dv[i / kFanout] = dv[i / kFanout] + dpre;
    }
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t f = 0; f < kF; ++f) {
        float& d = dz_host[r * kF + f];
        g.a_src[f] = g.a_src[f] + z_host[r * kF + f] * du[r];
        g.a_dst[f] = g.a_dst[f] + z_host[r * kF + f] * dv[r];
        d = d + du[r] * p.a_src[f];
        d = d + dv[r] * p.a_dst[f];
      }
      for (int64_t i = 0; i < kIn; ++i)
        for (int64_t f = 0; f < kF; ++f)
          g.w[i * kF + f] = g.w[i * kF + f] + x[r * kIn + i] * dz_host[r * kF + f];
    }
    return g;
  }
};

// Mean squared error (summed in double, in index order) and its gradient.
double mse(const std::vector<float>& y, const std::vector<float>& target, std::vector<float>* dy) {
  double sum = 0.0;
  const float scale = 2.0f / static_cast<float>(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const float diff = y[i] - target[i];
    sum += static_cast<double>(diff) * diff;
    if (dy) (*dy)[i] = scale * diff;
  }
  return sum / static_cast<double>(y.size());
}

// Central difference of the loss along the gradient g itself (all
// parameters move by `dist` in all) against the adjoint's prediction.
bool check_gradient(Layer& layer, const std::vector<float>& x, const std::vector<float>& target,
                    const Params& p, const Params& g) {
  double norm2 = 0.0;
  for (auto f : kFields)
    for (float v : g.*f) norm2 += static_cast<double>(v) * v;
  const double dist = 1e-2, scale = dist / std::sqrt(norm2);
  Params plus = p, minus = p;
  double adjoint = 0.0;  // g . (plus - minus), with the float steps actually taken
  for (auto f : kFields)
    for (size_t i = 0; i < (p.*f).size(); ++i) {
      (plus.*f)[i] = static_cast<float>((p.*f)[i] + scale * (g.*f)[i]);
      (minus.*f)[i] = static_cast<float>((p.*f)[i] - scale * (g.*f)[i]);
      adjoint += (g.*f)[i] * (static_cast<double>((plus.*f)[i]) - (minus.*f)[i]);
    }
  const double fd =
      mse(layer.forward(x, plus), target, nullptr) - mse(layer.forward(x, minus), target, nullptr);
  const double err = std::fabs(fd - adjoint) / std::max(std::fabs(fd), std::fabs(adjoint));
  std::printf("check along the gradient: adjoint %.6e, finite difference %.6e, rel err %.2e\n",
              adjoint, fd, err);
  return err <= kCheckBound;
}

int run(int64_t nodes, int steps) {
  // XHAL_DEVICE chooses the device (unset: the best one, CPU last).
  xhal::Device dev = xhal::Device::open();
  std::printf("device: %s \"%s\"\n", dev.label().c_str(), dev.info().name);

  Rng rng{42};
  std::vector<float> x(nodes * kIn);
  for (float& v : x) v = rng.uniform();
  Layer layer(dev, nodes, rng);
  int64_t hub_edges = 0;  // node 0 is a hub
  for (int32_t s : layer.src) hub_edges += s == 0;
  std::printf("graph: %" PRId64 " nodes, %" PRId64 " edges (%" PRId64
              " per destination); hub node 0 is the source of %" PRId64 " edges\n",
              nodes, layer.e, kFanout, hub_edges);

  const Params teacher = random_params(rng, 0.5f);
  const std::vector<float> target = layer.forward(x, teacher);
  Params p = random_params(rng, 0.5f);

  std::vector<float> y, dy(nodes * kF);
  double first = 0.0, loss = 0.0;
  for (int step = 0; step < steps; ++step) {
    y = layer.forward(x, p);
    loss = mse(y, target, &dy);
    if (step == 0) first = loss;
    std::printf("step %d loss %.6f\n", step, loss);
    const Params g = layer.backward(x, p, dy);
    if (step == 0 && !check_gradient(layer, x, target, p, g)) {
      std::fprintf(stderr, "gnn: the gradient differs from its finite difference by more than %g\n",
                   kCheckBound);
      return 1;
    }
    for (auto f : kFields)  // plain SGD
      for (size_t i = 0; i < (p.*f).size(); ++i) (p.*f)[i] = (p.*f)[i] - kRate * (g.*f)[i];
  }
  y = layer.forward(x, p);
  loss = mse(y, target, nullptr);
  std::printf("final loss %.6f\n", loss);
  if (!(loss < first)) {
    std::fprintf(stderr, "gnn: the loss did not fall (%.6f -> %.6f)\n", first, loss);
    return 1;
  }
  Digest digest;  // final outputs and trained parameters
  for (const auto* v : {&y, &p.w, &p.a_src, &p.a_dst, &p.gamma, &p.beta}) digest.add(*v);
  digest.print();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t nodes = argc > 1 ? std::atoll(argv[1]) : 2048;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 5;
  if (nodes < kHubs || steps < 1 || argc > 3) {
    std::fprintf(stderr, "usage: xhal-gnn [nodes >= %d] [steps >= 1]\n", static_cast<int>(kHubs));
    return 2;
  }
  // Every xhal call is checked: xhal.hpp turns a status other than XHAL_OK
  // into xhal::Error carrying the status and xhal_last_error()'s message
  // (which names the argument and the value that was wrong). Handles are
  // released by destructors, buffers before their device.
  try {
    return run(nodes, steps);
  } catch (const xhal::Error& e) {
    std::fprintf(stderr, "gnn: xhal error %s: %s\n", xhal_status_name(e.status()),
                 e.message().c_str());
    return 1;
  }
}
