// f16/bf16 tensors at byte offsets the conformance suite does not use (2, 6
// and 8 bytes into their buffers: odd elements, pairs of words that are or
// are not 8-byte aligned), on vulkan:0 and on the cpu plugin, compared bit
// for bit over whole buffers. The shaders read narrow elements from the
// 32-bit words that hold them and store single elements with atomics on
// their own half-word (shaders/narrow.glsl), so the bytes around every
// output (poisoned before the op) must come back unchanged, as on cpu.
// spmv/spmm on f16/bf16 matrices too: y at those offsets, short and long
// rows, A and A^T, beta 0 (y not read: poisoned) and not.
// Without a Vulkan device the test prints "no device" and passes.
#include <xhal/xhal.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int g_failures = 0;
int g_cases = 0;

void check(xhal_status_t s, const char* what) {
  if (s != XHAL_OK) {
    std::fprintf(stderr, "%s: %s: %s\n", what, xhal_status_name(s), xhal_last_error());
    std::exit(1);
  }
}

uint64_t g_seed = 1;
uint32_t next_random() {
  g_seed ^= g_seed << 13;
  g_seed ^= g_seed >> 7;
  g_seed ^= g_seed << 17;
  return static_cast<uint32_t>(g_seed >> 16);
}

// Random finite narrow values of magnitude about 2^-6 .. 2^2.
std::vector<uint16_t> random_narrow(xhal_dtype_t dt, size_t n) {
  std::vector<uint16_t> v(n);
  for (auto& h : v) {
    const uint32_t r = next_random();
    const uint32_t sign = (r & 1u) << 15, e = (r >> 1) % 9;
    h = dt == XHAL_DTYPE_BF16
            ? static_cast<uint16_t>(sign | ((121u + e) << 7) | ((r >> 8) & 0x7fu))
            : static_cast<uint16_t>(sign | ((9u + e) << 10) | ((r >> 8) & 0x3ffu));
  }
  return v;
}

std::vector<uint16_t> as_f32_bits(const std::vector<float>& f) {
  std::vector<uint16_t> v(f.size() * 2);
  std::memcpy(v.data(), f.data(), f.size() * 4);
  return v;
}

// One tensor's host image: `offset` bytes of 0xA5 filler, the elements (as
// 16-bit words), 16 bytes of filler after them.
struct Image {
  uint64_t offset;
  std::vector<uint8_t> bytes;
};

Image image(uint64_t offset, const std::vector<uint16_t>& words) {
  Image im{offset, std::vector<uint8_t>(offset + words.size() * 2 + 16, 0xA5)};
  std::memcpy(im.bytes.data() + offset, words.data(), words.size() * 2);
  return im;
}

struct Bound {
  std::vector<xhal_buffer_t> buffers;
  ~Bound() {
    for (xhal_buffer_t b : buffers) xhal_buffer_release(b);
  }
  xhal_tensor_t tensor(xhal_device_t d, const Image& im, xhal_dtype_t dt,
                       std::vector<int64_t> shape) {
    xhal_buffer_t b;
    check(xhal_buffer_allocate(d, im.bytes.size(), &b), "allocate");
    check(xhal_buffer_write(b, 0, im.bytes.data(), im.bytes.size()), "write");
    buffers.push_back(b);
    xhal_tensor_t t{};
    t.buffer = b;
    t.offset = im.offset;
    t.dtype = dt;
    t.rank = static_cast<uint32_t>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
    return t;
  }
  std::vector<uint8_t> read(const xhal_tensor_t& t, size_t bytes) {
    std::vector<uint8_t> v(bytes);
    check(xhal_buffer_read(t.buffer, 0, v.data(), bytes), "read");
    return v;
  }
};

// Runs `op` (returning its output buffers' bytes) on both devices.
template <class Op>
void both(const std::string& what, xhal_device_t (&devs)[2], Op&& op) {
  std::vector<uint8_t> out[2];
  for (int k = 0; k < 2; ++k) out[k] = op(devs[k]);
  ++g_cases;
  if (out[0] == out[1]) return;
  size_t i = 0;
  while (i < out[0].size() && i < out[1].size() && out[0][i] == out[1][i]) ++i;
  std::printf("  %-60s DIFFER at byte %zu\n", what.c_str(), i);
  ++g_failures;
}

