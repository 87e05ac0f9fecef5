/* Sparse CSR matrices and their ops (f32, f64, f16 or bf16 values; i32 or
 * i64 indices; f16/bf16 matrices take spmv and spmm only).
 * A matrix's pattern is validated and analysed once at creation and kept on
 * the device; its values can be replaced any number of times without
 * re-analysis. Semantics and canonical orders: docs/semantics.md. */
#ifndef XHAL_SPARSE_H_
#define XHAL_SPARSE_H_

#include "xhal/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xhal_csr* xhal_csr_t;

typedef enum xhal_transpose {
  XHAL_TRANSPOSE_NONE = 0, /* op(A) = A */
  XHAL_TRANSPOSE = 1,      /* op(A) = A^T, never materialised per call */
} xhal_transpose_t;

typedef enum xhal_triangle {
  XHAL_TRIANGLE_LOWER = 0, /* A's stored pattern is lower triangular */
  XHAL_TRIANGLE_UPPER = 1,
} xhal_triangle_t;

typedef enum xhal_diagonal {
  XHAL_DIAGONAL_STORED = 0, /* divide by the stored diagonal entry */
  XHAL_DIAGONAL_UNIT = 1,   /* diagonal taken as 1; stored diagonal ignored */
} xhal_diagonal_t;

typedef struct xhal_csr_desc {
  size_t struct_size; /* sizeof(xhal_csr_desc_t) as the caller knows it */
  int64_t rows;
  int64_t cols;
  int64_t nnz;
  xhal_dtype_t index_dtype; /* XHAL_DTYPE_I32 or XHAL_DTYPE_I64 (row_ptr and col_idx) */
  /* Host arrays: row_ptr [rows + 1], col_idx [nnz], values [nnz] (f32).
   * values may be NULL: all values start at 0. */
  const void* row_ptr;
  const void* col_idx;
  const float* values;
  /* Alternatively device buffers (used when the host pointer is NULL).
   * When row_ptr and col_idx both come from buffers, the matrix keeps a
   * device copy of them, and a backend that validates on the device (cuda)
   * never reads the pattern to the host (others read it once); such a
   * matrix's diagonal values are not checked by the solves, and xhal_spgemm
   * reads its pattern to the host once (docs/semantics.md, "Sparse
   * (CSR)"). The app may reuse the buffers once this returns. */
  xhal_buffer_t row_ptr_buffer;
  xhal_buffer_t col_idx_buffer;
  xhal_buffer_t values_buffer;
  /* ---- since 1.6 (absent when struct_size ends before them) ---- */
  /* The matrix's value dtype: XHAL_DTYPE_F32 (also when 0 or absent),
   * XHAL_DTYPE_F64, or XHAL_DTYPE_F16 / XHAL_DTYPE_BF16 (since core 1.7:
   * spmv and spmm only; the solves and spgemm answer XHAL_INVALID_ARGUMENT).
   * values_buffer holds nnz of it. Every op on the matrix takes dense
   * operands of this dtype (docs/semantics.md 7.2, 7.3). */
  xhal_dtype_t values_dtype;
  /* Host values [nnz] in values_dtype; the typed alternative to `values`
   * (which is f32 only). At most one of the two may be non-NULL. */
  const void* values_data;
} xhal_csr_desc_t;

/* Validates: row_ptr[0] == 0, monotone, row_ptr[rows] == nnz; columns in
 * range, strictly increasing within a row. XHAL_INVALID_STRUCTURE names the
 * first offending row. */
XHAL_API xhal_status_t xhal_csr_create(xhal_device_t device, const xhal_csr_desc_t* desc,
                                       xhal_csr_t* out_matrix);
XHAL_API xhal_status_t xhal_csr_release(xhal_csr_t matrix);
XHAL_API xhal_status_t xhal_csr_get_shape(xhal_csr_t matrix, int64_t* out_rows, int64_t* out_cols,
                                          int64_t* out_nnz);
/* The dtype of the matrix's row_ptr and col_idx (XHAL_DTYPE_I32 or
 * XHAL_DTYPE_I64): what xhal_csr_read writes. A created matrix keeps the
 * desc's index_dtype; an xhal_spgemm result is i32 when both inputs are i32
 * and its nnz fits in int32, else i64. */
XHAL_API xhal_status_t xhal_csr_get_index_dtype(xhal_csr_t matrix, xhal_dtype_t* out_index_dtype);

