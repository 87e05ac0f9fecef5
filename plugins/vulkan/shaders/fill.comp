#version 460
// buffer_fill over [dst, dst + bytes): bytes up to the first 4-byte boundary
// and after the last one are stored singly, the rest as 32-bit words, four
// items per invocation (blocked grid). `pattern` is the fill pattern
// repeated to 8 bytes and rotated so that its byte k belongs at addresses
// = k (mod 8) (the core guarantees the offset is a multiple of the pattern
// size, buffers are 64-byte aligned).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 256) in;
#include "common.glsl"
#define UNIT 4
#include "units.glsl"
layout(buffer_reference, std430, buffer_reference_align = 1) buffer U8Ref { uint8_t v; };

layout(push_constant) uniform Params {
  uint64_t dst;
  uint64_t bytes;
  uint64_t pattern;
} pc;

uint byte_at(uint64_t address) {
  return uint(pc.pattern >> (8ul * (address & 7ul))) & 0xffu;
}

void main() {
  uint64_t first_word = (pc.dst + 3ul) & ~3ul;
  uint64_t end = pc.dst + pc.bytes;
  uint64_t head = min(first_word - pc.dst, pc.bytes);
  uint64_t words = (end - (pc.dst + head)) / 4ul;
  uint64_t tail = pc.bytes - head - 4ul * words;
  uint64_t items = head + words + tail;
  uint64_t base = block_base();
  [[unroll]] for (uint k = 0u; k < 4u; ++k) {
    uint64_t i = base + uint64_t(k * 256u);
    if (i >= items) break;
    if (i < head) {
      U8Ref(pc.dst + i).v = uint8_t(byte_at(pc.dst + i));
    } else if (i < head + words) {
      uint64_t a = pc.dst + head + 4ul * (i - head);
      U32Ref(a).v = uint(pc.pattern >> (8ul * (a & 7ul)));
    } else {
      uint64_t a = pc.dst + head + 4ul * words + (i - head - words);
      U8Ref(a).v = uint8_t(byte_at(a));
    }
  }
}
