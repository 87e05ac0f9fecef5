// xhal's spmv/spmm on the cuda device against cuSPARSE's SpMV/SpMM on the
// same GPU, the same matrices and the same process (issue 14's table):
// xhal-bench's river and power-law random matrices and a uniform random one
// (bench/bench_matrices.h), A and A^T, k = 1 (SpMV), 8 and 64 (row-major
// X and Y), f32. Each xhal result is checked against cuSPARSE's within a
// relative 1e-4 of the row's absolute sum (the summation orders differ),
// and the creation of each matrix is timed against cuSPARSE's SpSV
// analysis of it (A and A^T) where the matrix is lower triangular.
// Usage: cusparse_spmm [out.json]   (XHAL_DEVICE picks the device;
// XHAL_BENCH_MATRICES=river,random,uniform, any subset, picks the matrices,
// for example to profile one of them alone)
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_matrices.h"
#include "check.h"
#include "timing.h"

#define CS(x)                                                                                \
  do {                                                                                       \
    cusparseStatus_t s_ = (x);                                                               \
    if (s_ != CUSPARSE_STATUS_SUCCESS) {                                                     \
      std::fprintf(stderr, "%s:%d cusparse %d\n", __FILE__, __LINE__, static_cast<int>(s_)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

namespace {

using xhal_gpu_bench::Clock;
using xhal_gpu_bench::ms_since;
using xhal_gpu_bench::time_ms;

struct Row {
  std::string name;
  double xhal_ms, cusparse_ms, copy_fraction;
};
std::vector<Row> g_rows;
int g_wrong = 0;

// The floors of a CSR SpMV on this matrix, without its rows: every entry's
// value and column read once, coalesced, and (GATHER) x read at the column,
// as any CSR SpMV must; each thread writes one sum so nothing is dropped.
template <bool GATHER>
__global__ void entry_floor_kernel(const int32_t* col, const float* val, int64_t nnz,
                                   const float* x, float* out) {
  float s = 0.0f;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t k = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; k < nnz; k += 4 * stride) {
    int32_t c[4];
    float v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t e = k + j * stride;
      c[j] = e < nnz ? col[e] : 0;
      v[j] = e < nnz ? val[e] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) s += v[j] * (GATHER ? x[c[j]] : static_cast<float>(c[j]));
  }
  out[int64_t{blockIdx.x} * blockDim.x + threadIdx.x] = s;
}

// The same floor for spmm with k = 4Q columns of a row-major X: Q threads
// per entry, each reading one float4 of X's row at the entry's column.
template <int Q>
__global__ void row_floor_kernel(const int32_t* col, const float* val, int64_t nnz, const float4* x,
                                 float4* out) {
  const int q = threadIdx.x % Q;
  const int64_t groups = int64_t{gridDim.x} * (blockDim.x / Q);
  float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int64_t e = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / Q; e < nnz; e += 4 * groups) {
    int32_t c[4];
    float v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t f = e + j * groups;
      c[j] = f < nnz ? col[f] : 0;
      v[j] = f < nnz ? val[f] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float4 xv = x[int64_t{c[j]} * Q + q];
      s.x += v[j] * xv.x;
      s.y += v[j] * xv.y;
      s.z += v[j] * xv.z;
      s.w += v[j] * xv.w;
    }
  }
  out[int64_t{blockIdx.x} * blockDim.x + threadIdx.x] = s;
}

// Device-to-device copy bandwidth of 1 GiB (read + write bytes per second).
double copy_bandwidth() {
  const size_t bytes = size_t{1} << 30;
  void *a, *b;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  const double ms = time_ms([&] { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); },
                            [] { CK(cudaDeviceSynchronize()); });
  CK(cudaFree(a));
  CK(cudaFree(b));
  return 2.0 * bytes / (ms * 1e-3);
}

// Largest |got - want| relative to the row's sum of |A||X| (want's scale).
bool close_enough(const std::vector<float>& got, const std::vector<float>& want,
                  const std::vector<float>& scale) {
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-4f * scale[i] + 1e-30f)) return false;
  return true;
}

