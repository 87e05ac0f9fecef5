// Interop on a cuda device (built with the cuda plugin; skipped where no
// CUDA device is found): memory from cudaMalloc imported and exported with
// no copy, a host pointer and a wrong ordinal refused with the callback run
// once, and ordering with a stream of the test's own through signal/wait
// (no device-wide synchronisation on the test's side).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "xhal/xhal.h"

namespace {

void count_release(void* user_data) { ++*static_cast<std::atomic<int>*>(user_data); }

float* device_floats(size_t n) {
  void* p = nullptr;
  return cudaMalloc(&p, n * sizeof(float)) == cudaSuccess ? static_cast<float*>(p) : nullptr;
}

class CudaInteropTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    xhal_runtime_options_t o{};
    o.struct_size = sizeof o;
    o.device_selector = "cuda";  // the cuda plugin beside libxhal, nothing else
    const xhal_status_t s = xhal_runtime_init(&o);
    ASSERT_TRUE(s == XHAL_OK || s == XHAL_BUSY) << xhal_last_error();
  }
  void SetUp() override {
    if (xhal_device_open("cuda:0", &dev) != XHAL_OK) GTEST_SKIP() << xhal_last_error();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    if (!dev) return;
    cudaStreamDestroy(stream);
    EXPECT_EQ(xhal_device_release(dev), XHAL_OK) << xhal_last_error();
  }
  xhal_external_memory_t cuda_memory(void* p, uint64_t bytes, std::atomic<int>* released) {
    xhal_external_memory_t m{};
    m.struct_size = sizeof m;
    m.kind = XHAL_MEMORY_CUDA;
    m.device_ordinal = 0;
    m.pointer = p;
    m.size = bytes;
    m.release = count_release;
    m.release_user_data = released;
    return m;
  }

  xhal_device_t dev = nullptr;
  cudaStream_t stream = nullptr;
};

TEST_F(CudaInteropTest, ImportedDeviceMemoryIsZeroCopyAndOrdered) {
  const size_t n = 1 << 20;
  float* p = device_floats(n);
  ASSERT_NE(p, nullptr);
  std::atomic<int> released{0};
  const xhal_external_memory_t m = cuda_memory(p, n * sizeof(float), &released);
  xhal_buffer_t b = nullptr;
  ASSERT_EQ(xhal_buffer_import(dev, &m, &b), XHAL_OK) << xhal_last_error();
  xhal_native_memory_t native{};
  native.struct_size = sizeof native;
  ASSERT_EQ(xhal_buffer_get_native(b, &native), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(native.pointer, static_cast<void*>(p));
  EXPECT_EQ(native.kind, XHAL_MEMORY_CUDA);
  EXPECT_EQ(native.device_ordinal, 0);
  void* queue = nullptr;
  ASSERT_EQ(xhal_device_get_native_queue(dev, &queue), XHAL_OK) << xhal_last_error();
  EXPECT_NE(queue, nullptr);

  // xhal writes (queued), the test's stream reads after signal: 2.0 everywhere.
  const float two = 2.0f;
  ASSERT_EQ(xhal_buffer_fill(b, 0, n * sizeof(float), &two, 4), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_device_signal_external_queue(dev, stream), XHAL_OK) << xhal_last_error();
  std::vector<float> host(n);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost, stream),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(host[0], 2.0f);
  EXPECT_EQ(host[n - 1], 2.0f);

  // The test's stream writes, xhal reads after wait: zeros.
  ASSERT_EQ(cudaMemsetAsync(p, 0, n * sizeof(float), stream), cudaSuccess);
  ASSERT_EQ(xhal_device_wait_external_queue(dev, stream), XHAL_OK) << xhal_last_error();
  float last = 1.0f;
  ASSERT_EQ(xhal_buffer_read(b, (n - 1) * sizeof(float), &last, 4), XHAL_OK);
  EXPECT_EQ(last, 0.0f);

  ASSERT_EQ(xhal_buffer_release(b), XHAL_OK);
  EXPECT_EQ(released.load(), 1);
  ASSERT_EQ(cudaFree(p), cudaSuccess);
}