void append(std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
}

void run_case(xhal_device_t (&devs)[2], xhal_dtype_t dt, int64_t rows, int64_t n, uint64_t off,
              bool f32_params) {
  const char* dn = dt == XHAL_DTYPE_F16 ? "f16" : "bf16";
  const std::string tag = std::string(dn) + " [" + std::to_string(rows) + ", " + std::to_string(n) +
                          "] at byte " + std::to_string(off) + (f32_params ? ", f32 gamma" : "");
  const size_t count = static_cast<size_t>(rows * n);
  const Image x = image(off, random_narrow(dt, count)),
              dy = image(off + 4, random_narrow(dt, count));
  const Image poison = image(off + 2, std::vector<uint16_t>(count, 0xFFFF));
  const xhal_dtype_t pdt = f32_params ? XHAL_DTYPE_F32 : dt;
  auto params = [&](uint64_t o) {
    if (!f32_params) return image(o, random_narrow(dt, n));
    std::vector<float> f(n);
    for (auto& v : f) v = 0.5f + static_cast<float>(next_random() % 1000) / 500.0f;
    return image(o, as_f32_bits(f));
  };
  const Image gamma = params(f32_params ? 4 : off), beta = params(f32_params ? 8 : off + 2);
  const Image pout =
      image(f32_params ? 4 : off + 6, std::vector<uint16_t>(f32_params ? 2 * n : n, 0xFFFF));
  std::vector<float> mean_f(rows), rstd_f(rows);
  for (int64_t r = 0; r < rows; ++r) {
    mean_f[r] = static_cast<float>(static_cast<int>(next_random() % 200) - 100) / 400.0f;
    rstd_f[r] = 0.5f + static_cast<float>(next_random() % 1000) / 700.0f;
  }
  const Image mean = image(4, as_f32_bits(mean_f)), rstd = image(8, as_f32_bits(rstd_f));
  const Image stat_out = image(4, std::vector<uint16_t>(2 * rows, 0xFFFF));
  const std::vector<int64_t> shape{rows, n};

  both("softmax_forward " + tag, devs, [&](xhal_device_t d) {
    Bound b;
    xhal_tensor_t xt = b.tensor(d, x, dt, shape), yt = b.tensor(d, poison, dt, shape);
    check(xhal_softmax_forward(d, &xt, &yt), "softmax_forward");
    return b.read(yt, poison.bytes.size());
  });
  both("softmax_backward (in place on dy) " + tag, devs, [&](xhal_device_t d) {
    Bound b;
    xhal_tensor_t yt = b.tensor(d, x, dt, shape), dyt = b.tensor(d, dy, dt, shape);
    check(xhal_softmax_backward(d, &yt, &dyt, &dyt), "softmax_backward");
    return b.read(dyt, dy.bytes.size());
  });
  both("rms_norm_forward " + tag, devs, [&](xhal_device_t d) {
    Bound b;
    xhal_tensor_t xt = b.tensor(d, x, dt, shape), g = b.tensor(d, gamma, pdt, {n}),
                  yt = b.tensor(d, poison, dt, shape),
                  rs = b.tensor(d, stat_out, XHAL_DTYPE_F32, {rows});
    check(xhal_rms_norm_forward(d, &xt, &g, 1e-5f, &yt, &rs), "rms_norm_forward");
    auto out = b.read(yt, poison.bytes.size());
    append(out, b.read(rs, stat_out.bytes.size()));
    return out;
  });
  both("rms_norm_backward " + tag, devs, [&](xhal_device_t d) {
    Bound b;
    xhal_tensor_t xt = b.tensor(d, x, dt, shape), g = b.tensor(d, gamma, pdt, {n}),
                  rs = b.tensor(d, rstd, XHAL_DTYPE_F32, {rows}), dyt = b.tensor(d, dy, dt, shape),
                  dx = b.tensor(d, poison, dt, shape), dg = b.tensor(d, pout, pdt, {n});
    check(xhal_rms_norm_backward(d, &xt, &g, &rs, &dyt, &dx, &dg), "rms_norm_backward");
    auto out = b.read(dx, poison.bytes.size());
    append(out, b.read(dg, pout.bytes.size()));
    return out;
  });
  both("layer_norm_forward " + tag, devs, [&](xhal_device_t d) {
    Bound b;
    xhal_tensor_t xt = b.tensor(d, x, dt, shape), g = b.tensor(d, gamma, pdt, {n}),
                  be = b.tensor(d, beta, pdt, {n}), yt = b.tensor(d, poison, dt, shape),
                  m = b.tensor(d, stat_out, XHAL_DTYPE_F32, {rows}),
                  rs = b.tensor(d, stat_out, XHAL_DTYPE_F32, {rows});
    check(xhal_layer_norm_forward(d, &xt, &g, &be, 1e-5f, &yt, &m, &rs), "layer_norm_forward");
    auto out = b.read(yt, poison.bytes.size());
    append(out, b.read(m, stat_out.bytes.size()));
    append(out, b.read(rs, stat_out.bytes.size()));
    return out;
  });
  both("layer_norm_backward (in place on dy) " + tag, devs, [&](xhal_device_t d) {
    Bound b;
    xhal_tensor_t xt = b.tensor(d, x, dt, shape), g = b.tensor(d, gamma, pdt, {n}),
                  m = b.tensor(d, mean, XHAL_DTYPE_F32, {rows}),
                  rs = b.tensor(d, rstd, XHAL_DTYPE_F32, {rows}), dyt = b.tensor(d, dy, dt, shape),
                  dg = b.tensor(d, pout, pdt, {n}), db = b.tensor(d, pout, pdt, {n});
    check(xhal_layer_norm_backward(d, &xt, &g, &m, &rs, &dyt, &dyt, &dg, &db),
          "layer_norm_backward");
    auto out = b.read(dyt, dy.bytes.size());
    append(out, b.read(dg, pout.bytes.size()));
    append(out, b.read(db, pout.bytes.size()));
    return out;
  });
}

