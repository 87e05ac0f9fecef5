// Old against new schedules of the CUDA plugin's transpose and norm backward
// (colsum fused into the row walk), and its one index_add schedule, run
// through the plugin's own slot functions (ops_gather.cpp and ops_rows.cpp
// are compiled in, the variant switches set directly), timed against a
// device-to-device copy in the same run and checked bit for bit against a
// plain CPU implementation of docs/semantics.md 3.1-3.7 on random data,
// including ragged sizes.
// Build (repository root):
//   nvcc -std=c++20 -O3 -arch=sm_90 --fmad=false -ftz=false -prec-div=true
//        -prec-sqrt=true -Xcompiler -ffp-contract=off -I hal/include
//        bench/gpu/proto_dense.cu -o proto_dense
// Run: ./proto_dense [small] [transpose|norm|index ...]   (default: all
// three; "small" runs only the untimed ragged cases)
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../plugins/gpu/index_schedule.cpp"
#include "../../plugins/gpu/ops_gather.cpp"
#include "../../plugins/gpu/ops_rows.cpp"

#include "../../plugins/gpu/gpu_helpers.cpp"
#include "check.h"

namespace xhal::gpu {
// The plugin reports through its host table; a prototype prints.
xhal_status_t fail(xhal_status_t st, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n");
  return st;
}
}  // namespace xhal::gpu

using namespace xhal::gpu;

