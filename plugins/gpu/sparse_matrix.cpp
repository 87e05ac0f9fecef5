// csr_create / csr_destroy (docs/semantics.md "Sparse (CSR)"): the pattern
// and its transpose are uploaded once, row and column numbers narrowed to
// 32 bits, entry offsets (row pointers, A^T's permutation) narrowed too
// unless the matrix is wide (2^31 - 1 entries or more, or
// sparse_index=64: uploaded as the core's int64), and given their
// triangular-solve schedules: on CUDA the sync-free schedule built on
// the device (sparse_solve_syncfree_schedule.cpp), on ROCm or with
// solve.schedule=levels the level batches built on the host
// (sparse_solve_levels.cpp). The device option `trace` prints where the
// time goes.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#include "sparse_matrix.h"

namespace xhal::gpu {
namespace {

// row_idx[e] = the row of entry e, from the uploaded row pointers (one
// binary search per entry): derived on the device, not narrowed and
// uploaded (solve backward and spgemm read it).
template <class P>
__global__ void expand_rows_kernel(const P* row_ptr, int64_t rows, int64_t nnz, I* row_idx) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < nnz;
       e += int64_t{gridDim.x} * blockDim.x) {
    int64_t lo = 0, hi = rows;  // the last row whose start is <= e
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      if (row_ptr[mid] <= e) lo = mid;
      else hi = mid;
    }
    row_idx[e] = static_cast<I>(lo);
  }
}

// A narrow matrix's index arrays (five, or A's two when the plugin builds
// A^T itself) as int32, narrowed side by side, each
// cut into pieces of about 2^21 elements (up to 16 threads in all); false
// when the host has no memory for them.
struct Narrowed {
  HostIndices rp, col, trp, tcol, tperm;
};
bool narrow_pattern(const xhal_plugin_csr_desc_t* desc, Narrowed* out) {
  struct Job {
    const int64_t* from;
    int64_t n;
    HostIndices* to;
  };
  std::vector<Job> jobs = {{desc->row_ptr, desc->rows + 1, &out->rp},
                           {desc->col_idx, desc->nnz, &out->col}};
  if (desc->t_row_ptr) {  // absent when the plugin builds A^T (transpose_on_device)
    jobs.push_back({desc->t_row_ptr, desc->cols + 1, &out->trp});
    jobs.push_back({desc->t_col_idx, desc->nnz, &out->tcol});
    jobs.push_back({desc->t_perm, desc->nnz, &out->tperm});
  }
  int64_t total = 0;
  try {
    for (const Job& j : jobs) {
      j.to->resize(j.n);  // uninitialised: the threads below touch it first
      total += j.n;
    }
  } catch (const std::bad_alloc&) {
    return false;
  }
  const int64_t hw = std::max<unsigned>(1, std::thread::hardware_concurrency());
  const int64_t threads = std::clamp<int64_t>(std::min<int64_t>(hw, total >> 21), 1, 16);
  const int64_t per = (total + threads - 1) / threads;
  auto narrow = [&](int64_t t) {  // elements [t * per, (t + 1) * per) of the jobs laid end to end
    int64_t at = 0;
    for (const Job& j : jobs) {
      const int64_t b = std::max<int64_t>(t * per - at, 0), e = std::min(j.n, (t + 1) * per - at);
      for (int64_t i = b; i < e; ++i) (*j.to)[i] = static_cast<I>(j.from[i]);
      at += j.n;
    }
  };
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(narrow, t);
    } catch (const std::system_error&) {
      narrow(t);  // no thread to be had: this one does the piece
    }
  }
  narrow(0);
  for (auto& th : pool) th.join();
  return true;
}

