// xhal.hpp: a header-only C++17 wrapper over the C API of xhal.h.
// Failures throw xhal::Error (status + the thread's message); handles are
// move-only and released by their destructors. Release order is the
// caller's: buffers, plans and matrices before their Device.
//
//   xhal::Device dev = xhal::Device::open();          // XHAL_DEVICE or best
//   xhal::Buffer x = xhal::Buffer::upload(dev, host);  // std::vector<float>
//   xhal::Buffer y = xhal::Buffer::allocate(dev, x.size());
//   xhal::softmax_forward(dev, xhal::tensor<float>(x, {rows, n}),
//                         xhal::tensor<float>(y, {rows, n}));
//   std::vector<float> out = y.read<float>(rows * n);
#ifndef XHAL_XHAL_HPP_
#define XHAL_XHAL_HPP_

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if __cplusplus >= 202002L && __has_include(<span>)
#include <span>
#define XHAL_HPP_HAS_SPAN 1
#endif

#include "xhal/xhal.h"

namespace xhal {

// ---- errors ---------------------------------------------------------------

class Error : public std::runtime_error {
 public:
  Error(xhal_status_t status, const std::string& message)
      : std::runtime_error(std::string(xhal_status_name(status)) + ": " + message),
        status_(status),
        message_(message) {}
  xhal_status_t status() const noexcept { return status_; }
  // The message alone, without the status name.
  const std::string& message() const noexcept { return message_; }

 private:
  xhal_status_t status_;
  std::string message_;
};

// Throws Error when `status` is not XHAL_OK.
inline void check(xhal_status_t status) {
  if (status != XHAL_OK) throw Error(status, xhal_last_error());
}

namespace detail {

// Move-only owner of a C handle released by `Release`.
template <typename Handle, xhal_status_t (*Release)(Handle)>
class Owner {
 public:
  Owner() = default;
  explicit Owner(Handle h) noexcept : h_(h) {}
  Owner(Owner&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Owner& operator=(Owner&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Owner(const Owner&) = delete;
  Owner& operator=(const Owner&) = delete;
  ~Owner() { reset(); }

  Handle get() const noexcept { return h_; }
  explicit operator bool() const noexcept { return h_ != nullptr; }
  // Gives up ownership without releasing.
  Handle release() noexcept { return std::exchange(h_, nullptr); }
  // Releases now; a failure (e.g. XHAL_BUSY) throws and keeps the handle.
  void close() {
    if (h_) {
      check(Release(h_));
      h_ = nullptr;
    }
  }

 private:
  void reset() noexcept {
    if (h_) Release(h_);  // destructors do not throw
    h_ = nullptr;
  }
  Handle h_ = nullptr;
};

}  // namespace detail

// ---- dtypes -----------------------------------------------------------------

template <typename T>
constexpr xhal_dtype_t dtype_of() {
  if constexpr (std::is_same_v<T, float>) return XHAL_DTYPE_F32;
  else if constexpr (std::is_same_v<T, double>) return XHAL_DTYPE_F64;
  else if constexpr (std::is_same_v<T, int32_t>) return XHAL_DTYPE_I32;
  else if constexpr (std::is_same_v<T, int64_t>) return XHAL_DTYPE_I64;
  else if constexpr (std::is_same_v<T, uint8_t>) return XHAL_DTYPE_U8;
  else static_assert(sizeof(T) == 0, "no xhal dtype for this type");
}

// ---- devices ----------------------------------------------------------------

class Device {
 public:
  Device() = default;
  // Takes ownership of an open handle.
  explicit Device(xhal_device_t d) noexcept : h_(d) {}

  // By selector (grammar of XHAL_DEVICE); nullptr or "" is the default device.
  static Device open(const char* selector = nullptr) {
    xhal_device_t d = nullptr;
    check(xhal_device_open(selector, &d));
    return Device(d);
  }
  static Device open(const std::string& selector) { return open(selector.c_str()); }
  static Device open_index(uint32_t index) {
    xhal_device_t d = nullptr;
    check(xhal_device_open_index(index, &d));
    return Device(d);
  }
  // With the caller's stream as its one queue (cudaStream_t, hipStream_t;
  // xhal_device_open_on_native_queue, docs/interop.md).
  static Device open_on_native_queue(const char* selector, void* native_queue) {
    xhal_device_t d = nullptr;
    check(xhal_device_open_on_native_queue(selector, native_queue, &d));
    return Device(d);
  }
  static uint32_t count() {
    uint32_t n = 0;
    check(xhal_device_count(&n));
    return n;
  }

