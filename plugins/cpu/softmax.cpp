// Softmax over the last dim (docs/semantics.md 3.3): per 1024-chunk max and
// lane sums of xhal_exp, chunks combined by the (m, s) tree, then one more
// pass writing exp(x - M) * (1 / S).
#include <cmath>

#include "dense_ops.h"
#include "reductions.h"
#include "row_ops.h"

namespace xhal::cpu {
namespace {

[[gnu::always_inline]] inline MaxSum full_chunk_stats(const float* e) {
  V m = load(e);
  for (int i = 1; i < kChunk / kLanes; ++i) m = nan_max_v(m, load(e + i * kLanes));
  const float chunk_max = max_of(m);
  if (chunk_max == -INFINITY) return {chunk_max, 0.0f};
  const V mv = splat(chunk_max);
  V acc[kChunkVectors];
  for (int v = 0; v < kChunkVectors; ++v) acc[v] = splat(0.0f) + exp_v(load(e + v * kLanes) - mv);
  for (int t = 1; t < 8; ++t)
    for (int v = 0; v < kChunkVectors; ++v)
      acc[v] = acc[v] + exp_v(load(e + t * 128 + v * kLanes) - mv);
  return {chunk_max, tree128(acc)};
}

[[gnu::always_inline]] inline MaxSum partial_chunk_stats(const float* e, int64_t count) {
  float chunk_max = -INFINITY;
  for (int64_t i = 0; i < count; ++i) chunk_max = nan_max(chunk_max, e[i]);
  if (chunk_max == -INFINITY) return {chunk_max, 0.0f};
  alignas(64) float lane[128];
  for (int l = 0; l < 128; ++l) lane[l] = 0.0f;
  for (int64_t i = 0; i < count; ++i) lane[i % 128] = lane[i % 128] + canonical_exp(e[i] - chunk_max);
  V acc[kChunkVectors];
  for (int v = 0; v < kChunkVectors; ++v) acc[v] = load(lane + v * kLanes);
  return {chunk_max, tree128(acc)};
}

XHAL_CPU_CLONES
void softmax_row(const float* x, float* y, int64_t n) {
  MaxSumTree tree;
  const int64_t full = n / kChunk;
  for (int64_t c = 0; c < full; ++c) tree.push(full_chunk_stats(x + c * kChunk));
  if (full * kChunk < n) tree.push(partial_chunk_stats(x + full * kChunk, n - full * kChunk));
  const MaxSum row = tree.finish();
  const float inv = 1.0f / row.s;
  const V mv = splat(row.m), iv = splat(inv);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(y + i, exp_v(load(x + i) - mv) * iv);
  for (; i < n; ++i) y[i] = canonical_exp(x[i] - row.m) * inv;
}

XHAL_CPU_CLONES
void softmax_backward_row(const float* y, const float* dy, float* dx, int64_t n) {
  const float d = rowsum(
      n, [&](int64_t i) { return load(y + i) * load(dy + i); },
      [&](int64_t i) { return y[i] * dy[i]; });
  const V dv = splat(d);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(dx + i, load(y + i) * (load(dy + i) - dv));
  for (; i < n; ++i) dx[i] = y[i] * (dy[i] - d);
}

}  // namespace

xhal_status_t softmax_forward(void* device, const xhal_plugin_tensor_t* x,
                              const xhal_plugin_tensor_t* y) {
  count_launch(device);
  const RowShape s = row_shape(x);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;  // empty: writes nothing
  const float* xp = tensor_data<float>(x);
  float* yp = tensor_data<float>(y);
#pragma omp parallel for schedule(dynamic, 4) if (s.rows * s.n > 8192)
  for (int64_t r = 0; r < s.rows; ++r) softmax_row(xp + r * s.n, yp + r * s.n, s.n);
  return XHAL_OK;
}

xhal_status_t softmax_backward(void* device, const xhal_plugin_tensor_t* y,
                               const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx) {
  count_launch(device);
  const RowShape s = row_shape(y);
  if (s.rows == 0 || s.n == 0) return XHAL_OK;  // empty: writes nothing
  const float* yp = tensor_data<float>(y);
  const float* dyp = tensor_data<float>(dy);
  float* dxp = tensor_data<float>(dx);
#pragma omp parallel for schedule(dynamic, 4) if (s.rows * s.n > 8192)
  for (int64_t r = 0; r < s.rows; ++r)
    softmax_backward_row(yp + r * s.n, dyp + r * s.n, dxp + r * s.n, s.n);
  return XHAL_OK;
}

}  // namespace xhal::cpu
