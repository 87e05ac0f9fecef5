#version 460
// A plain RMSNorm forward for comparison (not the plugin's order, not
// bit-exact): 256 invocations per row, vec4 loads with 32-bit indices
// inside the row, subgroupAdd and one shared-memory step across
// subgroups, probe_math.glsl's rsqrt (push constant nf holds 1/n); the
// output pass reads the row again (from L1/L2). Rows of a multiple of 4.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 256) in;
#include "common.glsl"
#include "probe_math.glsl"

layout(buffer_reference, std430, buffer_reference_align = 16) buffer Vec4s { vec4 v[]; };

layout(push_constant) uniform Params {  // the plugin's NormPush
  uint64_t x;
  uint64_t gamma;
  uint64_t beta;
  uint64_t dy;
  uint64_t out_addr;
  uint64_t mean;
  uint64_t rstd;
  uint64_t rows;
  uint64_t n;
  float nf;
  float eps;
} pc;

shared float s_part[256];

vec4 vadd(vec4 a, vec4 b) { precise vec4 r = a + b; return r; }
vec4 vmul(vec4 a, vec4 b) { precise vec4 r = a * b; return r; }

void main() {
  uint t = gl_LocalInvocationID.x;
  uint n4 = uint(pc.n) / 4u;
  Vec4s g = Vec4s(pc.gamma);
  for (uint64_t row = uint64_t(gl_WorkGroupID.x); row < pc.rows; row += uint64_t(gl_NumWorkGroups.x)) {
    Vec4s x = Vec4s(pc.x + row * pc.n * 4ul), y = Vec4s(pc.out_addr + row * pc.n * 4ul);
    vec4 acc = vec4(0.0);
    for (uint j = t; j < n4; j += 256u) {
      vec4 a = x.v[j];
      acc = vadd(acc, vmul(a, a));
    }
    float s = subgroupAdd(xadd(xadd(acc.x, acc.y), xadd(acc.z, acc.w)));
    barrier();  // the previous row's readers of s_part are done
    if (subgroupElect()) s_part[gl_SubgroupID] = s;
    barrier();
    float ss = 0.0;
    for (uint k = 0u; k < gl_NumSubgroups; ++k) ss = xadd(ss, s_part[k]);
    float rs = newton_rsqrt(xadd(xmul(ss, pc.nf), pc.eps));
    if (t == 0u) stf(pc.rstd, row, rs);
    for (uint j = t; j < n4; j += 256u) y.v[j] = vmul(vmul(x.v[j], vec4(rs)), g.v[j]);
  }
}