  xhal_device_info_t info() const {
    xhal_device_info_t i{};
    i.struct_size = sizeof i;
    check(xhal_device_query(get(), &i));
    return i;
  }
  // "cpu:0"
  std::string label() const {
    const xhal_device_info_t i = info();
    return std::string(i.backend) + ":" + std::to_string(i.backend_index);
  }
  bool supports(xhal_op_t op, xhal_dtype_t dtype = XHAL_DTYPE_F32) const {
    return (info().op_dtypes[op] >> dtype) & 1u;
  }
  void synchronize() const { check(xhal_device_synchronize(get())); }
  // The runtime's queue xhal queues on (nullptr on the cpu device).
  void* native_queue() const {
    void* q = nullptr;
    check(xhal_device_get_native_queue(get(), &q));
    return q;
  }
  xhal_counters_t counters() const {
    xhal_counters_t c{};
    check(xhal_device_get_counters(get(), &c));
    return c;
  }

  xhal_device_t get() const noexcept { return h_.get(); }
  explicit operator bool() const noexcept { return static_cast<bool>(h_); }
  void close() { h_.close(); }

 private:
  detail::Owner<xhal_device_t, xhal_device_release> h_;
};

// ---- buffers ----------------------------------------------------------------

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(xhal_buffer_t b) noexcept : h_(b) {}

  static Buffer allocate(const Device& device, uint64_t size) {
    xhal_buffer_t b = nullptr;
    check(xhal_buffer_allocate(device.get(), size, &b));
    return Buffer(b);
  }
  // A buffer holding a copy of `data`.
  template <typename T>
  static Buffer upload(const Device& device, const std::vector<T>& data) {
    Buffer b = allocate(device, data.size() * sizeof(T));
    b.write(data);
    return b;
  }

  uint64_t size() const {
    uint64_t s = 0;
    check(xhal_buffer_size(get(), &s));
    return s;
  }

  void write(const void* src, uint64_t size, uint64_t offset = 0) {
    check(xhal_buffer_write(get(), offset, src, size));
  }
  template <typename T>
  void write(const std::vector<T>& src, uint64_t offset = 0) {
    write(src.data(), src.size() * sizeof(T), offset);
  }
  void read(void* dst, uint64_t size, uint64_t offset = 0) const {
    check(xhal_buffer_read(get(), offset, dst, size));
  }
  template <typename T>
  std::vector<T> read(size_t count, uint64_t offset = 0) const {
    std::vector<T> out(count);
    read(out.data(), count * sizeof(T), offset);
    return out;
  }
#ifdef XHAL_HPP_HAS_SPAN
  template <typename T>
  void write(std::span<const T> src, uint64_t offset = 0) {
    write(src.data(), src.size_bytes(), offset);
  }
  template <typename T>
  void read(std::span<T> dst, uint64_t offset = 0) const {
    read(dst.data(), dst.size_bytes(), offset);
  }
#endif

  // Device-to-device copy of `size` bytes into `dst` (same device).
  void copy_to(Buffer& dst, uint64_t size, uint64_t src_offset = 0, uint64_t dst_offset = 0) const {
    check(xhal_buffer_copy(get(), src_offset, dst.get(), dst_offset, size));
  }
  // Repeats `value` (1, 2, 4 or 8 bytes) over [offset, offset + size).
  template <typename T>
  void fill(const T& value, uint64_t offset, uint64_t size) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
    check(xhal_buffer_fill(get(), offset, size, &value, sizeof(T)));
  }
  template <typename T>
  void fill(const T& value) {
    fill(value, 0, size());
  }

  xhal_buffer_t get() const noexcept { return h_.get(); }
  explicit operator bool() const noexcept { return static_cast<bool>(h_); }
  void close() { h_.close(); }

