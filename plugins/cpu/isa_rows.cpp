// The per-ISA inner loops of the row ops (softmax, RMSNorm, LayerNorm) and
// the ISA's kernel table (see isa_kernels.h); the data-movement loops are in
// isa_moves.cpp. Built once per ISA with XHAL_CPU_ISA_NS naming the
// namespace; holds no state.
#include <cmath>
#include <cstring>
#include <utility>

#include "isa_kernels.h"
#include "isa_moves.h"
#include "reductions.h"
#include "simd.h"

namespace xhal::cpu::XHAL_CPU_ISA_NS {
namespace {

// ---- softmax (3.3) ---------------------------------------------------------
// One chunk's max, its exponentials e[i] = xhal_exp(x[i] - m) written to e,
// and their lane sums. A chunk whose max is -inf has e = +0 and s = +0.
template <bool kInside>
XHAL_CPU_INLINE MaxSum chunk_exps(const float* x, float* e, float chunk_max) {
  const V mv = splat(chunk_max);
  V acc[kChunkVectors];
  for (int t = 0; t < 8; ++t)
    for (int v = 0; v < kChunkVectors; ++v) {
      const int64_t i = t * 128 + v * kLanes;
      // Lines two chunks (8 KiB) ahead arrive while this one computes: one
      // chunk ahead was measurably too late on one thread, four no better.
      if (i % 16 == 0) __builtin_prefetch(x + 2 * kChunk + i);
      const V d = load(x + i) - mv;
      const V ev = kInside ? exp_v_inside(d) : exp_v(d);
      store(e + i, ev);
      acc[v] = t == 0 ? splat(0.0f) + ev : acc[v] + ev;
    }
  return {chunk_max, tree128(acc)};
}

XHAL_CPU_INLINE MaxSum full_chunk_general(const float* x, float* e);

XHAL_CPU_INLINE MaxSum full_chunk(const float* x, float* e) {
  // One pass of plain max / min plus a running sum that turns NaN or inf
  // when any input is NaN or infinite (or the sum overflows): without NaN
  // maxps gives the bits of nan_max_v. Otherwise the general pass below.
  V m = load(x), lo = m, check = m;
  for (int i = 1; i < kChunk / kLanes; ++i) {
    const V v = load(x + i * kLanes);
    m = max_ps(m, v);
    lo = min_ps(v, lo);
    check = check + v;
  }
  const V zero = check - check;  // +0 in every lane iff check is finite
  uint64_t words[sizeof(V) / 8];
  std::memcpy(words, &zero, sizeof words);
  uint64_t any = 0;
  for (uint64_t w : words) any |= w;
  if (__builtin_expect(any != 0, 0)) return full_chunk_general(x, e);
  const float chunk_max = max_of(m);
  const float chunk_min = -max_of(-lo);
  if (chunk_min - chunk_max >= -87.0f) return chunk_exps<true>(x, e, chunk_max);
  return chunk_exps<false>(x, e, chunk_max);
}

XHAL_CPU_INLINE MaxSum full_chunk_general(const float* x, float* e) {
  V m = load(x), lo = m;
  for (int i = 1; i < kChunk / kLanes; ++i) {
    const V v = load(x + i * kLanes);
    m = nan_max_v(m, v);
    lo = select(v < lo, v, lo);
  }
  const float chunk_max = max_of(m);
  if (chunk_max == -INFINITY) {
    for (int i = 0; i < kChunk; i += kLanes) store(e + i, splat(0.0f));
    return {chunk_max, 0.0f};
  }
  // With no NaN (the max would be NaN) and min - max >= -87, every x - max
  // lies in [-87, 0] (rounding is monotonic): no per-vector range checks.
  const float chunk_min = -max_of(-lo);
  if (chunk_max == chunk_max && chunk_max < INFINITY && chunk_min - chunk_max >= -87.0f)
    return chunk_exps<true>(x, e, chunk_max);
  return chunk_exps<false>(x, e, chunk_max);
}

XHAL_CPU_INLINE MaxSum partial_chunk(const float* x, float* e, int64_t count) {
  float chunk_max = -INFINITY;
  for (int64_t i = 0; i < count; ++i) chunk_max = nan_max(chunk_max, x[i]);
  if (chunk_max == -INFINITY) {
    for (int64_t i = 0; i < count; ++i) e[i] = 0.0f;
    return {chunk_max, 0.0f};
  }
  alignas(64) float lane[128];
  for (int l = 0; l < 128; ++l) lane[l] = 0.0f;
  for (int64_t i = 0; i < count; ++i) {
    e[i] = exp1(x[i] - chunk_max);
    lane[i % 128] = lane[i % 128] + e[i];
  }
  V acc[kChunkVectors];
  for (int v = 0; v < kChunkVectors; ++v) acc[v] = load(lane + v * kLanes);
  return {chunk_max, tree128(acc)};
}

void exp16(const float* x, float* y) {
  for (int i = 0; i < 16; i += kLanes) store(y + i, exp_v(load(x + i)));
}

// scratch: n + ceil(n / 1024) floats (the exponentials, then chunk maxima).
void softmax_row(const float* x, float* y, int64_t n, float* scratch, bool stream) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  float* e = scratch;
  float* chunk_max = scratch + n;
  MaxSumTree tree;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunk;
    const MaxSum stat = begin + kChunk <= n ? full_chunk(x + begin, e + begin)
                                            : partial_chunk(x + begin, e + begin, n - begin);
    chunk_max[c] = stat.m;
    tree.push(stat);
  }
  const MaxSum row = tree.finish();
  const float inv = 1.0f / row.s;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunk;
    const int64_t len = begin + kChunk <= n ? kChunk : n - begin;
    const float scale = exp1(chunk_max[c] - row.m) * inv;
    const V sv = splat(scale);
    const float* ec = e + begin;
    write_row(
        y + begin, len, stream, [&](int64_t i) XHAL_CPU_LAMBDA_INLINE { return load(ec + i) * sv; },
        [&](int64_t i) XHAL_CPU_LAMBDA_INLINE { return ec[i] * scale; });
  }
  if (stream) stream_fence();
}