TEST_F(CudaInteropTest, HostPointersAndOtherOrdinalsAreRefused) {
  std::vector<float> host(64);
  std::atomic<int> released{0};
  xhal_external_memory_t m = cuda_memory(host.data(), 256, &released);
  xhal_buffer_t b = nullptr;
  EXPECT_EQ(xhal_buffer_import(dev, &m, &b), XHAL_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(xhal_last_error(), "host memory"), nullptr) << xhal_last_error();
  EXPECT_EQ(released.load(), 1);
  float* p = device_floats(64);
  ASSERT_NE(p, nullptr);
  m = cuda_memory(p, 256, &released);
  m.device_ordinal = 1;
  EXPECT_EQ(xhal_buffer_import(dev, &m, &b), XHAL_WRONG_DEVICE);
  EXPECT_EQ(released.load(), 2);
  m.kind = XHAL_MEMORY_HOST;
  m.device_ordinal = 0;
  EXPECT_EQ(xhal_buffer_import(dev, &m, &b), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(released.load(), 3);
  EXPECT_EQ(b, nullptr);
  ASSERT_EQ(cudaFree(p), cudaSuccess);
}

TEST_F(CudaInteropTest, DlpackRoundTripOnTheDevice) {
  xhal_buffer_t b = nullptr;
  ASSERT_EQ(xhal_buffer_allocate(dev, 4 * 8 * sizeof(float), &b), XHAL_OK);
  xhal_tensor_t t{};
  t.buffer = b;
  t.dtype = XHAL_DTYPE_F32;
  t.rank = 2;
  t.shape[0] = 4;
  t.shape[1] = 8;
  const float one = 1.0f;
  ASSERT_EQ(xhal_buffer_fill(b, 0, sizeof(float) * 32, &one, 4), XHAL_OK);
  xhal_dlpack_managed_tensor_versioned_t* m = nullptr;
  ASSERT_EQ(xhal_tensor_export_dlpack(&t, 0, &m), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(m->dl_tensor.device.device_type, XHAL_DLPACK_DEVICE_CUDA);
  EXPECT_EQ(m->dl_tensor.device.device_id, 0);
  ASSERT_EQ(xhal_buffer_release(b), XHAL_OK);  // the export keeps the memory
  // The consumer reads on its stream after the handshake.
  ASSERT_EQ(xhal_device_signal_external_queue(dev, stream), XHAL_OK);
  float host[32] = {};
  ASSERT_EQ(cudaMemcpyAsync(host, m->dl_tensor.data, sizeof host, cudaMemcpyDeviceToHost, stream),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(host[31], 1.0f);
  xhal_tensor_t back{};
  ASSERT_EQ(xhal_tensor_import_dlpack(dev, m, &back), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(xhal_device_release(dev), XHAL_BUSY);
  ASSERT_EQ(xhal_buffer_release(back.buffer), XHAL_OK);  // runs the export's deleter
}

// A device opened on the test's own stream queues xhal's work there: a
// memset the test queued before an xhal op is seen by it, and the op's
// result is seen by a copy the test queued after it, with no event and no
// synchronisation between them. The stream outlives the device.
TEST_F(CudaInteropTest, DeviceOnTheCallersStreamIsOrderedWithIt) {
  ASSERT_EQ(xhal_device_release(dev), XHAL_OK);  // the fixture's opening
  dev = nullptr;
  xhal_device_t on = nullptr;
  ASSERT_EQ(xhal_device_open_on_native_queue("cuda:0", stream, &on), XHAL_OK) << xhal_last_error();
  void* queue = nullptr;
  ASSERT_EQ(xhal_device_get_native_queue(on, &queue), XHAL_OK);
  EXPECT_EQ(queue, static_cast<void*>(stream));
  xhal_device_t busy = nullptr;
  EXPECT_EQ(xhal_device_open_on_native_queue("cuda:0", nullptr, &busy), XHAL_BUSY);

  const size_t n = 1 << 22;
  float* p = device_floats(n);
  float* q = device_floats(n);
  ASSERT_TRUE(p && q);
  std::atomic<int> released{0};
  const xhal_external_memory_t mp = cuda_memory(p, n * sizeof(float), &released);
  const xhal_external_memory_t mq = cuda_memory(q, n * sizeof(float), &released);
  xhal_buffer_t bp = nullptr, bq = nullptr;
  ASSERT_EQ(xhal_buffer_import(on, &mp, &bp), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_buffer_import(on, &mq, &bq), XHAL_OK) << xhal_last_error();
  // Rows of 4 zeros: softmax gives 0.25 everywhere, but only if xhal's op
  // runs after the test's memset on the same stream.
  ASSERT_EQ(cudaMemsetAsync(p, 0, n * sizeof(float), stream), cudaSuccess);
  const int64_t shape[2] = {static_cast<int64_t>(n / 4), 4};
  xhal_tensor_t x{}, y{};
  ASSERT_EQ(xhal_tensor_init(bp, 0, XHAL_DTYPE_F32, 2, shape, &x), XHAL_OK);
  ASSERT_EQ(xhal_tensor_init(bq, 0, XHAL_DTYPE_F32, 2, shape, &y), XHAL_OK);
  ASSERT_EQ(xhal_softmax_forward(on, &x, &y), XHAL_OK) << xhal_last_error();
  std::vector<float> host(n, -1.0f);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), q, n * sizeof(float), cudaMemcpyDeviceToHost, stream),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(host[0], 0.25f);
  EXPECT_EQ(host[n - 1], 0.25f);

  ASSERT_EQ(xhal_buffer_release(bp), XHAL_OK);
  ASSERT_EQ(xhal_buffer_release(bq), XHAL_OK);
  ASSERT_EQ(xhal_device_release(on), XHAL_OK);
  EXPECT_EQ(released.load(), 2);
  // The stream is the test's and still works.
  EXPECT_EQ(cudaMemsetAsync(p, 0, 4, stream), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaFree(p);
  cudaFree(q);
  ASSERT_EQ(xhal_device_open("cuda:0", &dev), XHAL_OK);  // for TearDown
}

}  // namespace