 private:
  detail::Owner<xhal_buffer_t, xhal_buffer_release> h_;
};

// ---- tensors (plain descriptors; no ownership) -----------------------------

inline xhal_tensor_t tensor(const Buffer& buffer, xhal_dtype_t dtype,
                            const std::vector<int64_t>& shape, uint64_t offset = 0) {
  xhal_tensor_t t{};
  check(xhal_tensor_init(buffer.get(), offset, dtype, static_cast<uint32_t>(shape.size()),
                         shape.data(), &t));
  return t;
}
inline xhal_tensor_t tensor(const Buffer& buffer, xhal_dtype_t dtype,
                            std::initializer_list<int64_t> shape, uint64_t offset = 0) {
  return tensor(buffer, dtype, std::vector<int64_t>(shape), offset);
}
template <typename T>
xhal_tensor_t tensor(const Buffer& buffer, std::initializer_list<int64_t> shape,
                     uint64_t offset = 0) {
  return tensor(buffer, dtype_of<T>(), std::vector<int64_t>(shape), offset);
}
template <typename T>
xhal_tensor_t tensor(const Buffer& buffer, const std::vector<int64_t>& shape, uint64_t offset = 0) {
  return tensor(buffer, dtype_of<T>(), shape, offset);
}
// `t` with explicit element strides (a view; only ops that say so take one).
inline xhal_tensor_t strided(xhal_tensor_t t, const std::vector<int64_t>& strides) {
  for (size_t k = 0; k < strides.size() && k < XHAL_MAX_RANK; ++k) t.strides[k] = strides[k];
  return t;
}
// Metadata-only permuted view: view.shape[i] = t.shape[perm[i]].
inline xhal_tensor_t permute_view(const xhal_tensor_t& t, const std::vector<uint32_t>& perm) {
  xhal_tensor_t v{};
  check(xhal_tensor_permute_view(&t, perm.data(), &v));
  return v;
}

// ---- index plans ------------------------------------------------------------

class IndexPlan {
 public:
  IndexPlan() = default;
  explicit IndexPlan(xhal_index_plan_t p) noexcept : h_(p) {}

  template <typename I>
  static IndexPlan create(const Device& device, const std::vector<I>& indices, uint64_t num_rows) {
    static_assert(std::is_same_v<I, int32_t> || std::is_same_v<I, int64_t>,
                  "indices are int32_t or int64_t");
    xhal_index_plan_t p = nullptr;
    check(xhal_index_plan_create(device.get(), indices.data(), dtype_of<I>(), indices.size(),
                                 num_rows, &p));
    return IndexPlan(p);
  }

  xhal_index_plan_t get() const noexcept { return h_.get(); }
  explicit operator bool() const noexcept { return static_cast<bool>(h_); }
  void close() { h_.close(); }

 private:
  detail::Owner<xhal_index_plan_t, xhal_index_plan_release> h_;
};

// ---- sparse matrices --------------------------------------------------------

class Csr {
 public:
  Csr() = default;
  explicit Csr(xhal_csr_t m) noexcept : h_(m) {}

  // From host arrays; `values` empty means all zero.
  template <typename I>
  static Csr create(const Device& device, int64_t rows, int64_t cols, const std::vector<I>& row_ptr,
                    const std::vector<I>& col_idx, const std::vector<float>& values = {}) {
    return create<I, float>(device, rows, cols, row_ptr, col_idx, values);
  }
  // V: float (an f32 matrix) or double (an f64 matrix, docs/semantics.md 7.3).
  template <class I, class V>
  static Csr create(const Device& device, int64_t rows, int64_t cols, const std::vector<I>& row_ptr,
                    const std::vector<I>& col_idx, const std::vector<V>& values) {
    static_assert(std::is_same_v<V, float> || std::is_same_v<V, double>,
                  "values are float or double");
    return create_typed(device, rows, cols, row_ptr, col_idx, dtype_of<V>(),
                        values.empty() ? nullptr : values.data());
  }
  // An f16 or bf16 matrix (spmv/spmm only, docs/semantics.md 7.2):
  // `values_dtype` XHAL_DTYPE_F16 or XHAL_DTYPE_BF16, `bits` its 16-bit
  // patterns.
  template <class I>
  static Csr create_narrow(const Device& device, int64_t rows, int64_t cols,
                           const std::vector<I>& row_ptr, const std::vector<I>& col_idx,
                           xhal_dtype_t values_dtype, const std::vector<uint16_t>& bits) {
    return create_typed(device, rows, cols, row_ptr, col_idx, values_dtype,
                        bits.empty() ? nullptr : bits.data());
  }
  // From host arrays with `values` (NULL: all zero) of `values_dtype`.
  template <class I>
  static Csr create_typed(const Device& device, int64_t rows, int64_t cols,
                          const std::vector<I>& row_ptr, const std::vector<I>& col_idx,
                          xhal_dtype_t values_dtype, const void* values) {
    static_assert(std::is_same_v<I, int32_t> || std::is_same_v<I, int64_t>,
                  "indices are int32_t or int64_t");
    xhal_csr_desc_t d{};
    d.struct_size = sizeof d;
    d.rows = rows;
    d.cols = cols;
    d.nnz = static_cast<int64_t>(col_idx.size());
    d.index_dtype = dtype_of<I>();
    d.row_ptr = row_ptr.data();
    d.col_idx = col_idx.data();
    d.values_dtype = values_dtype;
    d.values_data = values;
    return create(device, d);
  }
  static Csr create(const Device& device, const xhal_csr_desc_t& desc) {
    xhal_csr_t m = nullptr;
    check(xhal_csr_create(device.get(), &desc, &m));
    return Csr(m);
  }

