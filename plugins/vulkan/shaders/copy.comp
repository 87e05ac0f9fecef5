#version 460
// Device-to-device copy of `count` units (the compute copy: vkCmdCopyBuffer
// is far slower than a shader on NVIDIA, VULKAN.md).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "units.glsl"

layout(push_constant) uniform Params {
  uint64_t src;
  uint64_t dst;
  uint64_t count;
} pc;

void main() {
  uint64_t base = block_base();
  uvec4 v[4];
  [[unroll]] for (uint k = 0u; k < 4u; ++k)
    if (base + uint64_t(k * 256u) < pc.count) v[k] = ld_unit(pc.src, base + uint64_t(k * 256u));
  [[unroll]] for (uint k = 0u; k < 4u; ++k)
    if (base + uint64_t(k * 256u) < pc.count) st_unit(pc.dst, base + uint64_t(k * 256u), v[k]);
}
