// Strided gather into a contiguous dst (the core has applied the permutation
// to src's shape and strides). Three paths, all with 64-bit indexing:
//  - src's innermost stride is 1: contiguous runs, one memcpy each;
//  - another dim has stride 1 (a transpose of that dim with the last):
//    cache-blocked tiles so both sides stream whole cache lines;
//  - otherwise: element by element along the last dim.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "dense_ops.h"
#include "index_plan.h"
#include "isa_kernels.h"
#include "op_registry.h"

namespace xhal::cpu {
namespace {

struct Layout {
  int rank = 0;
  int64_t shape[XHAL_MAX_RANK] = {};
  int64_t src_stride[XHAL_MAX_RANK] = {};  // elements
  int64_t dst_stride[XHAL_MAX_RANK] = {};  // elements, row-major
};

// Offsets of the outer multi-index `o` over dims `dims` (outermost first).
struct Outer {
  int count = 0;
  int dims[XHAL_MAX_RANK] = {};
  int64_t total = 1;
  void decode(const Layout& l, int64_t o, int64_t* src_off, int64_t* dst_off) const {
    int64_t s = 0, d = 0;
    for (int k = count - 1; k >= 0; --k) {
      const int dim = dims[k];
      const int64_t i = o % l.shape[dim];
      o /= l.shape[dim];
      s += i * l.src_stride[dim];
      d += i * l.dst_stride[dim];
    }
    *src_off = s;
    *dst_off = d;
  }
};

void copy_runs(const Layout& l, const std::byte* src, std::byte* dst, uint64_t elem) {
  Outer outer;
  for (int k = 0; k < l.rank - 1; ++k) {
    outer.dims[outer.count++] = k;
    outer.total *= l.shape[k];
  }
  const uint64_t run = static_cast<uint64_t>(l.shape[l.rank - 1]) * elem;
#pragma omp parallel for schedule(static) if (outer.total * run > (1 << 18))
  for (int64_t o = 0; o < outer.total; ++o) {
    int64_t s, d;
    outer.decode(l, o, &s, &d);
    std::memcpy(dst + d * elem, src + s * elem, run);
  }
}

// dst[a * dst_a + b] = src[a + b * src_b] over a tile; E-byte elements.
template <size_t E>
void transpose_tile(const std::byte* src, std::byte* dst, int64_t src_b, int64_t dst_a,
                    int64_t a_len, int64_t b_len) {
  for (int64_t a = 0; a < a_len; ++a) {
    std::byte* out = dst + a * dst_a * E;
    const std::byte* in = src + a * E;
    for (int64_t b = 0; b < b_len; ++b) std::memcpy(out + b * E, in + b * src_b * E, E);
  }
}

template <size_t E>
void transpose_planes(const Layout& l, int k, const std::byte* src, std::byte* dst) {
  constexpr int64_t kTileA = 128, kTileB = 64;
  const int last = l.rank - 1;
  Outer outer;
  for (int d = 0; d < last; ++d)
    if (d != k) {
      outer.dims[outer.count++] = d;
      outer.total *= l.shape[d];
    }
  const int64_t a_len = l.shape[k], b_len = l.shape[last];
  const int64_t a_tiles = (a_len + kTileA - 1) / kTileA, b_tiles = (b_len + kTileB - 1) / kTileB;
  const int64_t tiles = outer.total * a_tiles * b_tiles;
  const int64_t src_b = l.src_stride[last], dst_a = l.dst_stride[k];
  const auto tile_f32 = isa().transpose_tile_f32;
  // Streaming stores pay off past the caches and need aligned rows.
  const uint64_t align = isa().transpose_alignment;
  bool stream = E == 4 && outer.total * a_len * b_len * E >= kStreamBytes &&
                reinterpret_cast<uintptr_t>(dst) % align == 0 &&
                (static_cast<uint64_t>(dst_a) * E) % align == 0;
  for (int i = 0; i < outer.count; ++i)
    stream = stream && (static_cast<uint64_t>(l.dst_stride[outer.dims[i]]) * E) % align == 0;
#pragma omp parallel if (tiles > 4)
  {
// Dynamic: a thread that loses its core for a while does not hold the rest.
#pragma omp for schedule(dynamic, 8)
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t bt = t % b_tiles;
      const int64_t at = (t / b_tiles) % a_tiles;
      const int64_t o = t / (b_tiles * a_tiles);
      int64_t s, d;
      outer.decode(l, o, &s, &d);
      const int64_t a0 = at * kTileA, b0 = bt * kTileB;
      s += a0 * l.src_stride[k] + b0 * src_b;
      d += a0 * dst_a + b0;
      const int64_t an = std::min(kTileA, a_len - a0), bn = std::min(kTileB, b_len - b0);
      if constexpr (E == 4) {
        tile_f32(reinterpret_cast<const float*>(src + s * E), reinterpret_cast<float*>(dst + d * E),
                 src_b, dst_a, an, bn, stream);
      } else {
        transpose_tile<E>(src + s * E, dst + d * E, src_b, dst_a, an, bn);
      }
    }
    if (stream) isa().stream_fence();
  }
}

template <size_t E>
void gather_elements(const Layout& l, const std::byte* src, std::byte* dst) {
  Outer outer;
  for (int k = 0; k < l.rank - 1; ++k) {
    outer.dims[outer.count++] = k;
    outer.total *= l.shape[k];
  }
  const int last = l.rank - 1;
  const int64_t n = l.shape[last], step = l.src_stride[last];
#pragma omp parallel for schedule(static) if (outer.total * n > (1 << 16))
  for (int64_t o = 0; o < outer.total; ++o) {
    int64_t s, d;
    outer.decode(l, o, &s, &d);
    for (int64_t i = 0; i < n; ++i) std::memcpy(dst + (d + i) * E, src + (s + i * step) * E, E);
  }
}

template <size_t E>
void permute_sized(const Layout& l, const std::byte* src, std::byte* dst) {
  const int last = l.rank - 1;
  if (l.src_stride[last] == 1) return copy_runs(l, src, dst, E);
  // The dim that is contiguous in src (largest extent if several).
  int k = -1;
  for (int d = 0; d < last; ++d)
    if (l.src_stride[d] == 1 && l.shape[d] > 1 && (k < 0 || l.shape[d] > l.shape[k])) k = d;
  if (k >= 0) return transpose_planes<E>(l, k, src, dst);
  gather_elements<E>(l, src, dst);
}

}  // namespace

