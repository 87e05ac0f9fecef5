#version 460
// permute where src is contiguous along dim A (not the last) and dst along
// the last dim B: TILE x TILE tiles through shared memory, so both the loads
// (along A in src) and the stores (along B in dst) are coalesced. The other
// dims are batches. Element UNIT of 1, 2, 4 or 8 bytes.
//   TILE 32, V 1: 256 invocations, each moving 4 elements of a tile;
//   TILE 64, V 4 (UNIT 4 only): each invocation loads runs of 4 consecutive
//     elements as one 16-byte vector, 16 elements in all (the host checks
//     that every run is aligned and whole).
// Every invocation issues all its loads before any shared-memory store, and
// all its shared-memory reads before any global store.
// The grid is 3-D: x walks B's tiles, y A's tiles, z the batches (one
// workgroup per tile where the counts fit the grid, otherwise each walks
// its dimension with a stride). WIDE 0: 32-bit offsets (the host checks
// that every offset fits and strides are non-negative); WIDE 1: 64-bit.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "units.glsl"

#if WIDE
#define IdxT int64_t
#else
#define IdxT uint
#endif

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Batches {
  int64_t shape[6];       // batch dims, innermost first
  int64_t src_stride[6];  // their src strides (elements)
  int64_t dst_stride[6];  // their dst strides (elements)
};
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Vec4Ref { uvec4 v; };

layout(push_constant) uniform Params {
  uint64_t src;
  uint64_t dst;
  uint64_t layout_addr;
  uint64_t n_a, n_b;  // extents of A (src stride 1) and B (dst stride 1)
  int64_t sb;         // src stride of B
  int64_t dsa;        // dst stride of A
  uint64_t batches;
  uint nb;            // batch dims in the layout block
} pc;

#define TPR (TILE / V)      // invocations per tile row
#define RPP (256 / TPR)     // tile rows per pass
#define PASSES (TILE / RPP)

#if UNIT == 8
shared uvec2 tile[TILE][TILE + 1];
#define ValT uvec2
#else
shared uint tile[TILE][TILE + 1];
#define ValT uint
#endif

#if V == 4
#define RunT uvec4
#else
#define RunT ValT
#endif

RunT load_run(IdxT i) {
#if V == 4
  return Vec4Ref(pc.src + uint64_t(i) * 4ul).v;  // i: the run's first element
#elif UNIT == 8
  return ld_unit(pc.src, uint64_t(i)).xy;
#else
  return ld_unit(pc.src, uint64_t(i)).x;
#endif
}

void main() {
  uint t = gl_LocalInvocationID.x;
  uint c = (t % uint(TPR)) * uint(V), r = t / uint(TPR);
  IdxT n_a = IdxT(pc.n_a), n_b = IdxT(pc.n_b), sb = IdxT(pc.sb), dsa = IdxT(pc.dsa);
  Batches lay = Batches(pc.layout_addr);
  for (uint64_t z = uint64_t(gl_WorkGroupID.z); z < pc.batches; z += uint64_t(gl_NumWorkGroups.z)) {
    // Batch offsets: only with two or more batch dims is there a division.
    IdxT src_o = IdxT(0), dst_o = IdxT(0);
    IdxT rest = IdxT(z);
    for (uint k = 0u; k < pc.nb; ++k) {
      IdxT i = rest;
      if (k + 1u < pc.nb) {
        IdxT n = IdxT(lay.shape[k]);
        rest = rest / n;
        i -= rest * n;
      }
      src_o += i * IdxT(lay.src_stride[k]);
      dst_o += i * IdxT(lay.dst_stride[k]);
    }
    for (IdxT a0 = IdxT(gl_WorkGroupID.y) * IdxT(TILE); a0 < n_a;
         a0 += IdxT(gl_NumWorkGroups.y) * IdxT(TILE)) {
      for (IdxT b0 = IdxT(gl_WorkGroupID.x) * IdxT(TILE); b0 < n_b;
           b0 += IdxT(gl_NumWorkGroups.x) * IdxT(TILE)) {
        // Loads: a run along A (contiguous in src) per invocation and pass.
        RunT v[PASSES];
        IdxT a = a0 + IdxT(c);
        [[unroll]] for (uint p = 0u; p < uint(PASSES); ++p) {
          IdxT b = b0 + IdxT(r + p * uint(RPP));
          if (a < n_a && b < n_b) v[p] = load_run(src_o + a + b * sb);
        }
        [[unroll]] for (uint p = 0u; p < uint(PASSES); ++p) {
          uint k = r + p * uint(RPP);
#if V == 4
          tile[k][c] = v[p].x;
          tile[k][c + 1u] = v[p].y;
          tile[k][c + 2u] = v[p].z;
          tile[k][c + 3u] = v[p].w;
#else
          tile[k][c] = v[p];
#endif
        }
        barrier();
        // Stores: a run along B (contiguous in dst) per invocation and pass.
        IdxT b = b0 + IdxT(c);
        [[unroll]] for (uint p = 0u; p < uint(PASSES); ++p) {
          uint k = r + p * uint(RPP);
#if V == 4
          v[p] = uvec4(tile[c][k], tile[c + 1u][k], tile[c + 2u][k], tile[c + 3u][k]);
#else
          v[p] = tile[c][k];
#endif
        }
        [[unroll]] for (uint p = 0u; p < uint(PASSES); ++p) {
          IdxT ad = a0 + IdxT(r + p * uint(RPP));
          if (ad < n_a && b < n_b) {
            IdxT o = dst_o + ad * dsa + b;
#if V == 4
            Vec4Ref(pc.dst + uint64_t(o) * 4ul).v = v[p];
#elif UNIT == 8
            st_unit(pc.dst, uint64_t(o), uvec4(v[p], 0u, 0u));
#else
            st_unit(pc.dst, uint64_t(o), uvec4(v[p], 0u, 0u, 0u));
#endif
          }
        }
        barrier();  // the tile's reads are done before the next tile's writes
      }
    }
  }
}
