#version 460
// RMSNorm forward with the plugin's per-row work (its rows.glsl and
// common.glsl, included; the loop below is norm.comp's RMS_FWD path) and
// the per-row finish changed, to time what that finish costs:
//   FINISH=1  invocation 0's stack and the broadcast as in the plugin, then
//             the mean and 1/sqrt by probe_math.glsl's stand-ins instead of
//             the integer xdiv/xsqrt/xdiv (push constant nf holds 1/n);
//   FINISH=0  no stack, no broadcast, no division or root: every invocation
//             adds the group tree sums itself and scales by that sum.
// Built with CPG=4 (rows of 4096) and CPG=8 (longer rows), as the plugin's
// rms_fwd_c4 / rms_fwd_c8.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128 * CPG) in;
#include "common.glsl"
#include "rows.glsl"
#include "probe_math.glsl"

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

float v[8];

void load_group(uint64_t rx, uint64_t q) {
  [[unroll]] for (uint k = 0u; k < 8u; ++k) {
    uint64_t i = row_index(q, k);
    v[k] = 0.0;
    if (i < pc.n) v[k] = ldf(rx, i);
  }
}

void main() {
  uint t = wg_t();
  uint64_t n = pc.n, groups = row_groups(n);
  for (uint64_t row = first_row(); row < pc.rows; row += row_step()) {
    uint64_t rx = pc.x + row * n * 4ul, ro = pc.out_addr + row * n * 4ul;
#if FINISH
    if (t == 0u) st_reset();
#else
    float total = 0.0;
#endif
    for (uint64_t q = 0ul; q < groups; ++q) {
      load_group(rx, q);
      float a = 0.0;
      [[unroll]] for (uint k = 0u; k < 8u; ++k)
        if (row_index(q, k) < n) a = xadd(a, xmul(v[k], v[k]));
      float s = wg_group_tree(a);
#if FINISH
      if (t == 0u) st_push(s);
#else
      total = xadd(total, s);
#endif
    }
#if FINISH
    float ss = wg_bcast(t == 0u ? st_finish() : 0.0);
    float rs = newton_rsqrt(xadd(xmul(ss, pc.nf), pc.eps));
#else
    float rs = total;
#endif
    if (t == 0u) stf(pc.rstd, row, rs);
    for (uint64_t q = 0ul; q < groups; ++q) {
      if (groups > 1ul) load_group(rx, q);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
        uint64_t i = row_index(q, k);
        if (i < n) stf(ro, i, xmul(xmul(v[k], rs), ldf(pc.gamma, i)));
      }
    }
  }
}
