// Sparse CSR ops on the GPU (docs/semantics.md "Sparse (CSR)"): the pattern,
// its transpose and the triangular-solve schedules are built and uploaded
// once in csr_create; no op moves host memory.
//   spmv/spmm: one thread per (row, column of X) for rows of <= 32 entries
//     (a plain left-to-right sum), one warp per (row, column) for longer rows
//     (chunks of 32 + tree).
//   csr_solve: on CUDA the sync-free launch of solve_syncfree.cpp (schedule
//     built on the device); on HIP, or with XHAL_CUDA_SOLVE=levels at
//     creation, rows grouped by level on the host: runs of narrow levels go
//     to one block that walks them with a barrier between levels, wide
//     levels get a grid.
//   csr_solve_backward: the transposed solve, then ga per entry on device.
//   spgemm_numeric: one thread per entry of C, sequential over k ascending.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "gpu_plugin.h"
#include "solve_syncfree.h"
#include "sparse_views.h"
#include "tree_device.h"

namespace xhal::gpu {
namespace {

constexpr int kMaxBatchLevels = 8192;  // level offsets of a batch in shared memory

struct Schedule {
  bool built = false;
  RowRec* recs = nullptr;  // [rows] in level order
  I* order = nullptr;    // rows sorted by level
  I* level_off = nullptr;  // [levels + 1] into order
  struct Batch {
    int begin, end;  // levels [begin, end)
    bool one_block;
    int64_t width;   // widest level of the batch
  };
  std::vector<Batch> batches;
};

struct Pattern {
  I* row_ptr = nullptr;
  I* col = nullptr;
  I* perm = nullptr;  // transposed: index into A's values; null for A
  I* long_rows = nullptr;
  int64_t num_long = 0;
  int64_t rows = 0;
  Schedule asc, desc;           // host-built level batches
  SyncFreeSchedule sf_asc, sf_desc;  // device-built (CUDA)
};

struct Matrix {
  int64_t rows = 0, cols = 0, nnz = 0;
  Pattern a, at;
  I* row_idx = nullptr;
  SyncFreeState sf;
  Buffer* values = nullptr;
  std::vector<void*> allocations;
};

template <class T>
xhal_status_t up(Device* d, Matrix* m, const std::vector<T>& v, T** out) {
  void* p = nullptr;
  xhal_status_t st = upload(d, v.data(), v.size() * sizeof(T), &p);
  if (p) m->allocations.push_back(p);
  *out = static_cast<T*>(p);
  return st;
}

void destroy(Matrix* m) {
  for (void* p : m->allocations) gpuFree(p);
  delete m;
}

// Level schedule of rows [0, rows) of a CSR pattern walked ascending or
// descending; false when an off-diagonal entry lies on the wrong side.
bool build_levels(const std::vector<I>& rp, const std::vector<I>& col, int64_t rows,
                  bool ascending, std::vector<I>& order, std::vector<I>& level_off) {
  std::vector<I> level(rows, 0);
  I max_level = -1;
  for (int64_t s = 0; s < rows; ++s) {
    const int64_t k = ascending ? s : rows - 1 - s;
    I lv = 0;
    for (I e = rp[k]; e < rp[k + 1]; ++e) {
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

xhal_status_t build_schedule(Device* d, Matrix* m, const std::vector<I>& rp,
                             const std::vector<I>& col, int64_t rows, bool ascending,
                             Schedule* s) {
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
  std::vector<RowRec> recs(rows);
  for (int64_t q = 0; q < rows; ++q) {
    const I k = order[q];
    I rb = rp[k], re = rp[k + 1], diag = -1;
    if (ascending) {
      if (re > rb && col[re - 1] == k) diag = --re;
    } else {
      if (re > rb && col[rb] == k) diag = rb++;
    }
    recs[q] = {k, rb, re, diag};
  }
  xhal_status_t st = up(d, m, order, &s->order);
  if (st == XHAL_OK) st = up(d, m, off, &s->level_off);
  if (st == XHAL_OK) st = up(d, m, recs, &s->recs);
  return st;
}

xhal_status_t build_pattern(Device* d, Matrix* m, const std::vector<I>& rp,
                            const std::vector<I>& col, const std::vector<I>* perm, int64_t rows,
                            bool host_levels, Pattern* p) {
  p->rows = rows;
  std::vector<I> long_rows;
  for (int64_t r = 0; r < rows; ++r)
    if (rp[r + 1] - rp[r] > 32) long_rows.push_back(static_cast<I>(r));
  p->num_long = static_cast<int64_t>(long_rows.size());
  xhal_status_t st = up(d, m, rp, &p->row_ptr);
  if (st == XHAL_OK) st = up(d, m, col, &p->col);
  if (st == XHAL_OK && perm) st = up(d, m, *perm, &p->perm);
  if (st == XHAL_OK) st = up(d, m, long_rows, &p->long_rows);
  if (st == XHAL_OK && host_levels) st = build_schedule(d, m, rp, col, rows, true, &p->asc);
  if (st == XHAL_OK && host_levels) st = build_schedule(d, m, rp, col, rows, false, &p->desc);
  return st;
}

// Which triangles a square pattern lies in (columns sorted, so the ends of a
// row decide), and its rows of more than 32 off-diagonal entries.
struct Triangles {
  bool lower = true, upper = true;
  int64_t long_rows = 0, max_terms = 0;
};
Triangles triangles(const std::vector<I>& rp, const std::vector<I>& col) {
  Triangles t;
  const int64_t rows = static_cast<int64_t>(rp.size()) - 1;
  for (int64_t k = 0; k < rows; ++k) {
    const I rb = rp[k], re = rp[k + 1];
    if (re == rb) continue;
    t.lower = t.lower && col[re - 1] <= k;
    t.upper = t.upper && col[rb] >= k;
    const bool diag = col[re - 1] == k || col[rb] == k;
    const int64_t terms = re - rb - (diag ? 1 : 0);
    t.long_rows += terms > 32;
    t.max_terms = std::max(t.max_terms, terms);
  }
  return t;
}

PatternView view(const Pattern& p, const Matrix* m) {
  return {p.row_ptr, p.col, p.perm, static_cast<const float*>(m->values->ptr)};
}

// ---- spmv / spmm ----
__device__ __forceinline__ float finish(float alpha, float t, float beta, float y) {
  return beta == 0.0f ? xmul(alpha, t) : xadd(xmul(alpha, t), xmul(beta, y));
}

__global__ void spmm_short_kernel(PatternView a, int64_t rows, Cols x, Cols y, float alpha,
                                  float beta) {
  const int64_t total = rows * y.k;
  for (int64_t it = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; it < total;
       it += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = it / y.k, c = it - r * y.k;
    const I b = a.row_ptr[r], e = a.row_ptr[r + 1];
    if (e - b > 32) continue;  // the long-row kernel does it
    float s = 0.0f;
#pragma unroll 4
    for (I k = b; k < e; ++k) s = xadd(s, xmul(a.value(k), x.at(a.col[k], c)));
    y.at(r, c) = finish(alpha, s, beta, beta == 0.0f ? 0.0f : y.at(r, c));
  }
}

__global__ void spmm_long_kernel(PatternView a, const I* long_rows, int64_t num, Cols x, Cols y,
                                 float alpha, float beta) {
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  const int64_t total = num * y.k;
  for (int64_t it = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) / 32; it < total; it += warps) {
    const int64_t r = long_rows[it / y.k], c = it % y.k;
    const I b = a.row_ptr[r];
    const float s =
        warp_segsum([&](int64_t k) { return xmul(a.value(b + k), x.at(a.col[b + k], c)); },
                    a.row_ptr[r + 1] - b);
    if ((threadIdx.x & 31) == 0) y.at(r, c) = finish(alpha, s, beta, beta == 0.0f ? 0.0f : y.at(r, c));
  }
}

// ---- triangular solve ----
struct SolveArgs {
  PatternView a;
  const I* order;
  const I* level_off;
  Cols b, x;
  bool ascending, unit;
};

__device__ void solve_row(const SolveArgs& s, int64_t k, int64_t c) {
  I rb = s.a.row_ptr[k], re = s.a.row_ptr[k + 1];
  I diag = -1;
  if (s.ascending) {
    if (re > rb && s.a.col[re - 1] == k) diag = --re;
  } else {
    if (re > rb && s.a.col[rb] == k) diag = rb++;
  }
  const float dv = s.unit ? 1.0f : (diag >= 0 ? s.a.value(diag) : 0.0f);
  const float sum = thread_segsum(
      [&](int64_t i) { return xmul(s.a.value(rb + i), s.x.at(s.a.col[rb + i], c)); }, re - rb);
  const float r = xsub(s.b.at(k, c), sum);
  s.x.at(k, c) = s.unit ? r : xdiv(r, dv);
}

// Levels [lbeg, lend): with one block, a barrier separates levels; with a
// grid (one wide level) the launch boundary does.
__global__ void __launch_bounds__(1024) solve_levels_kernel(SolveArgs s, int lbeg, int lend) {
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
struct Prefetched {
  I k, rb, re;
  float bk, dv;
  I col[kPre];
  float val[kPre];
  bool valid;
};

__device__ __forceinline__ void prefetch(const SolveArgs& s, const RowRec* recs, int64_t pos,
                                         int64_t end, Prefetched& it) {
  it.valid = pos < end;
  if (!it.valid) return;
  const RowRec r = recs[pos];
  it.k = r.k;
  it.rb = r.rb;
  it.re = r.re;
  it.bk = s.b.at(r.k, 0);  // only row k writes x[k] (= b[k] in place)
  it.dv = s.unit ? 1.0f : (r.diag >= 0 ? s.a.value(r.diag) : 0.0f);
#pragma unroll
  for (int q = 0; q < kPre; ++q)
    if (r.rb + q < r.re) {
      it.col[q] = s.a.col[r.rb + q];
      it.val[q] = s.a.value(r.rb + q);
    }
}

__device__ __forceinline__ void finish_row(const SolveArgs& s, const Prefetched& it) {
  if (!it.valid) return;
  const I m = it.re - it.rb;
  float sum = 0.0f;
  if (m <= kPre) {
#pragma unroll
    for (int q = 0; q < kPre; ++q)
      if (q < m) sum = xadd(sum, xmul(it.val[q], s.x.at(it.col[q], 0)));
  } else {
    sum = thread_segsum(
        [&](int64_t i) { return xmul(s.a.value(it.rb + i), s.x.at(s.a.col[it.rb + i], 0)); }, m);
  }
  const float r = xsub(it.bk, sum);
  s.x.at(it.k, 0) = s.unit ? r : xdiv(r, it.dv);
}

__global__ void __launch_bounds__(1024)
solve_batch_kernel(SolveArgs s, const RowRec* recs, int lbeg, int lend) {
  __shared__ I off[kMaxBatchLevels + 1];
  for (int i = threadIdx.x; i <= lend - lbeg; i += blockDim.x) off[i] = s.level_off[lbeg + i];
  __syncthreads();
  Prefetched cur[2], nxt[2];
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
__global__ void gather_values_kernel(const float* v, const I* perm, int64_t nnz, float* out) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < nnz;
       e += int64_t{gridDim.x} * blockDim.x)
    out[e] = v[perm[e]];
}


xhal_status_t run_solve(Device* d, const Matrix* m, xhal_transpose_t trans,
                        xhal_triangle_t triangle, xhal_diagonal_t diagonal, Cols b, Cols x,
                        const char* op, int* launches) {
  const bool transposed = trans == XHAL_TRANSPOSE;
  const bool ascending = (triangle == XHAL_TRIANGLE_LOWER) != transposed;
  const Pattern& p = transposed ? m->at : m->a;
  const Schedule& sc = ascending ? p.asc : p.desc;
#if !defined(XHAL_GPU_HIP)
  const SyncFreeSchedule& sf = ascending ? p.sf_asc : p.sf_desc;
  const bool use_syncfree = sf.built && !sc.built;
#else
  const bool use_syncfree = false;
#endif
  if (!sc.built && !use_syncfree)
    return fail(XHAL_INVALID_STRUCTURE,
                "%s plugin: %s: argument 'triangle' is %s but the %lld x %lld pattern does not "
                "lie in that triangle",
                XHAL_GPU_BACKEND_NAME, op, triangle == XHAL_TRIANGLE_LOWER ? "lower" : "upper",
                static_cast<long long>(m->rows), static_cast<long long>(m->cols));
  if (x.n == 0 || x.k == 0) return XHAL_OK;
  SolveArgs s{view(p, m), sc.order, sc.level_off, b, x, ascending,
              diagonal == XHAL_DIAGONAL_UNIT};
#if !defined(XHAL_GPU_HIP)
  if (use_syncfree)
    return syncfree_solve(d, &const_cast<Matrix*>(m)->sf, sf, s.a, b, x, s.unit, launches);
#endif
  if (x.k == 1 && transposed && m->nnz) {
    // Let the one-block batches read A^T's values without the perm hop.
    void* tv = nullptr;
    xhal_status_t st = scratch(d, sizeof(float) * m->nnz, &tv);
    if (st != XHAL_OK) return st;
    gather_values_kernel<<<grid_for(m->nnz, 256), 256, 0, d->stream>>>(
        s.a.values, p.perm, m->nnz, static_cast<float*>(tv));
    ++*launches;
    s.a.values = static_cast<const float*>(tv);
    s.a.perm = nullptr;
  }
  for (const auto& bt : sc.batches) {
    if (bt.one_block && x.k == 1) {
      solve_batch_kernel<<<1, 1024, 0, d->stream>>>(s, sc.recs, bt.begin, bt.end);
    } else if (bt.one_block) {
      solve_levels_kernel<<<1, 1024, 0, d->stream>>>(s, bt.begin, bt.end);
    } else {
      solve_levels_kernel<<<grid_for(bt.width * x.k, 256), 256, 0, d->stream>>>(s, bt.begin,
                                                                                bt.end);
    }
    ++*launches;
  }
  return XHAL_OK;
}

__global__ void solve_grad_kernel(const I* row_idx, const I* col, int64_t nnz, bool transposed,
                                  bool unit, Cols x, Cols gb, float* ga, int64_t ga_stride) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < nnz;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = row_idx[e], cidx = col[e];
    float g = 0.0f;
    if (!(unit && r == cidx)) {
      const int64_t i = transposed ? cidx : r, j = transposed ? r : cidx;
      g = -thread_segsum([&](int64_t c) { return xmul(gb.at(i, c), x.at(j, c)); }, x.k);
    }
    ga[e * ga_stride] = g;
  }
}

// ---- spgemm ----
__global__ void spgemm_kernel(PatternView a, PatternView b, const I* c_row, const I* c_col,
                              int64_t nnz, float* c_values) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < nnz;
       e += int64_t{gridDim.x} * blockDim.x) {
    const I i = c_row[e], j = c_col[e];
    float s = 0.0f;
    for (I ea = a.row_ptr[i]; ea < a.row_ptr[i + 1]; ++ea) {
      const I k = a.col[ea];
      I lo = b.row_ptr[k], hi = b.row_ptr[k + 1];
      while (lo < hi) {  // B's row k is sorted by column
        const I mid = lo + (hi - lo) / 2;
        if (b.col[mid] < j) lo = mid + 1;
        else hi = mid;
      }
      if (lo < b.row_ptr[k + 1] && b.col[lo] == j) s = xadd(s, xmul(a.values[ea], b.values[lo]));
    }
    c_values[e] = s;
  }
}

