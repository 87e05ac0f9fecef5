#version 460
// Variant (e): a grid-stride loop over uvec4 with a fixed number of
// workgroups (a 1-D grid chosen by the host, e.g. 8 per SM), 32-bit index
// math, one item in flight per iteration.
#extension GL_EXT_buffer_reference2 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 16) buffer Items { uvec4 v[]; };

layout(push_constant) uniform Params {
  uint64_t src;
  uint64_t dst;
  uint64_t count;  // below 2^32 - threads (the host checks)
} pc;

void main() {
  Items s = Items(pc.src), d = Items(pc.dst);
  uint n = uint(pc.count), stride = gl_NumWorkGroups.x * 256u;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) d.v[i] = s.v[i];
}
