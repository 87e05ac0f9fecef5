// Triangular solve over level batches (docs/gpu.md, "Triangular solve
// (HIP, and CUDA with solve.schedule=levels)"): csr_create computes on the
// host the level sets of the pattern (rows sorted by level, each with a
// record of its off-diagonal range and diagonal entry). Consecutive levels
// of at most 2,048 rows (up to 8,192 levels per launch) run in one block
// that walks them with a barrier between levels; a wider level gets its own
// grid launch. Each row is the spec's formula: segsum of the off-diagonal
// terms in ascending column order, then (b - s) / diag.
#include <algorithm>
#include <vector>

#include "sparse_matrix.h"
#include "tree_device.h"

namespace xhal::gpu {
namespace {

constexpr int kMaxBatchLevels = 8192;  // level offsets of a batch in shared memory

// Level schedule of rows [0, rows) of a CSR pattern walked ascending or
// descending; false when an off-diagonal entry lies on the wrong side.
template <class P>
bool build_levels(const P* rp, const P* col, int64_t rows, bool ascending, std::vector<I>& order,
                  std::vector<I>& level_off) {
  std::vector<I> level(rows, 0);
  I max_level = -1;
  for (int64_t s = 0; s < rows; ++s) {
    const int64_t k = ascending ? s : rows - 1 - s;
    I lv = 0;
    for (P e = rp[k]; e < rp[k + 1]; ++e) {
      const int64_t j = col[e];
      if (j == k) continue;
      if ((j > k) == ascending) return false;
      lv = std::max<I>(lv, level[j] + 1);
    }
    level[k] = lv;
    max_level = std::max(max_level, lv);
  }
  const int64_t levels = max_level + 1;
  level_off.assign(levels + 1, 0);
  for (int64_t k = 0; k < rows; ++k) level_off[level[k] + 1]++;
  for (int64_t l = 0; l < levels; ++l) level_off[l + 1] += level_off[l];
  order.assign(rows, 0);
  std::vector<I> pos(level_off.begin(), level_off.end() - 1);
  for (int64_t k = 0; k < rows; ++k) order[pos[level[k]]++] = static_cast<I>(k);
  return true;
}

constexpr int64_t kOneBlockWidth = 2048;  // rows x RHS a single block takes per level

// ---- the level-batch kernels ----
// T: the matrix's value type (float, or double for f64 matrices), P its
// entry-offset type.
template <class T, class P>
struct SolveArgs {
  PatternViewT<T, P> a;
  const I* order;
  const I* level_off;
  ColsT<T> b, x;
  bool ascending, unit;
};

template <class T, class P>
__device__ void solve_row(const SolveArgs<T, P>& s, int64_t k, int64_t c) {
  P rb = s.a.row_ptr[k], re = s.a.row_ptr[k + 1];
  P diag = -1;
  if (s.ascending) {
    if (re > rb && s.a.col[re - 1] == k) diag = --re;
  } else {
    if (re > rb && s.a.col[rb] == k) diag = rb++;
  }
  const T dv = s.unit ? T(1) : (diag >= 0 ? s.a.value(diag) : T(0));
  const T sum = thread_segsum<T>(
      [&](int64_t i) { return xmul(s.a.value(rb + i), s.x.at(s.a.col[rb + i], c)); }, re - rb);
  const T r = xsub(s.b.at(k, c), sum);
  s.x.at(k, c) = s.unit ? r : xdiv(r, dv);
}

// Levels [lbeg, lend): with one block, a barrier separates levels; with a
// grid (one wide level) the launch boundary does.
template <class T, class P>
__global__ void __launch_bounds__(1024) solve_levels_kernel(SolveArgs<T, P> s, int lbeg, int lend) {
  const int64_t nthreads = int64_t{gridDim.x} * blockDim.x;
  const int64_t tid = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  const int64_t k = s.x.k;
  for (int l = lbeg; l < lend; ++l) {
    const int64_t b = s.level_off[l], w = (s.level_off[l + 1] - b) * k;
    for (int64_t it = tid; it < w; it += nthreads) solve_row(s, s.order[b + it / k], it % k);
    __syncthreads();
  }
}

// One right-hand side, a batch of narrow levels in one block. Everything a
// row needs except x (its record, up to kPre entries, b[k], the diagonal)
// does not depend on earlier levels, so it is loaded for level l+1 while
// level l computes; after the barrier only the x loads remain.
constexpr int kPre = 4;
template <class T, class P>
struct Prefetched {
  I k;
  P rb, re;
  T bk, dv;
  I col[kPre];
  T val[kPre];
  bool valid;
};

template <class T, class P>
__device__ __forceinline__ void prefetch(const SolveArgs<T, P>& s, const RowRecT<P>* recs,
                                         int64_t pos, int64_t end, Prefetched<T, P>& it) {
  it.valid = pos < end;
  if (!it.valid) return;
  const RowRecT<P> r = recs[pos];
  it.k = r.k;
  it.rb = r.rb;
  it.re = r.re;
  it.bk = s.b.at(r.k, 0);  // only row k writes x[k] (= b[k] in place)
  it.dv = s.unit ? T(1) : (r.diag >= 0 ? s.a.value(r.diag) : T(0));
#pragma unroll
  for (int q = 0; q < kPre; ++q)
    if (r.rb + q < r.re) {
      it.col[q] = s.a.col[r.rb + q];
      it.val[q] = s.a.value(r.rb + q);
    }
}

template <class T, class P>
__device__ __forceinline__ void finish_row(const SolveArgs<T, P>& s, const Prefetched<T, P>& it) {
  if (!it.valid) return;
  const P m = it.re - it.rb;
  T sum = T(0);
  if (m <= kPre) {
#pragma unroll
    for (int q = 0; q < kPre; ++q)
      if (q < m) sum = xadd(sum, xmul(it.val[q], s.x.at(it.col[q], 0)));
  } else {
    sum = thread_segsum<T>(
        [&](int64_t i) { return xmul(s.a.value(it.rb + i), s.x.at(s.a.col[it.rb + i], 0)); }, m);
  }
  const T r = xsub(it.bk, sum);
  s.x.at(it.k, 0) = s.unit ? r : xdiv(r, it.dv);
}

template <class T, class P>
__global__ void __launch_bounds__(1024)
    solve_batch_kernel(SolveArgs<T, P> s, const RowRecT<P>* recs, int lbeg, int lend) {
  __shared__ I off[kMaxBatchLevels + 1];
  for (int i = threadIdx.x; i <= lend - lbeg; i += blockDim.x) off[i] = s.level_off[lbeg + i];
  __syncthreads();
  Prefetched<T, P> cur[2], nxt[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) prefetch(s, recs, off[0] + threadIdx.x + j * 1024, off[1], cur[j]);
  for (int l = 0; l < lend - lbeg; ++l) {
    if (l + 1 < lend - lbeg) {
#pragma unroll
      for (int j = 0; j < 2; ++j)
        prefetch(s, recs, off[l + 1] + threadIdx.x + j * 1024, off[l + 2], nxt[j]);
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) finish_row(s, cur[j]);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 2; ++j) cur[j] = nxt[j];
  }
}

// Transposed values in the transposed pattern's order (values may change
// between solves, so this runs per solve).
template <class T, class P>
__global__ void gather_values_kernel(const T* v, const P* perm, int64_t nnz, T* out) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < nnz;
       e += int64_t{gridDim.x} * blockDim.x)
    out[e] = v[perm[e]];
}

}  // namespace

