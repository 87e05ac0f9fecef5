#version 460
// Start-up self-test: every arithmetic building block the plugin relies on,
// on inputs the host chose (subnormals, NaN, inf, signed zeros, random
// bits). The host compares each result with its own IEEE result.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 64) in;
#include "common.glsl"
layout(push_constant) uniform Params {
  uint64_t in_addr;   // [n] x (a, b, c)
  uint64_t out_addr;  // [n] x kOutputs
  uint64_t n;
} pc;

#ifdef F64
// The f64 variant: the binary64 operations the F64 kernels use (add, sub,
// mul, an unfused a*b+c, the integer division and square root, xhal_exp64),
// stored as doubles; in and out as in f32.
const uint kOutputs = 7u;

void main() {
  for (uint64_t i = global_id(); i < pc.n; i += global_threads()) {
    double a = ldd(pc.in_addr, 3ul * i);
    double b = ldd(pc.in_addr, 3ul * i + 1ul);
    double c = ldd(pc.in_addr, 3ul * i + 2ul);
    uint64_t o = uint64_t(kOutputs) * i;
    std64(pc.out_addr, o + 0ul, xadd(a, b));
    std64(pc.out_addr, o + 1ul, xsub(a, b));
    std64(pc.out_addr, o + 2ul, xmul(a, b));
    std64(pc.out_addr, o + 3ul, xadd(xmul(a, b), c));  // must not be fused
    std64(pc.out_addr, o + 4ul, xdiv(a, b));
    std64(pc.out_addr, o + 5ul, xsqrt(a));
    std64(pc.out_addr, o + 6ul, xexp(a));
  }
}
#else
const uint kOutputs = 7u;

void main() {
  for (uint64_t i = global_id(); i < pc.n; i += global_threads()) {
    float a = ldf(pc.in_addr, 3ul * i);
    float b = ldf(pc.in_addr, 3ul * i + 1ul);
    float c = ldf(pc.in_addr, 3ul * i + 2ul);
    uint64_t o = uint64_t(kOutputs) * i;
    stf(pc.out_addr, o + 0ul, xadd(a, b));
    stf(pc.out_addr, o + 1ul, xsub(a, b));
    stf(pc.out_addr, o + 2ul, xmul(a, b));
    stf(pc.out_addr, o + 3ul, xadd(xmul(a, b), c));  // must not be fused
    stf(pc.out_addr, o + 4ul, xdiv(a, b));
    stf(pc.out_addr, o + 5ul, xsqrt(a));
    stf(pc.out_addr, o + 6ul, xexp(a));
  }
}
#endif