#define OK(x)                                                              \
  do {                                                                     \
    if ((x) != XHAL_OK) {                                                  \
      std::fprintf(stderr, "%s:%d %s did not return XHAL_OK\n", __FILE__, __LINE__, #x); \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)

static Device g_dev;
static bool g_small = false;  // "small": only the untimed ragged cases (quick, sanitizers)
static double g_copy_tbs = 0;
static long g_failures = 0;

template <class F>
static float median_ms(F&& f, int reps = 20) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) f();
  CK(cudaStreamSynchronize(g_dev.stream));
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(a, g_dev.stream));
    f();
    CK(cudaEventRecord(b, g_dev.stream));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

static void report(const std::string& name, double bytes, float ms, long bad) {
  if (bad) ++g_failures;
  if (ms <= 0) {
    std::printf("%-58s %s (%ld mismatches)\n", name.c_str(), bad ? "bits DIFFER" : "bits identical", bad);
    return;
  }
  const double tbs = bytes / (ms * 1e-3) / 1e12;
  std::printf("%-58s %9.4f ms %6.3f TB/s  fraction %.3f  bits %s (%ld mismatches)\n",
              name.c_str(), ms, tbs, tbs / g_copy_tbs, bad ? "DIFFER" : "identical", bad);
}

// Device allocation seen through the plugin's Buffer and tensor types.
struct Dev {
  Buffer buf;
  explicit Dev(size_t bytes) {
    buf.size = bytes;
    CK(cudaMalloc(&buf.ptr, bytes ? bytes : 1));
  }
  ~Dev() { cudaFree(buf.ptr); }
  template <class T>
  void put(const std::vector<T>& v) {
    CK(cudaMemcpy(buf.ptr, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  template <class T>
  std::vector<T> get(size_t count) const {
    std::vector<T> v(count);
    CK(cudaMemcpy(v.data(), buf.ptr, count * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
  xhal_plugin_tensor_t t(std::vector<int64_t> shape, xhal_dtype_t dt = XHAL_DTYPE_F32,
                         std::vector<int64_t> strides = {}) {
    xhal_plugin_tensor_t x{};
    x.buffer = &buf;
    x.dtype = dt;
    x.rank = static_cast<uint32_t>(shape.size());
    int64_t s = 1;
    for (int k = static_cast<int>(shape.size()) - 1; k >= 0; --k) {
      x.shape[k] = shape[k];
      x.strides[k] = strides.empty() ? s : strides[k];
      s *= shape[k];
    }
    return x;
  }
};

template <class T>
static long count_diff(const std::vector<T>& a, const std::vector<T>& b, const char* what) {
  long bad = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) {
      if (bad < 3) {
        if constexpr (sizeof(T) == 4)
          std::printf("  %s mismatch at %zu: gpu %a (0x%08x) cpu %a (0x%08x)\n", what, i,
                      std::bit_cast<float>(a[i]), std::bit_cast<uint32_t>(a[i]),
                      std::bit_cast<float>(b[i]), std::bit_cast<uint32_t>(b[i]));
        else
          std::printf("  %s mismatch at %zu\n", what, i);
      }
      ++bad;
    }
  return bad;
}

// ---------------------------------------------------------------------------
// CPU forms of the spec, written for clarity (docs/semantics.md).
static float cpu_tree(std::vector<float> v) {  // 3.1
  if (v.empty()) return 0.0f;
  v.resize(std::bit_ceil(v.size()), 0.0f);
  for (size_t w = v.size(); w > 1; w /= 2)
    for (size_t i = 0; i < w / 2; ++i) v[i] = v[2 * i] + v[2 * i + 1];
  return v[0];
}
template <class F>
static float cpu_rowsum(F e, int64_t n) {  // 3.2
  const int64_t chunks = (n + 1023) / 1024;
  std::vector<float> s(chunks);
  std::vector<float> a(128);
  for (int64_t c = 0; c < chunks; ++c) {
    std::fill(a.begin(), a.end(), 0.0f);
    for (int t = 0; t < 8; ++t)
      for (int l = 0; l < 128; ++l) {
        const int64_t i = c * 1024 + t * 128 + l;
        a[l] = a[l] + (i < n ? e(i) : 0.0f);
      }
    s[c] = cpu_tree(a);
  }
  return cpu_tree(s);
}
static float cpu_segsum(const std::vector<float>& t) {  // 3.7
  std::vector<float> chunks;
  for (size_t c = 0; c < t.size(); c += 32) {
    float s = 0.0f;
    for (size_t k = c; k < std::min(t.size(), c + 32); ++k) s = s + t[k];
    chunks.push_back(s);
  }
  return cpu_tree(chunks);
}

// ---------------------------------------------------------------------------
// Transpose / permute.
struct TVariant {
  const char* name;
  int code;  // g_transpose_choice: 0 old, tile * 16 + vec
};
static const TVariant kTVariants[] = {{"old 32x32", 0},  {"32v1", 32 * 16 + 1}, {"32v2", 32 * 16 + 2},
                                      {"32v4", 32 * 16 + 4}, {"64v1", 64 * 16 + 1}, {"64v2", 64 * 16 + 2},
                                      {"64v4 (default)", 64 * 16 + 4}};

// Permutes a contiguous src of `shape` by `perm` (dst contiguous), every
// variant; checks against a CPU loop. `elem` bytes per element.
template <class T>
static void permute_case(const std::vector<int64_t>& shape, const std::vector<int>& perm,
                         bool timed, int64_t view_pad = 0) {
  const int r = static_cast<int>(shape.size());
  // src may be a view: its rows padded by view_pad elements.
  std::vector<int64_t> sstr(r);
  sstr[r - 1] = 1;
  if (r >= 2) sstr[r - 2] = shape[r - 1] + view_pad;
  for (int k = r - 3; k >= 0; --k) sstr[k] = sstr[k + 1] * shape[k + 1];
  const int64_t s = sstr[0] * shape[0];
  const int64_t src_elems = s;
  int64_t total = 1;
  for (int64_t v : shape) total *= v;
  std::vector<T> hs(src_elems);
  std::mt19937_64 rng(77 + total);
  for (auto& v : hs) v = static_cast<T>(rng());
  // dst shape and the src strides in dst order (what the core hands over,
  // before its merging; the plugin does not need merged dims).
  std::vector<int64_t> dshape(r), pstr(r);
  for (int k = 0; k < r; ++k) {
    dshape[k] = shape[perm[k]];
    pstr[k] = sstr[perm[k]];
  }
  std::vector<T> ref(total);
  {
    std::vector<int64_t> idx(r, 0);
    for (int64_t o = 0; o < total; ++o) {
      int64_t off = 0;
      for (int k = 0; k < r; ++k) off += idx[k] * pstr[k];
      ref[o] = hs[off];
      for (int k = r - 1; k >= 0; --k) {
        if (++idx[k] < dshape[k]) break;
        idx[k] = 0;
      }
    }
  }
  const xhal_dtype_t dt = sizeof(T) == 1   ? XHAL_DTYPE_U8
                          : sizeof(T) == 2 ? XHAL_DTYPE_F16
                          : sizeof(T) == 8 ? XHAL_DTYPE_I64
                                           : XHAL_DTYPE_F32;
  Dev src(src_elems * sizeof(T)), dst(total * sizeof(T));
  src.put(hs);
  xhal_plugin_tensor_t ps = src.t(dshape, dt, pstr), pd = dst.t(dshape, dt);
  std::string label = "permute [";
  for (int k = 0; k < r; ++k) label += std::to_string(shape[k]) + (k + 1 < r ? "," : "]");
  label += " perm ";
  for (int k = 0; k < r; ++k) label += std::to_string(perm[k]);
  label += " " + std::to_string(sizeof(T)) + "B";
  if (view_pad) label += " view";
  for (const TVariant& v : kTVariants) {
    g_transpose_choice.store(v.code);
    CK(cudaMemset(dst.buf.ptr, 0xa5, total * sizeof(T)));
    OK(permute(&g_dev, &ps, &pd));
    CK(cudaStreamSynchronize(g_dev.stream));
    const long bad = count_diff(dst.get<T>(total), ref, "permute");
    float ms = 0;
    if (timed) ms = median_ms([&] { OK(permute(&g_dev, &ps, &pd)); });
    report(label + " " + v.name, 2.0 * total * sizeof(T), ms, bad);
  }
  g_transpose_choice.store(-1);
}

static void run_transpose() {
  std::printf("== transpose / permute ==\n");
  if (!g_small) {
    permute_case<uint32_t>({8192, 8192}, {1, 0}, true);       // xhal-bench BM_Transpose2D
    permute_case<uint32_t>({64, 512, 512}, {0, 2, 1}, true);  // BM_PermuteLastTwo
    permute_case<uint32_t>({16384, 4096}, {1, 0}, true);
  }
  permute_case<uint32_t>({1000, 777}, {1, 0}, false);  // ragged tiles, scalar runs
  permute_case<uint32_t>({1000, 776}, {1, 0}, false);  // ragged tiles, vector runs
  permute_case<uint32_t>({3, 130, 66}, {0, 2, 1}, false);
  permute_case<uint32_t>({5, 6, 70, 36}, {1, 0, 3, 2}, false);  // two batch dims
  permute_case<uint32_t>({200, 96}, {1, 0}, false, 4);  // view: padded rows
  permute_case<uint32_t>({200, 96}, {1, 0}, false, 3);  // view: unaligned pitch
  if (!g_small) permute_case<uint32_t>({2100000, 3}, {1, 0}, false);  // past 65,535 x 32 rows
  permute_case<uint8_t>({300, 130}, {1, 0}, false);
  permute_case<uint16_t>({130, 300}, {1, 0}, false);
  permute_case<uint64_t>({257, 132}, {1, 0}, false);
  permute_case<uint64_t>({256, 132}, {1, 0}, false);
}

// ---------------------------------------------------------------------------
// Norm backward.
struct NVariant {
  const char* name;
  int mode;
};
static const NVariant kNVariants[] = {{"separate colsum (old)", kNormSeparate},
                                      {"fused, no prefetch", kNormFusedNoPf},
                                      {"fused + prefetch (default at >= 256 blocks)", kNormFused},
                                      {"fused, partials in smem, no prefetch", kNormFusedSmemNoPf},
                                      {"fused, partials in smem + prefetch", kNormFusedSmem}};

static void norm_case(int64_t rows, int64_t n, bool timed, bool in_place = false) {
  const size_t N = static_cast<size_t>(rows * n);
  std::mt19937_64 rng(4321 + rows * 7 + n);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ud(0.5f, 2.0f);
  std::vector<float> hx(N), hdy(N), hg(n), hmean(rows), hrstd(rows);
  for (auto& v : hx) v = nd(rng);
  for (auto& v : hdy) v = nd(rng);
  for (auto& v : hg) v = 1.0f + 0.1f * nd(rng);
  for (auto& v : hmean) v = 0.1f * nd(rng);
  for (auto& v : hrstd) v = ud(rng);
  const int64_t nb = (rows + 31) / 32;
  for (int ln = 0; ln < 2; ++ln) {
    // CPU reference (3.4 / 3.6 / 3.5).
    std::vector<float> rdx(N), rdg(n), rdb(n);
    std::vector<float> pg(nb * n, 0.0f), pb(nb * n, 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      const float* x = &hx[r * n];
      const float* dy = &hdy[r * n];
      const float s = hrstd[r], mu = hmean[r];
      auto xh = [&](int64_t i) { return ln ? (x[i] - mu) * s : x[i] * s; };
      auto g = [&](int64_t i) { return dy[i] * hg[i]; };
      const float b = cpu_rowsum([&](int64_t i) { return g(i) * xh(i); }, n) / static_cast<float>(n);
      const float a = ln ? cpu_rowsum(g, n) / static_cast<float>(n) : 0.0f;
      for (int64_t i = 0; i < n; ++i)
        rdx[r * n + i] = ln ? ((g(i) - a) - xh(i) * b) * s : (g(i) - xh(i) * b) * s;
      float* p = &pg[(r / 32) * n];
      float* q = &pb[(r / 32) * n];
      for (int64_t i = 0; i < n; ++i) {
        p[i] = p[i] + dy[i] * xh(i);
        q[i] = q[i] + dy[i];
      }
    }
    std::vector<float> col(nb);
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t b = 0; b < nb; ++b) col[b] = pg[b * n + j];
      rdg[j] = cpu_tree(col);
      for (int64_t b = 0; b < nb; ++b) col[b] = pb[b * n + j];
      rdb[j] = cpu_tree(col);
    }
    Dev x(N * 4), dy(N * 4), dx(N * 4), g(n * 4), mean(rows * 4), rstd(rows * 4), dg(n * 4),
        db(n * 4);
    x.put(hx);
    g.put(hg);
    mean.put(hmean);
    rstd.put(hrstd);
    auto tx = x.t({rows, n}), tdy = dy.t({rows, n}), tdx = (in_place ? dy : dx).t({rows, n}),
         tg = g.t({n}), tm = mean.t({rows}), tr = rstd.t({rows}), tdg = dg.t({n}), tdb = db.t({n});
    auto call = [&] {
      if (ln) OK(layer_norm_backward(&g_dev, &tx, &tg, &tm, &tr, &tdy, &tdx, &tdg, &tdb));
      else OK(rms_norm_backward(&g_dev, &tx, &tg, &tr, &tdy, &tdx, &tdg));
    };
    char label[160];
    for (const NVariant& v : kNVariants) {
      g_norm_bwd_mode.store(v.mode);
      g_norm_bwd_min_blocks.store(0);
      dy.put(hdy);
      CK(cudaMemset(dx.buf.ptr, 0xff, N * 4));
      CK(cudaMemset(dg.buf.ptr, 0xff, n * 4));
      CK(cudaMemset(db.buf.ptr, 0xff, n * 4));
      call();
      CK(cudaStreamSynchronize(g_dev.stream));
      long bad = count_diff((in_place ? dy : dx).get<float>(N), rdx, "dx");
      bad += count_diff(dg.get<float>(n), rdg, "dgamma");
      if (ln) bad += count_diff(db.get<float>(n), rdb, "dbeta");
      float ms = 0;
      if (timed && !in_place) ms = median_ms(call);
      std::snprintf(label, sizeof label, "%s bwd %lld x %lld%s %s", ln ? "layer_norm" : "rms_norm",
                    (long long)rows, (long long)n, in_place ? " dx=dy" : "", v.name);
      report(label, 3.0 * N * 4, ms, bad);
    }
  }
  g_norm_bwd_mode.store(-1);
  g_norm_bwd_min_blocks.store(256);
}

static void run_norm() {
  std::printf("== rms_norm / layer_norm backward ==\n");
  if (!g_small) {
    norm_case(16384, 4096, true);  // xhal-bench shape
    norm_case(4096, 4096, true);   // 128 colsum blocks: below the "auto" threshold
    norm_case(8192, 4096, true);   // 256 colsum blocks: at it
    norm_case(8192, 8192, true);   // W = 8
    norm_case(16384, 1024, true);  // W = 1, four warps per block
  }
  norm_case(40, 8192, false);    // W = 8, two colsum blocks
  norm_case(1000, 3001, false);  // ragged rows and columns, scalar path
  norm_case(333, 700, false);    // W = 1, partial last block
  norm_case(70, 20003, false);   // rows longer than a block: not fused
  norm_case(100, 2048, false, true);
  if (!g_small) norm_case(64, 262144, true);  // the long-row shape (not fused)
}

// ---------------------------------------------------------------------------
// index_add.
static std::vector<int64_t> bench_indices(int64_t count, int64_t rows, bool hub) {
  std::vector<int64_t> idx(count);
  uint64_t state = 12345;  // as bench/dense_index.cpp
  for (int64_t i = 0; i < count; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    idx[i] = static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(rows));
    if (hub && i % 2 == 0) idx[i] = 0;
  }
  return idx;
}

static void index_case(const char* name, const std::vector<int64_t>& idx, int64_t rows, int64_t w,
                       bool timed, int64_t src_offset = 0) {
  const int64_t count = static_cast<int64_t>(idx.size());
  std::vector<int64_t> rp(rows + 1, 0), srcs(count);
  for (int64_t v : idx) ++rp[v + 1];
  for (int64_t r = 0; r < rows; ++r) rp[r + 1] += rp[r];
  {
    std::vector<int64_t> fill(rp.begin(), rp.end() - 1);
    for (int64_t i = 0; i < count; ++i) srcs[fill[idx[i]]++] = i;
  }
  int64_t max_m = 0;
  std::vector<int64_t> touched_rows, touched_ptr{0};  // the compact form a 1.1 core passes
  for (int64_t r = 0; r < rows; ++r) {
    max_m = std::max(max_m, rp[r + 1] - rp[r]);
    if (rp[r + 1] > rp[r]) touched_rows.push_back(r), touched_ptr.push_back(rp[r + 1]);
  }
  const int64_t touched = static_cast<int64_t>(touched_rows.size());
  xhal_plugin_index_plan_desc_t desc{};
  desc.count = static_cast<uint64_t>(count);
  desc.num_rows = static_cast<uint64_t>(rows);
  desc.indices = idx.data();
  desc.row_sources = srcs.data();
  desc.max_sources_per_row = static_cast<uint64_t>(max_m);
  desc.touched_count = touched_rows.size();
  desc.touched_rows = touched_rows.data();
  desc.touched_ptr = touched_ptr.data();
  void* plan = nullptr;
  OK(index_plan_create(&g_dev, &desc, &plan));
  std::mt19937_64 rng(99 + count + w);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> hs(count * w + src_offset), hd(rows * w);
  for (auto& v : hs) v = nd(rng);
  for (auto& v : hd) v = nd(rng);
  const float alpha = 0.5f;
  std::vector<float> ref = hd, t;
  for (int64_t r = 0; r < rows; ++r) {
    if (rp[r + 1] == rp[r]) continue;
    for (int64_t j = 0; j < w; ++j) {
      t.clear();
      for (int64_t e = rp[r]; e < rp[r + 1]; ++e) t.push_back(hs[src_offset + srcs[e] * w + j]);
      ref[r * w + j] = ref[r * w + j] + alpha * cpu_segsum(t);
    }
  }
  Dev src((count * w + src_offset) * 4), dst(rows * w * 4);
  src.put(hs);
  xhal_plugin_tensor_t ts = src.t({count, w}), td = dst.t({rows, w});
  ts.offset = src_offset * 4;
  const double bytes = (count + 2.0 * touched) * w * 4;
  {
    dst.put(hd);
    OK(index_add(&g_dev, plan, alpha, &ts, &td));
    CK(cudaStreamSynchronize(g_dev.stream));
    const long bad = count_diff(dst.get<float>(rows * w), ref, "index_add");
    float ms = 0;
    if (timed) ms = median_ms([&] { OK(index_add(&g_dev, plan, alpha, &ts, &td)); });
    char label[160];
    std::snprintf(label, sizeof label, "index_add %s %lld x %lld", name, (long long)count,
                  (long long)w);
    report(label, bytes, ms, bad);
  }
  index_plan_destroy(&g_dev, plan);
}

static void run_index() {
  std::printf("== index_add ==\n");
  if (!g_small) {
    index_case("random", bench_indices(1000000, 1000000, false), 1000000, 256, true);
    index_case("half on row 0", bench_indices(1000000, 1000000, true), 1000000, 256, true);
  }
  // Ragged: every source count from 0 to 70 and two long rows (33 and 1100
  // chunks); float4 and scalar widths; a src offset that breaks alignment.
  std::vector<int64_t> idx;
  for (int64_t r = 0; r < 71; ++r)
    for (int64_t k = 0; k < r; ++k) idx.push_back(r);
  for (int k = 0; k < 33 * 32 - 5; ++k) idx.push_back(71);
  for (int k = 0; k < 1100 * 32 + 7; ++k) idx.push_back(72);
  std::shuffle(idx.begin(), idx.end(), std::mt19937_64(5));
  index_case("ragged", idx, 80, 12, false);
  index_case("ragged", idx, 80, 7, false);
  index_case("ragged misaligned", idx, 80, 8, false, 1);
  index_case("random small", bench_indices(5000, 300, false), 300, 64, false);
}

__global__ void copy_kernel(const float4* __restrict__ a, float4* __restrict__ b, int64_t n4) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4;
       i += (int64_t)gridDim.x * blockDim.x)
    b[i] = a[i];
}

int main(int argc, char** argv) {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("GPU %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize >> 20);
  CK(cudaSetDevice(0));
  CK(cudaStreamCreateWithFlags(&g_dev.stream, cudaStreamNonBlocking));
  for (int i = 1; i < argc; ++i) g_small = g_small || std::strcmp(argv[i], "small") == 0;
  if (!g_small) {
    const size_t bytes = size_t(2) << 30;  // 2 GiB each way
    void *a, *b;
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMemset(a, 0x3c, bytes));
    float ms = median_ms([&] { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, g_dev.stream)); });
    g_copy_tbs = 2.0 * bytes / (ms * 1e-3) / 1e12;
    std::printf("cudaMemcpy D2D 2 GiB: %.3f ms, %.3f TB/s (read + write); fractions below are of this\n",
                ms, g_copy_tbs);
    ms = median_ms([&] {
      copy_kernel<<<prop.multiProcessorCount * 8, 512, 0, g_dev.stream>>>((const float4*)a, (float4*)b,
                                                                       bytes / 16);
    });
    std::printf("float4 copy kernel 2 GiB: %.3f ms, %.3f TB/s\n", ms, 2.0 * bytes / (ms * 1e-3) / 1e12);
    CK(cudaFree(a));
    CK(cudaFree(b));
  }
  auto want = [&](const char* what) {
    bool any = false;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], what) == 0) return true;
      any = any || std::strcmp(argv[i], "small") != 0;
    }
    return !any;
  };
  if (want("transpose")) run_transpose();
  if (want("norm")) run_norm();
  if (want("index")) run_index();
  std::printf("%s: %ld case(s) with differing bits\n", g_failures ? "FAIL" : "PASS", g_failures);
  return g_failures ? 1 : 0;
}
