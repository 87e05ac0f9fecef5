// csr_create_from_buffers (plugin ABI 1.9, CUDA): a pattern that is already
// in device buffers is validated and analysed where it lies. Every kernel
// is queued before the one read of a small status block, which says
// whether the pattern is valid (and else where its first fault is, in the
// order the core's host validation uses), the facts the core's solve
// checks read, and the sizes the plugin's own allocations need (piece
// lists, sync-free bounds). Kernels that index through the row pointers or
// columns first read the block's fault words, so an invalid pattern is
// never used as an address. docs/gpu.md, "CSR matrices from device
// buffers".
#include "sparse_matrix.h"
#include "trace_laps.h"

#if !defined(XHAL_GPU_HIP)
#include <algorithm>
#include <cub/device/device_scan.cuh>

namespace xhal::gpu {
namespace {

constexpr unsigned long long kNone = ~0ull;

// Filled on the device, read once by the host. Keys are minima: a fault's
// position in validation order; a fact's row << 32 | column.
struct Status {
  unsigned long long offsets_key;  // 0: row_ptr[0]; 1 + 2i / 2 + 2i: row i; 2 rows + 1: the end
  unsigned long long column_row;   // lowest row with a bad column
  unsigned long long entry;        // lowest bad entry of that row
  unsigned long long above, below, missing;
  unsigned long long long_a, max_a, long_t, max_t;  // off-diagonal terms of A's and A^T's rows
  unsigned long long long_terms_a, long_terms_t;    // the terms of their rows of > 32
  unsigned long long pieces_a, pieces_t;            // piece-list totals, packed as PieceCount
  long long fault[5];                               // kind, row, entry, value, other
};

__device__ __forceinline__ bool valid(const Status* s) {
  return s->offsets_key == kNone && s->column_row == kNone;
}

__global__ void init_status_kernel(Status* s) {
  s->offsets_key = s->column_row = s->entry = kNone;
  s->above = s->below = s->missing = kNone;
  s->long_a = s->max_a = s->long_t = s->max_t = 0;
  s->long_terms_a = s->long_terms_t = 0;
  s->pieces_a = s->pieces_t = 0;
  for (long long& f : s->fault) f = 0;
}

__device__ __forceinline__ unsigned long long warp_min(unsigned long long v) {
  for (int o = 16; o; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ unsigned long long warp_max(unsigned long long v) {
  for (int o = 16; o; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ unsigned long long warp_sum(unsigned long long v) {
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Reduction kernels loop over whole warps (every lane runs every step) so
// that each warp ends with one atomic per result.
constexpr int kBlock = 256;
inline unsigned reduce_grid(int64_t items) {
  return std::min<unsigned>(grid_for(items, kBlock), 2048u);
}
__device__ __forceinline__ int64_t steps_of(int64_t items) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  return (items + stride - 1) / stride;
}

template <class T>
__global__ void offsets_kernel(const T* rp, int64_t rows, int64_t nnz, Status* s) {
  unsigned long long key = kNone;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t step = 0, i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
       step < steps_of(rows + 1); ++step, i += stride) {
    if (i > rows) continue;
    const int64_t u = rp[i];
    if (i == 0 && u != 0) key = min(key, 0ull);
    if (i < rows) {
      const int64_t v = rp[i + 1];
      if (v < u) key = min(key, 1ull + 2ull * i);
      else if (v > nnz) key = min(key, 2ull + 2ull * i);
    } else if (u != nnz) {
      key = min(key, 2ull * rows + 1ull);
    }
  }
  key = warp_min(key);
  if ((threadIdx.x & 31) == 0 && key != kNone) atomicMin(&s->offsets_key, key);
}

// The last row whose start is <= e (rp valid).
template <class T>
__device__ __forceinline__ int64_t row_of(const T* rp, int64_t rows, int64_t e) {
  int64_t lo = 0, hi = rows;
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    if (rp[mid] <= e) lo = mid;
    else hi = mid;
  }
  return lo;
}

template <class T>
__device__ __forceinline__ bool bad_entry(const T* rp, const T* col, int64_t cols, int64_t r,
                                          int64_t e) {
  const int64_t c = col[e];
  return c < 0 || c >= cols || (e > int64_t{rp[r]} && c <= int64_t{col[e - 1]});
}

template <class T>
__global__ void columns_kernel(const T* rp, const T* col, int64_t rows, int64_t cols, int64_t nnz,
                               Status* s) {
  if (s->offsets_key != kNone) return;
  unsigned long long row = kNone;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t step = 0, e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; step < steps_of(nnz);
       ++step, e += stride) {
    if (e >= nnz) continue;
    const int64_t r = row_of(rp, rows, e);
    if (bad_entry(rp, col, cols, r, e)) row = min(row, static_cast<unsigned long long>(r));
  }
  row = warp_min(row);
  if ((threadIdx.x & 31) == 0 && row != kNone) atomicMin(&s->column_row, row);
}

// The lowest bad entry of the lowest bad row (the host does not know the
// row's length: a fixed grid walks it).
template <class T>
__global__ void first_bad_entry_kernel(const T* rp, const T* col, int64_t cols, Status* s) {
  if (s->offsets_key != kNone || s->column_row == kNone) return;
  const int64_t r = static_cast<int64_t>(s->column_row);
  for (int64_t e = rp[r] + blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < int64_t{rp[r + 1]};
       e += int64_t{gridDim.x} * blockDim.x)
    if (bad_entry(rp, col, cols, r, e)) atomicMin(&s->entry, static_cast<unsigned long long>(e));
}

template <class T>
__global__ void fault_kernel(const T* rp, const T* col, int64_t rows, int64_t cols, Status* s) {
  long long* f = s->fault;
  const unsigned long long key = s->offsets_key;
  if (key != kNone) {
    if (key == 0) {
      f[0] = XHAL_PLUGIN_CSR_FAULT_FIRST_OFFSET;
      f[3] = rp[0];
    } else if (key == 2ull * rows + 1ull) {
      f[0] = XHAL_PLUGIN_CSR_FAULT_LAST_OFFSET;
      f[1] = rows > 0 ? rows - 1 : 0;
      f[3] = rp[rows];
    } else {
      const int64_t i = static_cast<int64_t>((key - 1) / 2);
      f[0] = key % 2 ? XHAL_PLUGIN_CSR_FAULT_NOT_MONOTONE : XHAL_PLUGIN_CSR_FAULT_OFFSET_PAST_NNZ;
      f[1] = i;
      f[3] = rp[i + 1];
      f[4] = rp[i];
    }
  } else if (s->column_row != kNone) {
    const int64_t e = static_cast<int64_t>(s->entry), c = col[e];
    const bool range = c < 0 || c >= cols;
    f[0] = range ? XHAL_PLUGIN_CSR_FAULT_COLUMN_RANGE : XHAL_PLUGIN_CSR_FAULT_COLUMN_ORDER;
    f[1] = static_cast<long long>(s->column_row);
    f[2] = e;
    f[3] = c;
    f[4] = range ? 0 : col[e - 1];
  }
}

template <class From, class To>
__global__ void convert_kernel(const From* in, int64_t n, To* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    out[i] = static_cast<To>(in[i]);
}

// A row's piece-list entry count packed with whether it has several
// pieces (sparse_views.h): one scan gives both offsets.
__device__ __forceinline__ unsigned long long piece_count(int64_t len) {
  const unsigned long long n = len > 32 ? static_cast<unsigned long long>((len + 1023) / 1024) : 0;
  return n << 32 | (n > 1 ? 1ull : 0ull);
}

// Whether row k holds (k, k): a binary search of its sorted columns.
template <class P>
__device__ __forceinline__ bool holds(const P* rp, const I* col, int64_t k, int64_t c) {
  P lo = rp[k], hi = rp[k + 1];
  while (lo < hi) {
    const P mid = lo + (hi - lo) / 2;
    if (col[mid] < c) lo = mid + 1;
    else hi = mid;
  }
  return lo < rp[k + 1] && col[lo] == c;
}

// Facts of A's rows (the narrowed arrays), A's piece counts, and whether
// each row holds its diagonal entry (for A^T's terms below).
template <class P>
__global__ void facts_kernel(const P* rp, const I* col, int64_t rows, int64_t cols, Status* s,
                             unsigned long long* counts, unsigned char* diag) {
  if (!valid(s)) return;
  unsigned long long above = kNone, below = kNone, missing = kNone, long_rows = 0, max_terms = 0;
  unsigned long long long_terms = 0;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t step = 0, k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; step < steps_of(rows);
       ++step, k += stride) {
    if (k >= rows) continue;
    const P rb = rp[k], re = rp[k + 1];
    const bool d = k < cols && holds(rp, col, k, k);
    diag[k] = d;
    if (re > rb && col[re - 1] > k) {  // the row's lowest column right of the diagonal
      P lo = rb, hi = re - 1;
      while (lo < hi) {
        const P mid = lo + (hi - lo) / 2;
        if (col[mid] > k) hi = mid;
        else lo = mid + 1;
      }
      above = min(above, static_cast<unsigned long long>(k) << 32 | col[lo]);
    }
    if (re > rb && col[rb] < k)
      below = min(below, static_cast<unsigned long long>(k) << 32 | col[rb]);
    if (k < min(rows, cols) && !d) missing = min(missing, static_cast<unsigned long long>(k));
    const int64_t terms = (re - rb) - (d ? 1 : 0);
    long_rows += terms > 32;
    long_terms += terms > 32 ? terms : 0;
    max_terms = max(max_terms, static_cast<unsigned long long>(terms));
    counts[k] = piece_count(re - rb);
  }
  above = warp_min(above);
  below = warp_min(below);
  missing = warp_min(missing);
  long_rows = warp_sum(long_rows);
  long_terms = warp_sum(long_terms);
  max_terms = warp_max(max_terms);
  if ((threadIdx.x & 31) == 0) {
    if (above != kNone) atomicMin(&s->above, above);
    if (below != kNone) atomicMin(&s->below, below);
    if (missing != kNone) atomicMin(&s->missing, missing);
    if (long_rows) atomicAdd(&s->long_a, long_rows);
    if (long_terms) atomicAdd(&s->long_terms_a, long_terms);
    if (max_terms) atomicMax(&s->max_a, max_terms);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) counts[rows] = 0;
}

// A^T's piece counts and (square A) its rows' off-diagonal terms.
template <class P>
__global__ void transposed_facts_kernel(const P* t_rp, int64_t cols, bool square,
                                        const unsigned char* diag, Status* s,
                                        unsigned long long* counts) {
  if (!valid(s)) return;
  unsigned long long long_rows = 0, long_terms = 0, max_terms = 0;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t step = 0, k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; step < steps_of(cols);
       ++step, k += stride) {
    if (k >= cols) continue;
    const int64_t len = t_rp[k + 1] - t_rp[k];
    counts[k] = piece_count(len);
    if (square) {
      const int64_t terms = len - (diag[k] ? 1 : 0);
      long_rows += terms > 32;
      long_terms += terms > 32 ? terms : 0;
      max_terms = max(max_terms, static_cast<unsigned long long>(terms));
    }
  }
  long_rows = warp_sum(long_rows);
  long_terms = warp_sum(long_terms);
  max_terms = warp_max(max_terms);
  if ((threadIdx.x & 31) == 0) {
    if (long_rows) atomicAdd(&s->long_t, long_rows);
    if (long_terms) atomicAdd(&s->long_terms_t, long_terms);
    if (max_terms) atomicMax(&s->max_t, max_terms);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) counts[cols] = 0;
}

__global__ void copy_total_kernel(const unsigned long long* offsets, int64_t n,
                                  unsigned long long* to) {
  *to = offsets[n];
}

// The piece lists (sparse_views.h) from the scanned counts: row r's pieces
// start at its piece offset, a row of several pieces is listed at its
// multi offset.
template <class P>
__global__ void fill_pieces_kernel(const P* rp, int64_t rows, const unsigned long long* offsets,
                                   I* piece_row, I* piece_g, I* multi_row, I* multi_first) {
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows;
       r += int64_t{gridDim.x} * blockDim.x) {
    const int64_t len = rp[r + 1] - rp[r];
    if (len <= 32) continue;
    const int64_t n = (len + 1023) / 1024;
    const int64_t base = static_cast<int64_t>(offsets[r] >> 32);
    for (int64_t g = 0; g < n; ++g) {
      piece_row[base + g] = static_cast<I>(r);
      piece_g[base + g] = static_cast<I>(g);
    }
    if (n > 1) {
      const int64_t m = static_cast<int64_t>(offsets[r] & 0xffffffffull);
      multi_row[m] = static_cast<I>(r);
      multi_first[m] = static_cast<I>(base);
    }
  }
}

