// A^T's pattern built on the device (CUDA): the plugin sets
// XHAL_PLUGIN_CSR_OWN_TRANSPOSE, so the core leaves its host transposition
// out and csr_create (sparse_matrix.cpp) calls transpose_on_device after
// A's pattern and row indices are up. A stable radix sort of A's entries by
// column (CUB) lists each column's rows in ascending order, which is the
// transpose docs/semantics.md defines (the one the core builds on the host).
// ROCm builds without CUB and keeps the core's transpose.
#include "sparse_matrix.h"

#if !defined(XHAL_GPU_HIP)
#include <cub/device/device_radix_sort.cuh>

namespace xhal::gpu {
namespace {

template <class P>
__global__ void iota_kernel(P* v, int64_t n) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n;
       e += int64_t{gridDim.x} * blockDim.x)
    v[e] = static_cast<P>(e);
}

// A^T's column of entry e: the row of A's entry perm[e].
template <class P>
__global__ void rows_of_kernel(const P* perm, const I* row_idx, int64_t n, I* out) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < n;
       e += int64_t{gridDim.x} * blockDim.x)
    out[e] = row_idx[perm[e]];
}

// t_row_ptr[c] = the first sorted entry whose column is >= c, c in [0, cols].
template <class P>
__global__ void column_starts_kernel(const I* sorted, int64_t nnz, int64_t cols, P* t_row_ptr) {
  for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c <= cols;
       c += int64_t{gridDim.x} * blockDim.x) {
    int64_t lo = 0, hi = nnz;
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (sorted[mid] < c) lo = mid + 1;
      else hi = mid;
    }
    t_row_ptr[c] = static_cast<P>(lo);
  }
}

}  // namespace

template <class P>
xhal_status_t transpose_on_device(Device* d, Matrix* m, std::vector<P>* host_t_row_ptr) {
  const int64_t nnz = m->nnz, cols = m->cols;
  Pattern& at = m->at;
  at.rows = cols;
  if (host_t_row_ptr) host_t_row_ptr->assign(static_cast<size_t>(cols + 1), P(0));
  auto own = [&](size_t bytes, void** out, const char* what) -> xhal_status_t {
    *out = nullptr;
    if (!bytes) return XHAL_OK;
    const gpuError_t e = gpuMalloc(out, bytes);
    if (e != gpuSuccess) return runtime_error(e, what);
    m->allocations.push_back(*out);
    return XHAL_OK;
  };
  void *t_row_ptr = nullptr, *t_col = nullptr, *t_perm = nullptr;
  xhal_status_t st = own(sizeof(P) * (cols + 1), &t_row_ptr, "allocating A^T's row pointers");
  if (st == XHAL_OK) st = own(sizeof(I) * nnz, &t_col, "allocating A^T's columns");
  if (st == XHAL_OK) st = own(sizeof(P) * nnz, &t_perm, "allocating A^T's entry index");
  if (st != XHAL_OK) return st;
  if constexpr (sizeof(P) == 8) {
    at.row_ptr64 = static_cast<int64_t*>(t_row_ptr);
    at.perm64 = static_cast<int64_t*>(t_perm);
  } else {
    at.row_ptr = static_cast<I*>(t_row_ptr);
    at.perm = static_cast<I*>(t_perm);
  }
  at.col = static_cast<I*>(t_col);
  if (nnz == 0) {
    const gpuError_t e = gpuMemsetAsync(t_row_ptr, 0, sizeof(P) * (cols + 1), d->stream);
    return e == gpuSuccess ? XHAL_OK : runtime_error(e, "clearing A^T's row pointers");
  }
  // Sorting on the bits a column number has (cols > 0 here) keeps the
  // radix sort to as few passes as the matrix needs.
  int bits = 1;
  while ((int64_t{1} << bits) < cols) ++bits;
  // Stream-ordered temporaries (the sorted columns, the entry numbers, the
  // sort's own storage), freed on the stream once the launches that read
  // them are queued.
  I* sorted = nullptr;
  P* entries = nullptr;
  void* temp = nullptr;
  size_t temp_bytes = 0;
  gpuError_t e = gpuMallocAsync(reinterpret_cast<void**>(&sorted), sizeof(I) * nnz, d->stream);
  if (e == gpuSuccess)
    e = gpuMallocAsync(reinterpret_cast<void**>(&entries), sizeof(P) * nnz, d->stream);
  if (e == gpuSuccess)
    e = cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, m->a.col, sorted, entries,
                                        static_cast<P*>(t_perm), nnz, 0, bits, d->stream);
  if (e == gpuSuccess) e = gpuMallocAsync(&temp, temp_bytes, d->stream);
  if (e == gpuSuccess) {
    iota_kernel<P><<<grid_for(nnz, 256), 256, 0, d->stream>>>(entries, nnz);
    e = cub::DeviceRadixSort::SortPairs(temp, temp_bytes, m->a.col, sorted, entries,
                                        static_cast<P*>(t_perm), nnz, 0, bits, d->stream);
  }
  if (e == gpuSuccess) {
    rows_of_kernel<P><<<grid_for(nnz, 256), 256, 0, d->stream>>>(static_cast<const P*>(t_perm),
                                                                 m->row_idx, nnz, at.col);
    column_starts_kernel<P><<<grid_for(cols + 1, 256), 256, 0, d->stream>>>(
        sorted, nnz, cols, static_cast<P*>(t_row_ptr));
    d->launches += 3;  // the sort's own launches are not counted
    e = gpuGetLastError();
  }
  gpuFreeAsync(temp, d->stream);
  gpuFreeAsync(entries, d->stream);
  gpuFreeAsync(sorted, d->stream);
  if (e != gpuSuccess) return runtime_error(e, "sorting the entries by column");
  if (!host_t_row_ptr) return XHAL_OK;
  // The host needs A^T's row pointers (its piece lists, the solve analysis):
  // one read of cols + 1 offsets, never the entries.
  e = gpuMemcpyAsync(host_t_row_ptr->data(), t_row_ptr, sizeof(P) * (cols + 1),
                     gpuMemcpyDeviceToHost, d->stream);
  if (e == gpuSuccess) e = gpuStreamSynchronize(d->stream);
  d->d2h_transfers++;
  d->d2h_bytes += sizeof(P) * (cols + 1);
  return e == gpuSuccess ? XHAL_OK : runtime_error(e, "reading A^T's row pointers");
}
template xhal_status_t transpose_on_device<I>(Device*, Matrix*, std::vector<I>*);
template xhal_status_t transpose_on_device<int64_t>(Device*, Matrix*, std::vector<int64_t>*);

}  // namespace xhal::gpu
#endif
