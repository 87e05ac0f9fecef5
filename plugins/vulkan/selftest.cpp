// Start-up self-test. Every result the plugin promises to be bit-exact rests
// on a few device behaviours the Vulkan spec does not guarantee without the
// execution modes, and that drivers have got wrong (VULKAN.md): correctly
// rounded add/sub/mul under RoundingModeRTE, subnormals kept, NaN/inf/-0
// kept, no fusion of a*b+c, and the plugin's own integer divide and square
// root and xhal_exp. The test runs them on special values and random bit
// patterns and compares every result with the host's IEEE result; a device
// that differs anywhere is reported unusable, never used.
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../gpu/exp64.h"  // xhal_exp64's host form, checked against the cpu plugin's
#include "vk_plugin.h"

namespace xhal::vk {

xhal_status_t open_for_selftest(Gpu* g, Device** out);
void close_for_selftest(Device* d);

namespace {

float from_bits(uint32_t b) { return std::bit_cast<float>(b); }
uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

float host_pow2(int j) { return from_bits(static_cast<uint32_t>(j + 127) << 23); }

// xhal_exp of docs/semantics.md section 2 (the plugin is built with
// -ffp-contract=off, so every line is its own rounding).
float host_exp(float x) {
  if (std::isnan(x)) return x;
  if (x > from_bits(0x42b17217u)) return std::numeric_limits<float>::infinity();
  if (x < from_bits(0xc2cff1b4u)) return 0.0f;
  const float shifter = from_bits(0x4b400000u);
  float t = x * from_bits(0x3fb8aa3bu);
  float k = (t + shifter) - shifter;
  float r = x - k * from_bits(0x3f317200u);
  r = r - k * from_bits(0x35bfbe8eu);
  float p = from_bits(0x3ab43e01u);
  p = p * r + from_bits(0x3c091dd3u);
  p = p * r + from_bits(0x3d2aadadu);
  p = p * r + from_bits(0x3e2aaa47u);
  p = p * r + from_bits(0x3efffffcu);
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int ki = static_cast<int>(k);
  if (ki > 127) return (p * host_pow2(127)) * host_pow2(ki - 127);
  if (ki < -126) return (p * host_pow2(-100)) * host_pow2(ki + 100);
  return p * host_pow2(ki);
}

constexpr int kOutputs = 7;
const char* const kOutputNames[kOutputs] = {
    "a+b", "a-b", "a*b", "a*b+c (unfused)", "a/b (integer)", "sqrt(a) (integer)", "xhal_exp(a)"};

struct Triple {
  float a, b, c;
};

std::vector<Triple> make_inputs() {
  const uint32_t specials[] = {
      0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x00000003u, 0x007fffffu, 0x807fffffu,
      0x00400000u, 0x00800000u, 0x80800000u, 0x00800001u, 0x3f800000u, 0xbf800000u, 0x3f000000u,
      0x40000000u, 0x3f800001u, 0x3f7fffffu, 0x7f7fffffu, 0xff7fffffu, 0x7f800000u, 0xff800000u,
      0x7fc00000u, 0x7f800001u, 0xffc00001u, 0x34000000u, 0x4b800000u, 0x42b17217u, 0xc2cff1b4u,
      0xc2aeac50u, 0x42b00000u, 0xc2b00000u, 0x1f800000u, 0x5f800000u};
  std::vector<Triple> v;
  for (uint32_t a : specials)
    for (uint32_t b : specials)
      v.push_back({from_bits(a), from_bits(b), from_bits(specials[(a ^ b) % 33])});
  // A fused a*b+c gives 2^-24 here, the two roundings give 0.
  const float e = 1.0f + host_pow2(-12);
  v.push_back({e, e, -(1.0f + host_pow2(-11))});
  // Random bit patterns: all of them, then narrowed exponents (results in
  // the subnormal range, and exponents in xhal_exp's range).
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&]() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<uint32_t>(state >> 11);
  };
  for (int i = 0; i < 3000; ++i)
    v.push_back({from_bits(next()), from_bits(next()), from_bits(next())});
  for (int i = 0; i < 3000; ++i) {
    // a, b near 2^-63 so products and quotients land on subnormals and
    // normals alike; c of similar size to a*b for cancellation.
    const uint32_t ea = 64 + next() % 64, eb = 64 + next() % 64;
    const float a = from_bits((next() & 0x807fffffu) | (ea << 23));
    const float b = from_bits((next() & 0x807fffffu) | (eb << 23));
    v.push_back({a, b, -(a * b) * (1.0f + host_pow2(-20) * static_cast<float>(next() % 8))});
  }
  for (int i = 0; i < 3000; ++i) {
    const float x = (static_cast<float>(next() % 2000000) / 10000.0f) - 100.0f;  // [-100, 100)
    v.push_back({x, from_bits(next()), from_bits(next())});
  }
  return v;
}

