#version 460
// Variants (b) and (b2): the logic of the plugin's copy.comp (main below is
// the same lines; ld_unit, st_unit and block_base come from the plugin's
// units.glsl, included) without common.glsl. Built with UNIT=16.
//   EXEC_MODES=0  no execution modes at all;
//   EXEC_MODES=1  only common.glsl's two spirv_execution_mode lines
//                 (RoundingModeRTE, SignedZeroInfNanPreserve for f32), without
//                 the rest of common.glsl (its functions and the private
//                 st_val[40] / st_top / st_count globals every shader gets).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_buffer_reference2 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_control_flow_attributes : require
#if EXEC_MODES
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4467], 4462, 32);
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4466], 4461, 32);
#endif
layout(local_size_x = 256) in;
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