void run_index_add(xhal_device_t (&devs)[2], xhal_dtype_t dt, int64_t count, int64_t num_rows,
                   int64_t w, uint64_t off) {
  const std::string tag = std::string(dt == XHAL_DTYPE_F16 ? "f16" : "bf16") + " w " +
                          std::to_string(w) + ", " + std::to_string(count) + " sources, at byte " +
                          std::to_string(off);
  std::vector<int64_t> idx(count);
  for (int64_t i = 0; i < count; ++i)
    idx[i] = i % 3 == 0 ? 1 : static_cast<int64_t>(next_random() % num_rows);
  const Image src = image(off, random_narrow(dt, count * w)),
              dst = image(off, random_narrow(dt, num_rows * w));
  both("index_add " + tag, devs, [&](xhal_device_t d) {
    Bound b;
    xhal_tensor_t s = b.tensor(d, src, dt, {count, w}), t = b.tensor(d, dst, dt, {num_rows, w});
    xhal_index_plan_t plan;
    check(xhal_index_plan_create(d, idx.data(), XHAL_DTYPE_I64, count, num_rows, &plan), "plan");
    check(xhal_index_add(d, plan, 0.625f, &s, &t), "index_add");
    xhal_index_plan_release(plan);
    return b.read(t, dst.bytes.size());
  });
}

// A rows x cols pattern whose row r has lens[r % lens.size()] entries (at
// most cols), columns spread over the row.
void pattern(int64_t rows, int64_t cols, const std::vector<int64_t>& lens,
             std::vector<int64_t>& row_ptr, std::vector<int64_t>& col) {
  row_ptr.assign(1, 0);
  col.clear();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = std::min(lens[static_cast<size_t>(r) % lens.size()], cols);
    for (int64_t j = 0; j < n; ++j) col.push_back(j * cols / n + (r % (cols / n)));
    row_ptr.push_back(static_cast<int64_t>(col.size()));
  }
}

