// Element storage of the row ops and index_add (docs/semantics.md 7.2):
// float, or bf16 / f16 widened to f32 on load and narrowed once on store.
// Kernels are written for a storage type S; every value they compute with
// is f32. Four consecutive elements move as one unit: a float4 (16 bytes)
// or a Quad of narrow values (8 bytes).
#pragma once

#include <cstdint>
#include <type_traits>

#include "gpu_port.h"
#include "narrow.h"

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

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(Bf16 v) {
  return __uint_as_float(f32_bits_from_bf16(v.bits));
}
__device__ __forceinline__ float to_f32(F16 v) {
  return __uint_as_float(f32_bits_from_f16(v.bits));
}

template <class S>
__device__ __forceinline__ S from_f32(float v) {
  if constexpr (sizeof(S) == 4) return v;
  else if constexpr (std::is_same_v<S, Bf16>) return Bf16{bf16_bits_from_f32(__float_as_uint(v))};
  else return F16{f16_bits_from_f32(__float_as_uint(v))};
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
template <class S>
using unit4_t = typename Unit4<S>::type;

__device__ __forceinline__ float4 to_f32(float4 v) { return v; }
template <class S>
__device__ __forceinline__ float4 to_f32(Quad<S> q) {
  return make_float4(to_f32(S{static_cast<uint16_t>(q.u.x & 0xffffu)}),
                     to_f32(S{static_cast<uint16_t>(q.u.x >> 16)}),
                     to_f32(S{static_cast<uint16_t>(q.u.y & 0xffffu)}),
                     to_f32(S{static_cast<uint16_t>(q.u.y >> 16)}));
}
template <class S>
__device__ __forceinline__ unit4_t<S> unit4_from_f32(float4 v) {
  if constexpr (sizeof(S) == 4) {
    return v;
  } else {
    Quad<S> q;
    q.u.x = uint32_t{from_f32<S>(v.x).bits} | (uint32_t{from_f32<S>(v.y).bits} << 16);
    q.u.y = uint32_t{from_f32<S>(v.z).bits} | (uint32_t{from_f32<S>(v.w).bits} << 16);
    return q;
  }
}

// Storage unit U (float, float4, Bf16, F16 or a Quad) <-> its f32 value
// (float or float4).
template <class U>
struct F32Of {
  using type = float;  // float, Bf16, F16
};
template <>
struct F32Of<float4> {
  using type = float4;
};
template <class S>
struct F32Of<Quad<S>> {
  using type = float4;
};
template <class U>
using f32_of_t = typename F32Of<U>::type;
template <class U>
__device__ __forceinline__ U narrow_to(f32_of_t<U> v) {
  if constexpr (std::is_same_v<U, float> || std::is_same_v<U, float4>) return v;
  else if constexpr (std::is_same_v<U, Quad<Bf16>>) return unit4_from_f32<Bf16>(v);
  else if constexpr (std::is_same_v<U, Quad<F16>>) return unit4_from_f32<F16>(v);
  else return from_f32<U>(v);
}

// A unit can be moved as one vector load/store when p is aligned to it.
template <class S>
inline bool unit_aligned(const S* p) {
  return reinterpret_cast<uintptr_t>(p) % (4 * sizeof(S)) == 0;
}

}  // namespace xhal::gpu
