// CSR pattern validation and analysis shared by xhal_csr_create and
// xhal_spgemm (sparse_csr.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "internal.h"

namespace xhal {

struct CsrPattern {
  int64_t rows = 0, cols = 0, nnz = 0;
  IndexArray row_ptr;  // [rows + 1]
  IndexArray col_idx;  // [nnz]
};

// row_ptr[0] == 0, monotone, every row_ptr <= nnz, row_ptr[rows] == nnz;
// columns in [0, cols), strictly increasing within a row. Else
// XHAL_INVALID_STRUCTURE naming the first offending row (`arg` prefixes it).
xhal_status_t validate_csr_pattern(const CsrPattern& p, const char* arg);

// Where a new matrix's values come from, and their dtype (f32 or f64).
struct CsrValues {
  xhal_dtype_t dtype = XHAL_DTYPE_F32;
  const void* host = nullptr;      // nnz of dtype, or
  const Buffer* device = nullptr;  // a buffer of >= nnz of dtype, or neither: zeros
};

// Analyses a validated pattern (row_idx, transpose, triangle and diagonal
// facts), allocates and fills the values buffer and calls the plugin's
// csr_create. The caller has checked that csr_create is present.
// `inside_op`: the matrix is made inside an op (spgemm's C), where the
// plugin may not read from the device, so the core transposes it even for
// a plugin that sets XHAL_PLUGIN_CSR_OWN_TRANSPOSE (which reads A^T's row
// pointers back).
xhal_status_t make_csr(Device* device, CsrPattern&& pattern, xhal_dtype_t index_dtype,
                       CsrValues values, Matrix** out, bool inside_op = false);

// Fills m.t_row_ptr, t_col_idx and t_perm from m's validated row_ptr and
// col_idx (sparse_transpose.cpp).
void transpose_pattern(Matrix& m);

// Row of the first stored diagonal entry equal to zero in `values` (nnz of
// m.values_dtype), or -1.
int64_t first_zero_diagonal(const Matrix& m, const void* values);

// Whether `device` may hold a matrix of value dtype `dtype`: f32 always; f64
// when its plugin knows the desc field (ABI 1.6) and claims f64 for a sparse
// op. Else XHAL_UNSUPPORTED naming `arg`.
xhal_status_t check_values_dtype_supported(const Device* device, xhal_dtype_t dtype,
                                           const char* arg);

// Resolves a matrix handle (XHAL_INVALID_ARGUMENT when NULL or stale) of
// `device` (else XHAL_WRONG_DEVICE).
xhal_status_t check_matrix(Device* device, const char* name, xhal_csr_t handle, Matrix** out);

// Releases a matrix whose handle was already retired (caller holds the
// device's queue lock).
void destroy_matrix(Matrix* m);

}  // namespace xhal
