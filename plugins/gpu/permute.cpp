// permute (docs/semantics.md "permute"): the core hands over src's shape and
// strides already permuted and merged. A transpose of the last two dims
// (src stride 1 along dim r-2, not along r-1) goes through a 64 x 64
// shared-memory tile; anything else is one thread per dst element walking
// the strides. Any dtype: elements are moved as 1, 2, 4 or 8-byte words.
#include <algorithm>

#include "gpu_plugin.h"

namespace xhal::gpu {
namespace {

// Generic strided gather into contiguous dst (any rank <= 8).
struct Strided {
  int rank;
  int64_t shape[XHAL_MAX_RANK];
  int64_t strides[XHAL_MAX_RANK];
};

template <class T>
__global__ void permute_generic_kernel(const T* __restrict__ src, T* __restrict__ dst, Strided s,
                                       int64_t total) {
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    int64_t rem = it, off = 0;
    for (int k = s.rank - 1; k >= 0; --k) {
      const int64_t i = rem % s.shape[k];
      rem /= s.shape[k];
      off += i * s.strides[k];
    }
    dst[it] = src[off];
  }
}

// Transpose of the last two dims: a TILE x TILE tile per block of
// 256 threads, each thread moving TILE*TILE/256 elements in runs of V
// (vector loads and stores of V*sizeof(T) bytes when the extents, strides
// and pointers allow), all of a thread's loads issued before its shared
// stores so many bytes are in flight; the tile row is padded by one 4-byte
// word against bank conflicts. Tiles are walked by a 1-D grid-stride loop
// with 64-bit offsets (no grid.y limit).
template <class T, int V>
struct alignas(sizeof(T) * V) VecOf {
  T v[V];
};

template <class T, int TILE, int V>
__global__ void __launch_bounds__(256)
    transpose_tile_kernel(const T* __restrict__ src, T* __restrict__ dst, Strided s, int64_t A,
                          int64_t B, int64_t sb, int64_t batches) {
  constexpr int kPad = sizeof(T) >= 4 ? 1 : 4 / static_cast<int>(sizeof(T));
  constexpr int kTpr = TILE / V;                           // threads per tile row
  constexpr int kRpp = 256 / kTpr;                         // tile rows per pass
  constexpr int kPasses = kRpp >= TILE ? 1 : TILE / kRpp;  // passes over the tile
  static_assert(TILE % V == 0 && 256 % kTpr == 0, "tile shape");
  using Vec = VecOf<T, V>;
  __shared__ T tile[TILE][TILE + kPad];
  const int c = (threadIdx.x % kTpr) * V, r = threadIdx.x / kTpr;
  const int64_t ta = (A + TILE - 1) / TILE, tb = (B + TILE - 1) / TILE;
  const int64_t per_batch = ta * tb, tiles = batches * per_batch;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t bt = t / per_batch, rem = t - bt * per_batch;
    const int64_t a0 = (rem / tb) * TILE, b0 = (rem % tb) * TILE;
    int64_t boff = 0, brem = bt;
    for (int k = s.rank - 3; k >= 0; --k) {
      boff += (brem % s.shape[k]) * s.strides[k];
      brem /= s.shape[k];
    }
    // Read: a run of V consecutive a (stride 1 in src) per thread.
    Vec in[kPasses];
    const int64_t a = a0 + c;
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const int k = r + p * kRpp;
      const int64_t b = b0 + k;
      if (k < TILE && b < B) {
        const T* q = src + boff + a + b * sb;
        if (V > 1) {
          if (a < A) in[p] = *reinterpret_cast<const Vec*>(q);
        } else {
#pragma unroll
          for (int e = 0; e < V; ++e)
            if (a + e < A) in[p].v[e] = q[e];
        }
      }
    }
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const int k = r + p * kRpp;
      if (k < TILE)
#pragma unroll
        for (int e = 0; e < V; ++e) tile[k][c + e] = in[p].v[e];
    }
    __syncthreads();
    // Write: a run of V consecutive b (contiguous in dst) per thread.
    const int64_t b = b0 + c;
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const int k = r + p * kRpp;
      const int64_t ad = a0 + k;
      if (k < TILE && ad < A && b < B) {
        Vec o;
#pragma unroll
        for (int e = 0; e < V; ++e) o.v[e] = tile[c + e][k];
        T* q = dst + (bt * A + ad) * B + b;
        if (V > 1) {
          *reinterpret_cast<Vec*>(q) = o;
        } else {
#pragma unroll
          for (int e = 0; e < V; ++e)
            if (b + e < B) q[e] = o.v[e];
        }
      }
    }
    __syncthreads();
  }
}

