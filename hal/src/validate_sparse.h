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

// A pattern's first fault, as a plugin that validates on the device
// reports it (xhal_plugin.h, csr_create_from_buffers).
using CsrFault = xhal_plugin_csr_fault_t;

// row_ptr[0] == 0, monotone, every row_ptr <= nnz, row_ptr[rows] == nnz;
// columns in [0, cols), strictly increasing within a row. The first fault
// in that order (kind XHAL_PLUGIN_CSR_FAULT_NONE: none).
CsrFault find_csr_fault(const CsrPattern& p);

// XHAL_INVALID_STRUCTURE with the message naming f's row (`arg` prefixes
// it); XHAL_OK for kind NONE. One text for the host and the device paths.
xhal_status_t csr_fault_error(const CsrFault& f, int64_t rows, int64_t cols, int64_t nnz,
                              const char* arg);

// find_csr_fault, then csr_fault_error.
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

struct CsrShape {
  int64_t rows = 0, cols = 0, nnz = 0;
};

// Where make_csr_on_device takes a pattern from: checked device buffers
// of the device (col_idx NULL when nnz is 0), or host arrays of the index
// dtype with the core's widened copy of them (`kept`, moved into the matrix
// once the plugin has found the pattern valid).
struct DevicePatternSource {
  const Buffer* row_ptr = nullptr;
  const Buffer* col_idx = nullptr;
  const void* host_row_ptr = nullptr;
  const void* host_col_idx = nullptr;
  CsrPattern* kept = nullptr;
};

// The device path of xhal_csr_create (plugin ABI 1.9, the plugin has
// csr_create_from_buffers): the pattern is copied (buffers) or uploaded
// (host arrays) into buffers of the device and validated and analysed by
// the plugin. From buffers the matrix keeps those copies and the host
// never sees the pattern; from host arrays it keeps the widened host copy
// and finds the diagonal on it, as the host path does. An invalid pattern
// gets the host path's message.
xhal_status_t make_csr_on_device(Device* device, const CsrShape& shape, xhal_dtype_t index_dtype,
                                 const DevicePatternSource& from, CsrValues values, Matrix** out);

// Fills m.row_ptr and m.col_idx of a matrix whose pattern is on the device
// (one read of each array; nothing for any other matrix). Caller holds the
// device's queue lock.
xhal_status_t fetch_host_pattern(Matrix& m);

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