template <class P>
xhal_status_t build_level_schedule(Device* d, Matrix* m, const P* rp, const P* col, int64_t rows,
                                   bool ascending, LevelSchedule* s) {
  std::vector<I> order, off;
  if (!build_levels(rp, col, rows, ascending, order, off)) return XHAL_OK;  // not this triangle
  s->built = true;
  const int levels = static_cast<int>(off.size()) - 1;
  for (int l = 0; l < levels;) {
    const int64_t w = off[l + 1] - off[l];
    if (w > kOneBlockWidth) {
      s->batches.push_back({l, l + 1, false, w});
      ++l;
      continue;
    }
    int e = l;
    int64_t widest = 0;
    while (e < levels && e - l < kMaxBatchLevels && off[e + 1] - off[e] <= kOneBlockWidth) {
      widest = std::max<int64_t>(widest, off[e + 1] - off[e]);
      ++e;
    }
    s->batches.push_back({l, e, true, widest});
    l = e;
  }
  std::vector<RowRecT<P>> recs(rows);
  for (int64_t q = 0; q < rows; ++q) {
    const I k = order[q];
    P rb = rp[k], re = rp[k + 1], diag = -1;
    if (ascending) {
      if (re > rb && col[re - 1] == k) diag = --re;
    } else {
      if (re > rb && col[rb] == k) diag = rb++;
    }
    recs[q] = {k, rb, re, diag};
  }
  xhal_status_t st = up(d, m, order, &s->order);
  if (st == XHAL_OK) st = up(d, m, off, &s->level_off);
  RowRecT<P>* up_recs = nullptr;
  if (st == XHAL_OK) st = up(d, m, recs, &up_recs);
  s->recs = up_recs;
  return st;
}
template xhal_status_t build_level_schedule<I>(Device*, Matrix*, const I*, const I*, int64_t, bool,
                                               LevelSchedule*);
