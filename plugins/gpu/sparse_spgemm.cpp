// spgemm_numeric (docs/semantics.md "Sparse (CSR)"): the values of C = A B
// on C's pattern, one thread per entry of C; for each k of A's row in
// ascending order a binary search in B's row k; a sequential sum from +0.
#include "sparse_matrix.h"

namespace xhal::gpu {
namespace {

// PA, PB: A's and B's entry-offset types.
template <class T, class PA, class PB>
__global__ void spgemm_kernel(PatternViewT<T, PA> a, PatternViewT<T, PB> b, const I* c_row,
                              const I* c_col, int64_t nnz, T* c_values) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < nnz;
       e += int64_t{gridDim.x} * blockDim.x) {
    const I i = c_row[e], j = c_col[e];
    T s = T(0);
    for (PA ea = a.row_ptr[i]; ea < a.row_ptr[i + 1]; ++ea) {
      const I k = a.col[ea];
      PB lo = b.row_ptr[k], hi = b.row_ptr[k + 1];
      while (lo < hi) {  // B's row k is sorted by column
        const PB mid = lo + (hi - lo) / 2;
        if (b.col[mid] < j) lo = mid + 1;
        else hi = mid;
      }
      if (lo < b.row_ptr[k + 1] && b.col[lo] == j) s = xadd(s, xmul(a.values[ea], b.values[lo]));
    }
    c_values[e] = s;
  }
}

}  // namespace

xhal_status_t spgemm_numeric(void* device, void* a, void* b, void* c) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  const Matrix* ma = static_cast<const Matrix*>(a);
  const Matrix* mb = static_cast<const Matrix*>(b);
  const Matrix* mc = static_cast<const Matrix*>(c);
  if (mc->nnz == 0) return XHAL_OK;
  mc->values->version++;  // C's values are written below
  // The core gives A, B and C one value dtype.
  with_value_type(mc->values_dtype, [&](auto t) {
    using T = decltype(t);
    return with_offsets(ma, [&](auto pa) {
      return with_offsets(mb, [&](auto pb) {
        using PA = decltype(pa);
        using PB = decltype(pb);
        spgemm_kernel<T, PA, PB><<<grid_for(mc->nnz, 256), 256, 0, d->stream>>>(
            view<T, PA>(ma->a, ma), view<T, PB>(mb->a, mb), mc->row_idx, mc->a.col, mc->nnz,
            static_cast<T*>(mc->values->ptr));
        return 0;
      });
    });
  });
  return check_launch(d, "spgemm");
}

}  // namespace xhal::gpu
