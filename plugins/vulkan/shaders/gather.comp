#version 460
// index_select: out[i, :] = src[idx[i], :], rows of `upr` units, four units
// per invocation (blocked grid, units.glsl), 64-bit addresses throughout.
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
  uint64_t base = block_base();
  uvec4 v[4];
  [[unroll]] for (uint k = 0u; k < 4u; ++k) {
    uint64_t g = base + uint64_t(k * 256u);
    if (g >= total) break;
    uint64_t i, j;
    if (total < (1ul << 32)) {  // 32-bit division when it suffices (far cheaper)
      uint gi = uint(g), upr = uint(pc.upr);
      uint q = gi / upr;
      i = uint64_t(q);
      j = uint64_t(gi - q * upr);
    } else {
      i = g / pc.upr;
      j = g - i * pc.upr;
    }
    v[k] = ld_unit(pc.src, uint64_t(ldi64(pc.idx, i)) * pc.upr + j);
  }
  [[unroll]] for (uint k = 0u; k < 4u; ++k) {
    uint64_t g = base + uint64_t(k * 256u);
    if (g >= total) break;
    st_unit(pc.out_addr, g, v[k]);
  }
}
