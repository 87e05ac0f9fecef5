// Stage 2 of the canonical column sum (docs/semantics.md 3.5): the pairwise
// tree over the 32-row block partials, vectorised across columns; one
// template for f32 (the ISA's add_rows) and f64 (a plain loop).
#include <omp.h>

#include <cstring>

#include "isa_kernels.h"
#include "row_ops.h"

namespace xhal::cpu {

namespace {

// dst[j] = a[j] + b[j] (b null: + 0), element type double.
void add_rows_f64(double* dst, const double* a, const double* b, int64_t width) {
  if (b == nullptr) {
    for (int64_t j = 0; j < width; ++j) dst[j] = a[j] + 0.0;
  } else {
    for (int64_t j = 0; j < width; ++j) dst[j] = a[j] + b[j];
  }
}

template <class T, class AddRows>
void colsum_tree_of(T* partial, int64_t blocks, int64_t n, T* out, AddRows add_rows) {
  if (n == 0) return;
  if (blocks == 0) {
    for (int64_t j = 0; j < n; ++j) out[j] = T(0);  // tree of nothing is +0
    return;
  }
  // Columns are independent: each thread runs the whole tree on a slab.
  constexpr int64_t kSlab = 1024;
  const int64_t slabs = (n + kSlab - 1) / kSlab;
#pragma omp parallel for schedule(static) if (blocks * n > (1 << 16))
  for (int64_t s = 0; s < slabs; ++s) {
    const int64_t j0 = s * kSlab;
    const int64_t width = n - j0 < kSlab ? n - j0 : kSlab;
    // Level by level; an odd last node pairs with padding (+0), which is
    // what padding to the next power of two gives.
    for (int64_t count = blocks; count > 1; count = (count + 1) / 2) {
      for (int64_t i = 0; i < count / 2; ++i)
        add_rows(partial + i * n + j0, partial + (2 * i) * n + j0, partial + (2 * i + 1) * n + j0,
                 width);
      if (count % 2 == 1)
        add_rows(partial + (count / 2) * n + j0, partial + (count - 1) * n + j0, nullptr, width);
    }
    std::memcpy(out + j0, partial + j0, width * sizeof(T));
  }
}

}  // namespace

void colsum_tree(float* partial, int64_t blocks, int64_t n, float* out) {
  colsum_tree_of(partial, blocks, n, out, isa().add_rows);
}

void colsum_tree(double* partial, int64_t blocks, int64_t n, double* out) {
  colsum_tree_of(partial, blocks, n, out, add_rows_f64);
}

}  // namespace xhal::cpu
