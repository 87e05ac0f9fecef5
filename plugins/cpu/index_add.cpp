// Deterministic scatter-add: dst[r] = dst[r] + alpha * segsum(sources of r)
// (docs/semantics.md 3.7), walking only the rows the plan selects, no atomics.
// Light rows go one per thread; a hub row is cut into aligned subtrees of
// its chunk tree that all threads sum at once, then joined by the same tree.
// One driver for f32 (the per-ISA loops) and f64 (index_kernels.h).
#include <omp.h>

#include <algorithm>
#include <vector>

#include "dense_ops.h"
#include "index_kernels.h"
#include "index_plan.h"
#include "isa_kernels.h"
#include "op_registry.h"
#include "row_ops.h"

namespace xhal::cpu {
namespace {

int64_t chunks_of(int64_t m) { return (m + kSegsumChunk - 1) / kSegsumChunk; }

// The inner loops of one element type: the ISA table's for f32, the
// templated ones for f64.
template <class T>
struct Loops {
  void (*segsum_chunks)(const T*, int64_t, const int64_t*, int64_t, int64_t, int64_t, int, int64_t,
                        int64_t, T*, T*);
  void (*add_small_row)(T*, const T*, int64_t, const int64_t*, int64_t, float);
  void (*axpy)(T*, const T*, float, int64_t);
};
Loops<float> loops_of(const float*) {
  const IsaKernels& k = isa();
  return {k.segsum_chunks, k.add_small_row, k.axpy};
}
Loops<double> loops_of(const double*) {
  return {rows::segsum_chunks<double>, rows::add_small_row<double>, rows::axpy<double>};
}

// The next rows' first sources and destination, ahead of use: both are
// random addresses the hardware prefetcher cannot guess.
constexpr int64_t kAhead = 16;
template <class T>
void prefetch_row(const IndexPlan& plan, const TouchedRow& t, const T* src, const T* dst,
                  int64_t w) {
  constexpr int64_t kLine = 64 / sizeof(T);
  const int64_t lines = w < 512 ? w : 512;  // elements worth prefetching per row
  const int64_t end = t.end < t.begin + 4 ? t.end : t.begin + 4;
  for (int64_t k = t.begin; k < end; ++k)
    for (int64_t j = 0; j < lines; j += kLine)
      __builtin_prefetch(src + plan.row_sources[k] * w + j);
  for (int64_t j = 0; j < lines; j += kLine) __builtin_prefetch(dst + t.row * w + j);
}

template <class T>
void add_light_rows(const IndexPlan& plan, float alpha, const T* src, T* dst, int64_t w) {
  const Loops<T> k = loops_of(src);
  const int64_t rows = static_cast<int64_t>(plan.light_rows.size());
#pragma omp parallel if (rows * w > (1 << 15))
  {
    std::vector<T> stack(kIndexTreeDepth * kIndexTile);
    alignas(64) T sum[kIndexTile];
#pragma omp for schedule(dynamic, 64)
    for (int64_t i = 0; i < rows; ++i) {
      if (i + kAhead < rows) prefetch_row(plan, plan.light_rows[i + kAhead], src, dst, w);
      const TouchedRow& t = plan.light_rows[i];
      const int64_t r = t.row;
      const int64_t* sources = plan.row_sources.data() + t.begin;
      const int64_t m = t.end - t.begin;
      if (m <= kSegsumChunk) {
        k.add_small_row(dst + r * w, src, w, sources, m, alpha);
        continue;
      }
      for (int64_t j0 = 0; j0 < w; j0 += kIndexTile) {
        const int64_t width = std::min(kIndexTile, w - j0);
        k.segsum_chunks(src, w, sources, m, 0, chunks_of(m), 0, j0, width, stack.data(), sum);
        k.axpy(dst + r * w + j0, sum, alpha, width);
      }
    }
  }
}

template <class T>
void add_hub_row(const IndexPlan& plan, const TouchedRow& hub, float alpha, const T* src, T* dst,
                 int64_t w) {
  const Loops<T> k = loops_of(src);
  const int64_t r = hub.row;
  const int64_t* sources = plan.row_sources.data() + hub.begin;
  const int64_t m = hub.end - hub.begin;
  const int64_t chunks = chunks_of(m);
  // Segments of 2^h chunks are subtrees of the row's tree; aim for a few
  // segments per thread so the work balances.
  const int64_t want = 8 * static_cast<int64_t>(omp_get_max_threads());
  int height = 0;
  while ((int64_t{1} << (height + 1)) * want <= chunks) ++height;
  const int64_t seg_chunks = int64_t{1} << height;
  const int64_t segments = (chunks + seg_chunks - 1) / seg_chunks;
  const int64_t tiles = (w + kIndexTile - 1) / kIndexTile;
  std::vector<T> partial(static_cast<size_t>(segments * w));
#pragma omp parallel
  {
    std::vector<T> stack(kIndexTreeDepth * kIndexTile);
#pragma omp for collapse(2) schedule(dynamic, 1)
    for (int64_t s = 0; s < segments; ++s)
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t j0 = t * kIndexTile;
        const int64_t width = std::min(kIndexTile, w - j0);
        const int64_t c1 = std::min((s + 1) * seg_chunks, chunks);
        k.segsum_chunks(src, w, sources, m, s * seg_chunks, c1, segments > 1 ? height : 0, j0,
                        width, stack.data(), partial.data() + s * w + j0);
      }
  }
  // The levels above the segments: the same tree, column-wise.
  std::vector<T> total(static_cast<size_t>(w));
  colsum_tree(partial.data(), segments, w, total.data());
#pragma omp parallel for schedule(static) if (w > (1 << 14))
  for (int64_t j0 = 0; j0 < w; j0 += kIndexTile)
    k.axpy(dst + r * w + j0, total.data() + j0, alpha, std::min(kIndexTile, w - j0));
}

template <class T>
void add_all(const IndexPlan& plan, float alpha, const xhal_plugin_tensor_t* src,
             const xhal_plugin_tensor_t* dst, int64_t w) {
  const T* s = tensor_data<const T>(src);
  T* d = tensor_data<T>(dst);
  add_light_rows(plan, alpha, s, d, w);
  for (const TouchedRow& hub : plan.hub_rows) add_hub_row(plan, hub, alpha, s, d, w);
}

}  // namespace

xhal_status_t index_add(void* device, void* plan_handle, float alpha,
                        const xhal_plugin_tensor_t* src, const xhal_plugin_tensor_t* dst) {
  count_launch(device);
  const auto& plan = *static_cast<const IndexPlan*>(plan_handle);
  const int64_t w = row_elements(dst);
  if (plan.count == 0 || w == 0) return XHAL_OK;
  if (dst->dtype == XHAL_DTYPE_F64) add_all<double>(plan, alpha, src, dst, w);
  else add_all<float>(plan, alpha, src, dst, w);
  return XHAL_OK;
}

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(XHAL_OP_INDEX_ADD, kF32F64Dtypes, api.index_add = index_add);

}  // namespace xhal::cpu
