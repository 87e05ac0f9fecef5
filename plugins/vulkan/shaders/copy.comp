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
  for (uint64_t i = global_id(); i < pc.count; i += global_threads())
    MOVE_UNIT(pc.dst, i, pc.src, i);
}