// A wide matrix's int64 column array as int32 on the device, narrowed on
// the host a piece at a time: no host copy of the whole array (at 2^31
// entries that would be 8.6 GB more beside the core's arrays).
xhal_status_t upload_columns(Device* d, Matrix* m, const int64_t* from, int64_t n, I** out) {
  *out = nullptr;
  if (n == 0) return XHAL_OK;
  void* dst = nullptr;
  gpuError_t e = gpuMalloc(&dst, sizeof(I) * n);
  if (e != gpuSuccess) return runtime_error(e, "allocating the column indices");
  m->allocations.push_back(dst);
  *out = static_cast<I*>(dst);
  constexpr int64_t kPiece = int64_t{1} << 24;
  HostIndices piece(static_cast<size_t>(std::min(n, kPiece)));
  for (int64_t at = 0; at < n && e == gpuSuccess; at += kPiece) {
    const int64_t len = std::min(kPiece, n - at);
    for (int64_t i = 0; i < len; ++i) piece[i] = static_cast<I>(from[at + i]);
    // Waited for before the piece is refilled (pageable memory, as upload()).
    e = gpuMemcpyAsync(*out + at, piece.data(), sizeof(I) * len, gpuMemcpyHostToDevice, d->stream);
    if (e == gpuSuccess) e = gpuStreamSynchronize(d->stream);
    d->h2d_transfers++;
    d->h2d_bytes += sizeof(I) * len;
  }
  return e == gpuSuccess ? XHAL_OK : runtime_error(e, "uploading the column indices");
}

// Rows of more than 32 entries as pieces of 1024 (sparse_views.h), listed
// from the host's row pointers rp and uploaded into p.
template <class P>
xhal_status_t build_pieces(Device* d, Matrix* m, const P* rp, int64_t rows, Pattern* p) {
  std::vector<I> piece_row, piece_g, multi_row, multi_first;
  p->max_row_len = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t len = rp[r + 1] - rp[r];
    p->max_row_len = std::max(p->max_row_len, len);
    if (len <= 32) continue;
    const int64_t n = (len + 1023) / 1024;
    if (n > 1) {
      multi_row.push_back(static_cast<I>(r));
      multi_first.push_back(static_cast<I>(piece_row.size()));
    }
    for (int64_t g = 0; g < n; ++g) {
      piece_row.push_back(static_cast<I>(r));
      piece_g.push_back(static_cast<I>(g));
    }
  }
  p->pieces.num = static_cast<int64_t>(piece_row.size());
  p->pieces.num_multi = static_cast<int64_t>(multi_row.size());
  if (!p->pieces.num) return XHAL_OK;
  const size_t np = piece_row.size(), nm = multi_row.size();  // one upload for the four lists
  piece_row.insert(piece_row.end(), piece_g.begin(), piece_g.end());
  piece_row.insert(piece_row.end(), multi_row.begin(), multi_row.end());
  piece_row.insert(piece_row.end(), multi_first.begin(), multi_first.end());
  I* all = nullptr;
  const xhal_status_t st = up(d, m, piece_row, &all);
  p->pieces.row = all;
  p->pieces.g = all + np;
  p->pieces.multi_row = all + 2 * np;
  p->pieces.multi_first = all + 2 * np + nm;
  return st;
}

// rp [rows + 1], col [nnz] and perm [nnz] (null for A) on the host, in the
// matrix's offset type P: the narrowed arrays (P = I), or the core's int64
// arrays of a wide matrix, whose columns narrow on the way up.
template <class P>
xhal_status_t build_pattern(Device* d, Matrix* m, const P* rp, const P* col, const P* perm,
                            int64_t rows, bool host_levels, Pattern* p) {
  p->rows = rows;
  P *row_ptr = nullptr, *up_perm = nullptr;
  xhal_status_t st = up_n(d, m, rp, rows + 1, &row_ptr);
  if (st == XHAL_OK) {
    if constexpr (sizeof(P) == 8) st = upload_columns(d, m, col, m->nnz, &p->col);
    else st = up_n(d, m, col, m->nnz, &p->col);
  }
  if (st == XHAL_OK && perm) st = up_n(d, m, perm, m->nnz, &up_perm);
  if constexpr (sizeof(P) == 8) {
    p->row_ptr64 = row_ptr;
    p->perm64 = up_perm;
  } else {
    p->row_ptr = row_ptr;
    p->perm = up_perm;
  }
  if (st == XHAL_OK) st = build_pieces(d, m, rp, rows, p);
  if (st == XHAL_OK && host_levels) st = build_level_schedule(d, m, rp, col, rows, true, &p->asc);
  if (st == XHAL_OK && host_levels) st = build_level_schedule(d, m, rp, col, rows, false, &p->desc);
  return st;
}

