// river: Muskingum-Cunge-style flood routing on a generated river network,
// and the gradient of a loss against every reach's parameters through all
// time steps, checked against finite differences.
//
// The network is a tree of reaches: a long main stem (half of the reaches,
// so the network is more than 1000 levels deep) with tributaries joining it.
// Reaches are numbered upstream first: a reach's upstream neighbours have
// smaller ids, so "inflow of i = sum of the outflows of its upstream reaches"
// is a strictly lower-triangular matrix U (U[i][j] = 1 when j drains into i).
//
// Muskingum routing of outflow Q_i with travel time K_i and weight X_i, with
// a time step of 1 and lateral inflow ql:
//   Q^{t+1} = C1 (U Q^{t+1} + ql^{t+1}) + C2 (U Q^t + ql^t) + C3 Q^t
//   C1 = (1 - 2KX) / D,  C2 = (1 + 2KX) / D,  C3 = (2K(1-X) - 1) / D,
//   D = 2K(1-X) + 1.
// Muskingum-Cunge ties K to the wave celerity c: K = length / (c f^t), where
// f^t is a given forcing (celerity rises with the flood), so the
// coefficients, and with them the matrix, change every step. Each step is a
// lower-triangular solve
//   (I - diag(C1) U) Q^{t+1} = b^t,   b^t = M^t [Q^t, ql^t, Q^{t+1}, ql^{t+1}]
// where M^t = [diag(C2) U + diag(C3), diag(C2), 0, diag(C1)] (the 0 block
// meets the not-yet-known Q^{t+1}: see the state layout below).
//
// Parameters: celerity c_i and weight X_i per reach. The loss is the mean
// squared difference between the routed flows and "observed" flows routed
// with the true parameters (a twin experiment). Its gradient comes from the
// adjoint: backwards through the steps, xhal_csr_solve_backward gives the
// gradient of b (gb) and of the matrix values (ga), and the transpose of M
// carries gb back to Q^t. The host turns gb and ga into dL/dc and dL/dX with
// the derivatives of C1..C3.
//
// On the device: both sparse matrices (pattern analysed once, values set
// every step with xhal_csr_set_values), b = M z (xhal_spmv), the solve, its
// backward, M^T gb. On the host: the coefficients, the loss, the chain rule
// to the parameters. Host <-> device transfers are marked "host <->"; inside
// the time loops only the new matrix values go to the device.
//
// Usage: xhal-river [reaches] [steps]; the device is whatever XHAL_DEVICE
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

// The finite-difference checks: a central difference with a step of 1% of
// the parameter; the program fails above this relative error. The float32
// forward's rounding noise and the step's truncation error gave at most
// 6e-3 at the sizes tried (up to 100000 reaches, 200 steps).
constexpr float kRelStep = 0.01f;
constexpr double kCheckBound = 2e-2;

