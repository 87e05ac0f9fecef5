// 16-float vectors through GCC vector extensions: the same source compiles
// to SSE2 (4 x xmm), AVX2 (2 x ymm) or AVX-512 (1 x zmm) depending on the
// target of the function it is inlined into (XHAL_CPU_CLONES). Only
// correctly rounded IEEE operations are used, so every ISA gives the same bits.
#pragma once

#include <cstdint>
#include <cstring>

namespace xhal::cpu {

// Hot row kernels are compiled three times and picked at load time.
#if defined(__x86_64__) && !defined(XHAL_CPU_NO_CLONES)
#define XHAL_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define XHAL_CPU_CLONES
#endif

// Small helpers must be inlined into each clone to get its ISA.
#define XHAL_CPU_INLINE [[gnu::always_inline]] inline

constexpr int kLanes = 16;
typedef float V __attribute__((vector_size(64)));
typedef int32_t VI __attribute__((vector_size(64)));

XHAL_CPU_INLINE V splat(float x) { return V{} + x; }
XHAL_CPU_INLINE VI splat_i(int32_t x) { return VI{} + x; }

XHAL_CPU_INLINE V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
XHAL_CPU_INLINE void store(float* p, V v) { std::memcpy(p, &v, sizeof v); }

// Lane-wise select: mask lanes are all ones (true) or zero (false).
XHAL_CPU_INLINE V select(VI mask, V a, V b) { return mask ? a : b; }

// max with NaN propagation (section 1): NaN if either is NaN.
XHAL_CPU_INLINE float nan_max(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}

}  // namespace xhal::cpu
