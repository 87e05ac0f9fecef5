// Shared by every xhal compute shader: the float execution modes, typed
// references through buffer device addresses (64-bit byte addresses, so no
// tensor is limited by maxStorageBufferRange), and the arithmetic of
// docs/semantics.md built only from operations Vulkan rounds correctly.
//
// Every float add, subtract and multiply goes through xadd/xsub/xmul, whose
// results are `precise` (NoContraction): no driver may fuse them into an FMA.
// The build lint (cmake/XhalShaders.cmake) fails on any float arithmetic
// result without NoContraction, and on native divide, sqrt and exp.
#extension GL_EXT_spirv_intrinsics : require
#extension GL_EXT_buffer_reference2 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
// [[unroll]] on the fixed-trip loops over a thread's elements keeps their
// small arrays in registers (not local memory) on every compiler.
#extension GL_EXT_control_flow_attributes : require

// RoundingModeRTE (capability 4467, mode 4462) and SignedZeroInfNanPreserve
// (capability 4466, mode 4461) for 32-bit floats. DenormPreserve is added to
// the module at pipeline creation only on devices that report it
// (plugins/vulkan/spirv_patch.cpp): lavapipe's validation rejects it.
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4467], 4462, 32);
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4466], 4461, 32);

layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32Ref { float v; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32Ref { uint v; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer I32Ref { int v; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer I64Ref { int64_t v; };
// Values other invocations of the same dispatch write and read (the
// level-scheduled solve walks several levels in one workgroup).
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer F32Coherent { float v; };

float ldf(uint64_t base, uint64_t i) { return F32Ref(base + i * 4ul).v; }
void stf(uint64_t base, uint64_t i, float v) { F32Ref(base + i * 4ul).v = v; }
int64_t ldi64(uint64_t base, uint64_t i) { return I64Ref(base + i * 8ul).v; }

// ---- correctly rounded basic operations (RTE, never contracted) ----------
float xadd(float a, float b) { precise float r = a + b; return r; }
float xsub(float a, float b) { precise float r = a - b; return r; }
float xmul(float a, float b) { precise float r = a * b; return r; }
float xneg(float a) { precise float r = -a; return r; }

// ---- float64 (F64 variants, docs/semantics.md 7.3) -----------------------
// The same contract for 64-bit floats: RoundingModeRTE and
// SignedZeroInfNanPreserve for width 64, which the plugin adds to every
// module that declares Float64 when it creates the pipeline
// (spirv_patch.cpp: glslang keeps one spirv_execution_mode per mode, so
// they cannot be declared here beside the width-32 ones). F64 pipelines
// exist only on devices that report both, and pass the f64 self-test.
// add/sub/mul are overloads of the f32 helpers, so a kernel written on REAL
// compiles in either precision. REAL is float without F64.
#ifdef F64
layout(buffer_reference, std430, buffer_reference_align = 8) buffer F64Ref { double v; };
double ldd(uint64_t base, uint64_t i) { return F64Ref(base + i * 8ul).v; }
void std64(uint64_t base, uint64_t i, double v) { F64Ref(base + i * 8ul).v = v; }
double xadd(double a, double b) { precise double r = a + b; return r; }
double xsub(double a, double b) { precise double r = a - b; return r; }
double xmul(double a, double b) { precise double r = a * b; return r; }
double xneg(double a) { precise double r = -a; return r; }
layout(buffer_reference, std430, buffer_reference_align = 8) coherent buffer F64Coherent { double v; };
#define REAL double
#define REAL_BYTES 8ul
#define REAL_NEG_INF uint64BitsToDouble(0xfff0000000000000ul)
#define RealCoherent F64Coherent
// Scratch of REAL (partial sums between dispatches).
#define ldr ldd
#define str std64
#else
#define REAL float
#define REAL_BYTES 4ul
#define REAL_NEG_INF uintBitsToFloat(0xff800000u)
#define RealCoherent F32Coherent
#define ldr ldf
#define str stf
#endif

// A sum taken from +0 under RTE is never -0; it is only if a compiler
// dropped the +0 (0 + t -> t: lavapipe does so for a solve row's first
// term, for the first term of the row ops' unrolled lane sums and for
// index_add's short rows, although the module declares
// SignedZeroInfNanPreserve), and then only when every term is -0;
// otherwise the two agree. So -0 -> +0 gives the canonical bits back, on a
// lane sum (every later sum then starts from values that are never -0, as
// the canonical ones) or on a whole sum. Integer operations, which no float
// rule folds.
float plus_zero(float s) {
  uint u = floatBitsToUint(s);
  return uintBitsToFloat(u == 0x80000000u ? 0u : u);
}
vec4 plus_zero(vec4 s) {
  uvec4 u = floatBitsToUint(s);
  return uintBitsToFloat(mix(u, uvec4(0u), equal(u, uvec4(0x80000000u))));
}
#ifdef F64
double plus_zero(double s) {
  uint64_t u = doubleBitsToUint64(s);
  return uint64BitsToDouble(u == 0x8000000000000000ul ? 0ul : u);
}
#endif

#define kInf uintBitsToFloat(0x7f800000u)
#define kNegInf uintBitsToFloat(0xff800000u)
#define kQuietNaN uintBitsToFloat(0x7fc00000u)

bool xisnan(float a) { return (floatBitsToUint(a) & 0x7fffffffu) > 0x7f800000u; }

// max of section 1: NaN if either is NaN.
float nan_max(float a, float b) {
  if (xisnan(a)) return a;
  if (xisnan(b)) return b;
  return a < b ? b : a;
}

// A finite non-zero magnitude (sign cleared) as m * 2^(e - 150) with m in
// [2^23, 2^24): subnormals are normalised here.
void unpack_finite(uint bits, out uint m, out int e) {
  uint be = bits >> 23;
  if (be != 0u) {
    m = (bits & 0x7fffffu) | 0x800000u;
    e = int(be);
  } else {
    int shift = 23 - findMSB(bits);
    m = bits << uint(shift);
    e = 1 - shift;
  }
}

// Rounds q * 2^e (q in [2^25, 2^26), sticky: bits below q are non-zero) to
// the nearest float32, ties to even, overflow to inf, subnormals exact.
float round_pack(uint sign, uint64_t q, int e, bool sticky) {
  int be = e + 152;  // biased exponent of the leading bit of q
  if (be >= 255) return uintBitsToFloat(sign | 0x7f800000u);
  uint shift = 2u;
  if (be <= 0) {
    shift = uint(3 - be);
    be = 0;
  }
  if (shift > 40u) shift = 40u;  // everything is below half of the least subnormal
  uint64_t mant = q >> shift;
  uint64_t rem = q & ((1ul << shift) - 1ul);
  uint64_t halfway = 1ul << (shift - 1u);
  if (rem > halfway || (rem == halfway && (sticky || (mant & 1ul) != 0ul))) mant += 1ul;
  // mant carries the implicit bit for normal results, so adding it to
  // (be - 1) << 23 also carries a rounding overflow into the exponent (up to
  // inf); a subnormal that rounds up to 2^23 becomes the least normal.
  uint bits = be > 0 ? (uint(be - 1) << 23) + uint(mant) : uint(mant);
  return uintBitsToFloat(sign | bits);
}

// Division and square root: a float estimate, then an exact integer
// decision. The estimates below (xmul/xadd/xsub only, every value in
// [0.25, 8]) serve only as starting points: the truncated quotient or root
// and its remainder are then fixed by integer arithmetic alone (64-bit
// products of 27-bit numbers, no 64-bit division), with loops that step the
// candidate until the remainder is in range. The result is therefore exact
// whatever the estimate; the estimate's error only bounds the number of
// steps (at most one in practice). round_pack then rounds as before.

// 1/B for B in [1, 2): 24/17 - 8/17 B (relative error at most 1/17), then
// three Newton steps r += r (1 - B r); an estimate, a few ulp off.
float recip_estimate(float b) {
  float r = xsub(uintBitsToFloat(0x3fb4b4b5u), xmul(uintBitsToFloat(0x3ef0f0f1u), b));
  [[unroll]] for (int i = 0; i < 3; ++i) r = xadd(r, xmul(r, xsub(1.0, xmul(b, r))));
  return r;
}

// 1/sqrt(X) for X in [2, 8): the bit-pattern guess (relative error under
// 0.035), then three Newton steps y *= 1.5 - (X/2) y^2; an estimate.
float rsqrt_estimate(float x) {
  float y = uintBitsToFloat(0x5f3759dfu - (floatBitsToUint(x) >> 1));
  float h = xmul(x, 0.5);
  [[unroll]] for (int i = 0; i < 3; ++i) y = xmul(y, xsub(1.5, xmul(xmul(h, y), y)));
  return y;
}

// a / b, IEEE binary32, correctly rounded to nearest even, from integer
// operations only (Vulkan's OpFDiv is allowed 2.5 ulp).
float xdiv(float a, float b) {
  uint ua = floatBitsToUint(a), ub = floatBitsToUint(b);
  uint sign = (ua ^ ub) & 0x80000000u;
  uint aa = ua & 0x7fffffffu, ab = ub & 0x7fffffffu;
  if (aa > 0x7f800000u || ab > 0x7f800000u) return kQuietNaN;
  if (aa == 0x7f800000u) return ab == 0x7f800000u ? kQuietNaN : uintBitsToFloat(sign | 0x7f800000u);
  if (ab == 0x7f800000u) return uintBitsToFloat(sign);
  if (ab == 0u) return aa == 0u ? kQuietNaN : uintBitsToFloat(sign | 0x7f800000u);
  if (aa == 0u) return uintBitsToFloat(sign);
  uint ma, mb;
  int ea, eb;
  unpack_finite(aa, ma, ea);
  unpack_finite(ab, mb, eb);
  // q = floor(ma 2^26 / mb), in (2^25, 2^27). Estimate: A = ma 2^-23 and
  // B = mb 2^-23 in [1, 2) (exact), r ~ 1/B = 2^23 / mb.
  int64_t d = int64_t(mb);
  float r = recip_estimate(uintBitsToFloat(0x3f800000u | (mb & 0x7fffffu)));
  float qa = xmul(uintBitsToFloat(0x3f800000u | (ma & 0x7fffffu)), r);
  int64_t q0 = int64_t(xmul(qa, uintBitsToFloat(0x4b800000u)));  // ~ ma 2^24 / mb
  int64_t r0 = (int64_t(ma) << 24) - q0 * d;                     // exact residual
  // 4 r0 / mb = r0 r 2^-21: the next two bits and the estimate's error.
  float fix = xmul(xmul(float(r0), r), uintBitsToFloat(0x35000000u));
  int64_t q = 4l * q0 + int64_t(floor(fix));
  int64_t rem = (int64_t(ma) << 26) - q * d;
  // The exact decision: step q until 0 <= rem < mb.
  while (rem < 0l) {
    q -= 1l;
    rem += d;
  }
  while (rem >= d) {
    q += 1l;
    rem -= d;
  }
  bool sticky = rem != 0l;
  uint64_t uq = uint64_t(q);
  int e = ea - eb - 26;
  if (uq >= (1ul << 26)) {
    sticky = sticky || (uq & 1ul) != 0ul;
    uq >>= 1;
    e += 1;
  }
  return round_pack(sign, uq, e, sticky);
}

// sqrt(a), IEEE binary32, correctly rounded, from integer operations only
// (Vulkan's sqrt is inherited from 1/inversesqrt; NVIDIA's is not exact).
float xsqrt(float a) {
  uint ua = floatBitsToUint(a);
  uint aa = ua & 0x7fffffffu;
  if (aa > 0x7f800000u) return kQuietNaN;
  if (aa == 0u) return a;  // +-0
  if ((ua & 0x80000000u) != 0u) return kQuietNaN;
  if (aa == 0x7f800000u) return a;
  uint m;
  int e;
  unpack_finite(aa, m, e);
  // a = m * 2^(e - 150); make the exponent even: a = mm * 2^p, mm in
  // [2^23, 2^25). root = floor(sqrt(n)) of n = mm * 2^28 (in [2^51, 2^53)).
  int p = e - 150;
  uint x_hi = 0x40000000u;  // X = mm 2^-22 in [2, 8), exact
  uint64_t mm = uint64_t(m);
  if ((p & 1) != 0) {
    mm <<= 1;
    p -= 1;
    x_hi = 0x40800000u;
  }
  int64_t n = int64_t(mm << 28);
  // Estimate: sqrt(n) = sqrt(X) 2^25, and 1/(2 sqrt(n)) = (1/sqrt(X)) 2^-26.
  float x = uintBitsToFloat(x_hi | (m & 0x7fffffu));
  float y = rsqrt_estimate(x);
  int64_t root = int64_t(xmul(xmul(x, y), uintBitsToFloat(0x4c000000u)));
  int64_t r0 = n - root * root;  // exact residual
  float fix = xmul(xmul(float(r0), y), uintBitsToFloat(0x32800000u));
  root += int64_t(floor(fix));
  int64_t rem = n - root * root;
  // The exact decision: step root until root^2 <= n < (root + 1)^2, that
  // is 0 <= rem <= 2 root.
  while (rem < 0l) {
    root -= 1l;
    rem += 2l * root + 1l;
  }
  while (rem > 2l * root) {
    rem -= 2l * root + 1l;
    root += 1l;
  }
  bool sticky = rem != 0l;
  uint64_t ur = uint64_t(root);
  // sqrt(a) = (root + frac) * 2^(p/2 - 14); root in [2^25, 2^27).
  int ex = p / 2 - 14;
  if (ur >= (1ul << 26)) {
    sticky = sticky || (ur & 1ul) != 0ul;
    ur >>= 1;
    ex += 1;
  }
  return round_pack(0u, ur, ex, sticky);
}

#ifdef F64
// ---- binary64 division (the F64 solves), from integer operations only ---
// The same decision as xdiv's, without a float estimate: the quotient's 56
// bits come from restoring long division on the 53-bit mantissas (one
// compare and subtract per bit, every remainder below 2^55), and the
// remainder is the sticky bit. Only per-row divisions exist (one per row
// and right-hand side of a solve), so 56 steps cost little.
#define kQuietNaN64 uint64BitsToDouble(0x7ff8000000000000ul)
#define kExp64 0x7ff0000000000000ul

int msb64(uint64_t v) {
  uint hi = uint(v >> 32);
  return hi != 0u ? 32 + findMSB(hi) : findMSB(uint(v));
}

// A finite non-zero magnitude as m * 2^(e - 1075), m in [2^52, 2^53).
void unpack_finite64(uint64_t bits, out uint64_t m, out int e) {
  uint64_t be = bits >> 52;
  if (be != 0ul) {
    m = (bits & 0xffffffffffffful) | 0x10000000000000ul;
    e = int(be);
  } else {
    int shift = 52 - msb64(bits);
    m = bits << uint(shift);
    e = 1 - shift;
  }
}

// Rounds q * 2^e (q in [2^54, 2^55), sticky: bits below q are non-zero) to
// the nearest binary64, ties to even, overflow to inf, subnormals exact.
double round_pack64(uint64_t sign, uint64_t q, int e, bool sticky) {
  int be = e + 1077;  // biased exponent of the result's leading bit
  if (be >= 2047) return uint64BitsToDouble(sign | kExp64);
  uint shift = 2u;
  if (be <= 0) {
    shift = uint(3 - be);
    be = 0;
  }
  if (shift > 60u) shift = 60u;  // everything is below half of the least subnormal
  uint64_t mant = q >> shift;
  uint64_t rem = q & ((1ul << shift) - 1ul);
  uint64_t halfway = 1ul << (shift - 1u);
  if (rem > halfway || (rem == halfway && (sticky || (mant & 1ul) != 0ul))) mant += 1ul;
  // As in round_pack: the implicit bit in mant carries a rounding overflow
  // into the exponent (up to inf), and a subnormal may round up to the
  // least normal.
  uint64_t bits = be > 0 ? (uint64_t(be - 1) << 52) + mant : mant;
  return uint64BitsToDouble(sign | bits);
}

// a / b, IEEE binary64, correctly rounded to nearest even.
double xdiv(double a, double b) {
  uint64_t ua = doubleBitsToUint64(a), ub = doubleBitsToUint64(b);
  uint64_t sign = (ua ^ ub) & 0x8000000000000000ul;
  uint64_t aa = ua & 0x7ffffffffffffffful, ab = ub & 0x7ffffffffffffffful;
  if (aa > kExp64 || ab > kExp64) return kQuietNaN64;
  if (aa == kExp64) return ab == kExp64 ? kQuietNaN64 : uint64BitsToDouble(sign | kExp64);
  if (ab == kExp64) return uint64BitsToDouble(sign);
  if (ab == 0ul) return aa == 0ul ? kQuietNaN64 : uint64BitsToDouble(sign | kExp64);
  if (aa == 0ul) return uint64BitsToDouble(sign);
  uint64_t ma, mb;
  int ea, eb;
  unpack_finite64(aa, ma, ea);
  unpack_finite64(ab, mb, eb);
  // q = floor(ma 2^55 / mb), in (2^54, 2^56): one bit per step, from 2^55 down.
  uint64_t rem = ma, q = 0ul;
  for (int i = 0; i < 56; ++i) {
    q <<= 1;
    if (rem >= mb) {
      rem -= mb;
      q |= 1ul;
    }
    rem <<= 1;
  }
  bool sticky = rem != 0ul;
  int e = ea - eb - 55;
  if (q >= (1ul << 55)) {
    sticky = sticky || (q & 1ul) != 0ul;
    q >>= 1;
    e += 1;
  }
  return round_pack64(sign, q, e, sticky);
}

// sqrt(a), IEEE binary64, correctly rounded: the digit-by-digit integer
// root of the mantissa (two radicand bits per step, the remainder below
// 2^57), the remainder as sticky, then round_pack64.
double xsqrt(double a) {
  uint64_t ua = doubleBitsToUint64(a);
  uint64_t aa = ua & 0x7ffffffffffffffful;
  if (aa > kExp64) return kQuietNaN64;
  if (aa == 0ul) return a;  // +-0
  if ((ua & 0x8000000000000000ul) != 0ul) return kQuietNaN64;
  if (aa == kExp64) return a;
  uint64_t m;
  int e;
  unpack_finite64(aa, m, e);
  // a = m 2^p with p even (m in [2^52, 2^54)); root = floor(sqrt(m 2^56))
  // in [2^54, 2^55), and sqrt(a) = (root + frac) 2^(p/2 - 28).
  int p = e - 1075;
  if ((p & 1) != 0) {
    m <<= 1;
    p -= 1;
  }
  uint64_t rem = 0ul, root = 0ul;
  for (int i = 0; i < 55; ++i) {
    uint64_t pair = i < 27 ? (m >> uint(52 - 2 * i)) & 3ul : 0ul;
    rem = (rem << 2) | pair;
    uint64_t trial = (root << 2) | 1ul;
    root <<= 1;
    if (rem >= trial) {
      rem -= trial;
      root |= 1ul;
    }
  }
  return round_pack64(0ul, root, p / 2 - 28, rem != 0ul);
}

bool xisnan(double a) { return (doubleBitsToUint64(a) & 0x7ffffffffffffffful) > kExp64; }

// max of section 1 in binary64: NaN if either is NaN.
double nan_max(double a, double b) {
  if (xisnan(a)) return a;
  if (xisnan(b)) return b;
  return a < b ? b : a;
}

// 2^j for integer j in [-1022, 1023], exact (from the bits).
double pow2i64(int j) { return uint64BitsToDouble(uint64_t(j + 1023) << 52); }
double dbits(uint64_t u) { return uint64BitsToDouble(u); }

// xhal_exp64, docs/semantics.md 7.3, one correctly rounded operation at a
// time in the order written there (constants as their bit patterns).
double xexp(double x) {
  if (xisnan(x)) return x;
  if (x > dbits(0x40862e42fefa39eful)) return uint64BitsToDouble(kExp64);
  if (x < dbits(0xc0874910d52d3051ul)) return 0.0LF;
  const double shifter = dbits(0x4338000000000000ul);  // 0x1.8p52
  double t = xmul(x, dbits(0x3ff71547652b82feul));
  double k = xsub(xadd(t, shifter), shifter);
  double r = xsub(x, xmul(k, dbits(0x3fe62e42fee00000ul)));
  r = xsub(r, xmul(k, dbits(0x3dea39ef35793c76ul)));
  double p = dbits(0x3de6124613a86d09ul);
  p = xadd(xmul(p, r), dbits(0x3e21eed8eff8d898ul));
  p = xadd(xmul(p, r), dbits(0x3e5ae64567f544e4ul));
  p = xadd(xmul(p, r), dbits(0x3e927e4fb7789f5cul));
  p = xadd(xmul(p, r), dbits(0x3ec71de3a556c734ul));
  p = xadd(xmul(p, r), dbits(0x3efa01a01a01a01aul));
  p = xadd(xmul(p, r), dbits(0x3f2a01a01a01a01aul));
  p = xadd(xmul(p, r), dbits(0x3f56c16c16c16c17ul));
  p = xadd(xmul(p, r), dbits(0x3f81111111111111ul));
  p = xadd(xmul(p, r), dbits(0x3fa5555555555555ul));
  p = xadd(xmul(p, r), dbits(0x3fc5555555555555ul));
  p = xadd(xmul(p, r), dbits(0x3fe0000000000000ul));
  p = xadd(xmul(p, r), 1.0LF);
  p = xadd(xmul(p, r), 1.0LF);
  int ki = int(k);
  if (ki > 1023) return xmul(xmul(p, pow2i64(1023)), pow2i64(ki - 1023));
  if (ki < -1022) return xmul(xmul(p, pow2i64(-600)), pow2i64(ki + 600));
  return xmul(p, pow2i64(ki));
}
#endif

// 2^j for integer j in [-126, 127], exact (from the bits).
float pow2i(int j) { return uintBitsToFloat(uint(j + 127) << 23); }

// xhal_exp, docs/semantics.md section 2, one correctly rounded operation
// at a time in the order written there.
float xexp(float x) {
  if (xisnan(x)) return x;
  if (x > uintBitsToFloat(0x42b17217u)) return kInf;      // 0x1.62e42ep+6
  if (x < uintBitsToFloat(0xc2cff1b4u)) return 0.0;       // -0x1.9fe368p+6
  const float shifter = uintBitsToFloat(0x4b400000u);     // 0x1.8p23
  float t = xmul(x, uintBitsToFloat(0x3fb8aa3bu));        // log2(e)
  float k = xsub(xadd(t, shifter), shifter);
  float r = xsub(x, xmul(k, uintBitsToFloat(0x3f317200u)));  // ln2_hi
  r = xsub(r, xmul(k, uintBitsToFloat(0x35bfbe8eu)));        // ln2_lo
  float p = uintBitsToFloat(0x3ab43e01u);
  p = xadd(xmul(p, r), uintBitsToFloat(0x3c091dd3u));
  p = xadd(xmul(p, r), uintBitsToFloat(0x3d2aadadu));
  p = xadd(xmul(p, r), uintBitsToFloat(0x3e2aaa47u));
  p = xadd(xmul(p, r), uintBitsToFloat(0x3efffffcu));
  p = xadd(xmul(p, r), 1.0);
  p = xadd(xmul(p, r), 1.0);
  int ki = int(k);
  if (ki > 127) return xmul(xmul(p, pow2i(127)), pow2i(ki - 127));
  if (ki < -126) return xmul(xmul(p, pow2i(-100)), pow2i(ki + 100));
  return xmul(p, pow2i(ki));
}

// ---- the pairwise tree (3.1) over values that arrive left to right --------
// One invocation's stack of complete subtrees: pushing the c-th value merges
// as many times as c has trailing zero bits. finish() merges right to left,
// which equals padding with +0 because the sums fed here (lane, chunk and
// block sums started from +0) are never -0, so v + (+0) == v.
REAL st_val[40];
int st_top;
uint st_count;

void st_reset() {
  st_top = 0;
  st_count = 0u;
}

void st_push(REAL v) {
  st_count += 1u;
  uint c = st_count;
  while ((c & 1u) == 0u) {
    st_top -= 1;
    v = xadd(st_val[st_top], v);
    c >>= 1;
  }
  st_val[st_top] = v;
  st_top += 1;
}

REAL st_finish() {
  if (st_top == 0) return REAL(0.0);
  REAL r = st_val[st_top - 1];
  for (int i = st_top - 2; i >= 0; --i) r = xadd(st_val[i], r);
  return r;
}

// ---- dispatch geometry ----------------------------------------------------
// (A shader declares its local size before including this file.)
// Grids are 1-D, at most 65535 workgroups (the guaranteed limit); kernels
// walk their items with a grid-stride loop in 64-bit indices.
uint64_t global_id() { return uint64_t(gl_GlobalInvocationID.x); }
uint64_t global_threads() { return uint64_t(gl_NumWorkGroups.x) * uint64_t(gl_WorkGroupSize.x); }