struct Rng {  // splitmix64: the same numbers on every machine
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

// A triangular storm pulse: rises over 8 steps, recedes over 24.
float pulse(int64_t s) {
  if (s < 0 || s >= 32) return 0.0f;
  return s < 8 ? static_cast<float>(s) / 8.0f : static_cast<float>(32 - s) / 24.0f;
}

// Muskingum coefficients and their derivatives by K and by X.
struct Coef {
  float c[3], dk[3], dx[3];
};
Coef coefficients(float k, float x) {
  const float a = 2.0f * k * (1.0f - x), b = 2.0f * k * x, d = a + 1.0f;
  const float dd_dk = 2.0f * (1.0f - x), dd_dx = -2.0f * k;
  Coef r;
  r.c[0] = (1.0f - b) / d, r.c[1] = (1.0f + b) / d, r.c[2] = (a - 1.0f) / d;
  const float dn_dk[3] = {-2.0f * x, 2.0f * x, 2.0f * (1.0f - x)};
  const float dn_dx[3] = {-2.0f * k, 2.0f * k, -2.0f * k};
  for (int m = 0; m < 3; ++m) {  // quotient rule: (n'/D) with n = C D
    r.dk[m] = (dn_dk[m] - r.c[m] * dd_dk) / d;
    r.dx[m] = (dn_dx[m] - r.c[m] * dd_dx) / d;
  }
  return r;
}

struct River {
  xhal::Device& dev;
  int64_t n, steps;
  std::vector<int32_t> down;            // downstream reach, -1 at the outlet
  std::vector<int32_t> up_ptr, up_idx;  // upstream reaches of i: up_idx[up_ptr[i]..up_ptr[i+1])
  std::vector<float> length, forcing;   // per reach; f^t per step
  std::vector<float> ql;                // lateral inflow [steps + 1, n]
  xhal::Csr a, m;                       // I - diag(C1) U (unit diagonal not stored); M
  // Device state, one row of 2n floats per step: row t = [Q^t, ql^t], so
  // rows t and t+1 side by side are the 4n-vector z^t that M^t multiplies,
  // and the solve of step t writes Q^{t+1} straight into row t+1.
  xhal::Buffer state, grad, b, gb, ga;  // grad: dL/d(state); gb [steps, n]; ga [steps, nnz(A)]

  xhal_tensor_t vec(const xhal::Buffer& buf, int64_t count, int64_t offset_floats) const {
    return xhal::tensor<float>(buf, {count}, offset_floats * sizeof(float));
  }

  River(xhal::Device& d, int64_t reaches, int64_t t, Rng& rng) : dev(d), n(reaches), steps(t) {
    // Grow the tree from the outlet: main stem first, then tributaries that
    // either continue the previous one or start at a random existing reach.
    // Creation order c is downstream-first; reach id n-1-c is upstream-first.
    const int64_t stem = n / 2;
    std::vector<int64_t> parent(n, -1);
    for (int64_t c = 1; c < n; ++c)
      parent[c] = c < stem ? c - 1 : (c > stem && rng.below(10) < 7) ? c - 1 : rng.below(c);
    down.assign(n, -1);
    for (int64_t c = 1; c < n; ++c) down[n - 1 - c] = static_cast<int32_t>(n - 1 - parent[c]);
    up_ptr.assign(n + 1, 0);
    for (int64_t j = 0; j < n; ++j)
      if (down[j] >= 0) ++up_ptr[down[j] + 1];
    for (int64_t i = 0; i < n; ++i) up_ptr[i + 1] += up_ptr[i];
    up_idx.resize(up_ptr[n]);
    std::vector<int32_t> fill(up_ptr.begin(), up_ptr.end() - 1);
    for (int64_t j = 0; j < n; ++j)  // ascending j: columns sorted in every row
      if (down[j] >= 0) up_idx[fill[down[j]]++] = static_cast<int32_t>(j);

    length.resize(n), ql.resize((steps + 1) * n), forcing.resize(steps + 1);
    std::vector<float> area(n);
    std::vector<int64_t> delay(n);
    for (int64_t i = 0; i < n; ++i) {
      length[i] = 1.5f + 0.5f * rng.uniform();
      area[i] = 1.0f + 0.5f * rng.uniform();
      delay[i] = rng.below(16);
    }
    for (int64_t s = 0; s <= steps; ++s) {
      forcing[s] = 1.0f + 0.5f * pulse(s - 4);
      for (int64_t i = 0; i < n; ++i) ql[s * n + i] = area[i] * (0.05f + pulse(s - delay[i]));
    }

    // The two patterns, analysed once (host ->, once). Values come per step.
    const int64_t nnz_u = up_ptr[n];
    std::vector<int32_t> m_ptr(n + 1), m_idx;
    for (int64_t i = 0; i < n; ++i) {
      m_ptr[i] = static_cast<int32_t>(m_idx.size());
      m_idx.insert(m_idx.end(), up_idx.begin() + up_ptr[i], up_idx.begin() + up_ptr[i + 1]);
      for (int64_t col : {i, n + i, 3 * n + i}) m_idx.push_back(static_cast<int32_t>(col));
    }
    m_ptr[n] = static_cast<int32_t>(m_idx.size());
    a = xhal::Csr::create(dev, n, n, up_ptr, up_idx);
    m = xhal::Csr::create(dev, n, 4 * n, m_ptr, m_idx);

    state = xhal::Buffer::allocate(dev, (steps + 1) * 2 * n * sizeof(float));
    grad = xhal::Buffer::allocate(dev, (steps + 1) * 2 * n * sizeof(float));
    b = xhal::Buffer::allocate(dev, n * sizeof(float));
    gb = xhal::Buffer::allocate(dev, steps * n * sizeof(float));
    ga = xhal::Buffer::allocate(dev, steps * nnz_u * sizeof(float));
  }

