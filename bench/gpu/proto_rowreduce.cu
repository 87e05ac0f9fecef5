// Prototype that fixed the row-reduction order of docs/semantics.md 3.2-3.4:
// times softmax and RMSNorm forward, written exactly in the canonical order,
// against the device-to-device copy bandwidth on the same GPU, and checks
// every checked row's bits against a plain CPU implementation of the spec.
// Build: nvcc -std=c++20 -O3 -arch=sm_90 --fmad=false -ftz=false
//        -prec-div=true -prec-sqrt=true -Xcompiler -ffp-contract=off
//        -I plugins/gpu bench/gpu/proto_rowreduce.cu -o proto_rowreduce
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "../../plugins/cpu/canonical.h"
#include "../../plugins/gpu/row_forward.h"

using namespace xhal::gpu;

#define CK(x)                                                                      \
  do {                                                                             \
    cudaError_t e_ = (x);                                                          \
    if (e_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,               \
                   cudaGetErrorString(e_));                                        \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

// ---- CPU reference of the spec, written for clarity ----
static float cpu_tree(std::vector<float> v) {
  return xhal::cpu::tree_sum(v.data(), v.size() ? (v.resize(std::bit_ceil(v.size())), v.size()) : 0);
}
static float cpu_rowsum(const float* e, int64_t n) {
  int64_t chunks = (n + 1023) / 1024;
  std::vector<float> s(chunks);
  for (int64_t c = 0; c < chunks; ++c) {
    std::vector<float> a(128, 0.0f);
    for (int t = 0; t < 8; ++t)
      for (int l = 0; l < 128; ++l) {
        int64_t i = c * 1024 + t * 128 + l;
        a[l] = a[l] + (i < n ? e[i] : 0.0f);
      }
    s[c] = cpu_tree(a);
  }
  return cpu_tree(s);
}
static float cmax(float a, float b) { return std::isnan(a) ? a : std::isnan(b) ? b : (a > b ? a : b); }
struct MS { float m, s; };
static MS ms_comb(MS a, MS b) {
  float M = cmax(a.m, b.m);
  if (M == -INFINITY) return {M, 0.0f};
  return {M, a.s * xhal::cpu::canonical_exp(a.m - M) + b.s * xhal::cpu::canonical_exp(b.m - M)};
}
static void cpu_softmax_row(const float* x, float* y, int64_t n) {
  using xhal::cpu::canonical_exp;
  int64_t chunks = (n + 1023) / 1024;
  std::vector<MS> st(std::bit_ceil(static_cast<uint64_t>(chunks)), MS{-INFINITY, 0.0f});
  for (int64_t c = 0; c < chunks; ++c) {
    float m = -INFINITY;
    for (int64_t i = c * 1024; i < std::min(n, c * 1024 + 1024); ++i) m = cmax(m, x[i]);
    std::vector<float> a(128, 0.0f);
    for (int t = 0; t < 8; ++t)
      for (int l = 0; l < 128; ++l) {
        int64_t i = c * 1024 + t * 128 + l;
        if (i < n) a[l] = a[l] + canonical_exp(x[i] - m);
      }
    float s = cpu_tree(a);
    st[c] = {m, m == -INFINITY ? 0.0f : s};
  }
  for (size_t w = st.size(); w > 1; w /= 2)
    for (size_t i = 0; i < w / 2; ++i) st[i] = ms_comb(st[2 * i], st[2 * i + 1]);
  float inv = 1.0f / st[0].s;
  for (int64_t i = 0; i < n; ++i) y[i] = canonical_exp(x[i] - st[0].m) * inv;
}
static void cpu_rms_row(const float* x, const float* g, float eps, float* y, int64_t n) {
  std::vector<float> q(n);
  for (int64_t i = 0; i < n; ++i) q[i] = x[i] * x[i];
  float rstd = 1.0f / std::sqrt(cpu_rowsum(q.data(), n) / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * rstd) * g[i];
}

// Proposal (not the spec): y = xhal_exp(x - m[c]) * (xhal_exp(m[c] - M) / S),
// reusing the chunk's exps, one exp per element instead of two. Timed only.
template <int W, int CPW, int S>
__global__ void __launch_bounds__(W * 32)
softmax_one_exp_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t n) {
  __shared__ MaxSum scratch[W + 2];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int seg = blockIdx.x % S;
  for (int64_t row = blockIdx.x / S; row < rows; row += gridDim.x / S) {
    const int64_t chunk0 = (static_cast<int64_t>(seg) * W + warp) * CPW;
    float4 v[CPW][8];
    load_chunks<CPW, true>(v, x + row * n, n, chunk0, lane, neg_inf());
    MaxSum c[CPW];
    float mc[CPW];
#pragma unroll
    for (int k = 0; k < CPW; ++k) {
      float m = neg_inf();
      for (int t = 0; t < 8; ++t) m = fmaxf(fmaxf(m, fmaxf(v[k][t].x, v[k][t].y)), fmaxf(v[k][t].z, v[k][t].w));
      m = warp_max(m);
      float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
      for (int t = 0; t < 8; ++t) {
        v[k][t].x = canonical_exp(xsub(v[k][t].x, m)); a0 = xadd(a0, v[k][t].x);
        v[k][t].y = canonical_exp(xsub(v[k][t].y, m)); a1 = xadd(a1, v[k][t].y);
        v[k][t].z = canonical_exp(xsub(v[k][t].z, m)); a2 = xadd(a2, v[k][t].z);
        v[k][t].w = canonical_exp(xsub(v[k][t].w, m)); a3 = xadd(a3, v[k][t].w);
      }
      c[k] = {m, warp_tree_sum(xadd(xadd(a0, a1), xadd(a2, a3)))};
      mc[k] = m;
    }
    MaxSum total = block_tree<MaxSumOp, W, S>(local_tree<MaxSumOp, CPW>(c), scratch);
    const float inv = xdiv(1.0f, total.s);
#pragma unroll
    for (int k = 0; k < CPW; ++k) {
      const float r = xmul(canonical_exp(xsub(mc[k], total.m)), inv);
      for (int t = 0; t < 8; ++t)
        v[k][t] = make_float4(xmul(v[k][t].x, r), xmul(v[k][t].y, r), xmul(v[k][t].z, r), xmul(v[k][t].w, r));
    }
    store_chunks<CPW, true>(v, y + row * n, n, chunk0, lane);
  }
}

