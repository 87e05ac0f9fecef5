// The data-movement loops of one ISA (isa_moves.cpp), for the ISA's kernel
// table in isa_rows.cpp. Included only by the per-ISA sources, which name
// the namespace through XHAL_CPU_ISA_NS.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xhal::cpu::XHAL_CPU_ISA_NS {

// The transpose block: kT x kT floats, kT = the ISA's vector width.
#if defined(__AVX512F__)
constexpr int kT = 16;
#elif defined(__AVX__)
constexpr int kT = 8;
#else
constexpr int kT = 4;
#endif
typedef float VT __attribute__((vector_size(kT * 4)));

void segsum_chunks(const float* src, int64_t w, const int64_t* sources, int64_t m, int64_t c0,
                   int64_t c1, int height, int64_t j0, int64_t width, float* stack, float* out);
void add_small_row(float* dst, const float* src, int64_t w, const int64_t* sources, int64_t m,
                   float alpha);
void axpy(float* dst, const float* t, float alpha, int64_t width);
void add_rows(float* dst, const float* a, const float* b, int64_t width);
void copy_row(std::byte* dst, const std::byte* src, uint64_t bytes, bool stream);
void transpose_tile_f32(const float* src, float* dst, int64_t src_b, int64_t dst_a, int64_t a_len,
                        int64_t b_len, bool stream);

}  // namespace xhal::cpu::XHAL_CPU_ISA_NS