// 64 x 64 with runs of 4: the fastest on the H200 (docs/gpu.md, "permute").
constexpr int kTile = 64;

template <class T, int TILE, int V>
void launch_transpose(Device* d, const T* src, T* dst, const Strided& s, int64_t A, int64_t B,
                      int64_t sb, int64_t batches) {
  const int64_t tiles = batches * ((A + TILE - 1) / TILE) * ((B + TILE - 1) / TILE);
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(tiles, 1 << 20));
  transpose_tile_kernel<T, TILE, V><<<grid, 256, 0, d->stream>>>(src, dst, s, A, B, sb, batches);
}

// Runs of `vec` elements are aligned and whole when both pointers, the two
// extents and every src stride but the unit one are multiples of vec.
template <class T>
bool transpose_vec_ok(const void* src, const void* dst, const Strided& s, int64_t A, int64_t B,
                      int vec) {
  if (vec <= 1) return true;
  const uintptr_t bytes = sizeof(T) * static_cast<uintptr_t>(vec);
  if (reinterpret_cast<uintptr_t>(src) % bytes || reinterpret_cast<uintptr_t>(dst) % bytes)
    return false;
  if (A % vec || B % vec) return false;
  for (int k = 0; k < s.rank - 2; ++k)
    if (s.strides[k] % vec) return false;
  return s.strides[s.rank - 1] % vec == 0;
}

template <class T>
void launch_permute(Device* d, const void* src, void* dst, const Strided& s, int64_t total) {
  const int r = s.rank;
  if (r >= 2 && s.strides[r - 2] == 1 && s.strides[r - 1] != 1 && s.shape[r - 1] > 1 &&
      s.shape[r - 2] > 1) {
    const int64_t A = s.shape[r - 2], B = s.shape[r - 1];
    const int64_t batches = total / (A * B);
    const int64_t sb = s.strides[r - 1];
    const T* sp = static_cast<const T*>(src);
    T* dp = static_cast<T*>(dst);
    // Vector runs of at most 16 bytes, as long as the runs stay aligned.
    int vec = 4;
    while (vec > 1 && (sizeof(T) * vec > 16 || !transpose_vec_ok<T>(src, dst, s, A, B, vec)))
      vec /= 2;
    if constexpr (sizeof(T) == 4) {
      if (vec == 4) return launch_transpose<T, kTile, 4>(d, sp, dp, s, A, B, sb, batches);
    }
    if constexpr (sizeof(T) >= 4) {
      if (vec >= 2) return launch_transpose<T, kTile, 2>(d, sp, dp, s, A, B, sb, batches);
    }
    return launch_transpose<T, kTile, 1>(d, sp, dp, s, A, B, sb, batches);
  } else {
    permute_generic_kernel<T><<<grid_for(total, 256), 256, 0, d->stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), s, total);
  }
}

}  // namespace

xhal_status_t permute(void* device, const xhal_plugin_tensor_t* src,
                      const xhal_plugin_tensor_t* dst) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  const int64_t total = tensor_elems(dst);
  if (total == 0) return XHAL_OK;
  Strided s{};
  s.rank = static_cast<int>(src->rank);
  for (int k = 0; k < s.rank; ++k) {
    s.shape[k] = src->shape[k];
    s.strides[k] = src->strides[k];
  }
  if (s.rank == 0) {
    s.rank = 1;
    s.shape[0] = 1;
    s.strides[0] = 0;
  }
  const void* sp = tensor_ptr(src);
  void* dp = tensor_ptr(dst);
  switch (dtype_size(src->dtype)) {
    case 1:
      launch_permute<unsigned char>(d, sp, dp, s, total);
      break;
    case 2:
      launch_permute<uint16_t>(d, sp, dp, s, total);
      break;
    case 8:
      launch_permute<uint64_t>(d, sp, dp, s, total);
      break;
    default:
      launch_permute<uint32_t>(d, sp, dp, s, total);
      break;
  }
  return check_launch(d, "permute");
}

}  // namespace xhal::gpu