// ---- timing ----
template <class F>
static float median_ms(F&& f, int reps = 20) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) f();
  CK(cudaDeviceSynchronize());
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(a));
    f();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <class K, class... A>
static void launch(K kernel, int grid, int block, int cluster, A... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(block);
  cudaLaunchAttribute attr[1];
  cfg.attrs = attr;
  cfg.numAttrs = 0;
  if (cluster > 1) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.numAttrs = 1;
  }
  if (cluster > 8)
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, args...);
  if (e != cudaSuccess && cluster > 8) {  // non-portable size: may not fit
    static bool told = false;
    if (!told) std::printf("  cluster %d launch failed: %s\n", cluster, cudaGetErrorString(e));
    told = true;
    cudaGetLastError();
    return;
  }
  CK(e);
  CK(cudaGetLastError());
}

static double g_copy_tbs = 0;

static void report(const char* name, double bytes, float ms, bool bits_ok, long bad) {
  double tbs = bytes / (ms * 1e-3) / 1e12;
  std::printf("%-44s %9.3f ms %7.3f TB/s  fraction %.3f  bits %s (%ld mismatches)\n", name, ms,
              tbs, tbs / g_copy_tbs, bits_ok ? "identical" : "DIFFER", bad);
}

static long compare_rows(const std::vector<float>& dev, const std::vector<float>& ref,
                         const std::vector<int64_t>& rows, int64_t n) {
  long bad = 0;
  for (int64_t r : rows)
    for (int64_t i = 0; i < n; ++i)
      if (std::bit_cast<uint32_t>(dev[r * n + i]) != std::bit_cast<uint32_t>(ref[r * n + i])) {
        if (bad < 3)
          std::printf("  mismatch row %lld col %lld: gpu %a cpu %a\n", (long long)r, (long long)i,
                      dev[r * n + i], ref[r * n + i]);
        ++bad;
      }
  return bad;
}

