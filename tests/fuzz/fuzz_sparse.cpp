// libFuzzer harness (b): CSR matrices created from the input (rows, cols,
// nnz, index dtype, row_ptr, col_idx and values as host arrays or device
// buffers), then every sparse op on them with tensors whose shapes, offsets
// and dtypes also come from the input: spmv, spmm, csr_solve (both
// triangles, diagonals, transposes), csr_solve_backward, spgemm, csr_read,
// csr_set_values(_tensor), csr_get_shape. Each input releases all it made.
//
// Oracles: the sanitizers; statuses and messages (fuzz_support.h); a failed
// op leaves every buffer unchanged; csr_read gives back the pattern a
// matrix was created from; get_shape agrees with the description.
//
// Layout (make_corpus.py mirrors it): matrices = 1 + pick(2), each a
// description (read_desc); then calls = 1 + pick(10), each op = pick(kOps)
// and the op's reads.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_support.h"
#include "raw_calls.h"

using namespace xhal_fuzz;

namespace {

constexpr uint32_t kOps = 10;
constexpr int64_t kMaxDim = 24;

struct MatrixRecord {
  xhal_csr_t m;
  int64_t rows, cols, nnz;
  uint32_t index_bytes;                        // 4 or 8; 8 when unknown (spgemm results)
  std::vector<int64_t> row_ptr, col_idx;       // as created (empty when unknown)
  bool released = false;                       // its handle is stale (and still in play)
  xhal_dtype_t values_dtype = XHAL_DTYPE_F32;  // xhal_csr_get_values_dtype
  bool f32() const { return values_dtype == XHAL_DTYPE_F32; }
};

uint32_t value_bytes(xhal_dtype_t dtype) {
  return dtype == XHAL_DTYPE_F64 ? 8u : dtype == XHAL_DTYPE_F32 ? 4u : 2u;
}

// Narrow bits of a float: bf16 keeps the top half (truncation is fine for
// a fuzzer), f16 of the small integers the input uses for exact sums, else
// raw top bits.
uint16_t narrow_bits(float v, xhal_dtype_t dtype) {
  uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  if (dtype == XHAL_DTYPE_BF16 || !(v >= -4 && v <= 4) ||
      v != static_cast<float>(static_cast<int>(v)))
    return static_cast<uint16_t>(bits >> 16);
  static const uint16_t kSmall[5] = {0x0000, 0x3C00, 0x4000, 0x4200, 0x4400};  // 0..4 in f16
  const int i = static_cast<int>(v);
  return static_cast<uint16_t>(i < 0 ? 0x8000 | kSmall[-i] : kSmall[i]);
}

// The host (or device) arrays of one description, kept alive for the call.
struct DescArrays {
  std::vector<int64_t> row_ptr64, col_idx64;
  std::vector<int32_t> row_ptr32, col_idx32;
  std::vector<float> values;
  std::vector<double> values64;    // the values widened, for an f64 description
  std::vector<uint16_t> values16;  // the values narrowed, for an f16/bf16 description
};

// Builds a description from the input. Modes: 0 a random valid pattern,
// 1 a square triangular pattern with its diagonal (for the solves), 2 raw
// arrays (anything), 3 a valid pattern passed as device buffers.
xhal_csr_desc_t read_desc(Input& in, Pool& pool, DescArrays& a, std::vector<xhal_buffer_t>& extra,
                          xhal_device_t dev) {
  xhal_csr_desc_t desc{};
  desc.struct_size = sizeof desc;
  const uint32_t mode = in.pick(4);
  int64_t rows = 0, cols = 0;
  if (mode == 2) {
    rows = in.range(-2, kMaxDim);
    cols = in.range(-2, kMaxDim);
  } else if (mode == 1) {
    rows = cols = in.range(0, kMaxDim);
  } else {
    rows = in.range(0, kMaxDim);
    cols = in.range(0, kMaxDim);
  }
  const uint32_t triangle = in.pick(2);  // mode 1: 0 lower, 1 upper
  std::vector<int64_t>& rp = a.row_ptr64;
  std::vector<int64_t>& ci = a.col_idx64;
  if (mode == 2) {
    const int64_t nnz = in.range(-2, 4 * kMaxDim);
    desc.nnz = nnz;
    rp.resize(rows >= 0 ? rows + 1 : 0);
    ci.resize(nnz > 0 ? nnz : 0);
    for (int64_t& v : rp) v = in.range(-2, nnz + 2);
    for (int64_t& v : ci) v = in.range(-2, cols + 2);
  } else {
    rp.push_back(0);
    for (int64_t i = 0; i < rows; ++i) {
      const uint32_t bits = in.u32();  // which of the first 32 columns
      for (int64_t j = 0; j < cols && j < 32; ++j) {
        bool on = (bits >> j) & 1;
        if (mode == 1) on = j == i || (on && (triangle == 0 ? j < i : j > i));
        if (on) ci.push_back(j);
      }
      rp.push_back(static_cast<int64_t>(ci.size()));
    }
    desc.nnz = static_cast<int64_t>(ci.size());
  }
  desc.rows = rows;
  desc.cols = cols;
  // Index dtype: i64, i32, or raw bits (arrays stay i64 then).
  const uint32_t dt_choice = in.pick(4);
  uint32_t dtype = dt_choice == 1 ? XHAL_DTYPE_I32 : XHAL_DTYPE_I64;
  if (dt_choice == 2) dtype = in.u32();
  std::memcpy(&desc.index_dtype, &dtype, sizeof dtype);
  const void* row_ptr = rp.data();
  const void* col_idx = ci.data();
  uint64_t index_bytes = 8;
  if (dtype == XHAL_DTYPE_I32) {
    for (int64_t v : rp) a.row_ptr32.push_back(static_cast<int32_t>(v));
    for (int64_t v : ci) a.col_idx32.push_back(static_cast<int32_t>(v));
    row_ptr = a.row_ptr32.data();
    col_idx = a.col_idx32.data();
    index_bytes = 4;
  }
  // Values: none (zeros), small integers (exact sums), or raw bits.
  const uint32_t values_choice = in.pick(3);
  if (values_choice != 0) {
    a.values.resize(ci.size());
    for (float& v : a.values)
      v = values_choice == 1 ? static_cast<float>(in.range(-4, 4)) : in.f32_bits();
  }
  // Value dtype: usually left 0 (f32); f64 (the values widened, as
  // values_data or a buffer of doubles, and now and then `values` as well,
  // which is refused); f16 or bf16 (the values narrowed, likewise); or a
  // raw value (refused unless f32, f64, f16 or bf16).
  const uint32_t value_dtype = in.pick(8);
  bool both_value_pointers = false;
  xhal_dtype_t typed = XHAL_DTYPE_F32;  // the typed values_data in use, if not f32
  if (value_dtype == 1 || value_dtype == 3 || value_dtype == 4) {
    typed = value_dtype == 1 ? XHAL_DTYPE_F64 : value_dtype == 3 ? XHAL_DTYPE_F16 : XHAL_DTYPE_BF16;
    desc.values_dtype = typed;
    if (typed == XHAL_DTYPE_F64) a.values64.assign(a.values.begin(), a.values.end());
    else
      for (float v : a.values) a.values16.push_back(narrow_bits(v, typed));
    both_value_pointers = in.pick(4) == 0;
  } else if (value_dtype == 2) {
    const uint32_t raw = in.u32();
    std::memcpy(&desc.values_dtype, &raw, sizeof raw);
  }
  const bool f64 = typed == XHAL_DTYPE_F64;
  const bool narrow = typed == XHAL_DTYPE_F16 || typed == XHAL_DTYPE_BF16;
  const void* typed_values = f64      ? static_cast<const void*>(a.values64.data())
                             : narrow ? static_cast<const void*>(a.values16.data())
                                      : nullptr;
  if (mode == 3) {
    // The same arrays in device buffers (possibly too short: the input may
    // trim each buffer by a few bytes).
    auto to_buffer = [&](const void* src, uint64_t bytes) -> xhal_buffer_t {
      const uint64_t trim = static_cast<uint64_t>(in.range(0, 2)) * 4;
      const uint64_t size = bytes > trim ? bytes - trim : 0;
      xhal_buffer_t b = nullptr;
      XF_MUST(xhal_buffer_allocate(dev, size, &b));
      if (size) XF_MUST(xhal_buffer_write(b, 0, src, size));
      extra.push_back(b);
      return b;
    };
    desc.row_ptr_buffer = to_buffer(row_ptr, rp.size() * index_bytes);
    desc.col_idx_buffer = to_buffer(col_idx, ci.size() * index_bytes);
    if (!a.values.empty())
      desc.values_buffer = typed_values
                               ? to_buffer(typed_values, a.values.size() * value_bytes(typed))
                               : to_buffer(a.values.data(), a.values.size() * 4);
  } else {
    desc.row_ptr = row_ptr;
    desc.col_idx = col_idx;
    if (typed_values) desc.values_data = a.values.empty() ? nullptr : typed_values;
    if (!typed_values || both_value_pointers)
      desc.values = a.values.empty() ? nullptr : a.values.data();
  }
  // struct_size: usually the full struct, else anything up to it.
  if (in.pick(8) == 0) desc.struct_size = static_cast<size_t>(in.range(0, sizeof desc));
  (void)pool;
  return desc;
}

void create_matrix(Input& in, xhal_device_t dev, Pool& pool, std::vector<MatrixRecord>& mats,
                   std::vector<xhal_buffer_t>& extra) {
  DescArrays arrays;
  const xhal_csr_desc_t desc = read_desc(in, pool, arrays, extra, dev);
  xhal_csr_t m = reinterpret_cast<xhal_csr_t>(0x1);
  const xhal_status_t s = XF_CALL(xhal_csr_create(dev, &desc, &m));
  if (s != XHAL_OK) {
    if (m != reinterpret_cast<xhal_csr_t>(0x1))
      broken("a failed csr_create wrote out_matrix", "xhal_csr_create", s);
    return;
  }
  uint32_t dtype;
  std::memcpy(&dtype, &desc.index_dtype, sizeof dtype);
  MatrixRecord r{m,
                 desc.rows,
                 desc.cols,
                 desc.nnz,
                 dtype == XHAL_DTYPE_I32 ? 4u : 8u,
                 arrays.row_ptr64,
                 arrays.col_idx64};
  int64_t rows = -1, cols = -1, nnz = -1;
  XF_MUST(xhal_csr_get_shape(m, &rows, &cols, &nnz));
  if (rows != r.rows || cols != r.cols || nnz != r.nnz)
    broken("csr_get_shape differs from the description", "xhal_csr_get_shape", XHAL_OK);
  // The value dtype: the one the description asked for within its
  // struct_size (0 meaning f32).
  xhal_dtype_t values_dtype = XHAL_DTYPE_INVALID;
  XF_MUST(xhal_csr_get_values_dtype(m, &values_dtype));
  uint32_t asked = 0;
  std::memcpy(&asked, &desc.values_dtype, sizeof asked);
  const bool has_field =
      desc.struct_size >= offsetof(xhal_csr_desc_t, values_dtype) + sizeof desc.values_dtype;
  const uint32_t expected = has_field && asked != 0 ? asked : XHAL_DTYPE_F32;
  r.values_dtype = values_dtype;
  if (static_cast<uint32_t>(values_dtype) != expected)
    broken("csr_get_values_dtype differs from the description", "xhal_csr_get_values_dtype",
           XHAL_OK);
  mats.push_back(std::move(r));
}

const MatrixRecord* pick_matrix(Input& in, const std::vector<MatrixRecord>& mats) {
  const uint32_t choice = in.pick(static_cast<uint32_t>(mats.size()) + 1);
  return choice < mats.size() ? &mats[choice] : nullptr;
}

uint32_t raw_or(Input& in, uint32_t choices) {
  const uint32_t v = in.pick(choices + 1);
  if (v < choices) return v;
  const uint32_t raw = in.u32();
  (void)choices;
  return raw;
}

void run_op(uint32_t op, Input& in, xhal_device_t dev, Pool& pool, std::vector<MatrixRecord>& mats,
            std::vector<xhal_buffer_t>& extra) {
  const MatrixRecord* r = pick_matrix(in, mats);
  xhal_csr_t m = r ? r->m : nullptr;
  const int64_t rows = r ? r->rows : in.range(0, 4);
  const int64_t cols = r ? r->cols : rows;
  xhal_device_t d = in.pick(16) == 0 ? nullptr : dev;
  const uint32_t trans = raw_or(in, 2);  // raw: passed through raw_calls.c
  const bool t = trans == XHAL_TRANSPOSE;
  const int64_t op_rows = t ? cols : rows, op_cols = t ? rows : cols;
  switch (op) {
    case 0: {  // spmv
      const float alpha = in.scalar(), beta = in.scalar();
      const xhal_tensor_t x = tensor(in, pool, {op_cols});
      const xhal_tensor_t y = tensor(in, pool, {op_rows});
      XF_OP(pool, raw_spmv(d, m, trans, alpha, &x, beta, &y));
      break;
    }
    case 1: {  // spmm
      const int64_t k = in.range(0, 5);
      const float alpha = in.scalar(), beta = in.scalar();
      const xhal_tensor_t x = tensor(in, pool, {op_cols, k});
      const xhal_tensor_t y = tensor(in, pool, {op_rows, k});
      XF_OP(pool, raw_spmm(d, m, trans, alpha, &x, beta, &y));
      break;
    }
    case 2:
    case 3: {  // csr_solve, csr_solve_backward
      const uint32_t tri = raw_or(in, 2), diag = raw_or(in, 2);
      const bool matrix_rhs = in.flag();
      const int64_t k = in.range(0, 4);
      auto rhs = [&]() {
        return matrix_rhs ? tensor(in, pool, {rows, k}) : tensor(in, pool, {rows});
      };
      if (op == 2) {
        const xhal_tensor_t b = rhs();
        const xhal_tensor_t x = in.flag() ? b : rhs();  // in place, or not
        XF_OP(pool, raw_csr_solve(d, m, trans, tri, diag, &b, &x));
      } else {
        const xhal_tensor_t x = rhs();
        const xhal_tensor_t dx = rhs();
        const xhal_tensor_t gb = rhs();
        const bool with_ga = in.flag();
        const xhal_tensor_t ga = tensor(in, pool, {r ? r->nnz : 0});
        XF_OP(pool, raw_csr_solve_backward(d, m, trans, tri, diag, &x, &dx, &gb,
                                           with_ga ? &ga : nullptr));
      }
      break;
    }
    case 4: {  // spgemm
      const MatrixRecord* rb = pick_matrix(in, mats);
      xhal_csr_t c = reinterpret_cast<xhal_csr_t>(0x1);
      const auto before = pool.snapshot();
      const xhal_status_t s = XF_CALL(xhal_spgemm(d, m, rb ? rb->m : nullptr, &c));
      if (s != XHAL_OK) {
        pool.expect_unchanged(before, "xhal_spgemm", s);
        if (c != reinterpret_cast<xhal_csr_t>(0x1))
          broken("a failed spgemm wrote out_c", "xhal_spgemm", s);
        break;
      }
      MatrixRecord rc{c, 0, 0, 0, 8, {}, {}};
      XF_MUST(xhal_csr_get_shape(c, &rc.rows, &rc.cols, &rc.nnz));
      xhal_dtype_t c_dtype = XHAL_DTYPE_INVALID;
      XF_MUST(xhal_csr_get_values_dtype(c, &c_dtype));
      rc.values_dtype = c_dtype;
      if (c_dtype != r->values_dtype)
        broken("spgemm: C's value dtype is not A's", "xhal_spgemm", s);
      if (rc.rows != r->rows || rc.cols != rb->cols)
        broken("spgemm: C is not A.rows x B.cols", "xhal_spgemm", s);
      mats.push_back(std::move(rc));
      break;
    }
    case 5: {  // csr_read
      if (!r) {
        XF_CALL(xhal_csr_read(nullptr, nullptr, nullptr, nullptr));
        break;
      }
      // Sized for 8-byte indices, whatever the matrix holds (no getter
      // tells the index dtype of a spgemm result, issue 9 defect 9).
      std::vector<int64_t> rp(r->rows + 1, -7), ci(r->nnz, -7);
      std::vector<float> values(r->nnz + 1);  // never NULL, even for nnz 0
      const uint32_t which = in.pick(8);
      const xhal_status_t s =
          XF_CALL(xhal_csr_read(m, which & 1 ? rp.data() : nullptr, which & 2 ? ci.data() : nullptr,
                                which & 4 ? values.data() : nullptr));
      if (r->released) {
        if (s != XHAL_INVALID_ARGUMENT) broken("csr_read of a released matrix", "xhal_csr_read", s);
        break;
      }
      // csr_read's values are f32: an f64, f16 or bf16 matrix refuses them
      // (and then xhal_csr_read_values gives them in its own dtype).
      if (!r->f32() && (which & 4)) {
        if (s != XHAL_INVALID_ARGUMENT)
          broken("csr_read of f32 values from a matrix of another dtype", "xhal_csr_read", s);
        std::vector<double> typed(r->nnz);  // 8 bytes a value: room for any dtype
        XF_MUST(xhal_csr_read_values(m, r->values_dtype, typed.data()));
        break;
      }
      if (s != XHAL_OK) broken("csr_read of a live matrix failed", "xhal_csr_read", s);
      if (!r->row_ptr.empty() && r->index_bytes == 8 && (which & 3) == 3 &&
          (rp != r->row_ptr || ci != r->col_idx))
        broken("csr_read gave another pattern than the one created", "xhal_csr_read", XHAL_OK);
      break;
    }
    case 6: {  // csr_set_values from the host
      std::vector<float> values(r ? r->nnz : 0);
      for (float& v : values) v = in.flag() ? static_cast<float>(in.range(-4, 4)) : in.f32_bits();
      const auto before = pool.snapshot();
      const bool null_values = in.pick(16) == 0;
      const xhal_status_t s =
          XF_CALL(xhal_csr_set_values(m, null_values ? nullptr : values.data()));
      if (s != XHAL_OK) pool.expect_unchanged(before, "xhal_csr_set_values", s);
      if (r && !r->f32() && !r->released) {  // the typed call takes them, converted
        if (s != XHAL_INVALID_ARGUMENT)
          broken("csr_set_values (f32) on a matrix of another dtype", "xhal_csr_set_values", s);
        const std::vector<double> wide(values.begin(), values.end());
        std::vector<uint16_t> narrow;
        for (float v : values) narrow.push_back(narrow_bits(v, r->values_dtype));
        const void* typed = r->values_dtype == XHAL_DTYPE_F64
                                ? static_cast<const void*>(wide.data())
                                : narrow.data();
        const xhal_status_t st =
            XF_CALL(xhal_csr_set_values_typed(m, r->values_dtype, null_values ? nullptr : typed));
        if (!null_values && st != XHAL_OK)
          broken("csr_set_values_typed in the matrix's own dtype", "xhal_csr_set_values_typed", st);
      }
      break;
    }
    case 7: {  // csr_set_values_tensor
      const xhal_tensor_t v = tensor(in, pool, {r ? r->nnz : 0});
      XF_OP(pool, xhal_csr_set_values_tensor(m, &v));
      break;
    }
    case 8: {  // another matrix, mid-way
      if (mats.size() < 6) create_matrix(in, dev, pool, mats, extra);
      break;
    }
    default: {  // release the matrix early and keep its stale handle in play
      if (!r || r->released) break;
      XF_MUST(xhal_csr_release(m));
      const xhal_status_t again = XF_CALL(xhal_csr_release(m));
      if (again != XHAL_INVALID_ARGUMENT)
        broken("releasing a matrix twice", "xhal_csr_release", again);
      int64_t rows_out = -5, cols_out = -5, nnz_out = -5;
      const xhal_status_t s = XF_CALL(xhal_csr_get_shape(m, &rows_out, &cols_out, &nnz_out));
      if (s != XHAL_INVALID_ARGUMENT || rows_out != -5)
        broken("csr_get_shape of a released matrix", "xhal_csr_get_shape", s);
      const_cast<MatrixRecord*>(r)->released = true;
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xhal_fuzz::keep_loaded(XHAL_FUZZ_CPU_PLUGIN);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const xhal_device_t fixture = shared_cpu_device();
  xhal_device_t dev = nullptr;
  XF_MUST(xhal_device_open("cpu", &dev));
  if (dev != fixture)
    broken("reopening the device gave another handle", "xhal_device_open", XHAL_OK);
  std::vector<MatrixRecord> mats;
  std::vector<xhal_buffer_t> extra;  // desc buffers, released at the end
  {
    Pool pool(dev);
    const uint32_t matrices = 1 + in.pick(2);
    for (uint32_t i = 0; i < matrices; ++i) create_matrix(in, dev, pool, mats, extra);
    const uint32_t calls = 1 + in.pick(10);
    for (uint32_t c = 0; c < calls; ++c) {
      const uint32_t op = in.pick(kOps);
      if (verbose()) std::fprintf(stderr, "call %u: op %u\n", c, op);
      run_op(op, in, dev, pool, mats, extra);
    }
    for (const MatrixRecord& r : mats)
      if (!r.released) XF_MUST(xhal_csr_release(r.m));
  }
  for (xhal_buffer_t b : extra) XF_MUST(xhal_buffer_release(b));
  XF_MUST(xhal_device_release(dev));
  return 0;
}
