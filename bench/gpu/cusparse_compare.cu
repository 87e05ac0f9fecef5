// xhal's sparse ops on the cuda device against cuSPARSE on the same GPU, the
// same matrices and the same process:
//   river: a 10^6-reach river network (50 basins, long mainstems, thousands
//          of levels), routing matrix I - 0.5 * upstream, lower triangular;
//   random: 10^6 x 10^6, 10 entries per row (10^7 non-zeros); its lower
//          triangle with a unit-dominant diagonal for the solve.
// SpMV, SpSV (cuSPARSE analysis amortised over 100 solves; xhal's analysis
// happens once in csr_create and is amortised the same way). The per-call
// cost of an op lives in call_overhead.cu.
// Usage: cusparse_compare [out.json]   (XHAL_DEVICE picks the device)
#include <cusparse.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "xhal/xhal.h"

#define CS(x)                                                                               \
  do {                                                                                      \
    cusparseStatus_t s_ = (x);                                                              \
    if (s_ != CUSPARSE_STATUS_SUCCESS) {                                                    \
      std::fprintf(stderr, "%s:%d cusparse %d\n", __FILE__, __LINE__, static_cast<int>(s_)); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

using Clock = std::chrono::steady_clock;
static double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

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

// Solve schedules timed side by side (environment read by the cuda plugin).
struct Variant {
  const char* name;
  std::vector<std::pair<const char*, const char*>> env;
};
static const std::vector<Variant> kVariants = {
    {"default", {}},
    {"x1", {{"XHAL_CUDA_SOLVE_BLOCKS_PER_SM", "1"}}},
    {"x2", {{"XHAL_CUDA_SOLVE_BLOCKS_PER_SM", "2"}}},
    {"x4", {{"XHAL_CUDA_SOLVE_BLOCKS_PER_SM", "4"}}},
    {"16-term rounds", {{"XHAL_CUDA_SOLVE_WIDE", "0"}}},
    {"32-term rounds", {{"XHAL_CUDA_SOLVE_WIDE", "1"}}},
    {"converged", {{"XHAL_CUDA_SOLVE_POLL", "converged"}}},
    {"lanes", {{"XHAL_CUDA_SOLVE_POLL", "lanes"}}},
};

// docs/semantics.md 3.7 on the host: chunks of 32 summed from +0, chunk
// sums by the pairwise tree padded with +0 to a power of two.
static float segsum(const std::vector<float>& t) {
  if (t.size() <= 32) {
    float s = 0.0f;
    for (float v : t) s += v;
    return s;
  }
  std::vector<float> c;
  for (size_t b = 0; b < t.size(); b += 32) {
    float s = 0.0f;
    for (size_t k = b; k < std::min(t.size(), b + 32); ++k) s += t[k];
    c.push_back(s);
  }
  size_t p = 1;
  while (p < c.size()) p *= 2;
  c.resize(p, 0.0f);
  for (; p > 1; p /= 2)
    for (size_t i = 0; i < p / 2; ++i) c[i] = c[2 * i] + c[2 * i + 1];
  return c[0];
}

// The canonical solve of op(A) x = b for lower A with a stored diagonal:
// the reference every GPU schedule must match bit for bit.
static std::vector<float> host_solve(const Csr& a, bool transposed, const std::vector<float>& b) {
  const int64_t n = a.n;
  std::vector<int32_t> rp = a.rp, ci = a.ci;
  std::vector<float> v = a.v;
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
  std::vector<float> x(n), terms;
  for (int64_t s = 0; s < n; ++s) {
    const int64_t k = transposed ? n - 1 - s : s;
    terms.clear();
    float d = 0.0f;
    for (int32_t e = rp[k]; e < rp[k + 1]; ++e) {
      if (ci[e] == k) d = v[e];
      else terms.push_back(v[e] * x[ci[e]]);
    }
    x[k] = (b[k] - segsum(terms)) / d;
  }
  return x;
}

// Elements whose bits differ.
static long long differing(const std::vector<uint32_t>& got, const std::vector<float>& want) {
  long long d = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    uint32_t w;
    std::memcpy(&w, &want[i], 4);
    d += got[i] != w;
  }
  return d;
}

struct Result {
  std::string name;
  double xhal_ms, cusparse_ms;
  std::string note;
};
static std::vector<Result> g_results;

static void report(const std::string& name, double x, double c, const std::string& note) {
  std::printf("%-34s xhal %9.4f ms   cuSPARSE %9.4f ms   speedup %5.2fx  %s\n", name.c_str(), x,
              c, c / x, note.c_str());
  g_results.push_back({name, x, c, note});
}

static xhal_tensor_t vec(xhal_buffer_t b, int64_t n) {
  xhal_tensor_t t{};
  t.buffer = b;
  t.dtype = XHAL_DTYPE_F32;
  t.rank = 1;
  t.shape[0] = n;
  return t;
}

static void compare(const char* label, const Csr& a, bool solve, xhal_device_t dev,
                    cusparseHandle_t h) {
  const int64_t n = a.n, nnz = static_cast<int64_t>(a.ci.size());
  std::printf("== %s: n %lld, nnz %lld%s\n", label, (long long)n, (long long)nnz,
              solve ? (", levels " + std::to_string(levels_of(a))).c_str() : "");
  std::vector<float> hx(n);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& v : hx) v = u(rng);

  // ---- xhal ----
  xhal_csr_desc_t desc{};
  desc.struct_size = sizeof desc;
  desc.rows = n;
  desc.cols = n;
  desc.nnz = nnz;
  desc.index_dtype = XHAL_DTYPE_I32;
  desc.row_ptr = a.rp.data();
  desc.col_idx = a.ci.data();
  desc.values = a.v.data();
  xhal_csr_t m;
  auto t0 = Clock::now();
  XK(xhal_csr_create(dev, &desc, &m));
  XK(xhal_device_synchronize(dev));
  const double create_ms = ms_since(t0);
  xhal_buffer_t bx, by;
  XK(xhal_buffer_allocate(dev, n * 4, &bx));
  XK(xhal_buffer_allocate(dev, n * 4, &by));
  XK(xhal_buffer_write(bx, 0, hx.data(), n * 4));
  xhal_tensor_t tx = vec(bx, n), ty = vec(by, n);
  auto time_xhal = [&](auto&& op, int reps) {
    for (int i = 0; i < 3; ++i) op();
    XK(xhal_device_synchronize(dev));
    auto t = Clock::now();
    for (int i = 0; i < reps; ++i) op();
    XK(xhal_device_synchronize(dev));
    return ms_since(t) / reps;
  };
  const double x_spmv = time_xhal([&] { XK(xhal_spmv(dev, m, XHAL_TRANSPOSE_NONE, 1.0f, &tx, 0.0f, &ty)); }, 50);
  double x_solve = 0, x_solve_t = 0, x_bwd = 0;
  std::string variant_note[2];
  if (solve) {
    auto solve_ms = [&](xhal_transpose_t tr) {
      return time_xhal([&] {
        XK(xhal_csr_solve(dev, m, tr, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, &tx, &ty));
      }, 100);
    };
    // Every schedule must give the canonical bits (the host solve).
    std::vector<uint32_t> got(n);
    for (int tr = 0; tr < 2; ++tr) {
      const xhal_transpose_t t = tr ? XHAL_TRANSPOSE : XHAL_TRANSPOSE_NONE;
      const std::vector<float> want = host_solve(a, tr != 0, hx);
      for (size_t v = 0; v < kVariants.size(); ++v) {
        for (const auto& kv : kVariants[v].env) setenv(kv.first, kv.second, 1);
        const double ms = solve_ms(t);
        XK(xhal_buffer_read(by, 0, got.data(), n * 4));
        for (const auto& kv : kVariants[v].env) unsetenv(kv.first);
        const long long diff = differing(got, want);
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s%s %.4f%s", v ? "; " : "", kVariants[v].name, ms,
                      diff ? (" (" + std::to_string(diff) + " DIFFERENT)").c_str() : "");
        variant_note[tr] += buf;
        std::printf("  %s %-28s %9.4f ms%s\n", tr ? "A^T" : "A  ", kVariants[v].name, ms,
                    diff ? ("  " + std::to_string(diff) + " ELEMENTS DIFFER FROM THE HOST SOLVE").c_str() : "");
      }
      // The level batches (host-built schedule, XHAL_CUDA_SOLVE=levels at
      // creation) on a second copy of the matrix.
      setenv("XHAL_CUDA_SOLVE", "levels", 1);
      xhal_csr_t ml;
      auto tl = Clock::now();
      XK(xhal_csr_create(dev, &desc, &ml));
      XK(xhal_device_synchronize(dev));
      const double create_levels_ms = ms_since(tl);
      const double ms = time_xhal([&] {
        XK(xhal_csr_solve(dev, ml, t, XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, &tx, &ty));
      }, 100);
      unsetenv("XHAL_CUDA_SOLVE");
      XK(xhal_buffer_read(by, 0, got.data(), n * 4));
      XK(xhal_csr_release(ml));
      const long long diff = differing(got, want);
      char buf[160];
      std::snprintf(buf, sizeof buf, "; levels %.4f (csr_create %.1f ms)%s", ms, create_levels_ms,
                    diff ? (" (" + std::to_string(diff) + " DIFFERENT)").c_str() : "");
      variant_note[tr] += buf;
      std::printf("  %s %-28s %9.4f ms (csr_create %.1f ms)%s\n", tr ? "A^T" : "A  ", "levels", ms,
                  create_levels_ms,
                  diff ? ("  " + std::to_string(diff) + " ELEMENTS DIFFER FROM THE HOST SOLVE").c_str() : "");
    }
    x_solve = solve_ms(XHAL_TRANSPOSE_NONE);
    x_solve_t = solve_ms(XHAL_TRANSPOSE);
    xhal_buffer_t bg, bga;
    XK(xhal_buffer_allocate(dev, n * 4, &bg));
    XK(xhal_buffer_allocate(dev, nnz * 4, &bga));
    xhal_tensor_t tg = vec(bg, n), tga = vec(bga, nnz);
    x_bwd = time_xhal([&] {
      XK(xhal_csr_solve_backward(dev, m, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                 XHAL_DIAGONAL_STORED, &ty, &tx, &tg, &tga));
    }, 50);
    XK(xhal_buffer_release(bg));
    XK(xhal_buffer_release(bga));
  }

  // ---- cuSPARSE on its own copies of the same data ----
  int32_t *drp, *dci;
  float *dv, *dx, *dy;
  CK(cudaMalloc(&drp, (n + 1) * 4));
  CK(cudaMalloc(&dci, nnz * 4));
  CK(cudaMalloc(&dv, nnz * 4));
  CK(cudaMalloc(&dx, n * 4));
  CK(cudaMalloc(&dy, n * 4));
  auto tu = Clock::now();
  CK(cudaMemcpy(drp, a.rp.data(), (n + 1) * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dci, a.ci.data(), nnz * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dv, a.v.data(), nnz * 4, cudaMemcpyHostToDevice));
  const double upload_ms = ms_since(tu);
  CK(cudaMemcpy(dx, hx.data(), n * 4, cudaMemcpyHostToDevice));
  cusparseSpMatDescr_t A;
  cusparseDnVecDescr_t X, Y;
  CS(cusparseCreateCsr(&A, n, n, nnz, drp, dci, dv, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                       CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  CS(cusparseCreateDnVec(&X, n, dx, CUDA_R_32F));
  CS(cusparseCreateDnVec(&Y, n, dy, CUDA_R_32F));
  const float one = 1.0f, zero = 0.0f;
  size_t bsz = 0;
  CS(cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, X, &zero, Y, CUDA_R_32F,
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
  const double c_spmv = time_cuda([&] {
    CS(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, X, &zero, Y, CUDA_R_32F,
                    CUSPARSE_SPMV_ALG_DEFAULT, buf));
  }, 50);
  const double bytes = nnz * 8.0 + (n + 1) * 4.0 + 2.0 * n * 4;  // values+cols, row_ptr, x, y
  char note[1600];
  std::snprintf(note, sizeof note, "(xhal %.2f TB/s counting nnz*8 + x + y)",
                bytes / (x_spmv * 1e-3) / 1e12);
  report(std::string(label) + " SpMV", x_spmv, c_spmv, note);
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
      CS(cusparseSpSV_bufferSize(h, op, &one, A, X, Y, CUDA_R_32F, CUSPARSE_SPSV_ALG_DEFAULT, sv, &ssz));
      void* sbuf;
      CK(cudaMalloc(&sbuf, std::max<size_t>(ssz, 16)));
      CK(cudaDeviceSynchronize());
      auto t = Clock::now();
      CS(cusparseSpSV_analysis(h, op, &one, A, X, Y, CUDA_R_32F, CUSPARSE_SPSV_ALG_DEFAULT, sv, sbuf));
      CK(cudaDeviceSynchronize());
      const double analysis = ms_since(t);
      const double c_solve = time_cuda([&] {
        CS(cusparseSpSV_solve(h, op, &one, A, X, Y, CUDA_R_32F, CUSPARSE_SPSV_ALG_DEFAULT, sv));
      }, 100);
      const double xs = tr ? x_solve_t : x_solve;
      std::snprintf(note, sizeof note,
                    "(default schedule; amortised /100: xhal %.4f incl. csr_create %.1f ms "
                    "(plain upload of row_ptr, col, values: %.1f ms), cuSPARSE %.4f incl. "
                    "analysis %.1f ms; variants: %s)",
                    xs + create_ms / 100, create_ms, upload_ms, c_solve + analysis / 100, analysis,
                    variant_note[tr].c_str());
      report(std::string(label) + (tr ? " SpSV A^T" : " SpSV A"), xs, c_solve + analysis / 100, note);
      if (tr) {
        std::snprintf(note, sizeof note, "(xhal: gb solve + ga on device; cuSPARSE: A^T SpSV only)");
        report(std::string(label) + " solve backward", x_bwd, c_solve + analysis / 100, note);
      }
      CS(cusparseSpSV_destroyDescr(sv));
      CK(cudaFree(sbuf));
    }
  }
  CS(cusparseDestroySpMat(A));
  CS(cusparseDestroyDnVec(X));
  CS(cusparseDestroyDnVec(Y));
  for (void* p : {(void*)drp, (void*)dci, (void*)dv, (void*)dx, (void*)dy, buf}) CK(cudaFree(p));
  XK(xhal_buffer_release(bx));
  XK(xhal_buffer_release(by));
  XK(xhal_csr_release(m));
}

