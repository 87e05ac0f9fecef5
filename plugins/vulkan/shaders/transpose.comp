#version 460
// permute where src is contiguous along dim A (not the last) and dst along
// the last dim B: 32 x 32 tiles through shared memory, so both the loads
// (along A in src) and the stores (along B in dst) are coalesced. The other
// dims are batches, decoded from the tile index over the params block.
// Element UNIT of 1, 2, 4 or 8 bytes.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 32, local_size_y = 8) in;
#include "common.glsl"
#include "units.glsl"

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Layout {
  int64_t shape[8];   // dst shape
  int64_t stride[8];  // src strides, elements
};

layout(push_constant) uniform Params {
  uint64_t src;
  uint64_t dst;
  uint64_t layout_addr;
  uint64_t tiles;      // batches * tiles_a * tiles_b
  uint64_t tiles_a, tiles_b;
  uint rank;
  uint dim_a;          // B is rank - 1
} pc;

shared uvec2 tile[32][33];

void main() {
  Layout lay = Layout(pc.layout_addr);
  int r = int(pc.rank), a_dim = int(pc.dim_a), b_dim = r - 1;
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  uint64_t n_a = uint64_t(lay.shape[a_dim]), n_b = uint64_t(lay.shape[b_dim]);
  for (uint64_t tid = uint64_t(gl_WorkGroupID.y) * uint64_t(gl_NumWorkGroups.x) + uint64_t(gl_WorkGroupID.x);
       tid < pc.tiles; tid += uint64_t(gl_NumWorkGroups.x) * uint64_t(gl_NumWorkGroups.y)) {
    // The tile's place: 32-bit division where the tile count allows (a
    // 64-bit division is a long emulated sequence on GPUs, and every
    // invocation of the tile does it).
    uint64_t tb, ta, o;
    if (pc.tiles <= 0xffffffffUL) {
      uint t32 = uint(tid), nb = uint(pc.tiles_b), na = uint(pc.tiles_a);
      uint rest = t32 / nb, o32 = rest / na;
      tb = uint64_t(t32 - rest * nb);
      ta = uint64_t(rest - o32 * na);
      o = uint64_t(o32);
    } else {
      uint64_t rest = tid / pc.tiles_b;
      tb = tid - rest * pc.tiles_b;
      o = rest / pc.tiles_a;
      ta = rest - o * pc.tiles_a;
    }
    // Batch offsets: the dims other than A and B, outermost first.
    int64_t src_o = 0l, dst_o = 0l, dst_step = 1l, dst_stride_a = 1l;
    for (int k = r - 1; k >= 0; --k) {
      if (k == a_dim) dst_stride_a = dst_step;
      if (k != a_dim && k != b_dim) {
        uint64_t n = uint64_t(lay.shape[k]), i;
        if (o <= 0xffffffffUL && n <= 0xffffffffUL) {
          uint q = uint(o) / uint(n);
          i = uint64_t(uint(o) - q * uint(n));
          o = uint64_t(q);
        } else {
          uint64_t q = o / n;
          i = o - q * n;
          o = q;
        }
        src_o += int64_t(i) * lay.stride[k];
        dst_o += int64_t(i) * dst_step;
      }
      dst_step *= lay.shape[k];
    }
    uint64_t a0 = ta * 32ul, b0 = tb * 32ul;
    barrier();  // the previous tile's reads are done
    [[unroll]] for (uint k = 0u; k < 32u; k += 8u) {
      uint64_t a = a0 + uint64_t(tx), b = b0 + uint64_t(ty + k);
      if (a < n_a && b < n_b)
        tile[ty + k][tx] = ld_unit(pc.src, uint64_t(src_o + int64_t(a) * lay.stride[a_dim] +
                                                     int64_t(b) * lay.stride[b_dim])).xy;
    }
    barrier();
    [[unroll]] for (uint k = 0u; k < 32u; k += 8u) {
      uint64_t a = a0 + uint64_t(ty + k), b = b0 + uint64_t(tx);
      if (a < n_a && b < n_b)
        st_unit(pc.dst, uint64_t(dst_o + int64_t(a) * dst_stride_a + int64_t(b)), uvec4(tile[tx][ty + k], 0u, 0u));
    }
  }
}