  int64_t rows() const { return shape().rows; }
  int64_t cols() const { return shape().cols; }
  int64_t nnz() const { return shape().nnz; }

  // XHAL_DTYPE_F32, F64, F16 or BF16.
  xhal_dtype_t values_dtype() const {
    xhal_dtype_t d = XHAL_DTYPE_INVALID;
    check(xhal_csr_get_values_dtype(get(), &d));
    return d;
  }
  // Values of the matrix's dtype (float or double; another is an error).
  template <class V>
  void set_values(const std::vector<V>& values) {
    check(xhal_csr_set_values_typed(get(), dtype_of<V>(), values.data()));
  }
  void set_values(const xhal_tensor_t& values) {
    check(xhal_csr_set_values_tensor(get(), &values));
  }
  template <class V = float>
  std::vector<V> values() const {
    std::vector<V> v(static_cast<size_t>(nnz()));
    check(xhal_csr_read_values(get(), dtype_of<V>(), v.data()));
    return v;
  }
  // Pattern as int64 regardless of the stored index dtype.
  void pattern(std::vector<int64_t>* row_ptr, std::vector<int64_t>* col_idx) const;

  xhal_csr_t get() const noexcept { return h_.get(); }
  explicit operator bool() const noexcept { return static_cast<bool>(h_); }
  void close() { h_.close(); }