// Device memory freed when the call returns (stream-ordered).
struct Temporaries {
  Device* d;
  std::vector<void*> blocks;
  explicit Temporaries(Device* dev) : d(dev) {}
  ~Temporaries() {
    for (void* p : blocks) gpuFreeAsync(p, d->stream);
  }
  template <class T>
  xhal_status_t get(size_t count, T** out, const char* what) {
    *out = nullptr;
    void* p = nullptr;
    const gpuError_t e = gpuMallocAsync(&p, std::max<size_t>(count, 1) * sizeof(T), d->stream);
    if (e != gpuSuccess) return runtime_error(e, what);
    blocks.push_back(p);
    *out = static_cast<T*>(p);
    return XHAL_OK;
  }
};

// Exclusive scan of n + 1 packed counts (the last is 0, so offsets[n] is
// the total).
xhal_status_t scan_counts(Device* d, Temporaries& tmp, const unsigned long long* counts, int64_t n,
                          unsigned long long* offsets) {
  size_t bytes = 0;
  gpuError_t e = cub::DeviceScan::ExclusiveSum(nullptr, bytes, counts, offsets, n + 1, d->stream);
  void* temp = nullptr;
  if (e == gpuSuccess) {
    xhal_status_t st = tmp.get(bytes, reinterpret_cast<unsigned char**>(&temp), "scan memory");
    if (st != XHAL_OK) return st;
    e = cub::DeviceScan::ExclusiveSum(temp, bytes, counts, offsets, n + 1, d->stream);
  }
  return e == gpuSuccess ? XHAL_OK : runtime_error(e, "scanning the piece counts");
}

