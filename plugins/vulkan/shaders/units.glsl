// Data-movement units: UNIT (bytes) picks the widest element the host found
// every address and row length to be a multiple of.
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
// Moves one unit without holding it in a variable: 8- and 16-bit values may
// then stay in storage-only form (no Int8/Int16 capability needed).
#define MOVE_UNIT(dst_base, dst_i, src_base, src_i) \
  UnitRef((dst_base) + (dst_i) * uint64_t(UNIT)).v = UnitRef((src_base) + (src_i) * uint64_t(UNIT)).v
