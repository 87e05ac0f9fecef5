#version 460
// vulkan.divsqrt_sweep: xdiv(a, b) and xsqrt(a) of common.glsl over inputs
// the host chose; the host compares every result with its IEEE a / b and
// std::sqrt(a) bit for bit (divsqrt_sweep_test.cpp).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 64) in;
#include "common.glsl"
layout(push_constant) uniform Params {
  uint64_t in_addr;   // [n] x (a, b)
  uint64_t out_addr;  // [n] x (a / b, sqrt(a))
  uint64_t n;
} pc;

void main() {
  for (uint64_t i = global_id(); i < pc.n; i += global_threads()) {
    float a = ldf(pc.in_addr, 2ul * i);
    float b = ldf(pc.in_addr, 2ul * i + 1ul);
    stf(pc.out_addr, 2ul * i, xdiv(a, b));
    stf(pc.out_addr, 2ul * i + 1ul, xsqrt(a));
  }
}