static void run_case(int64_t rows, int64_t n, bool long_rows) {
  std::printf("== rows %lld x n %lld ==\n", (long long)rows, (long long)n);
  const size_t N = static_cast<size_t>(rows * n);
  std::vector<float> hx(N), hg(n), hy(N), ref(N);
  std::mt19937_64 rng(1234 + n);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  for (auto& v : hx) v = nd(rng);
  for (auto& v : hg) v = 1.0f + 0.1f * nd(rng);
  float *x, *y, *g, *rstd, *wsf;
  MaxSum* wsm;
  CK(cudaMalloc(&x, N * 4));
  CK(cudaMalloc(&y, N * 4));
  CK(cudaMalloc(&g, n * 4));
  CK(cudaMalloc(&rstd, rows * 4));
  CK(cudaMalloc(&wsf, rows * 32 * 4));
  CK(cudaMalloc(&wsm, rows * 32 * sizeof(MaxSum)));
  CK(cudaMemcpy(x, hx.data(), N * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(g, hg.data(), n * 4, cudaMemcpyHostToDevice));
  std::vector<int64_t> check;
  if (long_rows)
    for (int64_t r = 0; r < rows; r += rows > 64 ? 16 : 1) check.push_back(r);
  else
    for (int64_t r = 0; r < rows; r += 37) check.push_back(r);
  const double bytes = 2.0 * N * 4;
  const float eps = 1e-6f;

  auto verify = [&](const char* name, float ms, double b) {
    CK(cudaMemset(y, 0, 0));
    CK(cudaMemcpy(hy.data(), y, N * 4, cudaMemcpyDeviceToHost));
    long bad = compare_rows(hy, ref, check, n);
    report(name, b, ms, bad == 0, bad);
  };
  auto poison = [&] { CK(cudaMemset(y, 0xff, N * 4)); };

  // softmax reference
  for (int64_t r : check) cpu_softmax_row(&hx[r * n], &ref[r * n], n);
  if (!long_rows) {
    poison();
    float ms = median_ms([&] {
      launch(softmax_forward_kernel<4, 1, 1, true, Pass::kFull>, rows, 128, 1, (const float*)x, y,
             rows, n, 1, wsm);
    });
    verify("softmax fwd  W4 CPW1 (row in registers)", ms, bytes);
    ms = median_ms([&] {
      launch(softmax_one_exp_kernel<4, 1, 1>, rows, 128, 1, (const float*)x, y, rows, n);
    });
    report("PROPOSAL softmax one exp/elem W4 CPW1", bytes, ms, true, 0);
  } else {
    const int split = static_cast<int>(n / (16 * 2 * 1024));
    poison();
    float ms = median_ms([&] {
      launch(softmax_forward_kernel<16, 2, 8, true, Pass::kFull>, rows * 8, 512, 8, (const float*)x,
             y, rows, n, 8, wsm);
    });
    verify("softmax fwd  cluster 8 x W16 CPW2", ms, bytes);
    poison();
    ms = median_ms([&] {
      launch(softmax_forward_kernel<32, 1, 8, true, Pass::kFull>, rows * 8, 1024, 8,
             (const float*)x, y, rows, n, 8, wsm);
    });
    verify("softmax fwd  cluster 8 x W32 CPW1", ms, bytes);
    poison();
    ms = median_ms([&] {
      launch(softmax_forward_kernel<16, 1, 16, true, Pass::kFull>, rows * 16, 512, 16,
             (const float*)x, y, rows, n, 16, wsm);
    });
    verify("softmax fwd  cluster 16 x W16 CPW1", ms, bytes);
    poison();
    ms = median_ms([&] {
      launch(softmax_forward_kernel<8, 2, 16, true, Pass::kFull>, rows * 16, 256, 16,
             (const float*)x, y, rows, n, 16, wsm);
    });
    verify("softmax fwd  cluster 16 x W8 CPW2", ms, bytes);
    ms = median_ms([&] {
      launch(softmax_one_exp_kernel<32, 1, 8>, rows * 8, 1024, 8, (const float*)x, y, rows, n);
    });
    report("PROPOSAL softmax one exp/elem cl8 W32", bytes, ms, true, 0);
    poison();
    ms = median_ms([&] {
      launch(softmax_forward_kernel<16, 2, 1, true, Pass::kStats>, rows * split, 512, 1,
             (const float*)x, y, rows, n, split, wsm);
      launch(softmax_forward_kernel<16, 2, 1, true, Pass::kApply>, rows * split, 512, 1,
             (const float*)x, y, rows, n, split, wsm);
    });
    verify("softmax fwd  two kernels (x read twice)", ms, bytes);
  }

  for (int64_t r : check) cpu_rms_row(&hx[r * n], hg.data(), eps, &ref[r * n], n);
  if (!long_rows) {
    poison();
    float ms = median_ms([&] {
      launch(rms_norm_forward_kernel<4, 1, 1, true, Pass::kFull>, rows, 128, 1, (const float*)x,
             (const float*)g, eps, y, rstd, rows, n, 1, wsf);
    });
    verify("rmsnorm fwd  W4 CPW1 (row in registers)", ms, bytes);
  } else {
    const int split = static_cast<int>(n / (16 * 2 * 1024));
    poison();
    float ms = median_ms([&] {
      launch(rms_norm_forward_kernel<16, 2, 8, true, Pass::kFull>, rows * 8, 512, 8,
             (const float*)x, (const float*)g, eps, y, rstd, rows, n, 8, wsf);
    });
    verify("rmsnorm fwd  cluster 8 x W16 CPW2", ms, bytes);
    poison();
    ms = median_ms([&] {
      launch(rms_norm_forward_kernel<32, 1, 8, true, Pass::kFull>, rows * 8, 1024, 8,
             (const float*)x, (const float*)g, eps, y, rstd, rows, n, 8, wsf);
    });
    verify("rmsnorm fwd  cluster 8 x W32 CPW1", ms, bytes);
    poison();
    ms = median_ms([&] {
      launch(rms_norm_forward_kernel<16, 1, 16, true, Pass::kFull>, rows * 16, 512, 16,
             (const float*)x, (const float*)g, eps, y, rstd, rows, n, 16, wsf);
    });
    verify("rmsnorm fwd  cluster 16 x W16 CPW1", ms, bytes);
    poison();
    ms = median_ms([&] {
      launch(rms_norm_forward_kernel<8, 2, 16, true, Pass::kFull>, rows * 16, 256, 16,
             (const float*)x, (const float*)g, eps, y, rstd, rows, n, 16, wsf);
    });
    verify("rmsnorm fwd  cluster 16 x W8 CPW2", ms, bytes);
    poison();
    ms = median_ms([&] {
      launch(rms_norm_forward_kernel<16, 2, 1, true, Pass::kStats>, rows * split, 512, 1,
             (const float*)x, (const float*)g, eps, y, rstd, rows, n, split, wsf);
      launch(rms_norm_forward_kernel<16, 2, 1, true, Pass::kApply>, rows * split, 512, 1,
             (const float*)x, (const float*)g, eps, y, rstd, rows, n, split, wsf);
    });
    verify("rmsnorm fwd  two kernels (x read twice)", ms, bytes);
  }
  cudaFree(x); cudaFree(y); cudaFree(g); cudaFree(rstd); cudaFree(wsf); cudaFree(wsm);
}

__global__ void copy_kernel(const float4* __restrict__ a, float4* __restrict__ b, int64_t n4) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4;
       i += (int64_t)gridDim.x * blockDim.x)
    b[i] = a[i];
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("GPU %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize >> 20);
  const size_t bytes = size_t(2) << 30;  // 2 GiB each way
  void *a, *b;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMemset(a, 0x3c, bytes));
  float ms = median_ms([&] { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); });
  g_copy_tbs = 2.0 * bytes / (ms * 1e-3) / 1e12;
  std::printf("cudaMemcpy D2D 2 GiB: %.3f ms, %.3f TB/s (read + write)\n", ms, g_copy_tbs);
  ms = median_ms([&] {
    copy_kernel<<<prop.multiProcessorCount * 8, 512>>>((const float4*)a, (float4*)b, bytes / 16);
  });
  std::printf("float4 copy kernel 2 GiB: %.3f ms, %.3f TB/s\n", ms, 2.0 * bytes / (ms * 1e-3) / 1e12);
  CK(cudaFree(a));
  CK(cudaFree(b));
  run_case(16384, 4096, false);
  run_case(64, 262144, true);
  run_case(512, 262144, true);
  return 0;
}
