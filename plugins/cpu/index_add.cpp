// Deterministic scatter-add: dst[r] = dst[r] + alpha * segsum(sources of r)
// (docs/semantics.md 3.7), walking the plan's transposed CSR, no atomics.
// Light rows go one per thread; a hub row is cut into aligned subtrees of
// its chunk tree that all threads sum at once, then joined by the same tree.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "dense_ops.h"
#include "index_plan.h"
#include "row_ops.h"
#include "simd.h"

namespace xhal::cpu {
namespace {

constexpr int64_t kTile = 256;     // columns summed together (fits L1 with the stack)
constexpr int kMaxHeight = 64;

// The pairwise tree (3.1) over chunk sums, kept as a stack of column tiles.
class ColumnTree {
 public:
  explicit ColumnTree(float* storage) : slot_(storage) {}

  float* next_slot() { return slot_ + top_ * kTile; }
  void push_filled(int64_t width) {
    height_[top_++] = 0;
    collapse(width);
  }
  // Root of what was pushed, padded with +0 up to at least `height`.
  const float* finish(int64_t width, int height) {
    while (top_ > 1) {
      pad_top(width);
      collapse(width);
    }
    while (height_[0] < height) pad_top(width);
    return slot_;
  }

 private:
  void pad_top(int64_t width) {
    float* v = slot_ + (top_ - 1) * kTile;
    for (int64_t j = 0; j < width; ++j) v[j] = v[j] + 0.0f;
    ++height_[top_ - 1];
  }
  void collapse(int64_t width) {
    while (top_ >= 2 && height_[top_ - 1] == height_[top_ - 2]) {
      float* left = slot_ + (top_ - 2) * kTile;
      const float* right = slot_ + (top_ - 1) * kTile;
      for (int64_t j = 0; j < width; ++j) left[j] = left[j] + right[j];
      ++height_[top_ - 2];
      --top_;
    }
  }
  float* slot_;
  int height_[kMaxHeight];
  int top_ = 0;
};

// Sum of chunks [c0, c1) of one row's sources over columns [j0, j0+width):
// each chunk sequentially from +0, chunks by the tree, padded to `height`.
XHAL_CPU_CLONES
void chunk_tree(const float* src, int64_t w, const int64_t* sources, int64_t m, int64_t c0,
                int64_t c1, int height, int64_t j0, int64_t width, float* stack, float* out) {
  ColumnTree tree(stack);
  for (int64_t c = c0; c < c1; ++c) {
    float* acc = tree.next_slot();
    for (int64_t j = 0; j < width; ++j) acc[j] = 0.0f;
    const int64_t end = std::min((c + 1) * kSegsumChunk, m);
    for (int64_t k = c * kSegsumChunk; k < end; ++k) {
      if (k + 4 < end) __builtin_prefetch(src + sources[k + 4] * w + j0);
      const float* row = src + sources[k] * w + j0;
      for (int64_t j = 0; j < width; ++j) acc[j] = acc[j] + row[j];
    }
    tree.push_filled(width);
  }
  const float* root = tree.finish(width, height);
  for (int64_t j = 0; j < width; ++j) out[j] = root[j];
}

XHAL_CPU_CLONES
void axpy_row(float* dst, const float* t, float alpha, int64_t width) {
  for (int64_t j = 0; j < width; ++j) dst[j] = dst[j] + alpha * t[j];
}

int64_t chunks_of(int64_t m) { return (m + kSegsumChunk - 1) / kSegsumChunk; }

void add_light_rows(const IndexPlan& plan, float alpha, const float* src, float* dst, int64_t w) {
  const int64_t rows = static_cast<int64_t>(plan.light_rows.size());
#pragma omp parallel if (rows * w > (1 << 15))
  {
    std::vector<float> stack(kMaxHeight * kTile);
    alignas(64) float sum[kTile];
#pragma omp for schedule(dynamic, 64)
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t r = plan.light_rows[i];
      const int64_t* sources = plan.row_sources.data() + plan.row_ptr[r];
      const int64_t m = plan.row_ptr[r + 1] - plan.row_ptr[r];
      for (int64_t j0 = 0; j0 < w; j0 += kTile) {
        const int64_t width = std::min(kTile, w - j0);
        chunk_tree(src, w, sources, m, 0, chunks_of(m), 0, j0, width, stack.data(), sum);
        axpy_row(dst + r * w + j0, sum, alpha, width);
      }
    }
  }
}

void add_hub_row(const IndexPlan& plan, int64_t r, float alpha, const float* src, float* dst,
                 int64_t w) {
  const int64_t* sources = plan.row_sources.data() + plan.row_ptr[r];
  const int64_t m = plan.row_ptr[r + 1] - plan.row_ptr[r];
  const int64_t chunks = chunks_of(m);
  // Segments of 2^h chunks are subtrees of the row's tree; aim for a few
  // segments per thread so the work balances.
  const int64_t want = 8 * static_cast<int64_t>(omp_get_max_threads());
  int height = 0;
  while ((int64_t{1} << (height + 1)) * want <= chunks) ++height;
  const int64_t seg_chunks = int64_t{1} << height;
  const int64_t segments = (chunks + seg_chunks - 1) / seg_chunks;
  const int64_t tiles = (w + kTile - 1) / kTile;
  std::vector<float> partial(static_cast<size_t>(segments * w));
#pragma omp parallel
  {
    std::vector<float> stack(kMaxHeight * kTile);
#pragma omp for collapse(2) schedule(dynamic, 1)
    for (int64_t s = 0; s < segments; ++s)
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t j0 = t * kTile;
        const int64_t width = std::min(kTile, w - j0);
        const int64_t c1 = std::min((s + 1) * seg_chunks, chunks);
        chunk_tree(src, w, sources, m, s * seg_chunks, c1, segments > 1 ? height : 0, j0, width,
                   stack.data(), partial.data() + s * w + j0);
      }
  }
  // The levels above the segments: the same tree, column-wise.
  std::vector<float> total(static_cast<size_t>(w));
  colsum_tree(partial.data(), segments, w, total.data());
#pragma omp parallel for schedule(static) if (w > (1 << 14))
  for (int64_t j0 = 0; j0 < w; j0 += kTile)
    axpy_row(dst + r * w + j0, total.data() + j0, alpha, std::min(kTile, w - j0));
}

}  // namespace

xhal_status_t index_add(void* device, void* plan_handle, float alpha,
                        const xhal_plugin_tensor_t* src, const xhal_plugin_tensor_t* dst) {
  count_launch(device);
  const auto& plan = *static_cast<const IndexPlan*>(plan_handle);
  const int64_t w = row_elements(dst);
  if (plan.count == 0 || w == 0) return XHAL_OK;
  const float* s = tensor_data<const float>(src);
  float* d = tensor_data<float>(dst);
  add_light_rows(plan, alpha, s, d, w);
  for (const int64_t r : plan.hub_rows) add_hub_row(plan, r, alpha, s, d, w);
  return XHAL_OK;
}

}  // namespace xhal::cpu