 private:
  struct Shape {
    int64_t rows, cols, nnz;
  };
  Shape shape() const {
    Shape s{};
    check(xhal_csr_get_shape(get(), &s.rows, &s.cols, &s.nnz));
    return s;
  }
  detail::Owner<xhal_csr_t, xhal_csr_release> h_;
};

inline void Csr::pattern(std::vector<int64_t>* row_ptr, std::vector<int64_t>* col_idx) const {
  const Shape s = shape();
  // xhal_csr_read writes the matrix's own index dtype. Read into int64
  // arrays filled with -1: int64 storage overwrites every element and has
  // row_ptr[0] == 0; int32 storage fills only the first half (rows >= 1:
  // the last element stays -1; rows == 0: row_ptr[0]'s high half stays set).
  std::vector<int64_t> rp(static_cast<size_t>(s.rows + 1), -1), ci(static_cast<size_t>(s.nnz));
  check(xhal_csr_read(get(), rp.data(), nullptr, nullptr));
  const bool int64_storage = rp.front() == 0 && rp.back() != -1;
  if (int64_storage) {
    check(xhal_csr_read(get(), nullptr, ci.data(), nullptr));
  } else {
    std::vector<int32_t> rp32(rp.size()), ci32(ci.size());
    check(xhal_csr_read(get(), rp32.data(), ci32.data(), nullptr));
    rp.assign(rp32.begin(), rp32.end());
    ci.assign(ci32.begin(), ci32.end());
  }
  if (row_ptr) *row_ptr = std::move(rp);
  if (col_idx) *col_idx = std::move(ci);
}

// ---- ops (thin: same arguments as the C calls, throwing on failure) --------

inline void index_select(const Device& d, const IndexPlan& p, const xhal_tensor_t& src,
                         const xhal_tensor_t& out) {
  check(xhal_index_select(d.get(), p.get(), &src, &out));
}
inline void index_add(const Device& d, const IndexPlan& p, float alpha, const xhal_tensor_t& src,
                      const xhal_tensor_t& dst) {
  check(xhal_index_add(d.get(), p.get(), alpha, &src, &dst));
}
inline void permute(const Device& d, const xhal_tensor_t& src, const std::vector<uint32_t>& perm,
                    const xhal_tensor_t& dst) {
  if (perm.size() != src.rank)
    throw Error(XHAL_INVALID_ARGUMENT, "argument 'perm': " + std::to_string(perm.size()) +
                                           " entries for a tensor of rank " +
                                           std::to_string(src.rank));
  check(xhal_permute(d.get(), &src, perm.data(), &dst));
}
inline void softmax_forward(const Device& d, const xhal_tensor_t& x, const xhal_tensor_t& y) {
  check(xhal_softmax_forward(d.get(), &x, &y));
}
inline void softmax_backward(const Device& d, const xhal_tensor_t& y, const xhal_tensor_t& dy,
                             const xhal_tensor_t& dx) {
  check(xhal_softmax_backward(d.get(), &y, &dy, &dx));
}
inline void rms_norm_forward(const Device& d, const xhal_tensor_t& x, const xhal_tensor_t& gamma,
                             float eps, const xhal_tensor_t& y, const xhal_tensor_t& rstd) {
  check(xhal_rms_norm_forward(d.get(), &x, &gamma, eps, &y, &rstd));
}
inline void rms_norm_backward(const Device& d, const xhal_tensor_t& x, const xhal_tensor_t& gamma,
                              const xhal_tensor_t& rstd, const xhal_tensor_t& dy,
                              const xhal_tensor_t& dx, const xhal_tensor_t& dgamma) {
  check(xhal_rms_norm_backward(d.get(), &x, &gamma, &rstd, &dy, &dx, &dgamma));
}
inline void layer_norm_forward(const Device& d, const xhal_tensor_t& x, const xhal_tensor_t& gamma,
                               const xhal_tensor_t& beta, float eps, const xhal_tensor_t& y,
                               const xhal_tensor_t& mean, const xhal_tensor_t& rstd) {
  check(xhal_layer_norm_forward(d.get(), &x, &gamma, &beta, eps, &y, &mean, &rstd));
}
inline void layer_norm_backward(const Device& d, const xhal_tensor_t& x, const xhal_tensor_t& gamma,
                                const xhal_tensor_t& mean, const xhal_tensor_t& rstd,
                                const xhal_tensor_t& dy, const xhal_tensor_t& dx,
                                const xhal_tensor_t& dgamma, const xhal_tensor_t& dbeta) {
  check(xhal_layer_norm_backward(d.get(), &x, &gamma, &mean, &rstd, &dy, &dx, &dgamma, &dbeta));
}
inline void spmv(const Device& d, const Csr& a, xhal_transpose_t trans, float alpha,
                 const xhal_tensor_t& x, float beta, const xhal_tensor_t& y) {
  check(xhal_spmv(d.get(), a.get(), trans, alpha, &x, beta, &y));
}
inline void spmm(const Device& d, const Csr& a, xhal_transpose_t trans, float alpha,
                 const xhal_tensor_t& x, float beta, const xhal_tensor_t& y) {
  check(xhal_spmm(d.get(), a.get(), trans, alpha, &x, beta, &y));
}
inline void csr_solve(const Device& d, const Csr& a, xhal_transpose_t trans,
                      xhal_triangle_t triangle, xhal_diagonal_t diagonal, const xhal_tensor_t& b,
                      const xhal_tensor_t& x) {
  check(xhal_csr_solve(d.get(), a.get(), trans, triangle, diagonal, &b, &x));
}
// ga may be nullptr.
inline void csr_solve_backward(const Device& d, const Csr& a, xhal_transpose_t trans,
                               xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                               const xhal_tensor_t& x, const xhal_tensor_t& dx,
                               const xhal_tensor_t& gb, const xhal_tensor_t* ga) {
  check(xhal_csr_solve_backward(d.get(), a.get(), trans, triangle, diagonal, &x, &dx, &gb, ga));
}
inline Csr spgemm(const Device& d, const Csr& a, const Csr& b) {
  xhal_csr_t c = nullptr;
  check(xhal_spgemm(d.get(), a.get(), b.get(), &c));
  return Csr(c);
}

}  // namespace xhal

#endif