void softmax_backward_row(const float* y, const float* dy, float* dx, int64_t n, bool stream) {
  const float d = rowsum(
      n, [&](int64_t i) XHAL_CPU_LAMBDA_INLINE { return load(y + i) * load(dy + i); },
      [&](int64_t i) XHAL_CPU_LAMBDA_INLINE { return y[i] * dy[i]; });
  const V dv = splat(d);
  write_row(
      dx, n, stream,
      [&](int64_t i) XHAL_CPU_LAMBDA_INLINE { return load(y + i) * (load(dy + i) - dv); },
      [&](int64_t i) XHAL_CPU_LAMBDA_INLINE { return y[i] * (dy[i] - d); });
  if (stream) stream_fence();
}

// ---- RMSNorm (3.4) -----------------------------------------------------------
float rms_norm_row(const float* x, const float* gamma, float eps, float* y, int64_t n,
                   bool stream) {
  const float sum = rowsum(
      n,
      [&](int64_t i) XHAL_CPU_LAMBDA_INLINE {
        V v = load(x + i);
        return v * v;
      },
      [&](int64_t i) XHAL_CPU_LAMBDA_INLINE { return x[i] * x[i]; });
  const float ms = sum / static_cast<float>(n);
  const float rstd = 1.0f / std::sqrt(ms + eps);
  const V rv = splat(rstd);
  write_row(
      y, n, stream,
      [&](int64_t i) XHAL_CPU_LAMBDA_INLINE { return (load(x + i) * rv) * load(gamma + i); },
      [&](int64_t i) XHAL_CPU_LAMBDA_INLINE { return (x[i] * rstd) * gamma[i]; });
  if (stream) stream_fence();
  return rstd;
}

void rms_norm_backward_row(const float* x, const float* gamma, float rstd, const float* dy,
                           float* dx, float* p, int64_t n, bool stream) {
  const V rv = splat(rstd);
  const float dot = rowsum(
      n,
      [&](int64_t i)
          XHAL_CPU_LAMBDA_INLINE { return (load(dy + i) * load(gamma + i)) * (load(x + i) * rv); },
      [&](int64_t i) XHAL_CPU_LAMBDA_INLINE { return (dy[i] * gamma[i]) * (x[i] * rstd); });
  const float c = dot / static_cast<float>(n);
  const V cv = splat(c);
  // Each element once: dx (returned) and the dgamma partial (side effect).
  write_row(
      dx, n, stream,
      [&](int64_t i) XHAL_CPU_LAMBDA_INLINE {
        const V xh = load(x + i) * rv;
        const V d = load(dy + i);
        const V g = d * load(gamma + i);
        store(p + i, load(p + i) + d * xh);
        return (g - xh * cv) * rv;
      },
      [&](int64_t i) XHAL_CPU_LAMBDA_INLINE {
        const float xh = x[i] * rstd;
        const float d = dy[i];
        const float g = d * gamma[i];
        p[i] = p[i] + d * xh;
        return (g - xh * c) * rstd;
      });
  if (stream) stream_fence();
}

