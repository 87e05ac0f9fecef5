#version 460
// permute: dst (contiguous) element g at multi-index i over `shape` takes
// the src element at sum_k i[k] * stride[k] (the core has folded the
// permutation into src's strides). Shapes and strides (int64, rank <= 8)
// sit in the params block, too big for push constants. Four elements per
// invocation (blocked grid).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "units.glsl"

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Layout {
  int64_t shape[8];
  int64_t stride[8];
};

layout(push_constant) uniform Params {
  uint64_t src;
  uint64_t dst;
  uint64_t layout_addr;
  uint64_t total;
  uint rank;
  uint narrow;  // every extent and the total fit in 32 bits
} pc;

int64_t src_offset(Layout lay, uint64_t g) {
  int r = int(pc.rank);
  int64_t off = 0l;
  if (pc.narrow != 0u) {
    uint rest = uint(g);
    for (int k = r - 1; k >= 0; --k) {
      uint n = uint(lay.shape[k]);
      uint q = rest / n;
      off += int64_t(rest - q * n) * lay.stride[k];
      rest = q;
    }
  } else {
    uint64_t rest = g;
    for (int k = r - 1; k >= 0; --k) {
      uint64_t n = uint64_t(lay.shape[k]);
      uint64_t q = rest / n;
      off += int64_t(rest - q * n) * lay.stride[k];
      rest = q;
    }
  }
  return off;
}

void main() {
  Layout lay = Layout(pc.layout_addr);
  uint64_t base = block_base();
  uvec4 v[4];
  [[unroll]] for (uint k = 0u; k < 4u; ++k) {
    uint64_t g = base + uint64_t(k * 256u);
    if (g < pc.total) v[k] = ld_unit(pc.src, uint64_t(src_offset(lay, g)));
  }
  [[unroll]] for (uint k = 0u; k < 4u; ++k) {
    uint64_t g = base + uint64_t(k * 256u);
    if (g < pc.total) st_unit(pc.dst, g, v[k]);
  }
}
