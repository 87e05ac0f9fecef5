// Element storage of the row ops and index_add (docs/semantics.md 7.2,
// 7.3): float; bf16 / f16, widened to f32 on load and narrowed once on
// store; or double. Kernels are written for a storage type S and compute in
// acc_t<S>: f32, or f64 for double storage (7.3: binary64 throughout, no
// wider accumulator). Four consecutive elements move as one unit: a float4
// (16 bytes), a Quad of narrow values (8 bytes) or two double2 (32 bytes).
#pragma once

#include <cstdint>
#include <type_traits>

#include "gpu_port.h"
#include "narrow.h"

#if !defined(XHAL_GPU_HIP)
#include <cuda_fp16.h>
#endif

namespace xhal::gpu {

struct Bf16 {
  uint16_t bits;
};
struct F16 {
  uint16_t bits;
};
template <class S>
struct Quad {
  uint2 u;  // elements 0, 1 in u.x (low half first), 2, 3 in u.y
};

// Four doubles, the f64 counterpart of float4 (no double4: CUDA 13
// deprecates it), and their storage unit, loaded as two 16-byte vectors.
struct Dbl4 {
  double x, y, z, w;
};
struct Dbl4Unit {
  double2 lo, hi;
};

template <class S>
constexpr bool is_narrow = std::is_same_v<S, Bf16> || std::is_same_v<S, F16>;

// The compute type of storage S, and four values of a compute type.
template <class S>
using acc_t = std::conditional_t<std::is_same_v<S, double>, double, float>;
template <class A>
using vec4_t = std::conditional_t<std::is_same_v<A, double>, Dbl4, float4>;
__device__ __forceinline__ float4 make4(float a, float b, float c, float d) {
  return make_float4(a, b, c, d);
}
__device__ __forceinline__ Dbl4 make4(double a, double b, double c, double d) {
  return {a, b, c, d};
}

// Storage -> compute type (exact).
__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ double widen(double v) { return v; }
__device__ __forceinline__ float widen(Bf16 v) {
  return __uint_as_float(f32_bits_from_bf16(v.bits));
}
#if defined(XHAL_GPU_HIP)
__device__ __forceinline__ float widen(F16 v) { return __uint_as_float(f32_bits_from_f16(v.bits)); }
#else
// CUDA: the hardware conversion (cvt.f32.f16), exact for every finite
// value and infinity, with no branch. A NaN may lose its sign and payload
// here, which no output can show: every widened value reaches storage
// through arithmetic and to_storage, which stores any NaN as 0x7E00
// (7.1), and no op compares NaNs by their bits (docs/gpu.md).
__device__ __forceinline__ float widen(F16 v) { return __half2float(__ushort_as_half(v.bits)); }
#endif

// Compute type -> storage: the one narrowing of 7.1 for bf16/f16.
template <class S>
__device__ __forceinline__ S to_storage(acc_t<S> v) {
  if constexpr (!is_narrow<S>) return v;
  else if constexpr (std::is_same_v<S, Bf16>) return Bf16{bf16_bits_from_f32(__float_as_uint(v))};
  else {
#if defined(XHAL_GPU_HIP)
    return F16{f16_bits_from_f32(__float_as_uint(v))};
#else
    // cvt.rn.f16.f32: round to nearest even, subnormals and overflow to
    // infinity as 7.1 says; a NaN becomes the canonical 0x7E00 by hand.
    return F16{v != v ? static_cast<uint16_t>(0x7e00u) : __half_as_ushort(__float2half_rn(v))};
#endif
  }
}

// The unit of four elements of S, and its conversions.
template <class S>
struct Unit4 {
  using type = Quad<S>;
};
template <>
struct Unit4<float> {
  using type = float4;
};
template <>
struct Unit4<double> {
  using type = Dbl4Unit;
};
template <class S>
using unit4_t = typename Unit4<S>::type;

__device__ __forceinline__ float4 widen(float4 v) { return v; }
__device__ __forceinline__ Dbl4 widen(Dbl4Unit v) { return {v.lo.x, v.lo.y, v.hi.x, v.hi.y}; }
template <class S>
__device__ __forceinline__ float4 widen(Quad<S> q) {
  return make_float4(widen(S{static_cast<uint16_t>(q.u.x & 0xffffu)}),
                     widen(S{static_cast<uint16_t>(q.u.x >> 16)}),
                     widen(S{static_cast<uint16_t>(q.u.y & 0xffffu)}),
                     widen(S{static_cast<uint16_t>(q.u.y >> 16)}));
}
template <class S>
__device__ __forceinline__ unit4_t<S> to_unit4(vec4_t<acc_t<S>> v) {
  if constexpr (std::is_same_v<S, float>) {
    return v;
  } else if constexpr (std::is_same_v<S, double>) {
    return {make_double2(v.x, v.y), make_double2(v.z, v.w)};
  } else {
    Quad<S> q;
    q.u.x = uint32_t{to_storage<S>(v.x).bits} | (uint32_t{to_storage<S>(v.y).bits} << 16);
    q.u.y = uint32_t{to_storage<S>(v.z).bits} | (uint32_t{to_storage<S>(v.w).bits} << 16);
    return q;
  }
}

// Storage unit U (an element of S or a unit of four) <-> its compute value.
template <class U>
struct ValueOf {
  using type = float;  // float, Bf16, F16
};
template <>
struct ValueOf<double> {
  using type = double;
};
template <>
struct ValueOf<float4> {
  using type = float4;
};
template <>
struct ValueOf<Dbl4Unit> {
  using type = Dbl4;
};
template <class S>
struct ValueOf<Quad<S>> {
  using type = float4;
};
template <class U>
using value_t = typename ValueOf<U>::type;
template <class U>
__device__ __forceinline__ U to_unit(value_t<U> v) {
  if constexpr (std::is_same_v<U, float> || std::is_same_v<U, float4> || std::is_same_v<U, double>)
    return v;
  else if constexpr (std::is_same_v<U, Quad<Bf16>>) return to_unit4<Bf16>(v);
  else if constexpr (std::is_same_v<U, Quad<F16>>) return to_unit4<F16>(v);
  else if constexpr (std::is_same_v<U, Dbl4Unit>) return to_unit4<double>(v);
  else return to_storage<U>(v);
}

// A unit can be moved as one vector load/store when p is aligned to it.
template <class S>
inline bool unit_aligned(const S* p) {
  return reinterpret_cast<uintptr_t>(p) % (4 * sizeof(S)) == 0;
}

}  // namespace xhal::gpu
