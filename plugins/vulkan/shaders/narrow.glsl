// f16 and bf16 storage (docs/semantics.md 7.1) without 16-bit device
// features: narrow values are read as the 32-bit words that hold them (two
// per word, four per uvec2) and converted with integer operations ported
// from plugins/gpu/narrow.h, never with unpackHalf2x16/packHalf2x16 (their
// rounding, subnormals and NaNs are the driver's). A shader defines
// STORAGE_F16 or STORAGE_BF16 (or neither: it calls only the f32 helpers)
// before including this file after common.glsl.
//
// Widening is exact. Narrowing rounds to nearest even, keeps subnormals,
// overflows to infinity, and stores every NaN as the positive quiet NaN.
// Buffers are allocated in multiples of 64 bytes, so the aligned word (or
// 8-byte pair of words) around any element lies inside its buffer.
layout(buffer_reference, std430, buffer_reference_align = 8) buffer U2Ref { uvec2 v; };

// ---- bf16: the upper half of an f32 --------------------------------------
float bf16_widen(uint h) { return uintBitsToFloat(h << 16); }

uint bf16_narrow(float f) {
  uint u = floatBitsToUint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // no wrap: u <= 0xff800000
}

// ---- f16: IEEE binary16 --------------------------------------------------
// m >> s (1 <= s <= 31) rounded to nearest even.
uint shift_rne(uint m, uint s) {
  uint q = m >> s, rem = m & ((1u << s) - 1u), half_ = 1u << (s - 1u);
  return q + ((rem > half_ || (rem == half_ && (q & 1u) != 0u)) ? 1u : 0u);
}

float f16_widen(uint h) {
  uint sign = (h & 0x8000u) << 16;
  uint e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return uintBitsToFloat(sign | 0x7f800000u | (m << 13));
  if (e != 0u) return uintBitsToFloat(sign | ((e + 112u) << 23) | (m << 13));
  if (m == 0u) return uintBitsToFloat(sign);
  uint p = uint(findMSB(m));  // m * 2^-24 = 1.f * 2^(p - 24)
  return uintBitsToFloat(sign | ((p + 103u) << 23) | ((m << (23u - p)) & 0x7fffffu));
}

uint f16_narrow(float f) {
  uint u = floatBitsToUint(f);
  uint sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7e00u;
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // 65520 and up, inf
  if (a <= 0x33000000u) return sign;            // <= 2^-25: rounds to zero
  // Normal f16 (2^-14 and up): rebias, drop 13 bits. Subnormal f16: v * 2^24
  // = m * 2^(e - 126) rounded to an integer. One rounding shift either way
  // (narrow.h's two branches with one call, for less code per use).
  uint e = a >> 23;
  bool normal = a >= 0x38800000u;
  uint m = normal ? a - 0x38000000u : (a & 0x7fffffu) | 0x800000u;
  return sign | shift_rne(m, normal ? 13u : 126u - e);
}

#if defined(STORAGE_F16) || defined(STORAGE_BF16)
#ifdef STORAGE_F16
float widen(uint h) { return f16_widen(h); }
uint narrow(float f) { return f16_narrow(f); }
#else
float widen(uint h) { return bf16_widen(h); }
uint narrow(float f) { return bf16_narrow(f); }
#endif

// Four consecutive elements at an 8-byte aligned address, as one uvec2.
uvec4 ldn4_bits(uint64_t a) {
  uvec2 w = U2Ref(a).v;
  return uvec4(w.x & 0xffffu, w.x >> 16, w.y & 0xffffu, w.y >> 16);
}
vec4 ldn4(uint64_t a) {
  uvec4 b = ldn4_bits(a);
  return vec4(widen(b.x), widen(b.y), widen(b.z), widen(b.w));
}

void stn4_bits(uint64_t a, uvec4 h) { U2Ref(a).v = uvec2(h.x | (h.y << 16), h.z | (h.w << 16)); }
void stn4(uint64_t a, vec4 v) { stn4_bits(a, uvec4(narrow(v.x), narrow(v.y), narrow(v.z), narrow(v.w))); }

// The 16 bits of the element at byte address a (2-byte aligned), from its
// aligned word.
uint ldn_bits(uint64_t a) {
  uint w = U32Ref(a & ~3ul).v;
  return (a & 2ul) != 0ul ? w >> 16 : w & 0xffffu;
}
// Stores the 16 bits h of the element at byte address a. The other half of
// its word may be another invocation's element: each store changes only its
// own half, through atomics, so neither is lost.
void stn_bits(uint64_t a, uint h) {
  uint shift = (a & 2ul) != 0ul ? 16u : 0u;
  U32Ref w = U32Ref(a & ~3ul);
  atomicAnd(w.v, ~(0xffffu << shift));
  atomicOr(w.v, h << shift);
}

float ldn(uint64_t a) { return widen(ldn_bits(a)); }
void stn(uint64_t a, float v) { stn_bits(a, narrow(v)); }

// Element i of a tensor in the storage type (lde/ste: f32 without STORAGE_*,
// f64 in the F64 variants).
float lde(uint64_t base, uint64_t i) { return ldn(base + i * 2ul); }
void ste(uint64_t base, uint64_t i, float v) { stn(base + i * 2ul, v); }
#elif defined(F64)
#define lde ldd
#define ste std64
#else
#define lde ldf
#define ste stf
#endif