void compare(const xhal_bench::HostCsr& a, bool triangular, xhal_device_t dev, cusparseHandle_t h,
             double copy_bps) {
  const int64_t n = a.n, nnz = a.nnz();
  constexpr int64_t kMaxK = 64;
  std::printf("== %s\n", a.label.c_str());
  std::vector<float> hx(n * kMaxK);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& v : hx) v = u(rng);

  // ---- xhal ----
  xhal_csr_desc_t desc{};
  desc.struct_size = sizeof desc;
  desc.rows = n;
  desc.cols = n;
  desc.nnz = nnz;
  desc.index_dtype = XHAL_DTYPE_I32;
  desc.row_ptr = a.row_ptr.data();
  desc.col_idx = a.col_idx.data();
  desc.values_dtype = XHAL_DTYPE_F32;
  desc.values_data = a.values.data();
  xhal_csr_t m;
  auto t0 = Clock::now();
  XK(xhal_csr_create(dev, &desc, &m));
  XK(xhal_device_synchronize(dev));
  const double create_ms = ms_since(t0);
  xhal_buffer_t bx, by;
  XK(xhal_buffer_allocate(dev, n * kMaxK * 4, &bx));
  XK(xhal_buffer_allocate(dev, n * kMaxK * 4, &by));
  XK(xhal_buffer_write(bx, 0, hx.data(), n * kMaxK * 4));

  // ---- xhal from device buffers: the same pattern already on the device
  // (a GNN's graph, a simulation's network), validated and analysed there
  // by a plugin of ABI 1.9; timed three times, each matrix checked against
  // the host-created one bit for bit (spmv, A and A^T). ----
  double buffer_ms[3];
  bool buffer_same = true;
  {
    xhal_buffer_t brp, bci, bv, by2;
    XK(xhal_buffer_allocate(dev, (n + 1) * 4, &brp));
    XK(xhal_buffer_allocate(dev, nnz * 4, &bci));
    XK(xhal_buffer_allocate(dev, nnz * 4, &bv));
    XK(xhal_buffer_allocate(dev, n * 4 * 2, &by2));
    XK(xhal_buffer_write(brp, 0, a.row_ptr.data(), (n + 1) * 4));
    XK(xhal_buffer_write(bci, 0, a.col_idx.data(), nnz * 4));
    XK(xhal_buffer_write(bv, 0, a.values.data(), nnz * 4));
    xhal_csr_desc_t bd = desc;
    bd.row_ptr = bd.col_idx = nullptr;
    bd.values_data = nullptr;
    bd.row_ptr_buffer = brp;
    bd.col_idx_buffer = bci;
    bd.values_buffer = bv;
    for (double& ms : buffer_ms) {
      xhal_csr_t mb;
      XK(xhal_device_synchronize(dev));
      const auto t = Clock::now();
      XK(xhal_csr_create(dev, &bd, &mb));
      XK(xhal_device_synchronize(dev));
      ms = ms_since(t);
      for (int tr = 0; tr < 2; ++tr) {
        const auto trans = tr ? XHAL_TRANSPOSE : XHAL_TRANSPOSE_NONE;
        xhal_tensor_t x1, y1, y2;
        const int64_t shape[1] = {n};
        XK(xhal_tensor_init(bx, 0, XHAL_DTYPE_F32, 1, shape, &x1));
        XK(xhal_tensor_init(by2, 0, XHAL_DTYPE_F32, 1, shape, &y1));
        XK(xhal_tensor_init(by2, n * 4, XHAL_DTYPE_F32, 1, shape, &y2));
        XK(xhal_spmv(dev, m, trans, 1.0f, &x1, 0.0f, &y1));
        XK(xhal_spmv(dev, mb, trans, 1.0f, &x1, 0.0f, &y2));
        std::vector<uint32_t> got(n * 2);
        XK(xhal_buffer_read(by2, 0, got.data(), n * 8));
        buffer_same = buffer_same && std::equal(got.begin(), got.begin() + n, got.begin() + n);
      }
      XK(xhal_csr_release(mb));
    }
    for (xhal_buffer_t b : {brp, bci, bv, by2}) XK(xhal_buffer_release(b));
    std::printf(
        "%-52s xhal csr_create from device buffers %.1f / %.1f / %.1f ms (host arrays "
        "%.1f ms)%s\n",
        (a.label + " creation").c_str(), buffer_ms[0], buffer_ms[1], buffer_ms[2], create_ms,
        buffer_same ? "" : "  RESULTS DISAGREE");
    if (!buffer_same) ++g_wrong;
  }

  // ---- cuSPARSE on its own copies ----
  int32_t *drp, *dci;
  float *dv, *dx, *dy;
  CK(cudaMalloc(&drp, (n + 1) * 4));
  CK(cudaMalloc(&dci, nnz * 4));
  CK(cudaMalloc(&dv, nnz * 4));
  CK(cudaMalloc(&dx, n * kMaxK * 4));
  CK(cudaMalloc(&dy, n * kMaxK * 4));
  CK(cudaMemcpy(drp, a.row_ptr.data(), (n + 1) * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dci, a.col_idx.data(), nnz * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dv, a.values.data(), nnz * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dx, hx.data(), n * kMaxK * 4, cudaMemcpyHostToDevice));
  cusparseSpMatDescr_t A;
  CS(cusparseCreateCsr(&A, n, n, nnz, drp, dci, dv, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                       CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  const float one = 1, zero = 0;
  auto drain_x = [&] { XK(xhal_device_synchronize(dev)); };
  auto drain_c = [] { CK(cudaDeviceSynchronize()); };

  // The scale of each output element: sum over the row of |a| |x| (host).
  auto scale_of = [&](bool trans, int64_t k) {
    std::vector<float> s(n * k, 0.0f);
    for (int64_t i = 0; i < n; ++i)
      for (int32_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
        const int64_t out = trans ? a.col_idx[e] : i, in = trans ? i : a.col_idx[e];
        for (int64_t c = 0; c < k; ++c)
          s[out * k + c] += std::fabs(a.values[e]) * std::fabs(hx[in * k + c]);
      }
    return s;
  };

  {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int grid = sms * 8;
    float* fo;
    CK(cudaMalloc(&fo, size_t{256} * grid * 4));
    const double stream_ms =
        time_ms([&] { entry_floor_kernel<false><<<grid, 256>>>(dci, dv, nnz, dx, fo); }, drain_c);
    const double gather_ms =
        time_ms([&] { entry_floor_kernel<true><<<grid, 256>>>(dci, dv, nnz, dx, fo); }, drain_c);
    CK(cudaGetLastError());
    CK(cudaFree(fo));
    // k = 8 and 64: X's row at each entry's column, as spmm must read it.
    float4* fo4;
    CK(cudaMalloc(&fo4, size_t{256} * grid * 16));
    const auto* x4 = reinterpret_cast<const float4*>(dx);
    const double k8_ms =
        time_ms([&] { row_floor_kernel<2><<<grid, 256>>>(dci, dv, nnz, x4, fo4); }, drain_c);
    const double k64_ms =
        time_ms([&] { row_floor_kernel<16><<<grid, 256>>>(dci, dv, nnz, x4, fo4); }, drain_c);
    CK(cudaGetLastError());
    CK(cudaFree(fo4));
    auto frac_at = [&](int64_t k, double ms) {
      return (8.0 * nnz + 4.0 * (n + 1) + 2.0 * 4.0 * n * k) / (ms * 1e-3) / copy_bps;
    };
    std::printf("%-52s k=8 %8.4f ms (%.2f of copy at the floor), k=64 %8.4f ms (%.2f)\n",
                (a.label + " floor, spmm A").c_str(), k8_ms, frac_at(8, k8_ms), k64_ms,
                frac_at(64, k64_ms));
    std::printf(
        "%-52s entries streamed %8.4f ms (%.2f of copy), with x gathered at the columns "
        "%8.4f ms\n",
        (a.label + " floor, A").c_str(), stream_ms, 8.0 * nnz / (stream_ms * 1e-3) / copy_bps,
        gather_ms);
  }

  for (int tr = 0; tr < 2; ++tr) {
    const xhal_transpose_t xt = tr ? XHAL_TRANSPOSE : XHAL_TRANSPOSE_NONE;
    const auto op = tr ? CUSPARSE_OPERATION_TRANSPOSE : CUSPARSE_OPERATION_NON_TRANSPOSE;
    for (int64_t k : {int64_t{1}, int64_t{8}, int64_t{64}}) {
      xhal_tensor_t tx{}, ty{};
      const int64_t shape[2] = {n, k};
      XK(xhal_tensor_init(bx, 0, XHAL_DTYPE_F32, k == 1 ? 1 : 2, shape, &tx));
      XK(xhal_tensor_init(by, 0, XHAL_DTYPE_F32, k == 1 ? 1 : 2, shape, &ty));
      const double xm = time_ms(
          [&] {
            if (k == 1) XK(xhal_spmv(dev, m, xt, 1.0f, &tx, 0.0f, &ty));
            else XK(xhal_spmm(dev, m, xt, 1.0f, &tx, 0.0f, &ty));
          },
          drain_x);
      double cm = 0;
      void* buf = nullptr;
      size_t bsz = 0;
      if (k == 1) {
        cusparseDnVecDescr_t X, Y;
        CS(cusparseCreateDnVec(&X, n, dx, CUDA_R_32F));
        CS(cusparseCreateDnVec(&Y, n, dy, CUDA_R_32F));
        CS(cusparseSpMV_bufferSize(h, op, &one, A, X, &zero, Y, CUDA_R_32F,
                                   CUSPARSE_SPMV_ALG_DEFAULT, &bsz));
        CK(cudaMalloc(&buf, std::max<size_t>(bsz, 16)));
        cm = time_ms(
            [&] {
              CS(cusparseSpMV(h, op, &one, A, X, &zero, Y, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT,
                              buf));
            },
            drain_c);
        CS(cusparseDestroyDnVec(X));
        CS(cusparseDestroyDnVec(Y));
      } else {
        cusparseDnMatDescr_t X, Y;
        CS(cusparseCreateDnMat(&X, n, k, k, dx, CUDA_R_32F, CUSPARSE_ORDER_ROW));
        CS(cusparseCreateDnMat(&Y, n, k, k, dy, CUDA_R_32F, CUSPARSE_ORDER_ROW));
        CS(cusparseSpMM_bufferSize(h, op, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, X, &zero, Y,
                                   CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &bsz));
        CK(cudaMalloc(&buf, std::max<size_t>(bsz, 16)));
        cm = time_ms(
            [&] {
              CS(cusparseSpMM(h, op, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, X, &zero, Y,
                              CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, buf));
            },
            drain_c);
        CS(cusparseDestroyDnMat(X));
        CS(cusparseDestroyDnMat(Y));
      }
      CK(cudaFree(buf));
      // Same numbers up to rounding: xhal's y against cuSPARSE's.
      std::vector<float> gx(n * k), gc(n * k);
      XK(xhal_buffer_read(by, 0, gx.data(), n * k * 4));
      CK(cudaMemcpy(gc.data(), dy, n * k * 4, cudaMemcpyDeviceToHost));
      const bool ok = close_enough(gx, gc, scale_of(tr != 0, k));
      if (!ok) ++g_wrong;
      // Bytes that must move: values and columns, row pointers, X and Y once.
      const double bytes = 8.0 * nnz + 4.0 * (n + 1) + 2.0 * 4.0 * n * k;
      const double frac = bytes / (xm * 1e-3) / copy_bps;
      char name[96];
      std::snprintf(name, sizeof name, "%s %s k=%lld", a.label.c_str(), tr ? "A^T" : "A",
                    static_cast<long long>(k));
      std::printf("%-52s xhal %8.4f ms  cuSPARSE %8.4f ms  speed-up %5.2fx  copy %.2f%s\n", name,
                  xm, cm, cm / xm, frac, ok ? "" : "  RESULTS DISAGREE");
      std::fflush(stdout);
      g_rows.push_back({name, xm, cm, frac});
    }
  }
  if (triangular) {
    double an[2];
    for (int tr = 0; tr < 2; ++tr) {
      const auto op = tr ? CUSPARSE_OPERATION_TRANSPOSE : CUSPARSE_OPERATION_NON_TRANSPOSE;
      cusparseDnVecDescr_t X, Y;
      CS(cusparseCreateDnVec(&X, n, dx, CUDA_R_32F));
      CS(cusparseCreateDnVec(&Y, n, dy, CUDA_R_32F));
      cusparseSpSVDescr_t sv;
      CS(cusparseSpSV_createDescr(&sv));
      cusparseFillMode_t fill = CUSPARSE_FILL_MODE_LOWER;
      cusparseDiagType_t diag = CUSPARSE_DIAG_TYPE_NON_UNIT;
      CS(cusparseSpMatSetAttribute(A, CUSPARSE_SPMAT_FILL_MODE, &fill, sizeof fill));
      CS(cusparseSpMatSetAttribute(A, CUSPARSE_SPMAT_DIAG_TYPE, &diag, sizeof diag));
      size_t ssz = 0;
      CS(cusparseSpSV_bufferSize(h, op, &one, A, X, Y, CUDA_R_32F, CUSPARSE_SPSV_ALG_DEFAULT, sv,
                                 &ssz));
      void* sbuf;
      CK(cudaMalloc(&sbuf, std::max<size_t>(ssz, 16)));
      CK(cudaDeviceSynchronize());
      const auto t = Clock::now();
      CS(cusparseSpSV_analysis(h, op, &one, A, X, Y, CUDA_R_32F, CUSPARSE_SPSV_ALG_DEFAULT, sv,
                               sbuf));
      CK(cudaDeviceSynchronize());
      an[tr] = ms_since(t);
      CS(cusparseSpSV_destroyDescr(sv));
      CK(cudaFree(sbuf));
      CS(cusparseDestroyDnVec(X));
      CS(cusparseDestroyDnVec(Y));
    }
    std::printf(
        "%-52s xhal csr_create %.1f ms  cuSPARSE SpSV analysis A %.1f + A^T %.1f ms  "
        "ratio %.1fx\n",
        (a.label + " creation").c_str(), create_ms, an[0], an[1], create_ms / (an[0] + an[1]));
    g_rows.push_back({a.label + " creation (A and A^T analyses)", create_ms, an[0] + an[1], 0});
    const double best = std::min({buffer_ms[0], buffer_ms[1], buffer_ms[2]});
    std::printf("%-52s xhal csr_create from device buffers %.1f ms (best of 3)  ratio %.1fx\n",
                (a.label + " creation").c_str(), best, best / (an[0] + an[1]));
    g_rows.push_back(
        {a.label + " creation from device buffers (A and A^T analyses)", best, an[0] + an[1], 0});
  }
  CS(cusparseDestroySpMat(A));
  for (void* p : {(void*)drp, (void*)dci, (void*)dv, (void*)dx, (void*)dy}) CK(cudaFree(p));
  XK(xhal_buffer_release(bx));
  XK(xhal_buffer_release(by));
  XK(xhal_csr_release(m));
}

}  // namespace

