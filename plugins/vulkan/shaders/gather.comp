#version 460
// index_select: out[i, :] = src[idx[i], :], rows of `upr` units, one unit
// per invocation, 64-bit indices throughout.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "units.glsl"

layout(push_constant) uniform Params {
  uint64_t src;
  uint64_t out_addr;
  uint64_t idx;    // [count] int64
  uint64_t count;  // rows of out
  uint64_t upr;    // units per row
} pc;

void main() {
  uint64_t total = pc.count * pc.upr;
  if (total < (1ul << 32) ) {
    // 32-bit division when it suffices (the common case; far cheaper on GPUs).
    uint upr = uint(pc.upr);
    for (uint64_t g = global_id(); g < total; g += global_threads()) {
      uint gi = uint(g);
      uint i = gi / upr, j = gi - i * upr;
      uint64_t row = uint64_t(ldi64(pc.idx, i));
      MOVE_UNIT(pc.out_addr, g, pc.src, row * pc.upr + j);
    }
  } else {
    for (uint64_t g = global_id(); g < total; g += global_threads()) {
      uint64_t i = g / pc.upr, j = g - i * pc.upr;
      uint64_t row = uint64_t(ldi64(pc.idx, i));
      MOVE_UNIT(pc.out_addr, g, pc.src, row * pc.upr + j);
    }
  }
}
