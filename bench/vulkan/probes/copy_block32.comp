#version 460
// Variant (f): the plugin's blocked pattern (workgroup = block of 1024
// uvec4 on a 2-D grid, invocation t moves items t, t+256, t+512, t+768,
// all four loaded before any is stored) with 32-bit index math into a
// runtime array instead of 64-bit byte addresses per item. No execution
// modes.
#extension GL_EXT_buffer_reference2 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 16) buffer Items { uvec4 v[]; };

layout(push_constant) uniform Params {
  uint64_t src;
  uint64_t dst;
  uint64_t count;  // blocks * 1024 below 2^32 (the host checks)
} pc;

void main() {
  Items s = Items(pc.src), d = Items(pc.dst);
  uint n = uint(pc.count);
  uint base = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 1024u +
              gl_LocalInvocationID.x;
  uvec4 v[4];
  [[unroll]] for (uint k = 0u; k < 4u; ++k)
    if (base + k * 256u < n) v[k] = s.v[base + k * 256u];
  [[unroll]] for (uint k = 0u; k < 4u; ++k)
    if (base + k * 256u < n) d.v[base + k * 256u] = v[k];
}