// Allocates p's piece lists (total from the status block) and fills them.
template <class P>
xhal_status_t fill_pieces(Device* d, Matrix* m, Pattern* p, unsigned long long total,
                          const unsigned long long* offsets) {
  p->pieces.num = static_cast<int64_t>(total >> 32);
  p->pieces.num_multi = static_cast<int64_t>(total & 0xffffffffull);
  if (!p->pieces.num) return XHAL_OK;
  const int64_t np = p->pieces.num, nm = p->pieces.num_multi;
  void* all = nullptr;
  const gpuError_t e = gpuMalloc(&all, sizeof(I) * (2 * np + 2 * nm));
  if (e != gpuSuccess) return runtime_error(e, "allocating the piece lists");
  m->allocations.push_back(all);
  I* base = static_cast<I*>(all);
  p->pieces.row = base;
  p->pieces.g = base + np;
  p->pieces.multi_row = base + 2 * np;
  p->pieces.multi_first = base + 2 * np + nm;
  fill_pieces_kernel<P><<<grid_for(p->rows, kBlock), kBlock, 0, d->stream>>>(
      row_ptr_of<P>(*p), p->rows, offsets, base, base + np, base + 2 * np, base + 2 * np + nm);
  return check_launch(d, "csr_create_from_buffers");
}