/* The dtype of the matrix's values (f32, f64, f16 or bf16): the
 * desc's values_dtype; an xhal_spgemm result has its inputs' dtype. */
XHAL_API xhal_status_t xhal_csr_get_values_dtype(xhal_csr_t matrix, xhal_dtype_t* out_values_dtype);

/* Replace values (nnz of the matrix's value dtype): from host memory, or from
 * a device tensor of the same device and dtype (device-to-device, no host
 * round trip). xhal_csr_set_values takes f32 only (an f64 matrix gets
 * XHAL_INVALID_ARGUMENT); xhal_csr_set_values_typed takes `dtype`, which
 * must be the matrix's. */
XHAL_API xhal_status_t xhal_csr_set_values(xhal_csr_t matrix, const float* values);
XHAL_API xhal_status_t xhal_csr_set_values_typed(xhal_csr_t matrix, xhal_dtype_t dtype,
                                                 const void* values);
XHAL_API xhal_status_t xhal_csr_set_values_tensor(xhal_csr_t matrix, const xhal_tensor_t* values);
/* Copies the pattern and values to host arrays (any pointer may be NULL),
 * indices in the matrix's index dtype (xhal_csr_get_index_dtype): row_ptr
 * holds rows + 1 and col_idx nnz elements of it. out_values is f32: for an
 * f64 matrix it must be NULL (read the values with xhal_csr_read_values). */
XHAL_API xhal_status_t xhal_csr_read(xhal_csr_t matrix, void* out_row_ptr, void* out_col_idx,
                                     float* out_values);
/* Copies the nnz values to `out_values`, in `dtype`, which must be the
 * matrix's value dtype. */
XHAL_API xhal_status_t xhal_csr_read_values(xhal_csr_t matrix, xhal_dtype_t dtype,
                                            void* out_values);

/* y = alpha * op(A) x + beta * y; x, y vectors of A's value dtype (alpha and
 * beta are widened exactly for an f64 matrix; f16/bf16 compute in f32 and
 * round y once, docs/semantics.md 7.2). beta == 0: y is not read. */
XHAL_API xhal_status_t xhal_spmv(xhal_device_t device, xhal_csr_t a, xhal_transpose_t trans,
                                 float alpha, const xhal_tensor_t* x, float beta,
                                 const xhal_tensor_t* y);
/* Y = alpha * op(A) X + beta * Y; X [op(A).cols, k], Y [op(A).rows, k]. */
XHAL_API xhal_status_t xhal_spmm(xhal_device_t device, xhal_csr_t a, xhal_transpose_t trans,
                                 float alpha, const xhal_tensor_t* x, float beta,
                                 const xhal_tensor_t* y);

/* Solves op(A) x = b for square triangular A. b, x: [n] or [n, k], of A's
 * value dtype (as every tensor of a sparse op). x may be
 * b itself (same buffer and offset); any other overlap is XHAL_ALIASING. */
XHAL_API xhal_status_t xhal_csr_solve(xhal_device_t device, xhal_csr_t a, xhal_transpose_t trans,
                                      xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                                      const xhal_tensor_t* b, const xhal_tensor_t* x);
/* Backward of x = solve(op(A), b): gb = solve(op(A)^T, dx) and, on A's
 * pattern, ga[k] = -sum_c gb[i, c] * x[j, c] with (i, j) = (row k, col k)
 * for op = A and (col k, row k) for op = A^T. ga [nnz] may be NULL. */
XHAL_API xhal_status_t xhal_csr_solve_backward(xhal_device_t device, xhal_csr_t a,
                                               xhal_transpose_t trans, xhal_triangle_t triangle,
                                               xhal_diagonal_t diagonal, const xhal_tensor_t* x,
                                               const xhal_tensor_t* dx, const xhal_tensor_t* gb,
                                               const xhal_tensor_t* ga);

/* C = A B as a new matrix (pattern: every structural product, computed once
 * on the host from the kept patterns and uploaded; values on the device).
 * A and B have one value dtype, which C takes. C's index dtype is i32 when A and B are both i32 and
 * C's nnz fits in int32, else i64 (xhal_csr_get_index_dtype tells). */
XHAL_API xhal_status_t xhal_spgemm(xhal_device_t device, xhal_csr_t a, xhal_csr_t b,
                                   xhal_csr_t* out_c);

#ifdef __cplusplus
}
#endif
#endif
