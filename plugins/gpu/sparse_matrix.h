// The device side of a CSR matrix (docs/semantics.md "Sparse (CSR)"): its
// pattern and the transposed pattern, uploaded once in csr_create
// (sparse_matrix.cpp) with 32-bit row and column numbers and 32- or 64-bit
// entry offsets (Matrix::wide), with the triangular-solve schedules; the
// values stay in the core's buffer. No op moves host memory.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu_plugin.h"
#include "host_array.h"
#include "sparse_solve_syncfree.h"
#include "sparse_views.h"

namespace xhal::gpu {

// Level batches built on the host (sparse_solve_levels.cpp): the solve on
// ROCm, and on CUDA with solve.schedule=levels.
struct LevelSchedule {
  bool built = false;
  void* recs = nullptr;    // RowRecT<P>[rows] in level order
  I* order = nullptr;      // rows sorted by level
  I* level_off = nullptr;  // [levels + 1] into order
  struct Batch {
    int begin, end;  // levels [begin, end)
    bool one_block;
    int64_t width;  // widest level of the batch
  };
  std::vector<Batch> batches;
};

// A narrowed pattern array on the host (csr_create).
using HostIndices = HostArray<I>;

struct Pattern {
  // Row pointers and (transposed) the index of each entry into A's values,
  // null for A: 32-bit, or 64-bit (the *64 pair) in a wide matrix.
  I* row_ptr = nullptr;
  I* perm = nullptr;
  int64_t* row_ptr64 = nullptr;
  int64_t* perm64 = nullptr;
  I* col = nullptr;
  PieceView pieces;  // rows of more than 32 entries, for spmv/spmm
  int64_t rows = 0;
  // At least the entries of the longest row (spmv.short_rows=auto); the
  // largest value where creation did not find out.
  int64_t max_row_len = INT64_MAX;
  LevelSchedule asc, desc;           // host-built level batches
  SyncFreeSchedule sf_asc, sf_desc;  // device-built (CUDA)
};

struct Matrix {
  int64_t rows = 0, cols = 0, nnz = 0;
  // Entry offsets in 64 bits (P = int64_t): nnz >= 2^31 - 1, or the device
  // option sparse_index=64.
  bool wide = false;
  // f32, f64 (ABI 1.6) or f16/bf16 (1.7, spmv/spmm only): the value type
  // the ops instantiate (the sync-free solve publishes an f64 x in two
  // words, syncfree_device.h).
  xhal_dtype_t values_dtype = XHAL_DTYPE_F32;
  Pattern a, at;
  I* row_idx = nullptr;
  SyncFreeState sf;
  Buffer* values = nullptr;
  // The values in A^T's entry order (values[t_perm[e]]), made by the first
  // op on A^T and remade when values->version has moved since
  // (ordered_view below).
  void* t_values = nullptr;
  uint64_t t_values_version = ~uint64_t{0};
  bool t_values_refused = false;  // no memory for the copy: ops gather through t_perm
  std::vector<void*> allocations;
};

// Uploads n elements at `data` into a new device allocation that m owns.
template <class T>
xhal_status_t up_n(Device* d, Matrix* m, const void* data, size_t n, T** out) {
  void* p = nullptr;
  xhal_status_t st = upload(d, data, n * sizeof(T), &p);
  if (p) m->allocations.push_back(p);
  *out = static_cast<T*>(p);
  return st;
}
// The same for v, a std::vector or a HostArray.
template <class V, class T>
xhal_status_t up(Device* d, Matrix* m, const V& v, T** out) {
  static_assert(sizeof(typename V::value_type) == sizeof(T), "element types differ");
  return up_n(d, m, v.data(), v.size(), out);
}

// Calls f(P{}) with P the entry-offset type of m (I, or int64_t when wide):
// the sparse entry points instantiate their kernels for both.
template <class F>
inline decltype(auto) with_offsets(const Matrix* m, F&& f) {
  if (m->wide) return f(int64_t{});
  return f(I{});
}

template <class P>
inline const P* row_ptr_of(const Pattern& p) {
  if constexpr (sizeof(P) == 8) return p.row_ptr64;
  else return p.row_ptr;
}
template <class P>
inline const P* perm_of(const Pattern& p) {
  if constexpr (sizeof(P) == 8) return p.perm64;
  else return p.perm;
}

template <class T = float, class P = I>
inline PatternViewT<T, P> view(const Pattern& p, const Matrix* m) {
  return {row_ptr_of<P>(p), p.col, perm_of<P>(p), static_cast<const T*>(m->values->ptr)};
}

template <class S, class P>
__global__ void transpose_values_kernel(const S* v, const P* perm, int64_t nnz, S* out) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < nnz;
       e += int64_t{gridDim.x} * blockDim.x)
    out[e] = v[perm[e]];
}