void host_results(const Triple& t, float out[kOutputs]) {
  out[0] = t.a + t.b;
  out[1] = t.a - t.b;
  out[2] = t.a * t.b;
  const float p = t.a * t.b;
  out[3] = p + t.c;
  out[4] = t.a / t.b;
  out[5] = std::sqrt(t.a);
  out[6] = host_exp(t.a);
}

struct Push {
  uint64_t in, out, n;
};

}  // namespace

bool run_selftest(Gpu& g, std::string* why) {
  VkPipeline p;
  if (g.pipeline(xhal_spirv::selftest, &p) != XHAL_OK) {
    *why = "the self-test pipeline could not be created";
    return false;
  }
  const std::vector<Triple> in = make_inputs();
  const uint64_t n = in.size();
  Device* d = nullptr;
  if (open_for_selftest(&g, &d) != XHAL_OK) {
    *why = "the device could not be opened";
    return false;
  }
  Mem min, mout;
  std::vector<float> out(n * kOutputs);
  bool ok = mem_create(g, n * sizeof(Triple), false, &min) == XHAL_OK &&
            mem_create(g, out.size() * sizeof(float), false, &mout) == XHAL_OK &&
            d->upload(min, 0, in.data(), n * sizeof(Triple)) == XHAL_OK && d->begin() == XHAL_OK;
  if (ok) {
    const Push push{min.address, mout.address, n};
    d->dispatch(p, &push, sizeof push, d->groups_for(n, 64));
    ok = d->submit() == XHAL_OK && d->download(mout, 0, out.data(), out.size() * 4) == XHAL_OK;
  }
  mem_destroy(g, min);
  mem_destroy(g, mout);
  close_for_selftest(d);
  if (!ok) {
    *why = "the self-test could not run";
    return false;
  }
  int bad[kOutputs] = {};
  std::string first;
  for (uint64_t i = 0; i < n; ++i) {
    float want[kOutputs];
    host_results(in[i], want);
    for (int k = 0; k < kOutputs; ++k) {
      const float got = out[i * kOutputs + k];
      const bool same = std::isnan(want[k]) ? std::isnan(got) : bits(got) == bits(want[k]);
      if (same) continue;
      if (bad[k]++ == 0) {
        char msg[256];
        std::snprintf(msg, sizeof msg, "%s%s with a=%08x b=%08x c=%08x gave %08x, host %08x",
                      first.empty() ? "" : "; ", kOutputNames[k], bits(in[i].a), bits(in[i].b),
                      bits(in[i].c), bits(got), bits(want[k]));
        first += msg;
      }
    }
  }
  int total = 0;
  for (int k = 0; k < kOutputs; ++k) total += bad[k];
  if (total == 0) return true;
  char head[96];
  std::snprintf(head, sizeof head, "%d of %llu results differ from the host (first: ", total,
                static_cast<unsigned long long>(n * kOutputs));
  *why = head + first + ")";
  return false;
}

namespace {

double from_bits64(uint64_t b) { return std::bit_cast<double>(b); }
uint64_t bits64(double f) { return std::bit_cast<uint64_t>(f); }

constexpr int kOutputs64 = 7;
const char* const kOutputNames64[kOutputs64] = {
    "a+b", "a-b", "a*b", "a*b+c (unfused)", "a/b (integer)", "sqrt(a) (integer)", "xhal_exp64(a)"};

struct Triple64 {
  double a, b, c;
};

// Specials (zeros, subnormals, the normal boundary, ties, extremes, inf,
// NaN), a product that a fused a*b+c would change, random bit patterns,
// and operands whose products and sums land on subnormals.
std::vector<Triple64> make_inputs64() {
  const uint64_t specials[] = {0x0000000000000000ull, 0x8000000000000000ull, 0x0000000000000001ull,
                               0x800000000000000full, 0x000fffffffffffffull, 0x0010000000000000ull,
                               0x8010000000000001ull, 0x3ff0000000000000ull, 0xbff0000000000000ull,
                               0x3ff0000000000001ull, 0x3fefffffffffffffull, 0x3ca0000000000000ull,
                               0x7fefffffffffffffull, 0xffefffffffffffffull, 0x7ff0000000000000ull,
                               0xfff0000000000000ull, 0x7ff8000000000000ull, 0x7ff0000000000001ull,
                               0x2000000000000000ull, 0x5ff0000000000000ull, 0x4340000000000000ull};
  constexpr size_t kSpecials = sizeof specials / sizeof specials[0];
  std::vector<Triple64> v;
  for (uint64_t a : specials)
    for (uint64_t b : specials)
      v.push_back({from_bits64(a), from_bits64(b), from_bits64(specials[(a ^ b) % kSpecials])});
  // A fused a*b+c gives 2^-52 here, the two roundings give 0.
  const double e = 1.0 + std::ldexp(1.0, -26);
  v.push_back({e, e, -(1.0 + std::ldexp(1.0, -25))});
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&]() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (int i = 0; i < 2000; ++i)
    v.push_back({from_bits64(next()), from_bits64(next()), from_bits64(next())});
  for (int i = 0; i < 2000; ++i) {
    // Quotients near overflow and in the subnormal range (exponents of a
    // and b far apart), and a, b with nearly equal mantissas.
    const uint64_t ea = next() % 2047, eb = (ea + 1023 + next() % 64 - 32) % 2047;
    const uint64_t m = next() & 0xfffffffffffffull;
    v.push_back({from_bits64(m | (ea << 52)),
                 from_bits64(((m + next() % 5) & 0xfffffffffffffull) | (eb << 52)), 1.0});
  }
  for (int i = 0; i < 1500; ++i) {
    // Division by a power of two into the subnormal range: the quotient's
    // dropped bits are exactly known, so ties (to even) occur often; the
    // only binary64 quotients that can be ties lie there.
    // a = (2^52 + m) 2^(ea - 1075) over 2^(eb - 1023) drops d = eb - ea -
    // 1022 bits of the significand; every other input is an exact tie.
    const uint64_t d = 1 + next() % 53, ea = 1 + next() % 990, eb = ea + 1022 + d;
    uint64_t m = next() & 0xfffffffffffffull;
    if (i % 2 == 0) m = d < 53 ? (m & ~((1ull << d) - 1)) | (1ull << (d - 1)) : 0;
    v.push_back({from_bits64(m | (ea << 52)), from_bits64(eb << 52), 1.0});
  }
  for (int i = 0; i < 1500; ++i) {
    // xhal_exp64's range and beyond (overflow, underflow, subnormal results).
    const double x = static_cast<double>(next() % 3000000000ull) / 2000000.0 - 750.0;
    v.push_back({x, 1.0, 1.0});
  }
  for (int i = 0; i < 2000; ++i) {
    // a, b near 2^-511 so products fall on subnormals and normals alike.
    const uint64_t ea = 512 + next() % 512, eb = 512 + next() % 512;
    const double a = from_bits64((next() & 0x800fffffffffffffull) | (ea << 52));
    const double b = from_bits64((next() & 0x800fffffffffffffull) | (eb << 52));
    v.push_back({a, b, -(a * b) * (1.0 + std::ldexp(1.0, -40) * static_cast<double>(next() % 8))});
  }
  return v;
}

}  // namespace

