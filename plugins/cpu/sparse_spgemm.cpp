// spgemm_numeric: values of C = A B on C's pattern (built by the core).
// C[i,j] is a sequential sum from +0 over k ascending of A[i,k] * B[k,j]:
// walking row i of A in ascending k and scattering each product into a
// dense per-thread accumulator adds the terms of every C[i,j] in that order.
// A, B and C share one value type T (f32 or f64), the sum taken in it.
#include <omp.h>

#include <cstdio>
#include <new>

#include "dense_ops.h"
#include "op_registry.h"
#include "sparse_kernels.h"

namespace xhal::cpu {
namespace {

template <typename T, typename IA, typename IB, typename IC>
void multiply_numeric(const CsrPattern<IA>& a, const T* av, const CsrPattern<IB>& b, const T* bv,
                      const CsrPattern<IC>& c, T* cv, int64_t c_cols) {
  const int64_t rows = c.rows;
  const int64_t work =
      static_cast<int64_t>(c.row_ptr[rows]) + static_cast<int64_t>(a.row_ptr[rows]);
  const int teams = work < kParallelMinWork ? 1 : omp_get_max_threads();
  // Allocated here: an exception may not leave the parallel region.
  std::vector<T> accumulators(static_cast<size_t>(teams) * static_cast<size_t>(c_cols));
#pragma omp parallel num_threads(teams)
  {
    T* acc = accumulators.data() + static_cast<size_t>(omp_get_thread_num()) * c_cols;
#pragma omp for schedule(dynamic, 256)
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t cb = c.row_ptr[i], ce = c.row_ptr[i + 1];
      for (int64_t e = cb; e < ce; ++e) acc[c.col_idx[e]] = T(0);
      for (int64_t ea = a.row_ptr[i]; ea < static_cast<int64_t>(a.row_ptr[i + 1]); ++ea) {
        const int64_t k = a.col_idx[ea];
        const T aik = av[ea];
        for (int64_t eb = b.row_ptr[k]; eb < static_cast<int64_t>(b.row_ptr[k + 1]); ++eb) {
          T& s = acc[b.col_idx[eb]];
          s = s + aik * bv[eb];
        }
      }
      for (int64_t e = cb; e < ce; ++e) cv[e] = acc[c.col_idx[e]];
    }
  }
}

}  // namespace

xhal_status_t spgemm_numeric(void* device, void* a, void* b, void* c) {
  count_launch(device);
  const auto& ma = *static_cast<const CsrMatrix*>(a);
  const auto& mb = *static_cast<const CsrMatrix*>(b);
  const auto& mc = *static_cast<const CsrMatrix*>(c);
  if (mc.nnz == 0) return XHAL_OK;
  mark_written(mc.values);
  try {
    // The core gives A, B and C one value dtype.
    with_value_type(mc, [&](auto zero) {
      using T = decltype(zero);
      with_patterns(ma, [&](const auto& pa) {
        with_patterns(mb, [&](const auto& pb) {
          with_patterns(mc, [&](const auto& pc) {
            multiply_numeric(pa.a, ma.value_data<T>(), pb.a, mb.value_data<T>(), pc.a,
                             mc.value_data<T>(), mc.cols);
          });
        });
      });
    });
  } catch (const std::bad_alloc&) {
    set_error("cpu plugin: spgemm_numeric: out of host memory for the row accumulators");
    return XHAL_OUT_OF_MEMORY;
  }
  return XHAL_OK;
}

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(XHAL_OP_SPGEMM, kF32F64Dtypes, api.spgemm_numeric = spgemm_numeric);

}  // namespace xhal::cpu
