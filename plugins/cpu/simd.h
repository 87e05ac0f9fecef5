// 16-float vectors through GCC vector extensions: the same source compiles
// to SSE2 (4 x xmm), AVX2 (2 x ymm) or AVX-512 (1 x zmm) depending on the
// flags of the isa_*.cpp build that includes it. Only correctly rounded IEEE
// operations are used, so every ISA gives the same bits. Everything here
// lives in that build's namespace (XHAL_CPU_ISA_NS), so no inline function
// compiled for a wide ISA can be picked by the linker for baseline code.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
// GCC 12's AVX-512 intrinsics take their "undefined" operand from a variable
// initialised with itself on purpose (_mm512_undefined_ps); inlined here,
// -Wmaybe-uninitialized reports it inside the system header (GCC PR 105593,
// fixed in GCC 13). Ignored for the intrinsics header only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

#ifndef XHAL_CPU_ISA_NS
#error "simd.h is for the per-ISA builds (isa_*.cpp) only"
#endif

namespace xhal::cpu::XHAL_CPU_ISA_NS {

#define XHAL_CPU_INLINE [[gnu::always_inline]] inline
#define XHAL_CPU_LAMBDA_INLINE __attribute__((always_inline))

// The ISA's native width: wider GCC vectors get their compares and selects
// split lane by lane on narrower ISAs.
#if defined(__AVX512F__)
constexpr int kLanes = 16;
#elif defined(__AVX__)
constexpr int kLanes = 8;
#else
constexpr int kLanes = 4;
#endif
typedef float V __attribute__((vector_size(kLanes * 4)));
typedef int32_t VI __attribute__((vector_size(kLanes * 4)));

// Each lane assigned, not V{} + x: +0 + -0 is +0, so that form turned a -0
// into +0 (index_add with alpha = -0, a LayerNorm mean of -0).
XHAL_CPU_INLINE V splat(float x) {
  V v;
  for (int i = 0; i < kLanes; ++i) v[i] = x;
  return v;
}
XHAL_CPU_INLINE VI splat_i(int32_t x) { return VI{} + x; }

XHAL_CPU_INLINE V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
XHAL_CPU_INLINE void store(float* p, V v) { std::memcpy(p, &v, sizeof v); }

// Store that bypasses the caches (p aligned to the vector width): for outputs far larger than the
// caches, it saves reading each destination line before writing it. Needs stream_fence() before the
// data is handed over.
XHAL_CPU_INLINE void store_stream(float* p, V v) {
#if defined(__AVX512F__)
  __m512 m;
  std::memcpy(&m, &v, sizeof m);
  _mm512_stream_ps(p, m);
#elif defined(__AVX__)
  __m256 m;
  std::memcpy(&m, &v, sizeof m);
  _mm256_stream_ps(p, m);
#elif defined(__SSE2__)
  __m128 m;
  std::memcpy(&m, &v, sizeof m);
  _mm_stream_ps(p, m);
#else
  store(p, v);
#endif
}

XHAL_CPU_INLINE void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// Writes y[0..n) elementwise: vec(i) gives y[i..i+16), one(i) gives y[i]
// (the same operations, so either yields the same bits). With `stream`, the
// aligned body goes around the caches.
template <class Vec, class One>
XHAL_CPU_INLINE void write_row(float* y, int64_t n, bool stream, Vec&& vec, One&& one) {
  int64_t i = 0;
  if (stream) {
    for (; i < n && (reinterpret_cast<uintptr_t>(y + i) & 63) != 0; ++i) y[i] = one(i);
    for (; i + kLanes <= n; i += kLanes) store_stream(y + i, vec(i));
  }
  for (; i + kLanes <= n; i += kLanes) store(y + i, vec(i));
  for (; i < n; ++i) y[i] = one(i);
}

// Lane-wise select: mask lanes are all ones (true) or zero (false).
XHAL_CPU_INLINE V select(VI mask, V a, V b) { return mask ? a : b; }

// Lane-wise a > b ? a : b and a < b ? a : b: exactly maxps / minps (the
// second operand when either is NaN or both are zeros), through the ISA's
// native packed instruction.
#if defined(__AVX512F__)
using NativePs = __m512;
#define XHAL_CPU_NATIVE_PS(op) _mm512_##op##_ps
#elif defined(__AVX__)
using NativePs = __m256;
#define XHAL_CPU_NATIVE_PS(op) _mm256_##op##_ps
#elif defined(__SSE2__)
using NativePs = __m128;
#define XHAL_CPU_NATIVE_PS(op) _mm_##op##_ps
#endif

#ifdef XHAL_CPU_NATIVE_PS
template <typename F>
XHAL_CPU_INLINE V native_binary(V a, V b, F f) {
  static_assert(sizeof(NativePs) == sizeof(V));
  NativePs x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  const NativePs m = f(x, y);
  V out;
  std::memcpy(&out, &m, sizeof out);
  return out;
}
XHAL_CPU_INLINE V max_ps(V a, V b) {
  return native_binary(a, b, [](NativePs x, NativePs y) XHAL_CPU_LAMBDA_INLINE {
    return XHAL_CPU_NATIVE_PS(max)(x, y);
  });
}
XHAL_CPU_INLINE V min_ps(V a, V b) {
  return native_binary(a, b, [](NativePs x, NativePs y) XHAL_CPU_LAMBDA_INLINE {
    return XHAL_CPU_NATIVE_PS(min)(x, y);
  });
}
#undef XHAL_CPU_NATIVE_PS
#else
XHAL_CPU_INLINE V max_ps(V a, V b) { return a > b ? a : b; }
XHAL_CPU_INLINE V min_ps(V a, V b) { return a < b ? a : b; }
#endif

// max with NaN propagation (section 1): NaN if either is NaN.
XHAL_CPU_INLINE float nan_max(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}

}  // namespace xhal::cpu::XHAL_CPU_ISA_NS