// Level batches (solve.schedule=levels) are built on the host: this option
// reads the narrowed pattern back (docs/gpu.md).
template <class P>
xhal_status_t host_levels(Device* d, Matrix* m, Pattern* p, bool square) {
  if (!square || p->rows == 0) return XHAL_OK;
  std::vector<P> rp(static_cast<size_t>(p->rows + 1));
  std::vector<I> col(static_cast<size_t>(m->nnz));
  gpuError_t e = gpuMemcpyAsync(rp.data(), row_ptr_of<P>(*p), sizeof(P) * rp.size(),
                                gpuMemcpyDeviceToHost, d->stream);
  if (e == gpuSuccess && m->nnz)
    e = gpuMemcpyAsync(col.data(), p->col, sizeof(I) * col.size(), gpuMemcpyDeviceToHost,
                       d->stream);
  if (e == gpuSuccess) e = gpuStreamSynchronize(d->stream);
  d->d2h_transfers += m->nnz ? 2 : 1;
  d->d2h_bytes += sizeof(P) * rp.size() + sizeof(I) * col.size();
  if (e != gpuSuccess) return runtime_error(e, "reading the pattern for its level batches");
  const std::vector<P> colp(col.begin(), col.end());
  xhal_status_t st = build_level_schedule(d, m, rp.data(), colp.data(), p->rows, true, &p->asc);
  if (st == XHAL_OK)
    st = build_level_schedule(d, m, rp.data(), colp.data(), p->rows, false, &p->desc);
  return st;
}