  float travel_time(const std::vector<float>& c, int64_t i, int64_t t) const {
    return length[i] / (c[i] * forcing[t]);
  }

  // The values of A^t and M^t (host), then host -> device.
  void set_step_values(const std::vector<float>& c, const std::vector<float>& x, int64_t t) {
    std::vector<float> av(up_ptr[n]), mv;
    mv.reserve(up_ptr[n] + 3 * n);
    for (int64_t i = 0; i < n; ++i) {
      const Coef k = coefficients(travel_time(c, i, t), x[i]);
      for (int32_t p = up_ptr[i]; p < up_ptr[i + 1]; ++p) av[p] = -k.c[0], mv.push_back(k.c[1]);
      mv.insert(mv.end(), {k.c[2], k.c[1], k.c[0]});  // Q_i^t, ql_i^t, ql_i^{t+1}
    }
    a.set_values(av);
    m.set_values(mv);
  }

  // Routes every step; returns the state [steps + 1, 2n] (device -> host once).
  std::vector<float> forward(const std::vector<float>& c, const std::vector<float>& x) {
    std::vector<float> init((steps + 1) * 2 * n, 0.0f);  // Q^0 = 0 (a dry start)
    for (int64_t s = 0; s <= steps; ++s)
      for (int64_t i = 0; i < n; ++i) init[s * 2 * n + n + i] = ql[s * n + i];
    state.write(init);  // host -> device: the forcing of every step, once
    for (int64_t t = 0; t < steps; ++t) {
      set_step_values(c, x, t);
      // b = M^t z^t, z^t = rows t and t+1 of the state (4n floats).
      xhal::spmv(dev, m, XHAL_TRANSPOSE_NONE, 1.0f, vec(state, 4 * n, t * 2 * n), 0.0f,
                 vec(b, n, 0));
      // (I - diag(C1) U) Q^{t+1} = b, written into row t+1.
      xhal::csr_solve(dev, a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_UNIT,
                      vec(b, n, 0), vec(state, n, (t + 1) * 2 * n));
    }
    return state.read<float>((steps + 1) * 2 * n);
  }
};

// Mean squared difference of the flows Q^1..Q^T; dloss/dstate if asked.
double loss(const std::vector<float>& s, const std::vector<float>& obs, int64_t n, int64_t steps,
            std::vector<float>* dstate) {
  double sum = 0.0;
  const float scale = 2.0f / static_cast<float>(n * steps);
  for (int64_t t = 1; t <= steps; ++t)
    for (int64_t i = t * 2 * n; i < t * 2 * n + n; ++i) {
      const float diff = s[i] - obs[i];
      sum += static_cast<double>(diff) * diff;
      if (dstate) (*dstate)[i] = scale * diff;
    }
  return sum / static_cast<double>(n * steps);
}

int run(int64_t reaches, int64_t steps) {
  // XHAL_DEVICE chooses the device (unset: the best one, CPU last).
  xhal::Device dev = xhal::Device::open();
  std::printf("device: %s \"%s\"\n", dev.label().c_str(), dev.info().name);
  Rng rng{7};
  River river(dev, reaches, steps, rng);
  const int64_t n = reaches;
  std::vector<int64_t> depth(n, 1);  // levels from the headwaters
  for (int64_t i = 0; i < n; ++i)
    if (river.down[i] >= 0) depth[river.down[i]] = std::max(depth[river.down[i]], depth[i] + 1);
  std::printf("network: %" PRId64 " reaches, %" PRId64 " levels deep, %" PRId64 " steps\n", n,
              depth[n - 1], steps);

  std::vector<float> c_true(n), x_true(n), c(n), x(n);
  for (int64_t i = 0; i < n; ++i) {
    c_true[i] = 1.5f + 0.5f * rng.uniform();
    x_true[i] = 0.2f + 0.1f * rng.uniform();
    c[i] = c_true[i] * (1.0f + 0.25f * rng.uniform());  // the first guess
    x[i] = x_true[i] + 0.05f * rng.uniform();
  }
  const std::vector<float> observed = river.forward(c_true, x_true);
  const std::vector<float> routed = river.forward(c, x);
  std::vector<float> dstate((steps + 1) * 2 * n, 0.0f);
  const double l0 = loss(routed, observed, n, steps, &dstate);
  std::printf("loss %.9g\n", l0);

  // Backward through all steps. grad holds dL/d(state): the loss's part now,
  // the solves' part as they run (host -> device: once).
  river.grad.write(dstate);
  const int64_t nnz = river.up_ptr[n];  // edges of the network: A's entries
  for (int64_t t = steps - 1; t >= 0; --t) {
    river.set_step_values(c, x, t);
    // gb = A^-T dL/dQ^{t+1}; ga = dL/d(values of A^t) = -gb[i] Q_j^{t+1}.
    const xhal_tensor_t ga_t = river.vec(river.ga, nnz, t * nnz);
    xhal::csr_solve_backward(dev, river.a, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                             XHAL_DIAGONAL_UNIT, river.vec(river.state, n, (t + 1) * 2 * n),
                             river.vec(river.grad, n, (t + 1) * 2 * n),
                             river.vec(river.gb, n, t * n), &ga_t);
    // dL/dz^t += M^T gb: reaches Q^t and the lateral inflows.
    xhal::spmv(dev, river.m, XHAL_TRANSPOSE, 1.0f, river.vec(river.gb, n, t * n), 1.0f,
               river.vec(river.grad, 4 * n, t * 2 * n));
  }
  // device -> host, once: gb and ga of every step, and dL/d(state).
  const std::vector<float> gb = river.gb.read<float>(steps * n);
  const std::vector<float> ga = river.ga.read<float>(steps * nnz);
  const std::vector<float> grad = river.grad.read<float>((steps + 1) * 2 * n);

  // Host: b_i = C2 (U Q^t + ql^t)_i + C3 Q_i^t + C1 ql_i^{t+1} and A's values
  // -C1_i give dL/dC1..3 per step; then K's and X's derivatives.
  std::vector<double> dc(n, 0.0), dx(n, 0.0);
  for (int64_t t = 0; t < steps; ++t) {
    const float* q = &routed[t * 2 * n];
    for (int64_t i = 0; i < n; ++i) {
      const float k = river.travel_time(c, i, t);
      const Coef co = coefficients(k, x[i]);
      double inflow = q[n + i], da = 0.0;  // U Q^t + ql^t;  sum of ga over row i
      for (int32_t p = river.up_ptr[i]; p < river.up_ptr[i + 1]; ++p) {
        inflow += q[river.up_idx[p]];
        da += ga[t * nnz + p];
      }
      const double g = gb[t * n + i];
      const double dl_dc[3] = {-da + g * river.ql[(t + 1) * n + i], g * inflow, g * q[i]};
      for (int mm = 0; mm < 3; ++mm) {
        dc[i] += dl_dc[mm] * co.dk[mm] * (-k / c[i]);  // dK/dc = -K/c
        dx[i] += dl_dc[mm] * co.dx[mm];
      }
    }
  }
  double norm2 = 0.0;
  for (int64_t i = 0; i < n; ++i) norm2 += dc[i] * dc[i] + dx[i] * dx[i];
  std::printf("gradient norm %.9g\n", std::sqrt(norm2));

  // Central finite differences of the forward, for the two parameters of
  // each kind with the largest gradients (where the float32 forward's
  // rounding noise matters least), and along the gradient's direction (all
  // parameters at once).
  bool ok = true;
  auto check = [&](const char* what, double adjoint, double fd) {
    const double err = std::fabs(adjoint - fd) / std::max(std::fabs(adjoint), std::fabs(fd));
    std::printf("check %s: adjoint %.6e, finite difference %.6e, rel err %.2e\n", what, adjoint, fd,
                err);
    ok = ok && err <= kCheckBound;
  };
  auto loss_at = [&](const std::vector<float>& cc, const std::vector<float>& xx) {
    return loss(river.forward(cc, xx), observed, n, steps, nullptr);
  };
  for (int which = 0; which < 2; ++which) {
    std::vector<float>& p = which == 0 ? c : x;
    const std::vector<double>& g = which == 0 ? dc : dx;
    std::vector<int64_t> order(n);
    for (int64_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t i, int64_t j) { return std::fabs(g[i]) > std::fabs(g[j]); });
    for (int64_t i : {order[0], order[1]}) {
      const float saved = p[i], up = saved * (1.0f + kRelStep), dn = saved * (1.0f - kRelStep);
      p[i] = up;
      const double lp = loss_at(c, x);
      p[i] = dn;
      const double lm = loss_at(c, x);
      p[i] = saved;
      char what[64];
      std::snprintf(what, sizeof what, "dL/d%s[%" PRId64 "]", which == 0 ? "c" : "X", i);
      check(what, g[i], (lp - lm) / (static_cast<double>(up) - dn));
    }
  }
  {
    const double step = 1e-2 / std::sqrt(norm2);  // parameters move by 0.01 in all
    std::vector<float> cp(n), xp(n), cm(n), xm(n);
    for (int64_t i = 0; i < n; ++i) {
      cp[i] = static_cast<float>(c[i] + step * dc[i]),
      cm[i] = static_cast<float>(c[i] - step * dc[i]);
      xp[i] = static_cast<float>(x[i] + step * dx[i]),
      xm[i] = static_cast<float>(x[i] - step * dx[i]);
    }
    double dir = 0.0;  // the exact float steps taken, times the gradient
    for (int64_t i = 0; i < n; ++i)
      dir += dc[i] * (static_cast<double>(cp[i]) - cm[i]) +
             dx[i] * (static_cast<double>(xp[i]) - xm[i]);
    check("along the gradient", dir, loss_at(cp, xp) - loss_at(cm, xm));
  }
  if (!ok) {
    std::fprintf(stderr, "river: a gradient differs from its finite difference by more than %g\n",
                 kCheckBound);
    return 1;
  }
  Digest digest;  // the routed flows, dL/d(state), the parameter gradients
  digest.add(routed), digest.add(grad), digest.add(dc), digest.add(dx);
  digest.print();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t reaches = argc > 1 ? std::atoll(argv[1]) : 3000;
  const int64_t steps = argc > 2 ? std::atoll(argv[2]) : 48;
  if (reaches < 8 || steps < 1 || argc > 3) {
    std::fprintf(stderr, "usage: xhal-river [reaches >= 8] [steps >= 1]\n");
    return 2;
  }
  // Every xhal call is checked: xhal.hpp turns a status other than XHAL_OK
  // into xhal::Error carrying the status and xhal_last_error()'s message.
  try {
    return run(reaches, steps);
  } catch (const xhal::Error& e) {
    std::fprintf(stderr, "river: xhal error %s: %s\n", xhal_status_name(e.status()),
                 e.message().c_str());
    return 1;
  }
}
