// csr_solve (docs/semantics.md "Sparse (CSR)"): the sync-free solve on CUDA
// (sparse_solve_syncfree.cpp), the level batches on ROCm and with
// solve.schedule=levels (sparse_solve_levels.cpp). Both give the same bits.
#include "sparse_matrix.h"

namespace xhal::gpu {

template <class T>
xhal_status_t run_solve(Device* d, const Matrix* m, xhal_transpose_t trans,
                        xhal_triangle_t triangle, xhal_diagonal_t diagonal, ColsT<T> b, ColsT<T> x,
                        const char* op, int* launches) {
  const bool transposed = trans == XHAL_TRANSPOSE;
  const bool ascending = (triangle == XHAL_TRIANGLE_LOWER) != transposed;
  const Pattern& p = transposed ? m->at : m->a;
  const LevelSchedule& sc = ascending ? p.asc : p.desc;
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
  const bool unit = diagonal == XHAL_DIAGONAL_UNIT;
  return with_offsets(m, [&](auto offset) {
    using P = decltype(offset);
#if !defined(XHAL_GPU_HIP)
    if (use_syncfree) {
      PatternViewT<T, P> v;
      if (const xhal_status_t st = ordered_view<T, P>(d, m, p, &v); st != XHAL_OK) return st;
      return syncfree_solve<T, P>(d, &const_cast<Matrix*>(m)->sf, sf, v, b, x, unit, launches);
    }
#endif
    return level_solve<T, P>(d, m, p, sc, b, x, ascending, unit, transposed, launches);
  });
}
template xhal_status_t run_solve<float>(Device*, const Matrix*, xhal_transpose_t, xhal_triangle_t,
                                        xhal_diagonal_t, ColsT<float>, ColsT<float>, const char*,
                                        int*);
template xhal_status_t run_solve<double>(Device*, const Matrix*, xhal_transpose_t, xhal_triangle_t,
                                         xhal_diagonal_t, ColsT<double>, ColsT<double>, const char*,
                                         int*);

xhal_status_t csr_solve(void* device, void* a, xhal_transpose_t trans, xhal_triangle_t triangle,
                        xhal_diagonal_t diagonal, const xhal_plugin_tensor_t* b,
                        const xhal_plugin_tensor_t* x) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  int launches = 0;
  const Matrix* m = static_cast<const Matrix*>(a);
  xhal_status_t st = with_value_type(m->values_dtype, [&](auto t) {
    using T = decltype(t);
    return run_solve<T>(d, m, trans, triangle, diagonal, cols_of<T>(b), cols_of<T>(x), "csr_solve",
                        &launches);
  });
  if (st != XHAL_OK) return st;
  return check_launch(d, "csr_solve", launches);
}

}  // namespace xhal::gpu
