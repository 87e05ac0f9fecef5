// The runtime started on the cpu plugin alone, one device opened per test,
// counters for release callbacks and DLPack deleters, and a host-made
// DLPack tensor.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "xhal/xhal.h"

namespace xhal::interop_test {

// A release callback that counts its calls in the int it is given.
inline void count_release(void* user_data) { ++*static_cast<std::atomic<int>*>(user_data); }

// DLPack tensors made by the test, as a framework would: the deleter counts
// its calls in `deleted` and never frees (the test owns the storage).
struct HostTensor {
  std::vector<int64_t> shape, strides;
  xhal_dlpack_managed_tensor_versioned_t versioned{};
  xhal_dlpack_managed_tensor_t unversioned{};
  std::atomic<int> deleted{0};

  HostTensor(void* data, std::vector<int64_t> s, xhal_dlpack_dtype_t dtype = {2, 32, 1},
             std::vector<int64_t> st = {})
      : shape(std::move(s)), strides(std::move(st)) {
    xhal_dlpack_tensor_t t{};
    t.data = data;
    t.device = {XHAL_DLPACK_DEVICE_CPU, 0};
    t.ndim = static_cast<int32_t>(shape.size());
    t.dtype = dtype;
    t.shape = shape.data();
    t.strides = strides.empty() ? nullptr : strides.data();
    versioned.version = {1, 0};
    versioned.manager_ctx = this;
    versioned.deleter = [](xhal_dlpack_managed_tensor_versioned_t* self) {
      ++static_cast<HostTensor*>(self->manager_ctx)->deleted;
    };
    versioned.dl_tensor = t;
    unversioned.dl_tensor = t;
    unversioned.manager_ctx = this;
    unversioned.deleter = [](xhal_dlpack_managed_tensor_t* self) {
      ++static_cast<HostTensor*>(self->manager_ctx)->deleted;
    };
  }
};

class InteropTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    xhal_runtime_options_t o{};
    o.struct_size = sizeof o;
    o.device_selector = "cpu";
    o.plugin_path = XHAL_CPU_PLUGIN;
    o.plugin_path_only = 1;
    const xhal_status_t s = xhal_runtime_init(&o);
    ASSERT_TRUE(s == XHAL_OK || s == XHAL_BUSY) << xhal_last_error();
  }

  void SetUp() override { ASSERT_EQ(xhal_device_open("cpu", &dev), XHAL_OK) << xhal_last_error(); }
  void TearDown() override {
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
  // Host memory described for xhal_buffer_import.
  static xhal_external_memory_t host_memory(void* p, uint64_t bytes,
                                            std::atomic<int>* released = nullptr) {
    xhal_external_memory_t m{};
    m.struct_size = sizeof m;
    m.kind = XHAL_MEMORY_HOST;
    m.device_ordinal = 0;
    m.pointer = p;
    m.size = bytes;
    m.release = released ? count_release : nullptr;
    m.release_user_data = released;
    return m;
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
  void forget(xhal_buffer_t b) {
    buffers.erase(std::remove(buffers.begin(), buffers.end(), b), buffers.end());
  }
  static bool mentions(const char* text) { return std::strstr(xhal_last_error(), text) != nullptr; }

  xhal_device_t dev = nullptr;
  std::vector<xhal_buffer_t> buffers;
};

}  // namespace xhal::interop_test