int main(int argc, char** argv) {
  xhal_device_t dev = open_device_and_say_which();
  cusparseHandle_t h;
  CS(cusparseCreate(&h));
  const double copy_bps = copy_bandwidth();
  std::printf("copy bandwidth (cudaMemcpy, 1 GiB, read + write): %.0f GB/s\n", copy_bps / 1e9);
  const char* pick = std::getenv("XHAL_BENCH_MATRICES");
  auto wanted = [&](const char* name) { return !pick || std::strstr(pick, name) != nullptr; };
  if (wanted("river")) compare(xhal_bench::make_river(), true, dev, h, copy_bps);
  if (wanted("random")) compare(xhal_bench::make_random(), true, dev, h, copy_bps);
  if (wanted("uniform")) compare(xhal_bench::make_uniform(), false, dev, h, copy_bps);
  if (argc > 1) {
    FILE* f = std::fopen(argv[1], "w");
    std::fprintf(f, "{\"copy_gbps\": %.1f, \"rows\": [\n", copy_bps / 1e9);
    for (size_t i = 0; i < g_rows.size(); ++i)
      std::fprintf(f,
                   "  {\"name\": \"%s\", \"xhal_ms\": %.6f, \"cusparse_ms\": %.6f, "
                   "\"copy_fraction\": %.4f}%s\n",
                   g_rows[i].name.c_str(), g_rows[i].xhal_ms, g_rows[i].cusparse_ms,
                   g_rows[i].copy_fraction, i + 1 < g_rows.size() ? "," : "");
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  cusparseDestroy(h);
  XK(xhal_device_release(dev));
  if (g_wrong) std::printf("FAIL: %d result(s) disagree with cuSPARSE beyond rounding\n", g_wrong);
  return g_wrong ? 1 : 0;
}