template <class T, class P>
xhal_status_t create(Device* d, Matrix* m, const T* rp_in, const T* col_in, bool solvable,
                     xhal_plugin_csr_fault_t* out_fault, xhal_plugin_csr_facts_t* out_facts) {
  const int64_t rows = m->rows, cols = m->cols, nnz = m->nnz;
  Temporaries tmp(d);
  Status* s = nullptr;
  unsigned long long *counts_a = nullptr, *offsets_a = nullptr, *counts_t = nullptr,
                     *offsets_t = nullptr;
  unsigned char* diag = nullptr;
  xhal_status_t st = tmp.get(1, &s, "allocating the status block");
  if (st == XHAL_OK) st = tmp.get(rows + 1, &counts_a, "allocating piece counts");
  if (st == XHAL_OK) st = tmp.get(rows + 1, &offsets_a, "allocating piece offsets");
  if (st == XHAL_OK) st = tmp.get(cols + 1, &counts_t, "allocating piece counts");
  if (st == XHAL_OK) st = tmp.get(cols + 1, &offsets_t, "allocating piece offsets");
  if (st == XHAL_OK) st = tmp.get(rows, &diag, "allocating diagonal flags");
  if (st != XHAL_OK) return st;
  TraceLaps trace(d, "csr_create_from_buffers");
  trace.lap("temporaries");

  // Validation, on the arrays as given.
  init_status_kernel<<<1, 1, 0, d->stream>>>(s);
  offsets_kernel<T><<<reduce_grid(rows + 1), kBlock, 0, d->stream>>>(rp_in, rows, nnz, s);
  if (nnz > 0) {
    columns_kernel<T>
        <<<reduce_grid(nnz), kBlock, 0, d->stream>>>(rp_in, col_in, rows, cols, nnz, s);
    first_bad_entry_kernel<T><<<64, kBlock, 0, d->stream>>>(rp_in, col_in, cols, s);
  }
  fault_kernel<T><<<1, 1, 0, d->stream>>>(rp_in, col_in, rows, cols, s);
  d->launches += nnz > 0 ? 5 : 3;
  st = check_launch(d, "csr_create_from_buffers", 0);
  trace.lap("validation");

  // The plugin's own arrays: row pointers as P, columns as I (harmless
  // copies of an invalid pattern, which is dropped below).
  Pattern& a = m->a;
  a.rows = rows;
  void *rp = nullptr, *col = nullptr;
  if (st == XHAL_OK) {
    gpuError_t e = gpuMalloc(&rp, sizeof(P) * (rows + 1));
    if (e == gpuSuccess) m->allocations.push_back(rp);
    if (e == gpuSuccess && nnz) {
      e = gpuMalloc(&col, sizeof(I) * nnz);
      if (e == gpuSuccess) m->allocations.push_back(col);
    }
    if (e != gpuSuccess) st = runtime_error(e, "allocating the pattern");
  }
  if (st == XHAL_OK) {
    if constexpr (sizeof(P) == 8) a.row_ptr64 = static_cast<int64_t*>(rp);
    else a.row_ptr = static_cast<I*>(rp);
    a.col = static_cast<I*>(col);
    convert_kernel<T, P><<<grid_for(rows + 1, kBlock), kBlock, 0, d->stream>>>(rp_in, rows + 1,
                                                                               static_cast<P*>(rp));
    if (nnz)
      convert_kernel<T, I><<<grid_for(nnz, kBlock), kBlock, 0, d->stream>>>(col_in, nnz, a.col);
    d->launches += nnz ? 2 : 1;
    st = check_launch(d, "csr_create_from_buffers", 0);
  }
  // Row indices and A^T: their kernels do not index through the pattern's
  // values (binary searches in bounds, a sort of the columns), so they run
  // on an invalid pattern harmlessly.
  trace.lap("narrowing");
  if (st == XHAL_OK) st = derive_row_indices<P>(d, m);
  trace.lap("row indices");
  if (st == XHAL_OK) st = transpose_on_device<P>(d, m, nullptr);
  trace.lap("A^T (sort)");
  if (st == XHAL_OK) {
    facts_kernel<P><<<reduce_grid(rows), kBlock, 0, d->stream>>>(static_cast<const P*>(rp), a.col,
                                                                 rows, cols, s, counts_a, diag);
    transposed_facts_kernel<P><<<reduce_grid(cols), kBlock, 0, d->stream>>>(
        row_ptr_of<P>(m->at), cols, rows == cols, diag, s, counts_t);
    d->launches += 2;
    st = check_launch(d, "csr_create_from_buffers", 0);
  }
  if (st == XHAL_OK) st = scan_counts(d, tmp, counts_a, rows, offsets_a);
  if (st == XHAL_OK) st = scan_counts(d, tmp, counts_t, cols, offsets_t);
  if (st == XHAL_OK) {
    copy_total_kernel<<<1, 1, 0, d->stream>>>(offsets_a, rows, &s->pieces_a);
    copy_total_kernel<<<1, 1, 0, d->stream>>>(offsets_t, cols, &s->pieces_t);
    d->launches += 2;
    st = check_launch(d, "csr_create_from_buffers", 0);
  }
  // The one read of the call (besides solve.schedule=levels).
  Status h{};
  if (st == XHAL_OK) {
    gpuError_t e = gpuMemcpyAsync(&h, s, sizeof h, gpuMemcpyDeviceToHost, d->stream);
    if (e == gpuSuccess) e = gpuStreamSynchronize(d->stream);
    d->d2h_transfers++;
    d->d2h_bytes += sizeof h;
    if (e != gpuSuccess) st = runtime_error(e, "reading the pattern's status");
  }
  trace.lap("facts, piece scans, status read");
  if (st != XHAL_OK) return st;
  if (h.offsets_key != kNone || h.column_row != kNone) {
    *out_fault = {static_cast<uint32_t>(h.fault[0]), h.fault[1], h.fault[2], h.fault[3],
                  h.fault[4]};
    return XHAL_INVALID_STRUCTURE;
  }
  auto split = [](unsigned long long key, int64_t* row, int64_t* col) {
    *row = key == kNone ? -1 : static_cast<int64_t>(key >> 32);
    *col = key == kNone ? 0 : static_cast<int64_t>(key & 0xffffffffull);
  };
  split(h.above, &out_facts->above_row, &out_facts->above_col);
  split(h.below, &out_facts->below_row, &out_facts->below_col);
  out_facts->missing_diagonal_row = h.missing == kNone ? -1 : static_cast<int64_t>(h.missing);

  // Off-diagonal terms plus the diagonal bound a row's entries; A^T's
  // terms are only counted for a square matrix.
  m->a.max_row_len = static_cast<int64_t>(h.max_a) + 1;
  if (rows == cols) m->at.max_row_len = static_cast<int64_t>(h.max_t) + 1;
  st = fill_pieces<P>(d, m, &m->a, h.pieces_a, offsets_a);
  if (st == XHAL_OK) st = fill_pieces<P>(d, m, &m->at, h.pieces_t, offsets_t);
  trace.lap("piece lists");
  if (st != XHAL_OK || !solvable || rows == 0) return st;
  if (d->options.solve_schedule == SolveSchedule::kLevels) {
    st = host_levels<P>(d, m, &m->a, true);
    if (st == XHAL_OK) st = host_levels<P>(d, m, &m->at, true);
    return st;
  }
  Triangles ta, tt;
  ta.lower = h.above == kNone;
  ta.upper = h.below == kNone;
  ta.long_rows = static_cast<int64_t>(h.long_a);
  ta.long_terms = static_cast<int64_t>(h.long_terms_a);
  ta.max_terms = static_cast<int64_t>(h.max_a);
  tt.lower = ta.upper;
  tt.upper = ta.lower;
  tt.long_rows = static_cast<int64_t>(h.long_t);
  tt.long_terms = static_cast<int64_t>(h.long_terms_t);
  tt.max_terms = static_cast<int64_t>(h.max_t);
  return build_syncfree_schedules<P>(d, m, ta, tt);
}

}  // namespace

