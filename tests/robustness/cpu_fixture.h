// The runtime started on the cpu plugin alone, one device opened per test,
// and helpers that keep track of what a test created.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "xhal/xhal.h"

namespace xhal::robustness_test {

// Starts the runtime on the cpu plugin alone.
inline xhal_status_t start_cpu_runtime() {
  xhal_runtime_options_t o{};
  o.struct_size = sizeof o;
  o.device_selector = "cpu";
  o.plugin_path = XHAL_CPU_PLUGIN;
  o.plugin_path_only = 1;
  return xhal_runtime_init(&o);
}

class CpuTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const xhal_status_t s = start_cpu_runtime();
    ASSERT_TRUE(s == XHAL_OK || s == XHAL_BUSY) << xhal_last_error();
  }

  void SetUp() override { ASSERT_EQ(xhal_device_open("cpu", &dev), XHAL_OK) << xhal_last_error(); }
  void TearDown() override {
    for (xhal_csr_t m : matrices) xhal_csr_release(m);
    for (xhal_index_plan_t p : plans) xhal_index_plan_release(p);
    for (xhal_buffer_t b : buffers) xhal_buffer_release(b);
    EXPECT_EQ(xhal_device_release(dev), XHAL_OK) << xhal_last_error();
  }

  xhal_buffer_t buffer(uint64_t bytes) {
    xhal_buffer_t b = nullptr;
    EXPECT_EQ(xhal_buffer_allocate(dev, bytes, &b), XHAL_OK) << xhal_last_error();
    buffers.push_back(b);
    return b;
  }
  xhal_buffer_t filled(const std::vector<float>& values) {
    xhal_buffer_t b = buffer(values.size() * sizeof(float));
    EXPECT_EQ(xhal_buffer_write(b, 0, values.data(), values.size() * sizeof(float)), XHAL_OK);
    return b;
  }
  std::vector<float> read(xhal_buffer_t b, size_t count, uint64_t offset = 0) {
    std::vector<float> v(count);
    EXPECT_EQ(xhal_buffer_read(b, offset, v.data(), count * sizeof(float)), XHAL_OK)
        << xhal_last_error();
    return v;
  }
  static xhal_tensor_t tensor(xhal_buffer_t b, std::initializer_list<int64_t> shape,
                              uint64_t offset = 0, xhal_dtype_t dtype = XHAL_DTYPE_F32) {
    xhal_tensor_t t{};
    t.buffer = b;
    t.offset = offset;
    t.dtype = dtype;
    t.rank = static_cast<uint32_t>(shape.size());
    uint32_t k = 0;
    for (int64_t e : shape) t.shape[k++] = e;
    return t;
  }
  // A 2 x 2 lower-triangular matrix [[2, 0], [1, 4]].
  xhal_csr_t lower2() {
    const int64_t row_ptr[] = {0, 1, 3}, col_idx[] = {0, 0, 1};
    const float values[] = {2, 1, 4};
    xhal_csr_desc_t d{};
    d.struct_size = sizeof d;
    d.rows = d.cols = 2;
    d.nnz = 3;
    d.index_dtype = XHAL_DTYPE_I64;
    d.row_ptr = row_ptr;
    d.col_idx = col_idx;
    d.values = values;
    xhal_csr_t m = nullptr;
    EXPECT_EQ(xhal_csr_create(dev, &d, &m), XHAL_OK) << xhal_last_error();
    matrices.push_back(m);
    return m;
  }
  template <typename T>
  static void forget(std::vector<T>& list, T h) {
    list.erase(std::remove(list.begin(), list.end(), h), list.end());
  }

  xhal_device_t dev = nullptr;
  std::vector<xhal_buffer_t> buffers;
  std::vector<xhal_index_plan_t> plans;
  std::vector<xhal_csr_t> matrices;
};

}  // namespace xhal::robustness_test
