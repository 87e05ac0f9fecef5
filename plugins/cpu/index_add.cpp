// Deterministic scatter-add: dst[r] = dst[r] + alpha * segsum(sources of r)
// (docs/semantics.md 3.7), walking only the rows the plan selects, no atomics.
// Light rows go one per thread; a hub row is cut into aligned subtrees of
// its chunk tree that all threads sum at once, then joined by the same tree.
// One driver for f32 (the per-ISA loops) and f64 (index_kernels.h). f16
// and bf16 (docs/semantics.md 7.2): the selected sources widened exactly
// into an f32 copy, each touched destination row widened into a per-thread
// f32 row, the f32 loops, and one narrowing per element of that row; rows
// without a source are not read or written.
#include <omp.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "dense_ops.h"
#include "index_kernels.h"
#include "index_plan.h"
#include "isa_kernels.h"
#include "narrow.h"
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
template <class T, class Rows>
void prefetch_row(const IndexPlan& plan, const TouchedRow& t, const T* src, const Rows& dst,
                  int64_t w) {
  constexpr int64_t kLine = 64 / sizeof(T);
  const int64_t lines = w < 512 ? w : 512;  // elements worth prefetching per row
  const int64_t end = t.end < t.begin + 4 ? t.end : t.begin + 4;
  for (int64_t k = t.begin; k < end; ++k)
    for (int64_t j = 0; j < lines; j += kLine)
      __builtin_prefetch(src + plan.row_sources[k] * w + j);
  const char* d = dst.address(t.row);
  const int64_t bytes = lines * static_cast<int64_t>(dst.elem_size());
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(d + b);
}

// Where a destination row is updated. f32, f64: in place.
template <class T>
struct InPlaceRows {
  T* dst;
  int64_t w;
  static constexpr bool kBuffered = false;
  T* open(int64_t r, T*) const { return dst + r * w; }
  void close(int64_t, const T*) const {}
  const char* address(int64_t r) const { return reinterpret_cast<const char*>(dst + r * w); }
  static constexpr size_t elem_size() { return sizeof(T); }
};
// f16, bf16: widened into the thread's f32 row, narrowed back once.
struct NarrowRows {
  uint16_t* dst;
  int64_t w;
  xhal_dtype_t dtype;
  static constexpr bool kBuffered = true;
  float* open(int64_t r, float* row) const {
    widen_row(dtype, dst + r * w, row, w);
    return row;
  }
  void close(int64_t r, const float* row) const { narrow_row(dtype, row, dst + r * w, w); }
  const char* address(int64_t r) const { return reinterpret_cast<const char*>(dst + r * w); }
  static constexpr size_t elem_size() { return 2; }
};

template <class T, class Rows>
void add_light_rows(const IndexPlan& plan, float alpha, const T* src, const Rows& dst, int64_t w) {
  const Loops<T> k = loops_of(src);
  const int64_t rows = static_cast<int64_t>(plan.light_rows.size());
#pragma omp parallel if (rows * w > (1 << 15))
  {
    std::vector<T> stack(kIndexTreeDepth * kIndexTile);
    std::vector<T> row_buffer(Rows::kBuffered ? static_cast<size_t>(w) : 0);
    alignas(64) T sum[kIndexTile];
#pragma omp for schedule(dynamic, 64)
    for (int64_t i = 0; i < rows; ++i) {
      if (i + kAhead < rows) prefetch_row(plan, plan.light_rows[i + kAhead], src, dst, w);
      const TouchedRow& t = plan.light_rows[i];
      const int64_t r = t.row;
      const int64_t* sources = plan.row_sources.data() + t.begin;
      const int64_t m = t.end - t.begin;
      T* d = dst.open(r, row_buffer.data());
      if (m <= kSegsumChunk) {
        k.add_small_row(d, src, w, sources, m, alpha);
      } else {
        for (int64_t j0 = 0; j0 < w; j0 += kIndexTile) {
          const int64_t width = std::min(kIndexTile, w - j0);
          k.segsum_chunks(src, w, sources, m, 0, chunks_of(m), 0, j0, width, stack.data(), sum);
          k.axpy(d + j0, sum, alpha, width);
        }
      }
      dst.close(r, d);
    }
  }
}

template <class T, class Rows>
void add_hub_row(const IndexPlan& plan, const TouchedRow& hub, float alpha, const T* src,
                 const Rows& dst, int64_t w) {
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
  std::vector<T> row_buffer(Rows::kBuffered ? static_cast<size_t>(w) : 0);
  T* d = dst.open(r, row_buffer.data());
#pragma omp parallel for schedule(static) if (w > (1 << 14))
  for (int64_t j0 = 0; j0 < w; j0 += kIndexTile)
    k.axpy(d + j0, total.data() + j0, alpha, std::min(kIndexTile, w - j0));
  dst.close(r, d);
}

template <class T>
void add_all(const IndexPlan& plan, float alpha, const xhal_plugin_tensor_t* src,
             const xhal_plugin_tensor_t* dst, int64_t w) {
  const T* s = tensor_data<const T>(src);
  const InPlaceRows<T> d{tensor_data<T>(dst), w};
  add_light_rows(plan, alpha, s, d, w);
  for (const TouchedRow& hub : plan.hub_rows) add_hub_row(plan, hub, alpha, s, d, w);
}

// f16/bf16: the sources widened once (the plan's count rows, the work the
// call asks for), then the f32 loops on widened destination rows.
void add_all_narrow(const IndexPlan& plan, float alpha, const xhal_plugin_tensor_t* src,
                    const xhal_plugin_tensor_t* dst, int64_t w) {
  const xhal_dtype_t dtype = dst->dtype;
  const int64_t count = static_cast<int64_t>(plan.count);
  std::unique_ptr<float[]> wide(new float[static_cast<size_t>(count * w)]);
  const uint16_t* sp = tensor_data<const uint16_t>(src);
#pragma omp parallel for schedule(static) if (count * w > (1 << 16))
  for (int64_t i = 0; i < count; ++i) widen_row(dtype, sp + i * w, wide.get() + i * w, w);
  const NarrowRows d{tensor_data<uint16_t>(dst), w, dtype};
  add_light_rows(plan, alpha, static_cast<const float*>(wide.get()), d, w);
  for (const TouchedRow& hub : plan.hub_rows)
    add_hub_row(plan, hub, alpha, static_cast<const float*>(wide.get()), d, w);
}

}  // namespace

xhal_status_t index_add(void* device, void* plan_handle, float alpha,
                        const xhal_plugin_tensor_t* src, const xhal_plugin_tensor_t* dst) {
  count_launch(device);
  const auto& plan = *static_cast<const IndexPlan*>(plan_handle);
  const int64_t w = row_elements(dst);
  if (plan.count == 0 || w == 0) return XHAL_OK;
  if (dst->dtype == XHAL_DTYPE_F64) add_all<double>(plan, alpha, src, dst, w);
  else if (is_narrow(dst->dtype)) add_all_narrow(plan, alpha, src, dst, w);
  else add_all<float>(plan, alpha, src, dst, w);
  return XHAL_OK;
}

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(XHAL_OP_INDEX_ADD, kFloatDtypes, api.index_add = index_add);

}  // namespace xhal::cpu