xhal_status_t permute(void* device, const xhal_plugin_tensor_t* src,
                      const xhal_plugin_tensor_t* dst) {
  count_launch(device);
  Layout l;
  // Drop size-1 dims (their index is always 0); a rank-0 tensor is one element.
  int64_t total = 1;
  for (uint32_t d = 0; d < src->rank; ++d) {
    total *= src->shape[d];
    if (src->shape[d] == 1) continue;
    l.shape[l.rank] = src->shape[d];
    l.src_stride[l.rank] = src->strides[d];
    ++l.rank;
  }
  if (total == 0) return XHAL_OK;
  if (l.rank == 0) {
    l.rank = 1;
    l.shape[0] = 1;
    l.src_stride[0] = 1;
  }
  int64_t stride = 1;
  for (int d = l.rank - 1; d >= 0; --d) {
    l.dst_stride[d] = stride;
    stride *= l.shape[d];
  }
  const std::byte* s = tensor_data<const std::byte>(src);
  std::byte* o = tensor_data<std::byte>(dst);
  switch (dtype_size(src->dtype)) {
    case 1:
      permute_sized<1>(l, s, o);
      break;
    case 2:
      permute_sized<2>(l, s, o);
      break;
    case 4:
      permute_sized<4>(l, s, o);
      break;
    case 8:
      permute_sized<8>(l, s, o);
      break;
    default:
      set_error("cpu plugin: permute: unsupported element size");
      return XHAL_UNSUPPORTED;
  }
  return XHAL_OK;
}

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(XHAL_OP_PERMUTE, kEveryDtype, api.permute = permute);

}  // namespace xhal::cpu
