#version 460
// Planted faults for the lint test: a multiply without `precise` (a driver
// may fuse it with the add into an FMA) and a native sqrt. The build lint
// must refuse this module.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 64) in;
#include "common.glsl"
layout(push_constant) uniform Params { uint64_t a; } pc;
void main() {
  float x = ldf(pc.a, 0ul), y = ldf(pc.a, 1ul);
  float p = x * y;  // not precise
  stf(pc.a, 2ul, xadd(p, sqrt(x)));
}
