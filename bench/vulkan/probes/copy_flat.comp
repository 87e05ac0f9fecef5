#version 460
// Variants (c) and (d): one item per invocation, 256 invocations per
// workgroup, 32-bit index math (an index into a runtime array behind a
// buffer reference), on a 2-D grid of workgroups. VEC=1 moves a uint,
// VEC=4 a uvec4. MODES=1 includes the plugin's common.glsl, which adds its
// two execution modes (RoundingModeRTE, SignedZeroInfNanPreserve).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_buffer_reference2 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 256) in;
#if MODES
#include "common.glsl"
#endif

#if VEC == 4
#define ItemT uvec4
#else
#define ItemT uint
#endif
layout(buffer_reference, std430, buffer_reference_align = 4 * VEC) buffer Items { ItemT v[]; };

layout(push_constant) uniform Params {
  uint64_t src;
  uint64_t dst;
  uint64_t count;  // below 2^32 (the host checks)
} pc;

void main() {
  uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u +
           gl_LocalInvocationID.x;
  if (i < uint(pc.count)) Items(pc.dst).v[i] = Items(pc.src).v[i];
}