template xhal_status_t build_level_schedule<int64_t>(Device*, Matrix*, const int64_t*,
                                                     const int64_t*, int64_t, bool, LevelSchedule*);

template <class T, class P>
xhal_status_t level_solve(Device* d, const Matrix* m, const Pattern& p, const LevelSchedule& sc,
                          ColsT<T> b, ColsT<T> x, bool ascending, bool unit, bool transposed,
                          int* launches) {
  SolveArgs<T, P> s{view<T, P>(p, m), sc.order, sc.level_off, b, x, ascending, unit};
  const auto* recs = static_cast<const RowRecT<P>*>(sc.recs);
  if (x.k == 1 && transposed && m->nnz) {
    // Let the one-block batches read A^T's values without the perm hop.
    void* tv = nullptr;
    xhal_status_t st = scratch(d, sizeof(T) * m->nnz, &tv);
    if (st != XHAL_OK) return st;
    gather_values_kernel<T, P><<<grid_for(m->nnz, 256), 256, 0, d->stream>>>(
        s.a.values, s.a.perm, m->nnz, static_cast<T*>(tv));
    ++*launches;
    s.a.values = static_cast<const T*>(tv);
    s.a.perm = nullptr;
  }
  for (const auto& bt : sc.batches) {
    if (bt.one_block && x.k == 1) {
      solve_batch_kernel<T, P><<<1, 1024, 0, d->stream>>>(s, recs, bt.begin, bt.end);
    } else if (bt.one_block) {
      solve_levels_kernel<T, P><<<1, 1024, 0, d->stream>>>(s, bt.begin, bt.end);
    } else {
      solve_levels_kernel<T, P>
          <<<grid_for(bt.width * x.k, 256), 256, 0, d->stream>>>(s, bt.begin, bt.end);
    }
    ++*launches;
  }
  return XHAL_OK;
}
#define XHAL_LEVEL_SOLVE(T, P)                                                                   \
  template xhal_status_t level_solve<T, P>(Device*, const Matrix*, const Pattern&,               \
                                           const LevelSchedule&, ColsT<T>, ColsT<T>, bool, bool, \
                                           bool, int*);
XHAL_LEVEL_SOLVE(float, I)
XHAL_LEVEL_SOLVE(double, I)
XHAL_LEVEL_SOLVE(float, int64_t)
XHAL_LEVEL_SOLVE(double, int64_t)
#undef XHAL_LEVEL_SOLVE

}  // namespace xhal::gpu