Device* begin(void* device) {
  auto* d = static_cast<Device*>(device);
  use_device(d->ordinal);
  return d;
}

}  // namespace

xhal_status_t csr_create(void* device, const xhal_plugin_csr_desc_t* desc, void** out_matrix) {
  Device* d = begin(device);
  if (desc->nnz >= INT_MAX || desc->rows >= INT_MAX || desc->cols >= INT_MAX)
    return fail(XHAL_UNSUPPORTED,
                "%s plugin: csr_create: %lld x %lld with %lld entries exceeds 32-bit indices",
                XHAL_GPU_BACKEND_NAME, static_cast<long long>(desc->rows),
                static_cast<long long>(desc->cols), static_cast<long long>(desc->nnz));
  auto* m = new Matrix;
  m->rows = desc->rows;
  m->cols = desc->cols;
  m->nnz = desc->nnz;
  m->values = static_cast<Buffer*>(desc->values_buffer);
  // XHAL_CUDA_TRACE=1 prints where creation time goes (docs/performance.md).
  const bool trace = std::getenv("XHAL_CUDA_TRACE") != nullptr;
  auto t0 = std::chrono::steady_clock::now();
  auto lap = [&](const char* what) {
    if (!trace) return;
    const auto t = std::chrono::steady_clock::now();
    std::fprintf(stderr, "[xhal-%s] csr_create %s: %.2f ms\n", XHAL_GPU_BACKEND_NAME, what,
                 std::chrono::duration<double, std::milli>(t - t0).count());
    t0 = t;
  };
  // The six index arrays narrow independently: one thread each.
  std::vector<I> rp, col, ri, trp, tcol, tperm;
  {
    auto narrow = [](const int64_t* p, int64_t n, std::vector<I>* out) { out->assign(p, p + n); };
    std::thread t[] = {
        std::thread(narrow, desc->row_ptr, desc->rows + 1, &rp),
        std::thread(narrow, desc->col_idx, desc->nnz, &col),
        std::thread(narrow, desc->row_idx, desc->nnz, &ri),
        std::thread(narrow, desc->t_row_ptr, desc->cols + 1, &trp),
        std::thread(narrow, desc->t_col_idx, desc->nnz, &tcol),
        std::thread(narrow, desc->t_perm, desc->nnz, &tperm)};
    for (auto& th : t) th.join();
  }
  const bool square = desc->rows == desc->cols;
#if defined(XHAL_GPU_HIP)
  const bool host_levels = square;
#else
  // The level batches are built on the host only when asked for (the
  // sync-free schedule is built on the device below).
  const char* force = std::getenv("XHAL_CUDA_SOLVE");
  const bool host_levels = square && force && std::strcmp(force, "levels") == 0;
#endif
  lap("narrowing to 32-bit");
  xhal_status_t st = build_pattern(d, m, rp, col, nullptr, desc->rows, host_levels, &m->a);
  lap("pattern of A (upload)");
  if (st == XHAL_OK) st = build_pattern(d, m, trp, tcol, &tperm, desc->cols, host_levels, &m->at);
  lap("pattern of A^T (upload)");
  if (st == XHAL_OK) st = up(d, m, ri, &m->row_idx);
  lap("row indices (upload)");
#if !defined(XHAL_GPU_HIP)
  if (st == XHAL_OK && square && !host_levels && desc->rows > 0) {
    st = syncfree_init(d, desc->rows, &m->sf, &m->allocations);
    // A lower pattern has an ascending schedule, its transpose a descending
    // one (and the reverse for upper); a pattern with no off-diagonal entry
    // is both, and one schedule serves both walks.
    const Triangles ta = triangles(rp, col), tt = triangles(trp, tcol);
    auto analyse = [&](Pattern& p, const Triangles& t, bool ascending) {
      SyncFreeSchedule* out = ascending ? &p.sf_asc : &p.sf_desc;
      xhal_status_t r = syncfree_analyse(d, &m->sf, p.row_ptr, p.col, p.rows, ascending,
                                         t.long_rows, t.max_terms, out, &m->allocations);
      if (r == XHAL_OK && t.lower && t.upper) (ascending ? p.sf_desc : p.sf_asc) = *out;
      return r;
    };
    if (st == XHAL_OK && (ta.lower || ta.upper)) st = analyse(m->a, ta, ta.lower);
    if (st == XHAL_OK && (tt.lower || tt.upper)) st = analyse(m->at, tt, tt.lower);
    lap("sync-free schedules (device)");
  }
#endif
  if (st != XHAL_OK) {
    destroy(m);
    return st;
  }
  *out_matrix = m;
  return XHAL_OK;
}