bool run_selftest_f64(Gpu& g, std::string* why) {
  VkPipeline p;
  if (g.pipeline(xhal_spirv::selftest_f64, &p) != XHAL_OK) {
    *why = "the f64 self-test pipeline could not be created";
    return false;
  }
  const std::vector<Triple64> in = make_inputs64();
  const uint64_t n = in.size();
  Device* d = nullptr;
  if (open_for_selftest(&g, &d) != XHAL_OK) {
    *why = "the device could not be opened";
    return false;
  }
  Mem min, mout;
  std::vector<double> out(n * kOutputs64);
  bool ok = mem_create(g, n * sizeof(Triple64), false, &min) == XHAL_OK &&
            mem_create(g, out.size() * sizeof(double), false, &mout) == XHAL_OK &&
            d->upload(min, 0, in.data(), n * sizeof(Triple64)) == XHAL_OK && d->begin() == XHAL_OK;
  if (ok) {
    const Push push{min.address, mout.address, n};
    d->dispatch(p, &push, sizeof push, d->groups_for(n, 64));
    ok = d->submit() == XHAL_OK && d->download(mout, 0, out.data(), out.size() * 8) == XHAL_OK;
  }
  mem_destroy(g, min);
  mem_destroy(g, mout);
  close_for_selftest(d);
  if (!ok) {
    *why = "the f64 self-test could not run";
    return false;
  }
  int total = 0;
  std::string first;
  for (uint64_t i = 0; i < n; ++i) {
    const Triple64& t = in[i];
    const double p = t.a * t.b;
    const double want[kOutputs64] = {
        t.a + t.b, t.a - t.b, p, p + t.c, t.a / t.b, std::sqrt(t.a), gpu::f64::exp64_slow(t.a)};
    for (int k = 0; k < kOutputs64; ++k) {
      const double got = out[i * kOutputs64 + k];
      if (std::isnan(want[k]) ? std::isnan(got) : bits64(got) == bits64(want[k])) continue;
      if (total++ == 0) {
        char msg[256];
        std::snprintf(msg, sizeof msg,
                      "%s with a=%016llx b=%016llx c=%016llx gave %016llx, host %016llx",
                      kOutputNames64[k], static_cast<unsigned long long>(bits64(t.a)),
                      static_cast<unsigned long long>(bits64(t.b)),
                      static_cast<unsigned long long>(bits64(t.c)),
                      static_cast<unsigned long long>(bits64(got)),
                      static_cast<unsigned long long>(bits64(want[k])));
        first = msg;
      }
    }
  }
  if (total == 0) return true;
  char head[96];
  std::snprintf(head, sizeof head, "%d of %llu f64 results differ from the host (first: ", total,
                static_cast<unsigned long long>(n * kOutputs64));
  *why = head + first + ")";
  return false;
}

}  // namespace xhal::vk
