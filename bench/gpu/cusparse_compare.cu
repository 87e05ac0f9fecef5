// xhal's sparse ops on the cuda device against cuSPARSE on the same GPU, the
// same matrices and the same process:
//   river: a 10^6-reach river network (50 basins, long mainstems, thousands
//          of levels), routing matrix I - 0.5 * upstream, lower triangular;
//   random: 10^6 x 10^6, 10 entries per row (10^7 non-zeros); its lower
//          triangle with a unit-dominant diagonal for the solve.
// SpMV, SpSV (cuSPARSE analysis amortised over 100 solves; xhal's analysis
// happens once in csr_create and is amortised the same way). Every solve
// schedule the cuda plugin offers (device options solve.*, docs/device-
// options.md) is timed side by side, each on a device opened with its
// options, and every result is compared bit for bit with a host
// implementation of the canonical solve. The per-call cost of an op lives
// in call_overhead.cu.
// Usage: cusparse_compare [--f64] [out.json]   (XHAL_DEVICE picks the
// device; items of XHAL_DEVICE_OPTIONS apply to every run, the variants'
// come after them). --f64: the same matrices with f64 values and vectors
// (docs/semantics.md 7.3), cuSPARSE in CUDA_R_64F, the default schedule only.
#include <cusparse.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "timing.h"
#include "xhal/xhal.h"

