// The innermost loops of the dense ops, compiled once per x86 ISA level
// (isa_*.cpp built three times: baseline SSE2, AVX2, AVX-512F) and picked at
// run time from what the CPU supports. The op files (softmax.cpp, ...) hold
// the threading and call these through the table. Every table gives the
// same bits: only correctly rounded IEEE operations in the canonical order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xhal::cpu {

struct IsaKernels {
  const char* name;  // "sse2", "avx2", "avx512f"
  // xhal_exp of 16 floats (for tests).
  void (*exp16)(const float* x, float* y);
  // Row ops on one contiguous row of n elements (docs/semantics.md 3.2-3.6).
  // `stream`: write the output around the caches (large outputs).
  // softmax_row's scratch holds softmax_scratch_floats(n) floats.
  void (*softmax_row)(const float* x, float* y, int64_t n, float* scratch, bool stream);
  void (*softmax_backward_row)(const float* y, const float* dy, float* dx, int64_t n, bool stream);
  float (*rms_norm_row)(const float* x, const float* gamma, float eps, float* y, int64_t n,
                        bool stream);
  // Also adds dy * xh into the 32-row block partial p (colsum stage 1).
  void (*rms_norm_backward_row)(const float* x, const float* gamma, float rstd, const float* dy,
                                float* dx, float* p, int64_t n, bool stream);
  void (*layer_norm_row)(const float* x, const float* gamma, const float* beta, float eps, float* y,
                         int64_t n, float* mean, float* rstd, bool stream);
  void (*layer_norm_backward_row)(const float* x, const float* gamma, float mean, float rstd,
                                  const float* dy, float* dx, float* pg, float* pb, int64_t n,
                                  bool stream);
  // index_add: the segsum tree (3.7) of chunks [c0, c1) of one row's source
  // list over columns [j0, j0 + width), padded to `height` (see index_add.cpp);
  // stack holds kIndexTreeDepth * kIndexTile floats.
  void (*segsum_chunks)(const float* src, int64_t w, const int64_t* sources, int64_t m, int64_t c0,
                        int64_t c1, int height, int64_t j0, int64_t width, float* stack,
                        float* out);
  // A destination row with 1..32 sources, summed and added in one pass.
  void (*add_small_row)(float* dst, const float* src, int64_t w, const int64_t* sources, int64_t m,
                        float alpha);
  // dst[j] = dst[j] + alpha * t[j]
  void (*axpy)(float* dst, const float* t, float alpha, int64_t width);
  // Elementwise tree level: dst[j] = a[j] + b[j] (b may be null: + 0).
  void (*add_rows)(float* dst, const float* a, const float* b, int64_t width);
  // index_select: one row of `bytes` (streaming stores when asked and the
  // row is whole 64-byte lines), and the fence that ends a streamed op.
  void (*copy_row)(std::byte* dst, const std::byte* src, uint64_t bytes, bool stream);
  void (*stream_fence)();
  // dst[a * dst_a + b] = src[a + b * src_b] for a < a_len, b < b_len (f32).
  // stream: write around the caches; needs dst and dst_a * 4 to be
  // multiples of transpose_alignment bytes.
  void (*transpose_tile_f32)(const float* src, float* dst, int64_t src_b, int64_t dst_a,
                             int64_t a_len, int64_t b_len, bool stream);
  uint64_t transpose_alignment;
};

inline int64_t softmax_scratch_floats(int64_t n) { return n + (n + 1023) / 1024; }

// Outputs at least this large are written with streaming stores.
constexpr uint64_t kStreamBytes = 8u << 20;

constexpr int64_t kIndexTile = 256;  // columns index_add sums together
constexpr int kIndexTreeDepth = 64;

// The best table for this CPU (or the one a test forced).
const IsaKernels& isa();
// Every table this CPU can run, best last; for tests.
std::vector<const IsaKernels*> supported_isas();
// Test hook: use `table` from now on (nullptr: back to the best).
void force_isa(const IsaKernels* table);

}  // namespace xhal::cpu