#if !defined(XHAL_GPU_HIP)
// Which triangles a square pattern lies in (columns sorted, so the ends of a
// row decide), and its rows of more than 32 off-diagonal entries.
template <class P>
Triangles triangles(const P* rp, const P* col, int64_t rows) {
  Triangles t;
  for (int64_t k = 0; k < rows; ++k) {
    const P rb = rp[k], re = rp[k + 1];
    if (re == rb) continue;
    t.lower = t.lower && col[re - 1] <= k;
    t.upper = t.upper && col[rb] >= k;
    const bool diag = col[re - 1] == k || col[rb] == k;
    const int64_t terms = re - rb - (diag ? 1 : 0);
    t.long_rows += terms > 32;
    t.long_terms += terms > 32 ? terms : 0;
    t.max_terms = std::max(t.max_terms, terms);
  }
  return t;
}
// A^T's triangles from A's (square: A^T is lower where A is upper) and A^T's
// row pointers, when A^T's columns exist only on the device: a row k of A^T
// holds its diagonal entry when A's row k does, which is where A's
// triangle puts it (first or last); the counts matter only for a pattern
// in a triangle.
template <class P>
Triangles transposed_triangles(const Triangles& ta, const P* a_rp, const P* a_col, const P* t_rp,
                               int64_t rows) {
  Triangles t;
  t.lower = ta.upper;
  t.upper = ta.lower;
  if (!t.lower && !t.upper) return t;
  for (int64_t k = 0; k < rows; ++k) {
    const P rb = a_rp[k], re = a_rp[k + 1];
    const bool diag = re > rb && (a_col[re - 1] == k || a_col[rb] == k);
    const int64_t terms = t_rp[k + 1] - t_rp[k] - (diag ? 1 : 0);
    t.long_rows += terms > 32;
    t.long_terms += terms > 32 ? terms : 0;
    t.max_terms = std::max(t.max_terms, terms);
  }
  return t;
}
#endif

}  // namespace

void destroy_matrix(Matrix* m) {
  for (void* p : m->allocations) gpuFree(p);
  delete m;
}

template <class P>
xhal_status_t derive_row_indices(Device* d, Matrix* m) {
  if (m->nnz == 0) return XHAL_OK;
  gpuError_t e = gpuMalloc(reinterpret_cast<void**>(&m->row_idx), sizeof(I) * m->nnz);
  if (e != gpuSuccess) return runtime_error(e, "allocating the row indices");
  m->allocations.push_back(m->row_idx);
  expand_rows_kernel<P><<<grid_for(m->nnz, 256), 256, 0, d->stream>>>(row_ptr_of<P>(m->a), m->rows,
                                                                      m->nnz, m->row_idx);
  return check_launch(d, "csr_create");
}
template xhal_status_t derive_row_indices<I>(Device*, Matrix*);
template xhal_status_t derive_row_indices<int64_t>(Device*, Matrix*);

#if !defined(XHAL_GPU_HIP)
template <class P>
xhal_status_t build_syncfree_schedules(Device* d, Matrix* m, const Triangles& ta,
                                       const Triangles& tt) {
  // f64 values publish in two words (syncfree_device.h, TwoWords).
  xhal_status_t r =
      syncfree_init(d, m->rows, m->values_dtype == XHAL_DTYPE_F64 ? 2 : 1, &m->sf, &m->allocations);
  // A lower pattern has an ascending schedule, its transpose a descending
  // one (and the reverse for upper); a pattern with no off-diagonal entry
  // is both, and one schedule serves both walks.
  auto analyse = [&](Pattern& p, const Triangles& t, bool ascending) {
    SyncFreeSchedule* out = ascending ? &p.sf_asc : &p.sf_desc;
    xhal_status_t q =
        syncfree_analyse<P>(d, &m->sf, row_ptr_of<P>(p), p.col, p.rows, ascending, t.long_rows,
                            t.long_terms, m->nnz, t.max_terms, out, &m->allocations);
    if (q == XHAL_OK && t.lower && t.upper) (ascending ? p.sf_desc : p.sf_asc) = *out;
    return q;
  };
  if (r == XHAL_OK && (ta.lower || ta.upper)) r = analyse(m->a, ta, ta.lower);
  if (r == XHAL_OK && (tt.lower || tt.upper)) r = analyse(m->at, tt, tt.lower);
  return r;
}
template xhal_status_t build_syncfree_schedules<I>(Device*, Matrix*, const Triangles&,
                                                   const Triangles&);
