// Handles used after release, released twice, of another kind, made up, or
// of a device that was closed and reopened: each is XHAL_INVALID_ARGUMENT
// naming the argument, writes nothing and leaves the device usable.
#include <gmock/gmock.h>

#include <algorithm>
#include <cstdint>

#include "cpu_fixture.h"

namespace xhal::robustness_test {
namespace {

using ::testing::HasSubstr;

template <typename H>
H forged(uintptr_t bits) {
  return reinterpret_cast<H>(bits);
}

TEST_F(CpuTest, ReleasedBufferIsRejectedEverywhere) {
  xhal_buffer_t b = buffer(64);
  ASSERT_EQ(xhal_buffer_release(b), XHAL_OK);
  forget(buffers, b);

  uint64_t size = 12345;
  EXPECT_EQ(xhal_buffer_size(b, &size), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'buffer' is not a live buffer handle"));
  EXPECT_EQ(size, 12345u);
  float f[4] = {1, 2, 3, 4};
  EXPECT_EQ(xhal_buffer_write(b, 0, f, sizeof f), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'dst'"));
  EXPECT_EQ(xhal_buffer_read(b, 0, f, sizeof f), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(xhal_buffer_release(b), XHAL_INVALID_ARGUMENT);  // twice
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'buffer'"));

  xhal_buffer_t y = filled({7, 7, 7, 7});
  const xhal_tensor_t tx = tensor(b, {1, 4}), ty = tensor(y, {1, 4});
  EXPECT_EQ(xhal_softmax_forward(dev, &tx, &ty), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'x'"));
  EXPECT_EQ(read(y, 4), (std::vector<float>{7, 7, 7, 7}));
}

TEST_F(CpuTest, StaleHandleStaysStaleWhenItsSlotIsReused) {
  xhal_buffer_t old = buffer(16);
  ASSERT_EQ(xhal_buffer_release(old), XHAL_OK);
  forget(buffers, old);
  // Enough churn that every slot, the old one included, is handed out again.
  for (int i = 0; i < 3000; ++i) {
    xhal_buffer_t b = nullptr;
    ASSERT_EQ(xhal_buffer_allocate(dev, 16, &b), XHAL_OK);
    ASSERT_NE(b, old);
    ASSERT_EQ(xhal_buffer_release(b), XHAL_OK);
  }
  uint64_t size = 0;
  EXPECT_EQ(xhal_buffer_size(old, &size), XHAL_INVALID_ARGUMENT);
  xhal_buffer_t live = buffer(32);
  EXPECT_EQ(xhal_buffer_size(live, &size), XHAL_OK);
  EXPECT_EQ(size, 32u);
}

TEST_F(CpuTest, ReleasedPlanIsRejected) {
  const int64_t idx[] = {1, 0, 1};
  xhal_index_plan_t p = nullptr;
  ASSERT_EQ(xhal_index_plan_create(dev, idx, XHAL_DTYPE_I64, 3, 2, &p), XHAL_OK);
  ASSERT_EQ(xhal_index_plan_release(p), XHAL_OK);
  xhal_buffer_t src = filled({1, 2, 3, 4}), out = filled({9, 9, 9, 9, 9, 9});
  const xhal_tensor_t ts = tensor(src, {2, 2}), to = tensor(out, {3, 2});
  EXPECT_EQ(xhal_index_select(dev, p, &ts, &to), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'plan' is not a live index plan handle"));
  EXPECT_EQ(read(out, 6), (std::vector<float>(6, 9.0f)));
  EXPECT_EQ(xhal_index_plan_release(p), XHAL_INVALID_ARGUMENT);
}

TEST_F(CpuTest, ReleasedMatrixIsRejected) {
  xhal_csr_t m = lower2();
  ASSERT_EQ(xhal_csr_release(m), XHAL_OK);
  forget(matrices, m);
  int64_t rows = -7, cols = -7, nnz = -7;
  EXPECT_EQ(xhal_csr_get_shape(m, &rows, &cols, &nnz), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'matrix' is not a live CSR matrix handle"));
  EXPECT_EQ(rows, -7);
  EXPECT_EQ(nnz, -7);
  xhal_buffer_t x = filled({1, 1}), y = filled({5, 5});
  const xhal_tensor_t tx = tensor(x, {2}), ty = tensor(y, {2});
  EXPECT_EQ(xhal_spmv(dev, m, XHAL_TRANSPOSE_NONE, 1.0f, &tx, 0.0f, &ty), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'a'"));
  EXPECT_EQ(read(y, 2), (std::vector<float>{5, 5}));
  const float v[3] = {1, 1, 1};
  EXPECT_EQ(xhal_csr_set_values(m, v), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_csr_release(m), XHAL_INVALID_ARGUMENT);
}

TEST_F(CpuTest, HandleOfAnotherKindIsNamed) {
  xhal_buffer_t b = buffer(16);
  int64_t rows = 0;
  EXPECT_EQ(xhal_csr_get_shape(reinterpret_cast<xhal_csr_t>(b), &rows, nullptr, nullptr),
            XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("is a buffer handle, not a CSR matrix handle"));
  EXPECT_EQ(xhal_device_synchronize(reinterpret_cast<xhal_device_t>(b)), XHAL_INVALID_ARGUMENT);
  uint64_t size = 0;
  EXPECT_EQ(xhal_buffer_size(reinterpret_cast<xhal_buffer_t>(dev), &size), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("is a device handle, not a buffer handle"));
}

TEST_F(CpuTest, MadeUpHandlesAreRejectedWithoutDereferencing) {
  int local = 0;
  const uintptr_t values[] = {1,
                              0x1234,
                              0xffffffffffffffffull,
                              0x2000000000000001ull,
                              reinterpret_cast<uintptr_t>(&local),
                              reinterpret_cast<uintptr_t>(&values)};
  for (uintptr_t v : values) {
    uint64_t size = 77;
    EXPECT_EQ(xhal_buffer_size(forged<xhal_buffer_t>(v), &size), XHAL_INVALID_ARGUMENT) << v;
    EXPECT_EQ(size, 77u);
    EXPECT_EQ(xhal_buffer_release(forged<xhal_buffer_t>(v)), XHAL_INVALID_ARGUMENT);
    EXPECT_EQ(xhal_index_plan_release(forged<xhal_index_plan_t>(v)), XHAL_INVALID_ARGUMENT);
    EXPECT_EQ(xhal_csr_release(forged<xhal_csr_t>(v)), XHAL_INVALID_ARGUMENT);
    EXPECT_EQ(xhal_device_synchronize(forged<xhal_device_t>(v)), XHAL_INVALID_ARGUMENT);
    EXPECT_EQ(xhal_device_release(forged<xhal_device_t>(v)), XHAL_INVALID_ARGUMENT);
  }
  EXPECT_EQ(xhal_device_synchronize(dev), XHAL_OK);
}

TEST_F(CpuTest, DeviceClosedAndReopenedGetsANewHandle) {
  xhal_buffer_t b = nullptr;
  ASSERT_EQ(xhal_buffer_allocate(dev, 16, &b), XHAL_OK);
  ASSERT_EQ(xhal_buffer_release(b), XHAL_OK);
  xhal_device_t old = dev;
  ASSERT_EQ(xhal_device_release(dev), XHAL_OK);  // the last: the device closes
  ASSERT_EQ(xhal_device_open("cpu", &dev), XHAL_OK);
  EXPECT_NE(dev, old);
  EXPECT_EQ(xhal_device_synchronize(old), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'device' (cpu:0) was released"));
  EXPECT_EQ(xhal_device_release(old), XHAL_INVALID_ARGUMENT);
  uint64_t size = 0;
  EXPECT_EQ(xhal_buffer_size(b, &size), XHAL_INVALID_ARGUMENT);
  xhal_buffer_t fresh = nullptr;
  EXPECT_EQ(xhal_buffer_allocate(old, 16, &fresh), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(fresh, nullptr);
  // The reopened device works.
  xhal_buffer_t c = filled({1, 2, 3});
  EXPECT_EQ(read(c, 3), (std::vector<float>{1, 2, 3}));
}

TEST_F(CpuTest, SecondOpenSharesTheHandleUntilTheLastRelease) {
  xhal_device_t again = nullptr;
  ASSERT_EQ(xhal_device_open("cpu", &again), XHAL_OK);
  EXPECT_EQ(again, dev);
  ASSERT_EQ(xhal_device_release(again), XHAL_OK);
  EXPECT_EQ(xhal_device_synchronize(dev), XHAL_OK);  // one open left
}

TEST_F(CpuTest, BufferDeviceReturnsTheOpenHandle) {
  xhal_buffer_t b = buffer(8);
  xhal_device_t owner = nullptr;
  ASSERT_EQ(xhal_buffer_device(b, &owner), XHAL_OK);
  EXPECT_EQ(owner, dev);
}

}  // namespace
}  // namespace xhal::robustness_test