void csr_destroy(void* device, void* matrix) {
  Device* d = begin(device);
  gpuStreamSynchronize(d->stream);
  destroy(static_cast<Matrix*>(matrix));
}

xhal_status_t spmm(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  Device* d = begin(device);
  std::lock_guard lock(d->mutex);
  const Matrix* m = static_cast<const Matrix*>(a);
  const Pattern& p = trans == XHAL_TRANSPOSE ? m->at : m->a;
  Cols xc = cols_of(x), yc = cols_of(y);
  if (p.rows == 0 || yc.k == 0) return XHAL_OK;
  spmm_short_kernel<<<grid_for(p.rows * yc.k, 256), 256, 0, d->stream>>>(view(p, m), p.rows, xc,
                                                                          yc, alpha, beta);
  int launches = 1;
  if (p.num_long) {
    spmm_long_kernel<<<grid_for(p.num_long * yc.k * 32, 256), 256, 0, d->stream>>>(
        view(p, m), p.long_rows, p.num_long, xc, yc, alpha, beta);
    ++launches;
  }
  return check_launch(d, "spmv", launches);
}

xhal_status_t spmv(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  return spmm(device, a, trans, alpha, x, beta, y);
}

xhal_status_t csr_solve(void* device, void* a, xhal_transpose_t trans, xhal_triangle_t triangle,
                        xhal_diagonal_t diagonal, const xhal_plugin_tensor_t* b,
                        const xhal_plugin_tensor_t* x) {
  Device* d = begin(device);
  std::lock_guard lock(d->mutex);
  int launches = 0;
  xhal_status_t st = run_solve(d, static_cast<const Matrix*>(a), trans, triangle, diagonal,
                               cols_of(b), cols_of(x), "csr_solve", &launches);
  if (st != XHAL_OK) return st;
  return check_launch(d, "csr_solve", launches);
}

