#version 460
// RMSNorm (3.4) and LayerNorm (3.6), one workgroup per row: RMS_FWD,
// RMS_BWD, LN_FWD or LN_BWD. dgamma/dbeta are colsum.comp's.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 128) in;
#include "common.glsl"
#include "rows.glsl"

layout(push_constant) uniform Params {
  uint64_t x;
  uint64_t gamma;
  uint64_t beta;     // LN_FWD
  uint64_t dy;       // backward
  uint64_t out_addr; // y or dx
  uint64_t mean;     // LN: written (forward) or read (backward)
  uint64_t rstd;     // written (forward) or read (backward)
  uint64_t rows;
  uint64_t n;
  float nf;          // (float)n, rounded on the host
  float eps;
} pc;

void main() {
  uint l = gl_LocalInvocationID.x;
  uint64_t n = pc.n;
  for (uint64_t row = first_row(); row < pc.rows; row += row_step()) {
    uint64_t rx = pc.x + row * n * 4ul, ro = pc.out_addr + row * n * 4ul;
#if RMS_FWD
    float ss;
    ROWSUM(ss, n, xmul(ldf(rx, i), ldf(rx, i)));
    float ms = xdiv(ss, pc.nf);
    float rs = xdiv(1.0, xsqrt(xadd(ms, pc.eps)));
    if (l == 0u) stf(pc.rstd, row, rs);
    for (uint64_t i = uint64_t(l); i < n; i += 128ul)
      stf(ro, i, xmul(xmul(ldf(rx, i), rs), ldf(pc.gamma, i)));
#elif LN_FWD
    float sx;
    ROWSUM(sx, n, ldf(rx, i));
    float mean = xdiv(sx, pc.nf);
    float sv;
    ROWSUM(sv, n, xmul(xsub(ldf(rx, i), mean), xsub(ldf(rx, i), mean)));
    float var = xdiv(sv, pc.nf);
    float rs = xdiv(1.0, xsqrt(xadd(var, pc.eps)));
    if (l == 0u) {
      stf(pc.mean, row, mean);
      stf(pc.rstd, row, rs);
    }
    for (uint64_t i = uint64_t(l); i < n; i += 128ul) {
      float d = xsub(ldf(rx, i), mean);
      stf(ro, i, xadd(xmul(xmul(d, rs), ldf(pc.gamma, i)), ldf(pc.beta, i)));
    }
#elif RMS_BWD
    uint64_t rdy = pc.dy + row * n * 4ul;
    float rs = ldf(pc.rstd, row);
    float cs;
    ROWSUM(cs, n, xmul(xmul(ldf(rdy, i), ldf(pc.gamma, i)), xmul(ldf(rx, i), rs)));
    float c = xdiv(cs, pc.nf);
    for (uint64_t i = uint64_t(l); i < n; i += 128ul) {
      float g = xmul(ldf(rdy, i), ldf(pc.gamma, i));
      float xh = xmul(ldf(rx, i), rs);
      stf(ro, i, xmul(xsub(g, xmul(xh, c)), rs));
    }
#elif LN_BWD
    uint64_t rdy = pc.dy + row * n * 4ul;
    float mean = ldf(pc.mean, row), rs = ldf(pc.rstd, row);
    float sa, sb;
    ROWSUM(sa, n, xmul(ldf(rdy, i), ldf(pc.gamma, i)));
    ROWSUM(sb, n, xmul(xmul(ldf(rdy, i), ldf(pc.gamma, i)), xmul(xsub(ldf(rx, i), mean), rs)));
    float a = xdiv(sa, pc.nf), b = xdiv(sb, pc.nf);
    for (uint64_t i = uint64_t(l); i < n; i += 128ul) {
      float g = xmul(ldf(rdy, i), ldf(pc.gamma, i));
      float xh = xmul(xsub(ldf(rx, i), mean), rs);
      stf(ro, i, xmul(xsub(xsub(g, a), xmul(xh, b)), rs));
    }
#endif
  }
}
