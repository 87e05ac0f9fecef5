// xhal_exp64 (docs/semantics.md 7.3) for the GPU kernels, written as
// host/device code so that a host test (tests/ops/gpu_exp64_test.cpp) can
// check it bit for bit against the cpu plugin's. On the device every step
// is one __d*_rn intrinsic (never contracted, whatever the flags); on the
// host, plain operators built with -ffp-contract=off.
#pragma once

#include <cstdint>
#include <cstring>

#include "narrow.h"  // XHAL_HD

#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define XHAL_EXP64_DEVICE 1
#endif

namespace xhal::gpu::f64 {

XHAL_HD double add(double a, double b) {
#ifdef XHAL_EXP64_DEVICE
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
XHAL_HD double sub(double a, double b) {
#ifdef XHAL_EXP64_DEVICE
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
XHAL_HD double mul(double a, double b) {
#ifdef XHAL_EXP64_DEVICE
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
XHAL_HD uint64_t bits(double v) {
#ifdef XHAL_EXP64_DEVICE
  return static_cast<uint64_t>(__double_as_longlong(v));
#else
  uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
#endif
}
XHAL_HD double from_bits(uint64_t u) {
#ifdef XHAL_EXP64_DEVICE
  return __longlong_as_double(static_cast<long long>(u));
#else
  double v;
  std::memcpy(&v, &u, sizeof v);
  return v;
#endif
}
XHAL_HD double pow2i(int j) {  // 2^j, j in [-1022, 1023], exact
  return from_bits(static_cast<uint64_t>(j + 1023) << 52);
}

// k = round(x * log2 e), then r = x - k ln2 and the degree-13 Horner
// polynomial p(r): the part shared by both forms below. Returns p; kb is
// t + 0x1.8p52, whose low bits are k.
XHAL_HD double exp64_poly(double x, double& k, double& kb) {
  const double t = mul(x, 0x1.71547652b82fep+0);
  kb = add(t, 0x1.8p52);
  k = sub(kb, 0x1.8p52);
  double r = sub(x, mul(k, 0x1.62e42fee00000p-1));
  r = sub(r, mul(k, 0x1.a39ef35793c76p-33));
  double p = 0x1.6124613a86d09p-33;  // 1/13!
  p = add(mul(p, r), 0x1.1eed8eff8d898p-29);
  p = add(mul(p, r), 0x1.ae64567f544e4p-26);
  p = add(mul(p, r), 0x1.27e4fb7789f5cp-22);
  p = add(mul(p, r), 0x1.71de3a556c734p-19);
  p = add(mul(p, r), 0x1.a01a01a01a01ap-16);
  p = add(mul(p, r), 0x1.a01a01a01a01ap-13);
  p = add(mul(p, r), 0x1.6c16c16c16c17p-10);
  p = add(mul(p, r), 0x1.1111111111111p-7);
  p = add(mul(p, r), 0x1.5555555555555p-5);
  p = add(mul(p, r), 0x1.5555555555555p-3);
  p = add(mul(p, r), 0x1.0000000000000p-1);
  p = add(mul(p, r), 1.0);     // 1/1!
  return add(mul(p, r), 1.0);  // 1/0!
}

// 7.3 as written: NaN, overflow, underflow and the scaled results.
XHAL_HD double exp64_slow(double x) {
  if (x != x) return x;
  if (x > 0x1.62e42fefa39efp+9) return from_bits(0x7ff0000000000000ull);
  if (x < -0x1.74910d52d3051p+9) return 0.0;
  double k, kb;
  const double p = exp64_poly(x, k, kb);
  const int ki = static_cast<int>(k);
  if (ki > 1023) return mul(mul(p, pow2i(1023)), pow2i(ki - 1023));
  if (ki < -1022) return mul(mul(p, pow2i(-600)), pow2i(ki + 600));
  return mul(p, pow2i(ki));
}

// The same bits with one branch on the common path (as canonical_exp for
// f32): for |x| <= 708, k lies in [-1021, 1021], so the result is p * 2^k;
// kb's bits are 0x4338000000000000 + k, and (bits + 1023) << 52 is 2^k
// (the constant's part shifts out).
XHAL_HD double exp64(double x) {
  if (!(x >= -708.0 && x <= 708.0)) return exp64_slow(x);
  double k, kb;
  const double p = exp64_poly(x, k, kb);
  return mul(p, from_bits((bits(kb) + 1023u) << 52));
}

}  // namespace xhal::gpu::f64
