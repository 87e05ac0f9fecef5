#version 460
// Fills `words` 32-bit words at `dst` with hash(i + seed * 0x9e3779b9)
// (vk_probe.cpp computes the same words on the host to check results).
// MODE=1 turns each word into a float of magnitude [1, 2) with the hash's
// sign bit, for the row kernels. Integer operations only.
#extension GL_EXT_buffer_reference2 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Word { uint v; };

layout(push_constant) uniform Params {
  uint64_t dst;
  uint64_t words;
  uint seed;
  uint mode;
} pc;

uint probe_hash(uint x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

void main() {
  uint64_t threads = uint64_t(gl_NumWorkGroups.x) * uint64_t(gl_NumWorkGroups.y) * 256ul;
  uint64_t first = (uint64_t(gl_WorkGroupID.y) * uint64_t(gl_NumWorkGroups.x) +
                    uint64_t(gl_WorkGroupID.x)) * 256ul + uint64_t(gl_LocalInvocationID.x);
  for (uint64_t i = first; i < pc.words; i += threads) {
    uint h = probe_hash(uint(i) + pc.seed * 0x9e3779b9u);
    if (pc.mode == 1u) h = (h & 0x807fffffu) | 0x3f800000u;
    Word(pc.dst + i * 4ul).v = h;
  }
}