#define CS(x)                                                                                \
  do {                                                                                       \
    cusparseStatus_t s_ = (x);                                                               \
    if (s_ != CUSPARSE_STATUS_SUCCESS) {                                                     \
      std::fprintf(stderr, "%s:%d cusparse %d\n", __FILE__, __LINE__, static_cast<int>(s_)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

using xhal_gpu_bench::Clock;
using xhal_gpu_bench::ms_since;

struct Csr {
  int64_t n = 0;
  std::vector<int32_t> rp, ci;
  std::vector<float> v;
};

// River network: nodes numbered outlet-first inside each basin; the parent
// of node i is a few nodes before it, giving long chains (depth ~ size/7).
static Csr river(int64_t n, int basins, std::mt19937_64& rng) {
  std::vector<int64_t> parent(n, -1);
  const int64_t per = n / basins;
  std::geometric_distribution<int> step(0.2);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t start = (i / per) * per;
    if (i == start) continue;
    parent[i] = std::max<int64_t>(start, i - 1 - step(rng));
  }
  // Renumber upstream-first: i' = n-1-i, so a parent has a larger index and
  // the row of a reach lists its tributaries (columns < row): lower.
  std::vector<std::vector<int32_t>> up(n);
  for (int64_t i = 0; i < n; ++i)
    if (parent[i] >= 0) up[n - 1 - parent[i]].push_back(static_cast<int32_t>(n - 1 - i));
  Csr a;
  a.n = n;
  a.rp.push_back(0);
  for (int64_t r = 0; r < n; ++r) {
    std::sort(up[r].begin(), up[r].end());
    for (int32_t c : up[r]) {
      a.ci.push_back(c);
      a.v.push_back(-0.5f);
    }
    a.ci.push_back(static_cast<int32_t>(r));
    a.v.push_back(1.0f);
    a.rp.push_back(static_cast<int32_t>(a.ci.size()));
  }
  return a;
}

// Random n x n with `per_row` entries per row; lower: columns in [0, r) plus
// the diagonal.
static Csr random_matrix(int64_t n, int per_row, bool lower, std::mt19937_64& rng) {
  Csr a;
  a.n = n;
  a.rp.push_back(0);
  std::uniform_real_distribution<float> val(-1.0f, 1.0f);
  std::vector<int32_t> cols;
  for (int64_t r = 0; r < n; ++r) {
    cols.clear();
    const int64_t limit = lower ? r : n;
    const int want = lower ? std::min<int64_t>(per_row - 1, r) : per_row;
    std::uniform_int_distribution<int64_t> col(0, std::max<int64_t>(limit - 1, 0));
    while (static_cast<int>(cols.size()) < want) {
      const int32_t c = static_cast<int32_t>(col(rng));
      if (std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
    }
    if (lower) cols.push_back(static_cast<int32_t>(r));
    std::sort(cols.begin(), cols.end());
    for (int32_t c : cols) {
      a.ci.push_back(c);
      a.v.push_back(c == r ? static_cast<float>(per_row) : val(rng) / per_row);
    }
    a.rp.push_back(static_cast<int32_t>(a.ci.size()));
  }
  return a;
}

static int levels_of(const Csr& a) {
  std::vector<int> lv(a.n, 0);
  int m = 0;
  for (int64_t r = 0; r < a.n; ++r) {
    for (int32_t e = a.rp[r]; e < a.rp[r + 1]; ++e)
      if (a.ci[e] != r) lv[r] = std::max(lv[r], lv[a.ci[e]] + 1);
    m = std::max(m, lv[r]);
  }
  return m + 1;
}

// Solve schedules timed side by side: device options of the cuda plugin.
struct Variant {
  const char* name;
  const char* options;  // items for the cuda backend
};
static const std::vector<Variant> kVariants = {
    {"default", ""},
    {"x1", "solve.blocks_per_sm=1"},
    {"x2", "solve.blocks_per_sm=2"},
    {"x4", "solve.blocks_per_sm=4"},
    {"16-term rounds", "solve.poll_terms=16"},
    {"32-term rounds", "solve.poll_terms=32"},
    {"converged", "solve.poll=converged"},
    {"lanes", "solve.poll=lanes"},
    {"levels", "solve.schedule=levels"},
};

// docs/semantics.md 3.7 on the host: chunks of 32 summed from +0, chunk
// sums by the pairwise tree padded with +0 to a power of two.
template <class T>
static T segsum(const std::vector<T>& t) {
  if (t.size() <= 32) {
    T s = 0;
    for (T v : t) s += v;
    return s;
  }
  std::vector<T> c;
  for (size_t b = 0; b < t.size(); b += 32) {
    T s = 0;
    for (size_t k = b; k < std::min(t.size(), b + 32); ++k) s += t[k];
    c.push_back(s);
  }
  size_t p = 1;
  while (p < c.size()) p *= 2;
  c.resize(p, T(0));
  for (; p > 1; p /= 2)
    for (size_t i = 0; i < p / 2; ++i) c[i] = c[2 * i] + c[2 * i + 1];
  return c[0];
}

// The canonical solve of op(A) x = b for lower A with a stored diagonal:
// the reference every GPU schedule must match bit for bit.
template <class T>
static std::vector<T> host_solve(const Csr& a, bool transposed, const std::vector<T>& b) {
  const int64_t n = a.n;
  std::vector<int32_t> rp = a.rp, ci = a.ci;
  std::vector<T> v(a.v.begin(), a.v.end());
  if (transposed) {  // rows of A^T = columns of A, entries by ascending row of A
    std::vector<int32_t> cnt(n + 1, 0);
    for (int32_t c : a.ci) ++cnt[c + 1];
    for (int64_t i = 0; i < n; ++i) cnt[i + 1] += cnt[i];
    rp = cnt;
    std::vector<int32_t> next(cnt.begin(), cnt.end() - 1);
    for (int64_t r = 0; r < n; ++r)
      for (int32_t e = a.rp[r]; e < a.rp[r + 1]; ++e) {
        const int32_t q = next[a.ci[e]]++;
        ci[q] = static_cast<int32_t>(r);
        v[q] = a.v[e];
      }
  }
  std::vector<T> x(n), terms;
  for (int64_t s = 0; s < n; ++s) {
    const int64_t k = transposed ? n - 1 - s : s;
    terms.clear();
    T d = 0;
    for (int32_t e = rp[k]; e < rp[k + 1]; ++e) {
      if (ci[e] == k) d = v[e];
      else terms.push_back(v[e] * x[ci[e]]);
    }
    x[k] = (b[k] - segsum(terms)) / d;
  }
  return x;
}

// Elements whose bits differ.
template <class T>
static long long differing(const std::vector<T>& got, const std::vector<T>& want) {
  long long d = 0;
  for (size_t i = 0; i < want.size(); ++i) d += std::memcmp(&got[i], &want[i], sizeof(T)) != 0;
  return d;
}

struct Result {
  std::string name;
  double xhal_ms, cusparse_ms;
  std::string note;
};
static std::vector<Result> g_results;
static int g_differing = 0;  // solve results whose bits differ from the host solve

static void report(const std::string& name, double x, double c, const std::string& note) {
  std::printf("%-34s xhal %9.4f ms   cuSPARSE %9.4f ms   speedup %5.2fx  %s\n", name.c_str(), x, c,
              c / x, note.c_str());
  g_results.push_back({name, x, c, note});
}

static xhal_tensor_t vec(xhal_buffer_t b, int64_t n, xhal_dtype_t dtype = XHAL_DTYPE_F32) {
  xhal_tensor_t t{};
  t.buffer = b;
  t.dtype = dtype;
  t.rank = 1;
  t.shape[0] = n;
  return t;
}

// The device XHAL_DEVICE selects, opened with the user's XHAL_DEVICE_OPTIONS
// plus `options` for the cuda backend (options apply at the first open of a
// device, so no other handle of it may be open), with the matrix and the
// vectors x (= hx) and y on it.
struct Session {
  xhal_device_t dev;
  xhal_csr_t m;
  xhal_buffer_t bx, by;
  xhal_tensor_t tx, ty;
  double create_ms;
};

static std::string g_base_options;  // XHAL_DEVICE_OPTIONS at start

template <class T>
static Session open_session(const xhal_csr_desc_t& desc, const std::vector<T>& hx,
                            const char* options) {
  constexpr xhal_dtype_t kDtype = sizeof(T) == 8 ? XHAL_DTYPE_F64 : XHAL_DTYPE_F32;
  std::string all = g_base_options;
  if (*options) all += (all.empty() ? "cuda:" : ",cuda:") + std::string(options);
  if (all.empty()) unsetenv("XHAL_DEVICE_OPTIONS");
  else setenv("XHAL_DEVICE_OPTIONS", all.c_str(), 1);
  Session s{};
  XK(xhal_device_open(nullptr, &s.dev));
  const int64_t n = desc.rows;
  auto t0 = Clock::now();
  XK(xhal_csr_create(s.dev, &desc, &s.m));
  XK(xhal_device_synchronize(s.dev));
  s.create_ms = ms_since(t0);
  XK(xhal_buffer_allocate(s.dev, n * sizeof(T), &s.bx));
  XK(xhal_buffer_allocate(s.dev, n * sizeof(T), &s.by));
  XK(xhal_buffer_write(s.bx, 0, hx.data(), n * sizeof(T)));
  s.tx = vec(s.bx, n, kDtype);
  s.ty = vec(s.by, n, kDtype);
  return s;
}

static void close_session(Session& s) {
  XK(xhal_buffer_release(s.bx));
  XK(xhal_buffer_release(s.by));
  XK(xhal_csr_release(s.m));
  XK(xhal_device_release(s.dev));
}

static double time_xhal(xhal_device_t dev, const std::function<void()>& op, int reps) {
  for (int i = 0; i < 3; ++i) op();
  XK(xhal_device_synchronize(dev));
  auto t = Clock::now();
  for (int i = 0; i < reps; ++i) op();
  XK(xhal_device_synchronize(dev));
  return ms_since(t) / reps;
}

// T: float, or double (--f64: the matrix's values widened, f64 vectors).
template <class T>
static void compare(const char* label, const Csr& a, bool solve, cusparseHandle_t h) {
  constexpr bool kF64 = sizeof(T) == 8;
  constexpr cudaDataType kCuda = kF64 ? CUDA_R_64F : CUDA_R_32F;
  constexpr xhal_dtype_t kDtype = kF64 ? XHAL_DTYPE_F64 : XHAL_DTYPE_F32;
  const int64_t n = a.n, nnz = static_cast<int64_t>(a.ci.size());
  std::printf("== %s%s: n %lld, nnz %lld%s\n", label, kF64 ? " f64" : "", (long long)n,
              (long long)nnz, solve ? (", levels " + std::to_string(levels_of(a))).c_str() : "");
  std::vector<T> hx(n);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& v : hx) v = u(rng);
  const std::vector<T> values(a.v.begin(), a.v.end());
  // ---- xhal ----
  xhal_csr_desc_t desc{};
  desc.struct_size = sizeof desc;
  desc.rows = n;
  desc.cols = n;
  desc.nnz = nnz;
  desc.index_dtype = XHAL_DTYPE_I32;
  desc.row_ptr = a.rp.data();
  desc.col_idx = a.ci.data();
  desc.values_dtype = kDtype;
  desc.values_data = values.data();
  double create_ms = 0, buffer_create_ms = 0, x_spmv = 0, x_solve = 0, x_solve_t = 0, x_bwd = 0;
  std::string variant_note[2];
  std::vector<T> want[2];
  if (solve)
    for (int tr = 0; tr < 2; ++tr) want[tr] = host_solve(a, tr != 0, hx);
  std::vector<T> got(n);
  // f64 solves run over level batches whatever the options say.
  const size_t variants = solve && !kF64 ? kVariants.size() : 1;
  for (size_t v = 0; v < variants; ++v) {
    Session s = open_session(desc, hx, kVariants[v].options);
    if (v == 0) {
      create_ms = s.create_ms;
      char text[512] = {};
      XK(xhal_device_get_options(s.dev, text, sizeof text, nullptr));
      std::printf("  options in force: %s\n", text);
      x_spmv = time_xhal(
          s.dev, [&] { XK(xhal_spmv(s.dev, s.m, XHAL_TRANSPOSE_NONE, 1.0f, &s.tx, 0.0f, &s.ty)); },
          50);
    }
    if (!solve) {
      close_session(s);
      break;
    }
    // Every schedule must give the canonical bits (the host solve).
    for (int tr = 0; tr < 2; ++tr) {
      const xhal_transpose_t t = tr ? XHAL_TRANSPOSE : XHAL_TRANSPOSE_NONE;
      const double ms = time_xhal(
          s.dev,
          [&] {
            XK(xhal_csr_solve(s.dev, s.m, t, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, &s.tx,
                              &s.ty));
          },
          100);
      XK(xhal_buffer_read(s.by, 0, got.data(), n * sizeof(T)));
      const long long diff = differing(got, want[tr]);
      if (v == 0) (tr ? x_solve_t : x_solve) = ms;
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s%s %.4f (csr_create %.1f ms)%s", v ? "; " : "",
                    kVariants[v].name, ms, s.create_ms,
                    diff ? (" (" + std::to_string(diff) + " DIFFERENT)").c_str() : "");
      variant_note[tr] += buf;
      std::printf(
          "  %s %-28s %9.4f ms (csr_create %.1f ms)%s\n", tr ? "A^T" : "A  ", kVariants[v].name, ms,
          s.create_ms,
          diff ? ("  " + std::to_string(diff) + " ELEMENTS DIFFER FROM THE HOST SOLVE").c_str()
               : "");
      if (diff) ++g_differing;
    }
    if (v == 0) {
      // The same matrix created from device buffers (plugin ABI 1.9: the
      // pattern is validated and analysed on the device), best of three;
      // its solves must give the same canonical bits.
      xhal_buffer_t brp, bci, bv;
      XK(xhal_buffer_allocate(s.dev, (n + 1) * 4, &brp));
      XK(xhal_buffer_allocate(s.dev, nnz * 4, &bci));
      XK(xhal_buffer_allocate(s.dev, nnz * sizeof(T), &bv));
      XK(xhal_buffer_write(brp, 0, a.rp.data(), (n + 1) * 4));
      XK(xhal_buffer_write(bci, 0, a.ci.data(), nnz * 4));
      XK(xhal_buffer_write(bv, 0, values.data(), nnz * sizeof(T)));
      xhal_csr_desc_t bd = desc;
      bd.row_ptr = bd.col_idx = nullptr;
      bd.values_data = nullptr;
      bd.row_ptr_buffer = brp;
      bd.col_idx_buffer = bci;
      bd.values_buffer = bv;
      for (int rep = 0; rep < 3; ++rep) {
        xhal_csr_t mb;
        XK(xhal_device_synchronize(s.dev));
        const auto t = Clock::now();
        XK(xhal_csr_create(s.dev, &bd, &mb));
        XK(xhal_device_synchronize(s.dev));
        const double ms = ms_since(t);
        buffer_create_ms = rep ? std::min(buffer_create_ms, ms) : ms;
        for (int tr = 0; tr < 2; ++tr) {
          XK(xhal_csr_solve(s.dev, mb, tr ? XHAL_TRANSPOSE : XHAL_TRANSPOSE_NONE,
                            XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, &s.tx, &s.ty));
          XK(xhal_buffer_read(s.by, 0, got.data(), n * sizeof(T)));
          if (const long long diff = differing(got, want[tr])) {
            std::printf("  %s from device buffers: %lld ELEMENTS DIFFER FROM THE HOST SOLVE\n",
                        tr ? "A^T" : "A  ", diff);
            ++g_differing;
          }
        }
        XK(xhal_csr_release(mb));
      }
      for (xhal_buffer_t b : {brp, bci, bv}) XK(xhal_buffer_release(b));
      std::printf("  csr_create from device buffers: %.1f ms (best of 3; host arrays %.1f ms)\n",
                  buffer_create_ms, s.create_ms);
      xhal_buffer_t bg, bga;
      XK(xhal_buffer_allocate(s.dev, n * sizeof(T), &bg));
      XK(xhal_buffer_allocate(s.dev, nnz * sizeof(T), &bga));
      xhal_tensor_t tg = vec(bg, n, kDtype), tga = vec(bga, nnz, kDtype);
      x_bwd = time_xhal(
          s.dev,
          [&] {
            XK(xhal_csr_solve_backward(s.dev, s.m, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                       XHAL_DIAGONAL_STORED, &s.ty, &s.tx, &tg, &tga));
          },
          50);
      XK(xhal_buffer_release(bg));
      XK(xhal_buffer_release(bga));
    }
    close_session(s);
  }

  // ---- cuSPARSE on its own copies of the same data ----
  int32_t *drp, *dci;
  T *dv, *dx, *dy;
  CK(cudaMalloc(&drp, (n + 1) * 4));
  CK(cudaMalloc(&dci, nnz * 4));
  CK(cudaMalloc(&dv, nnz * sizeof(T)));
  CK(cudaMalloc(&dx, n * sizeof(T)));
  CK(cudaMalloc(&dy, n * sizeof(T)));
  auto tu = Clock::now();
  CK(cudaMemcpy(drp, a.rp.data(), (n + 1) * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dci, a.ci.data(), nnz * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dv, values.data(), nnz * sizeof(T), cudaMemcpyHostToDevice));
  const double upload_ms = ms_since(tu);
  CK(cudaMemcpy(dx, hx.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  cusparseSpMatDescr_t A;
  cusparseDnVecDescr_t X, Y;
  CS(cusparseCreateCsr(&A, n, n, nnz, drp, dci, dv, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                       CUSPARSE_INDEX_BASE_ZERO, kCuda));
  CS(cusparseCreateDnVec(&X, n, dx, kCuda));
  CS(cusparseCreateDnVec(&Y, n, dy, kCuda));
  const T one = 1, zero = 0;
  size_t bsz = 0;
  CS(cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, X, &zero, Y, kCuda,
                             CUSPARSE_SPMV_ALG_DEFAULT, &bsz));
  void* buf = nullptr;
  CK(cudaMalloc(&buf, std::max<size_t>(bsz, 16)));
  auto time_cuda = [&](auto&& op, int reps) {
    for (int i = 0; i < 3; ++i) op();
    CK(cudaDeviceSynchronize());
    auto t = Clock::now();
    for (int i = 0; i < reps; ++i) op();
    CK(cudaDeviceSynchronize());
    return ms_since(t) / reps;
  };
  const double c_spmv = time_cuda(
      [&] {
        CS(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, X, &zero, Y, kCuda,
                        CUSPARSE_SPMV_ALG_DEFAULT, buf));
      },
      50);
  // values + cols, row_ptr, x, y
  const double bytes = nnz * (4.0 + sizeof(T)) + (n + 1) * 4.0 + 2.0 * n * sizeof(T);
  char note[1600];
  std::snprintf(note, sizeof note, "(xhal %.2f TB/s counting values, columns, row_ptr, x, y)",
                bytes / (x_spmv * 1e-3) / 1e12);
  const std::string name = std::string(label) + (kF64 ? " f64" : "");
  report(name + " SpMV", x_spmv, c_spmv, note);
  if (solve) {
    for (int tr = 0; tr < 2; ++tr) {
      const auto op = tr ? CUSPARSE_OPERATION_TRANSPOSE : CUSPARSE_OPERATION_NON_TRANSPOSE;
      cusparseSpSVDescr_t sv;
      CS(cusparseSpSV_createDescr(&sv));
      cusparseFillMode_t fill = CUSPARSE_FILL_MODE_LOWER;
      cusparseDiagType_t diag = CUSPARSE_DIAG_TYPE_NON_UNIT;
      CS(cusparseSpMatSetAttribute(A, CUSPARSE_SPMAT_FILL_MODE, &fill, sizeof fill));
      CS(cusparseSpMatSetAttribute(A, CUSPARSE_SPMAT_DIAG_TYPE, &diag, sizeof diag));
      size_t ssz = 0;
      CS(cusparseSpSV_bufferSize(h, op, &one, A, X, Y, kCuda, CUSPARSE_SPSV_ALG_DEFAULT, sv, &ssz));
      void* sbuf;
      CK(cudaMalloc(&sbuf, std::max<size_t>(ssz, 16)));
      CK(cudaDeviceSynchronize());
      auto t = Clock::now();
      CS(cusparseSpSV_analysis(h, op, &one, A, X, Y, kCuda, CUSPARSE_SPSV_ALG_DEFAULT, sv, sbuf));
      CK(cudaDeviceSynchronize());
      const double analysis = ms_since(t);
      const double c_solve = time_cuda(
          [&] {
            CS(cusparseSpSV_solve(h, op, &one, A, X, Y, kCuda, CUSPARSE_SPSV_ALG_DEFAULT, sv));
          },
          100);
      const double xs = tr ? x_solve_t : x_solve;
      std::snprintf(note, sizeof note,
                    "(default schedule; amortised /100: xhal %.4f incl. csr_create %.1f ms "
                    "(plain upload of row_ptr, col, values: %.1f ms), cuSPARSE %.4f incl. "
                    "analysis %.1f ms; variants: %s)",
                    xs + create_ms / 100, create_ms, upload_ms, c_solve + analysis / 100, analysis,
                    variant_note[tr].c_str());
      report(name + (tr ? " SpSV A^T" : " SpSV A"), xs, c_solve + analysis / 100, note);
      std::snprintf(note, sizeof note,
                    "(amortised /100 with the matrix created from device buffers: xhal %.4f incl. "
                    "csr_create %.1f ms, cuSPARSE %.4f incl. analysis %.1f ms)",
                    xs + buffer_create_ms / 100, buffer_create_ms, c_solve + analysis / 100,
                    analysis);
      report(name + (tr ? " SpSV A^T amortised, device-buffer creation"
                        : " SpSV A amortised, device-buffer creation"),
             xs + buffer_create_ms / 100, c_solve + analysis / 100, note);
      if (tr) {
        std::snprintf(note, sizeof note,
                      "(xhal: gb solve + ga on device; cuSPARSE: A^T SpSV only)");
        report(name + " solve backward", x_bwd, c_solve + analysis / 100, note);
      }
      CS(cusparseSpSV_destroyDescr(sv));
      CK(cudaFree(sbuf));
    }
  }
  CS(cusparseDestroySpMat(A));
  CS(cusparseDestroyDnVec(X));
  CS(cusparseDestroyDnVec(Y));
  for (void* p : {(void*)drp, (void*)dci, (void*)dv, (void*)dx, (void*)dy, buf}) CK(cudaFree(p));
}

template <class T>
static void compare_all(cusparseHandle_t h) {
  std::mt19937_64 rng(2026);
  {
    Csr r = river(1000000, 50, rng);
    compare<T>("river 1e6", r, true, h);
  }
  {
    Csr g = random_matrix(1000000, 10, false, rng);
    compare<T>("random 1e7 nnz", g, false, h);
  }
  {
    Csr l = random_matrix(1000000, 10, true, rng);
    compare<T>("random lower 1e7 nnz", l, true, h);
  }
}

int main(int argc, char** argv) {
  const bool f64 = argc > 1 && std::strcmp(argv[1], "--f64") == 0;
  if (f64) {
    --argc;
    ++argv;
  }
  if (const char* o = std::getenv("XHAL_DEVICE_OPTIONS")) g_base_options = o;
  {
    // Names the device, then lets it go: each run below opens it with its options.
    xhal_device_t dev = open_device_and_say_which();
    XK(xhal_device_release(dev));
  }
  cusparseHandle_t h;
  CS(cusparseCreate(&h));
  if (f64) compare_all<double>(h);
  else compare_all<float>(h);
  if (argc > 1) {
    FILE* f = std::fopen(argv[1], "w");
    std::fprintf(f, "[\n");
    for (size_t i = 0; i < g_results.size(); ++i)
      std::fprintf(
          f, "  {\"name\": \"%s\", \"xhal_ms\": %.6f, \"cusparse_ms\": %.6f, \"note\": \"%s\"}%s\n",
          g_results[i].name.c_str(), g_results[i].xhal_ms, g_results[i].cusparse_ms,
          g_results[i].note.c_str(), i + 1 < g_results.size() ? "," : "");
    std::fprintf(f, "]\n");
    std::fclose(f);
  }
  cusparseDestroy(h);
  if (g_differing)
    std::printf("FAIL: %d solve result(s) differ from the host solve\n", g_differing);
  return g_differing ? 1 : 0;
}
