// Data-movement units: UNIT (bytes) picks the widest element the host found
// every address and row length to be a multiple of. Values travel as
// uvec4 (unused words zero): 8- and 16-bit values are converted on load
// and store, which storage-only 8/16-bit access allows (no Int8/Int16).
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require
#if UNIT == 1
#define UnitT uint8_t
#elif UNIT == 2
#define UnitT uint16_t
#elif UNIT == 4
#define UnitT uint
#elif UNIT == 8
#define UnitT uvec2
#elif UNIT == 16
#define UnitT uvec4
#else
#error UNIT must be 1, 2, 4, 8 or 16
#endif
layout(buffer_reference, std430, buffer_reference_align = UNIT) buffer UnitRef { UnitT v; };

uvec4 ld_unit(uint64_t base, uint64_t i) {
  UnitRef r = UnitRef(base + i * uint64_t(UNIT));
#if UNIT <= 4
  return uvec4(uint(r.v), 0u, 0u, 0u);
#elif UNIT == 8
  return uvec4(r.v, 0u, 0u);
#else
  return r.v;
#endif
}

void st_unit(uint64_t base, uint64_t i, uvec4 v) {
  UnitRef r = UnitRef(base + i * uint64_t(UNIT));
#if UNIT == 1
  r.v = uint8_t(v.x);
#elif UNIT == 2
  r.v = uint16_t(v.x);
#elif UNIT == 4
  r.v = v.x;
#elif UNIT == 8
  r.v = v.xy;
#else
  r.v = v;
#endif
}

// Blocked 2-D grids: workgroup (x, y) is block y * groups_x + x of 1024
// consecutive items; invocation t takes items block*1024 + k*256 + t for
// k = 0..3 (each k coalesced), loading all four before storing any.
uint64_t block_base() {
  uint64_t blk = uint64_t(gl_WorkGroupID.y) * uint64_t(gl_NumWorkGroups.x) + uint64_t(gl_WorkGroupID.x);
  return blk * 1024ul + uint64_t(gl_LocalInvocationID.x);
}