xhal_status_t csr_solve_backward(void* device, void* a, xhal_transpose_t trans,
                                 xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                                 const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* dx,
                                 const xhal_plugin_tensor_t* gb, const xhal_plugin_tensor_t* ga) {
  Device* d = begin(device);
  std::lock_guard lock(d->mutex);
  const Matrix* m = static_cast<const Matrix*>(a);
  const xhal_transpose_t flipped = trans == XHAL_TRANSPOSE ? XHAL_TRANSPOSE_NONE : XHAL_TRANSPOSE;
  int launches = 0;
  const Cols gbc = cols_of(gb);
  xhal_status_t st = run_solve(d, m, flipped, triangle, diagonal, cols_of(dx), gbc,
                               "csr_solve_backward", &launches);
  if (st != XHAL_OK) return st;
  if (ga && m->nnz) {
    solve_grad_kernel<<<grid_for(m->nnz, 256), 256, 0, d->stream>>>(
        m->row_idx, m->a.col, m->nnz, trans == XHAL_TRANSPOSE, diagonal == XHAL_DIAGONAL_UNIT,
        cols_of(x), gbc, tensor_f32(ga), ga->rank ? ga->strides[0] : 1);
    ++launches;
  }
  return check_launch(d, "csr_solve_backward", launches);
}

xhal_status_t spgemm_numeric(void* device, void* a, void* b, void* c) {
  Device* d = begin(device);
  std::lock_guard lock(d->mutex);
  const Matrix* ma = static_cast<const Matrix*>(a);
  const Matrix* mb = static_cast<const Matrix*>(b);
  const Matrix* mc = static_cast<const Matrix*>(c);
  if (mc->nnz == 0) return XHAL_OK;
  spgemm_kernel<<<grid_for(mc->nnz, 256), 256, 0, d->stream>>>(
      view(ma->a, ma), view(mb->a, mb), mc->row_idx, mc->a.col, mc->nnz,
      static_cast<float*>(mc->values->ptr));
  return check_launch(d, "spgemm");
}

}  // namespace xhal::gpu