// The view an op on pattern p reads. For A^T (p.perm set) its values come
// in the transposed pattern's entry order from m->t_values, so kernels read
// them in order instead of one random gather through t_perm per entry:
// allocated by the first op on A^T (nnz values, kept with the matrix; when
// that allocation fails the ops keep reading through t_perm) and refilled
// on the device's stream whenever the values buffer was written since
// (Buffer::version). S: the value storage type.
template <class S, class P>
xhal_status_t ordered_view(Device* d, const Matrix* m, const Pattern& p, PatternViewT<S, P>* out) {
  *out = view<S, P>(p, m);
  auto* mm = const_cast<Matrix*>(m);
  if (!out->perm || m->nnz == 0 || mm->t_values_refused) return XHAL_OK;
  if (!mm->t_values) {
    if (gpuMalloc(&mm->t_values, sizeof(S) * m->nnz) != gpuSuccess) {
      // Not an error: the ops read through t_perm as before, only slower.
      gpuGetLastError();
      mm->t_values = nullptr;
      mm->t_values_refused = true;
      return XHAL_OK;
    }
    mm->allocations.push_back(mm->t_values);
  }
  if (mm->t_values_version != m->values->version) {
    transpose_values_kernel<S, P><<<grid_for(m->nnz, 256), 256, 0, d->stream>>>(
        static_cast<const S*>(m->values->ptr), out->perm, m->nnz, static_cast<S*>(mm->t_values));
    const xhal_status_t st = check_launch(d, "values in transposed order");
    if (st != XHAL_OK) return st;
    mm->t_values_version = m->values->version;
  }
  out->perm = nullptr;
  out->values = static_cast<const S*>(mm->t_values);
  return XHAL_OK;
}

// A new matrix of rows x cols with nnz entries whose values live in the
// core's values_buffer (f32, f64, f16 or bf16; anything else reads as f32),
// wide when its offsets need 64 bits; XHAL_UNSUPPORTED with a message when
// rows or cols do not fit 32 bits. Both csr_create slots start here.
xhal_status_t new_matrix(Device* d, int64_t rows, int64_t cols, int64_t nnz, void* values_buffer,
                         xhal_dtype_t values_dtype, Matrix** out);

// Frees everything m owns on the device, then m (stream already idle).
void destroy_matrix(Matrix* m);

// m->row_idx (allocated into m) from A's row pointers on the device.
template <class P>
xhal_status_t derive_row_indices(Device* d, Matrix* m);

// Which triangles a square pattern lies in, its rows of more than 32
// off-diagonal entries (how many, and their terms together) and its most
// off-diagonal entries in a row: what the sync-free analysis needs (for
// A^T: `lower` means A^T is lower).
struct Triangles {
  bool lower = true, upper = true;
  int64_t long_rows = 0, long_terms = 0, max_terms = 0;
};

#if !defined(XHAL_GPU_HIP)
// A^T's pattern (m->at: row pointers, columns, index into A's entries) built
// on the device from A's uploaded columns and m->row_idx (CUDA, which sets
// XHAL_PLUGIN_CSR_OWN_TRANSPOSE; sparse_transpose.cpp). With
// host_t_row_ptr, A^T's row pointers come back to the host (cols + 1
// values) for its piece lists and the solve analysis, and the stream is
// synchronised; NULL (csr_create_from_buffers): nothing comes back.
template <class P>
xhal_status_t transpose_on_device(Device* d, Matrix* m, std::vector<P>* host_t_row_ptr);

// The sync-free schedules of m->a and m->at (device patterns up) that lie
// in a triangle, ta and tt as the patterns' facts.
template <class P>
xhal_status_t build_syncfree_schedules(Device* d, Matrix* m, const Triangles& ta,
                                       const Triangles& tt);
#endif

// The level batches of rows [0, rows) of a pattern (row pointers rp, columns
// col on the host, both of the matrix's offset type: the narrowed arrays, or
// the core's int64 ones) walked ascending or descending, uploaded into m;
// leaves s->built false when an off-diagonal entry lies on the wrong side.
template <class P>
xhal_status_t build_level_schedule(Device* d, Matrix* m, const P* rp, const P* col, int64_t rows,
                                   bool ascending, LevelSchedule* s);

// Solves op(A) x = b over level batches (the pattern p of op(A)); T is the
// matrix's value type (float or double), P its entry-offset type.
template <class T, class P>
xhal_status_t level_solve(Device* d, const Matrix* m, const Pattern& p, const LevelSchedule& sc,
                          ColsT<T> b, ColsT<T> x, bool ascending, bool unit, bool transposed,
                          int* launches);

// Solves op(A) x = b with the schedule the pattern has (sync-free for f32 on
// CUDA, or level batches); XHAL_INVALID_STRUCTURE when the pattern is not in
// `triangle`.
template <class T>
xhal_status_t run_solve(Device* d, const Matrix* m, xhal_transpose_t trans,
                        xhal_triangle_t triangle, xhal_diagonal_t diagonal, ColsT<T> b, ColsT<T> x,
                        const char* op, int* launches);

}  // namespace xhal::gpu