template xhal_status_t build_syncfree_schedules<int64_t>(Device*, Matrix*, const Triangles&,
                                                         const Triangles&);
#endif

xhal_status_t new_matrix(Device* d, int64_t rows, int64_t cols, int64_t nnz, void* values_buffer,
                         xhal_dtype_t values_dtype, Matrix** out) {
  *out = nullptr;
  if (rows >= INT_MAX || cols >= INT_MAX)
    return fail(XHAL_UNSUPPORTED,
                "%s plugin: csr_create: %lld x %lld exceeds 32-bit row and column numbers "
                "(rows and cols must be below 2^31 - 1)",
                XHAL_GPU_BACKEND_NAME, static_cast<long long>(rows), static_cast<long long>(cols));
  auto* m = new Matrix;
  m->rows = rows;
  m->cols = cols;
  m->nnz = nnz;
  m->wide = nnz >= INT_MAX || d->options.sparse_index64;
  m->values = static_cast<Buffer*>(values_buffer);
  m->values_dtype = values_dtype == XHAL_DTYPE_F64 || values_dtype == XHAL_DTYPE_F16 ||
                            values_dtype == XHAL_DTYPE_BF16
                        ? values_dtype
                        : XHAL_DTYPE_F32;
  *out = m;
  return XHAL_OK;
}