// ---- LayerNorm (3.6) ---------------------------------------------------------
void layer_norm_row(const float* x, const float* gamma, const float* beta, float eps, float* y,
                    int64_t n, float* mean_out, float* rstd_out, bool stream) {
  const float nf = static_cast<float>(n);
  const float mean = rowsum(
                         n, [&](int64_t i) XHAL_CPU_LAMBDA_INLINE { return load(x + i); },
                         [&](int64_t i) XHAL_CPU_LAMBDA_INLINE { return x[i]; }) /
                     nf;
  const V mv = splat(mean);
  const float var = rowsum(
                        n,
                        [&](int64_t i) XHAL_CPU_LAMBDA_INLINE {
                          V d = load(x + i) - mv;
                          return d * d;
                        },
                        [&](int64_t i) XHAL_CPU_LAMBDA_INLINE {
                          float d = x[i] - mean;
                          return d * d;
                        }) /
                    nf;
  const float rstd = 1.0f / std::sqrt(var + eps);
  const V rv = splat(rstd);
  write_row(
      y, n, stream,
      [&](int64_t i) XHAL_CPU_LAMBDA_INLINE {
        return ((load(x + i) - mv) * rv) * load(gamma + i) + load(beta + i);
      },
      [&](int64_t i)
          XHAL_CPU_LAMBDA_INLINE { return ((x[i] - mean) * rstd) * gamma[i] + beta[i]; });
  if (stream) stream_fence();
  *mean_out = mean;
  *rstd_out = rstd;
}

void layer_norm_backward_row(const float* x, const float* gamma, float mean, float rstd,
                             const float* dy, float* dx, float* pg, float* pb, int64_t n,
                             bool stream) {
  const float nf = static_cast<float>(n);
  const V mv = splat(mean), rv = splat(rstd);
  // a = rowsum(g) / n and b = rowsum(g * xh) / n, read in one pass.
  const F2 sums = rowsum2(
      n,
      [&](int64_t i) XHAL_CPU_LAMBDA_INLINE {
        const V g = load(dy + i) * load(gamma + i);
        return V2{g, g * ((load(x + i) - mv) * rv)};
      },
      [&](int64_t i) XHAL_CPU_LAMBDA_INLINE {
        const float g = dy[i] * gamma[i];
        return F2{g, g * ((x[i] - mean) * rstd)};
      });
  const float a = sums.a / nf;
  const float b = sums.b / nf;
  const V av = splat(a), bv = splat(b);
  write_row(
      dx, n, stream,
      [&](int64_t i) XHAL_CPU_LAMBDA_INLINE {
        const V xh = (load(x + i) - mv) * rv;
        const V d = load(dy + i);
        const V g = d * load(gamma + i);
        store(pg + i, load(pg + i) + d * xh);
        store(pb + i, load(pb + i) + d);
        return ((g - av) - xh * bv) * rv;
      },
      [&](int64_t i) XHAL_CPU_LAMBDA_INLINE {
        const float xh = (x[i] - mean) * rstd;
        const float d = dy[i];
        const float g = d * gamma[i];
        pg[i] = pg[i] + d * xh;
        pb[i] = pb[i] + d;
        return ((g - a) - xh * b) * rstd;
      });
  if (stream) stream_fence();
}

}  // namespace

#define XHAL_CPU_STRINGIFY2(x) #x
#define XHAL_CPU_STRINGIFY(x) XHAL_CPU_STRINGIFY2(x)

extern const IsaKernels kTable;
const IsaKernels kTable = {
    &XHAL_CPU_STRINGIFY(XHAL_CPU_ISA_NS)[4],  // drop "isa_"
    exp16,
    softmax_row,
    softmax_backward_row,
    rms_norm_row,
    rms_norm_backward_row,
    layer_norm_row,
    layer_norm_backward_row,
    segsum_chunks,
    add_small_row,
    axpy,
    add_rows,
    copy_row,
    stream_fence,
    transpose_tile_f32,
    sizeof(VT),
};

}  // namespace xhal::cpu::XHAL_CPU_ISA_NS
