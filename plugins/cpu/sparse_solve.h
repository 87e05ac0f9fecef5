// Triangular solve of op(A) x = b on a CSR matrix, shared by csr_solve and
// csr_solve_backward (which solves with op(A)^T).
#pragma once

#include "sparse_kernels.h"

namespace xhal::cpu {

// `triangle` names where A's entries lie; b and x are [n, k] (x may be b).
// T is the matrix's value type (float or double; instantiated for both).
template <typename T>
xhal_status_t solve(const CsrMatrix& m, xhal_transpose_t trans, xhal_triangle_t triangle,
                    xhal_diagonal_t diagonal, const Columns<T>& b, const Columns<T>& x);

}  // namespace xhal::cpu
