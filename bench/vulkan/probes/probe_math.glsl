// Stand-ins for native per-row arithmetic (include after common.glsl).
// The build lint refuses OpFDiv and GLSL sqrt/inversesqrt in any shader, so
// the probes replace the plugin's exact xdiv/xsqrt with what costs about
// as much as the native instructions: a multiply by 1/n (computed on the
// host) and 1/sqrt from a bit-trick guess and three Newton steps of
// `precise` multiplies. Not bit-exact; only for timing.
float newton_rsqrt(float a) {
  float y = uintBitsToFloat(0x5f3759dfu - (floatBitsToUint(a) >> 1));
  float h = xmul(0.5, a);
  [[unroll]] for (uint k = 0u; k < 3u; ++k) y = xmul(y, xsub(1.5, xmul(h, xmul(y, y))));
  return y;
}