xhal_status_t csr_create_from_buffers(void* device, const xhal_plugin_csr_buffers_desc_t* desc,
                                      void** out_matrix, xhal_plugin_csr_fault_t* out_fault,
                                      xhal_plugin_csr_facts_t* out_facts) {
  Device* d = enter(device);
  Matrix* m = nullptr;
  if (const xhal_status_t st = new_matrix(d, desc->rows, desc->cols, desc->nnz, desc->values_buffer,
                                          desc->values_dtype, &m);
      st != XHAL_OK)
    return st;
  const bool solvable = desc->rows == desc->cols &&
                        (m->values_dtype == XHAL_DTYPE_F32 || m->values_dtype == XHAL_DTYPE_F64);
  const void* rp = static_cast<Buffer*>(desc->row_ptr_buffer)->ptr;
  const void* col =
      desc->col_idx_buffer ? static_cast<Buffer*>(desc->col_idx_buffer)->ptr : nullptr;
  const xhal_status_t st = with_offsets(m, [&](auto offset) {
    using P = decltype(offset);
    if (desc->index_dtype == XHAL_DTYPE_I32)
      return create<int32_t, P>(d, m, static_cast<const int32_t*>(rp),
                                static_cast<const int32_t*>(col), solvable, out_fault, out_facts);
    return create<int64_t, P>(d, m, static_cast<const int64_t*>(rp),
                              static_cast<const int64_t*>(col), solvable, out_fault, out_facts);
  });
  if (st != XHAL_OK) {
    gpuStreamSynchronize(d->stream);  // the queued kernels may still read m's arrays
    destroy_matrix(m);
    return st;
  }
  *out_matrix = m;
  return XHAL_OK;
}

}  // namespace xhal::gpu
#endif