xhal_status_t csr_create(void* device, const xhal_plugin_csr_desc_t* desc, void** out_matrix) {
  Device* d = enter(device);
  // values_dtype exists in the descs of 1.6 cores and later (F16/BF16 only
  // from 1.7 cores, and only because spmv/spmm claim them).
  const xhal_dtype_t given = core_abi_minor() >= 6 ? desc->values_dtype : XHAL_DTYPE_F32;
  Matrix* m = nullptr;
  if (const xhal_status_t st =
          new_matrix(d, desc->rows, desc->cols, desc->nnz, desc->values_buffer, given, &m);
      st != XHAL_OK)
    return st;
  const bool trace = d->options.trace;
  auto t0 = std::chrono::steady_clock::now();
  auto lap = [&](const char* what) {
    if (!trace) return;
    const auto t = std::chrono::steady_clock::now();
    std::fprintf(stderr, "[xhal-%s] csr_create %s: %.2f ms\n", XHAL_GPU_BACKEND_NAME, what,
                 std::chrono::duration<double, std::milli>(t - t0).count());
    t0 = t;
  };
  // A wide matrix keeps the core's int64 arrays (upload_columns narrows its
  // columns on the way up).
  Narrowed n;
  if (!m->wide && !narrow_pattern(desc, &n)) {
    delete m;
    return fail(XHAL_OUT_OF_MEMORY,
                "%s plugin: csr_create: no host memory for the narrowed pattern (%lld entries)",
                XHAL_GPU_BACKEND_NAME, static_cast<long long>(desc->nnz));
  }
  // Only f32/f64 matrices are solved (f16/bf16 ones take spmv/spmm only,
  // docs/semantics.md 7.2): no solve schedule for the others.
  const bool solvable = desc->rows == desc->cols &&
                        (m->values_dtype == XHAL_DTYPE_F32 || m->values_dtype == XHAL_DTYPE_F64);
  // ROCm has only the level batches (the options parser refuses syncfree
  // there); on CUDA the sync-free schedule is built on the device below.
  const bool host_levels = solvable && d->options.solve_schedule == SolveSchedule::kLevels;
  // The core gives no transpose to a plugin that sets
  // XHAL_PLUGIN_CSR_OWN_TRANSPOSE (CUDA; an older core gives one anyway).
  const bool own_transpose = desc->t_row_ptr == nullptr;
  lap(m->wide ? "(wide: no narrowing)" : "narrowing to 32-bit");
  xhal_status_t st = with_offsets(m, [&](auto offset) {
    using P = decltype(offset);
    // The offsets as P: the narrowed copies, or the core's int64 arrays.
    const P *a_rp, *a_col, *t_rp, *t_col, *t_perm;
    if constexpr (sizeof(P) == 8) {
      a_rp = desc->row_ptr;
      a_col = desc->col_idx;
      t_rp = desc->t_row_ptr;
      t_col = desc->t_col_idx;
      t_perm = desc->t_perm;
    } else {
      a_rp = n.rp.data();
      a_col = n.col.data();
      t_rp = n.trp.data();
      t_col = n.tcol.data();
      t_perm = n.tperm.data();
    }
    xhal_status_t r = build_pattern<P>(d, m, a_rp, a_col, nullptr, desc->rows, host_levels, &m->a);
    lap("pattern of A (upload)");
    if (r == XHAL_OK) r = derive_row_indices<P>(d, m);
    lap("row indices (device)");
    // A^T: from the core's host arrays, or (the core left it to this plugin,
    // XHAL_PLUGIN_CSR_OWN_TRANSPOSE) sorted on the device.
    std::vector<P> t_rp_host;
    if (r == XHAL_OK && own_transpose) {
#if !defined(XHAL_GPU_HIP)
      r = transpose_on_device<P>(d, m, &t_rp_host);
      t_rp = t_rp_host.data();
      if (r == XHAL_OK) r = build_pieces(d, m, t_rp, desc->cols, &m->at);
      if (r == XHAL_OK && host_levels) {
        // The level batches are built on the host: A^T's columns come back
        // (solve.schedule=levels only).
        std::vector<I> tc(static_cast<size_t>(desc->nnz));
        gpuError_t e = gpuMemcpyAsync(tc.data(), m->at.col, sizeof(I) * desc->nnz,
                                      gpuMemcpyDeviceToHost, d->stream);
        if (e == gpuSuccess) e = gpuStreamSynchronize(d->stream);
        d->d2h_transfers++;
        d->d2h_bytes += sizeof(I) * desc->nnz;
        if (e != gpuSuccess) r = runtime_error(e, "reading A^T's columns");
        const std::vector<P> tcp(tc.begin(), tc.end());
        if (r == XHAL_OK)
          r = build_level_schedule(d, m, t_rp, tcp.data(), desc->cols, true, &m->at.asc);
        if (r == XHAL_OK)
          r = build_level_schedule(d, m, t_rp, tcp.data(), desc->cols, false, &m->at.desc);
      }
#else
      r = fail(XHAL_PLUGIN_ERROR, "%s plugin: csr_create: the core passed no transpose",
               XHAL_GPU_BACKEND_NAME);
#endif
      lap("pattern of A^T (device sort)");
    } else if (r == XHAL_OK) {
      r = build_pattern<P>(d, m, t_rp, t_col, t_perm, desc->cols, host_levels, &m->at);
      lap("pattern of A^T (upload)");
    }
#if !defined(XHAL_GPU_HIP)
    if (r == XHAL_OK && solvable && !host_levels && desc->rows > 0) {
      const Triangles ta = triangles(a_rp, a_col, desc->rows);
      const Triangles tt = own_transpose ? transposed_triangles(ta, a_rp, a_col, t_rp, desc->cols)
                                         : triangles(t_rp, t_col, desc->cols);
      r = build_syncfree_schedules<P>(d, m, ta, tt);
      lap("sync-free schedules (device)");
    }
#endif
    return r;
  });
  if (st != XHAL_OK) {
    destroy_matrix(m);
    return st;
  }
  *out_matrix = m;
  return XHAL_OK;
}

void csr_destroy(void* device, void* matrix) {
  Device* d = enter(device);
  gpuStreamSynchronize(d->stream);
  destroy_matrix(static_cast<Matrix*>(matrix));
}

}  // namespace xhal::gpu