void run_spmv(xhal_device_t (&devs)[2], xhal_dtype_t dt, int64_t rows, int64_t cols,
              const std::vector<int64_t>& lens, int64_t k, uint64_t off) {
  std::vector<int64_t> row_ptr, col;
  pattern(rows, cols, lens, row_ptr, col);
  const int64_t nnz = row_ptr.back();
  const std::vector<uint16_t> values = random_narrow(dt, static_cast<size_t>(nnz));
  for (bool trans : {false, true}) {
    const int64_t xn = trans ? rows : cols, yn = trans ? cols : rows;
    const size_t kk = static_cast<size_t>(k ? k : 1);
    const Image x = image(off + 4, random_narrow(dt, static_cast<size_t>(xn) * kk)),
                y = image(off, random_narrow(dt, static_cast<size_t>(yn) * kk)),
                poison = image(off, std::vector<uint16_t>(static_cast<size_t>(yn) * kk, 0xFFFF));
    for (float beta : {0.0f, -0.75f}) {
      const std::string tag = std::string(k ? "spmm " : "spmv ") +
                              (dt == XHAL_DTYPE_F16 ? "f16" : "bf16") + (trans ? " A^T " : " A ") +
                              std::to_string(rows) + " x " + std::to_string(cols) +
                              (k ? ", k " + std::to_string(k) : "") + ", beta " +
                              (beta == 0.0f ? "0" : "-0.75") + ", y at byte " + std::to_string(off);
      const Image& yin = beta == 0.0f ? poison : y;
      both(tag, devs, [&](xhal_device_t d) {
        Bound b;
        xhal_csr_desc_t desc{};
        desc.struct_size = sizeof desc;
        desc.rows = rows;
        desc.cols = cols;
        desc.nnz = nnz;
        desc.index_dtype = XHAL_DTYPE_I64;
        desc.row_ptr = row_ptr.data();
        desc.col_idx = col.data();
        desc.values_dtype = dt;
        desc.values_data = values.data();
        xhal_csr_t m;
        check(xhal_csr_create(d, &desc, &m), "csr_create");
        std::vector<int64_t> xs{xn}, ys{yn};
        if (k) {
          xs.push_back(k);
          ys.push_back(k);
        }
        xhal_tensor_t xt = b.tensor(d, x, dt, xs), yt = b.tensor(d, yin, dt, ys);
        const xhal_transpose_t t = trans ? XHAL_TRANSPOSE : XHAL_TRANSPOSE_NONE;
        check(k ? xhal_spmm(d, m, t, 1.25f, &xt, beta, &yt)
                : xhal_spmv(d, m, t, 1.25f, &xt, beta, &yt),
              k ? "spmm" : "spmv");
        xhal_csr_release(m);
        return b.read(yt, yin.bytes.size());
      });
    }
  }
}

}  // namespace

int main() {
  xhal_device_t devs[2] = {nullptr, nullptr};
  if (xhal_device_open("vulkan:0", &devs[0]) != XHAL_OK) {
    std::printf("no device: %s\n", xhal_last_error());
    return 0;
  }
  check(xhal_device_open("cpu:0", &devs[1]), "open cpu:0");
  for (xhal_dtype_t dt : {XHAL_DTYPE_F16, XHAL_DTYPE_BF16}) {
    // Offsets 2 and 6 take the element-by-element path, 8 the uvec2 path
    // where n % 4 == 0; [2, 20000] runs split (rows=v2) with a tail.
    for (uint64_t off : {2u, 6u, 8u}) {
      for (auto [rows, n] : {std::pair<int64_t, int64_t>{7, 33}, {5, 1028}, {2, 20000}, {65, 3}})
        for (bool f32_params : {false, true}) run_case(devs, dt, rows, n, off, f32_params);
      for (int64_t w : {1, 5, 8}) run_index_add(devs, dt, 300, 40, w, off);
      // Short rows next to long ones (one and two groups of 128 chunks).
      for (int64_t k : {0, 1, 3}) run_spmv(devs, dt, 41, 60, {0, 3, 33, 1, 32, 60}, k, off);
      run_spmv(devs, dt, 7, 5000, {2, 4200, 40}, 0, off);
    }
  }
  xhal_device_release(devs[0]);
  xhal_device_release(devs[1]);
  std::printf("narrow offsets: %d cases, %d differ\n", g_cases, g_failures);
  return g_failures ? 1 : 0;
}