int main(int argc, char** argv) {
  xhal_device_t dev = open_device_and_say_which();
  cusparseHandle_t h;
  CS(cusparseCreate(&h));
  std::mt19937_64 rng(2026);
  {
    Csr r = river(1000000, 50, rng);
    compare("river 1e6", r, true, dev, h);
  }
  {
    Csr g = random_matrix(1000000, 10, false, rng);
    compare("random 1e7 nnz", g, false, dev, h);
  }
  {
    Csr l = random_matrix(1000000, 10, true, rng);
    compare("random lower 1e7 nnz", l, true, dev, h);
  }
  if (argc > 1) {
    FILE* f = std::fopen(argv[1], "w");
    std::fprintf(f, "[\n");
    for (size_t i = 0; i < g_results.size(); ++i)
      std::fprintf(f, "  {\"name\": \"%s\", \"xhal_ms\": %.6f, \"cusparse_ms\": %.6f, \"note\": \"%s\"}%s\n",
                   g_results[i].name.c_str(), g_results[i].xhal_ms, g_results[i].cusparse_ms,
                   g_results[i].note.c_str(), i + 1 < g_results.size() ? "," : "");
    std::fprintf(f, "]\n");
    std::fclose(f);
  }
  cusparseDestroy(h);
  XK(xhal_device_release(dev));
  return 0;
}
