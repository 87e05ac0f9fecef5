// csr_solve_backward (docs/semantics.md "Sparse (CSR)"): gb is the
// transposed solve (the other schedule of the pattern, sparse_solve.cpp);
// ga is one thread per entry, -segsum_c(gb[i,c] * x[j,c]), on the device.
#include "sparse_matrix.h"
#include "tree_device.h"

namespace xhal::gpu {
namespace {

template <class T>
__global__ void solve_grad_kernel(const I* row_idx, const I* col, int64_t nnz, bool transposed,
                                  bool unit, ColsT<T> x, ColsT<T> gb, T* ga, int64_t ga_stride) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < nnz;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = row_idx[e], cidx = col[e];
    T g = T(0);
    if (!(unit && r == cidx)) {
      const int64_t i = transposed ? cidx : r, j = transposed ? r : cidx;
      g = -thread_segsum<T>([&](int64_t c) { return xmul(gb.at(i, c), x.at(j, c)); }, x.k);
    }
    ga[e * ga_stride] = g;
  }
}

template <class T>
xhal_status_t backward(Device* d, const Matrix* m, xhal_transpose_t trans, xhal_triangle_t triangle,
                       xhal_diagonal_t diagonal, const xhal_plugin_tensor_t* x,
                       const xhal_plugin_tensor_t* dx, const xhal_plugin_tensor_t* gb,
                       const xhal_plugin_tensor_t* ga) {
  const xhal_transpose_t flipped = trans == XHAL_TRANSPOSE ? XHAL_TRANSPOSE_NONE : XHAL_TRANSPOSE;
  int launches = 0;
  const ColsT<T> gbc = cols_of<T>(gb);
  xhal_status_t st = run_solve<T>(d, m, flipped, triangle, diagonal, cols_of<T>(dx), gbc,
                                  "csr_solve_backward", &launches);
  if (st != XHAL_OK) return st;
  if (ga && m->nnz) {
    solve_grad_kernel<T><<<grid_for(m->nnz, 256), 256, 0, d->stream>>>(
        m->row_idx, m->a.col, m->nnz, trans == XHAL_TRANSPOSE, diagonal == XHAL_DIAGONAL_UNIT,
        cols_of<T>(x), gbc, tensor_as<T>(ga), ga->rank ? ga->strides[0] : 1);
    ++launches;
  }
  return check_launch(d, "csr_solve_backward", launches);
}

}  // namespace

xhal_status_t csr_solve_backward(void* device, void* a, xhal_transpose_t trans,
                                 xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                                 const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* dx,
                                 const xhal_plugin_tensor_t* gb, const xhal_plugin_tensor_t* ga) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  const Matrix* m = static_cast<const Matrix*>(a);
  return with_value_type(m->values_dtype, [&](auto t) {
    return backward<decltype(t)>(d, m, trans, triangle, diagonal, x, dx, gb, ga);
  });
}

}  // namespace xhal::gpu
