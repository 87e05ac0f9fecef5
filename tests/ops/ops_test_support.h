// Fixture of the op front-end tests: the runtime started on the recording
// fake plugins only, devices recorder:0 (every dtype), recorder:1 (f32 only)
// and recmin:0 (no permute, index-plan or sparse slots), recownt:0 (a
// recorder that builds its own CSR transpose) and recdev:0 (one that
// analyses CSR patterns in device buffers), opened by the tests that need
// them, the recorders' states, and helpers for buffers, tensors and rejected calls.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "recorder.h"
#include "xhal/xhal.h"

namespace xhal::ops_test {

inline recorder::State* state_of(const char* backend) {
  const std::string path = std::string(XHAL_RECORDER_DIR) + "/libxhal-" + backend + ".so";
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!handle) return nullptr;
  auto fn = reinterpret_cast<xhal_recorder_state_fn>(dlsym(handle, "xhal_recorder_state"));
  dlclose(handle);  // drops only the reference taken here
  return fn ? fn() : nullptr;
}

inline xhal_device_t open(const std::string& backend, uint32_t backend_index) {
  uint32_t n = 0;
  EXPECT_EQ(xhal_device_count(&n), XHAL_OK) << xhal_last_error();
  for (uint32_t i = 0; i < n; ++i) {
    xhal_device_info_t info{};
    info.struct_size = sizeof info;
    EXPECT_EQ(xhal_device_get_info(i, &info), XHAL_OK);
    if (backend == info.backend && info.backend_index == backend_index) {
      xhal_device_t d = nullptr;
      EXPECT_EQ(xhal_device_open_index(i, &d), XHAL_OK) << xhal_last_error();
      return d;
    }
  }
  ADD_FAILURE() << "no device " << backend << ":" << backend_index;
  return nullptr;
}

class OpsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static bool started = false;
    if (started) return;
    const std::string dir = XHAL_RECORDER_DIR;
    const std::string path = dir + "/libxhal-recorder.so:" + dir + "/libxhal-recmin.so:" + dir +
                             "/libxhal-recownt.so:" + dir + "/libxhal-recdev.so";
    xhal_runtime_options_t o{};
    o.struct_size = sizeof o;
    o.device_selector = "";
    o.plugin_path = path.c_str();
    o.plugin_path_only = 1;
    // BUSY: another suite of this binary started it with the same options.
    const xhal_status_t s = xhal_runtime_init(&o);
    ASSERT_TRUE(s == XHAL_OK || s == XHAL_BUSY) << xhal_last_error();
    started = true;
  }

  void SetUp() override {
    dev = open("recorder", 0);
    dev1 = open("recorder", 1);
    devmin = open("recmin", 0);
    ASSERT_TRUE(dev && dev1 && devmin);
    rec = state_of("recorder");
    recmin = state_of("recmin");
    ASSERT_TRUE(rec && recmin) << dlerror();
    rec->clear();
    recmin->clear();
  }

  void TearDown() override {
    for (xhal_csr_t m : matrices_) EXPECT_EQ(xhal_csr_release(m), XHAL_OK);
    for (xhal_index_plan_t p : plans_) EXPECT_EQ(xhal_index_plan_release(p), XHAL_OK);
    for (xhal_buffer_t b : buffers_) EXPECT_EQ(xhal_buffer_release(b), XHAL_OK);
    for (xhal_device_t d : {dev, dev1, devmin}) {
      if (d) {
        EXPECT_EQ(xhal_device_release(d), XHAL_OK) << xhal_last_error();
      }
    }
  }

  // A zero-filled buffer of `bytes` on `d` (dev by default), released in TearDown.
  xhal_buffer_t buffer(uint64_t bytes, xhal_device_t d = nullptr) {
    xhal_buffer_t b = nullptr;
    EXPECT_EQ(xhal_buffer_allocate(d ? d : dev, bytes, &b), XHAL_OK) << xhal_last_error();
    if (bytes) {
      std::vector<unsigned char> zero(bytes, 0);
      EXPECT_EQ(xhal_buffer_write(b, 0, zero.data(), bytes), XHAL_OK);
    }
    buffers_.push_back(b);
    return b;
  }
  template <typename T>
  xhal_buffer_t upload(const std::vector<T>& v, xhal_device_t d = nullptr) {
    xhal_buffer_t b = buffer(v.size() * sizeof(T), d);
    if (!v.empty()) {
      EXPECT_EQ(xhal_buffer_write(b, 0, v.data(), v.size() * sizeof(T)), XHAL_OK);
    }
    return b;
  }
  template <typename T>
  std::vector<T> download(xhal_buffer_t b, size_t n, uint64_t offset = 0) {
    std::vector<T> v(n);
    if (n) {
      EXPECT_EQ(xhal_buffer_read(b, offset, v.data(), n * sizeof(T)), XHAL_OK) << xhal_last_error();
    }
    return v;
  }
  static xhal_tensor_t tensor(xhal_buffer_t b, xhal_dtype_t dtype, std::vector<int64_t> shape,
                              uint64_t offset = 0) {
    xhal_tensor_t t{};
    EXPECT_EQ(
        xhal_tensor_init(b, offset, dtype, static_cast<uint32_t>(shape.size()), shape.data(), &t),
        XHAL_OK)
        << xhal_last_error();
    return t;
  }
  // A contiguous f32 tensor on a fresh buffer that fits it exactly.
  xhal_tensor_t f32(std::vector<int64_t> shape, xhal_device_t d = nullptr) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return tensor(buffer(static_cast<uint64_t>(n) * 4, d), XHAL_DTYPE_F32, shape);
  }
  xhal_index_plan_t plan(const std::vector<int64_t>& idx, uint64_t num_rows,
                         xhal_device_t d = nullptr) {
    xhal_index_plan_t p = nullptr;
    EXPECT_EQ(
        xhal_index_plan_create(d ? d : dev, idx.data(), XHAL_DTYPE_I64, idx.size(), num_rows, &p),
        XHAL_OK)
        << xhal_last_error();
    plans_.push_back(p);
    return p;
  }
  xhal_csr_t csr(int64_t rows, int64_t cols, const std::vector<int64_t>& row_ptr,
                 const std::vector<int64_t>& col_idx, const std::vector<float>& values = {},
                 xhal_device_t d = nullptr) {
    xhal_csr_desc_t desc{};
    desc.struct_size = sizeof desc;
    desc.rows = rows;
    desc.cols = cols;
    desc.nnz = static_cast<int64_t>(col_idx.size());
    desc.index_dtype = XHAL_DTYPE_I64;
    desc.row_ptr = row_ptr.data();
    desc.col_idx = col_idx.data();
    desc.values = values.empty() ? nullptr : values.data();
    xhal_csr_t m = nullptr;
    EXPECT_EQ(xhal_csr_create(d ? d : dev, &desc, &m), XHAL_OK) << xhal_last_error();
    if (m) matrices_.push_back(m);
    return m;
  }
  void forget(xhal_csr_t m) { std::erase(matrices_, m); }
  void forget(xhal_index_plan_t p) { std::erase(plans_, p); }

  std::string slots() const {
    std::string s;
    for (const auto& c : rec->calls) s += c.slot + " ";
    return s;
  }

  xhal_device_t dev = nullptr, dev1 = nullptr, devmin = nullptr;
  recorder::State* rec = nullptr;
  recorder::State* recmin = nullptr;

 private:
  std::vector<xhal_buffer_t> buffers_;
  std::vector<xhal_index_plan_t> plans_;
  std::vector<xhal_csr_t> matrices_;
};

inline ::testing::AssertionResult message_has(std::initializer_list<const char*> parts) {
  const std::string m = xhal_last_error();
  for (const char* p : parts)
    if (m.find(p) == std::string::npos)
      return ::testing::AssertionFailure() << "message \"" << m << "\" lacks \"" << p << "\"";
  return ::testing::AssertionSuccess();
}
// The same with parts built at run time ("dtype " + name).
inline ::testing::AssertionResult message_has(std::initializer_list<std::string> parts) {
  const std::string m = xhal_last_error();
  for (const std::string& p : parts)
    if (m.find(p) == std::string::npos)
      return ::testing::AssertionFailure() << "message \"" << m << "\" lacks \"" << p << "\"";
  return ::testing::AssertionSuccess();
}

// A plugin tensor's shape and strides are zero past its rank (the core
// fills every slot, so no plugin sees stale values from another call).
inline void expect_zero_past_rank(const xhal_plugin_tensor_t& t) {
  for (uint32_t k = t.rank; k < XHAL_MAX_RANK; ++k) {
    EXPECT_EQ(t.shape[k], 0) << "shape[" << k << "] of a rank-" << t.rank << " tensor";
    EXPECT_EQ(t.strides[k], 0) << "strides[" << k << "] of a rank-" << t.rank << " tensor";
  }
}

}  // namespace xhal::ops_test

// The call fails with `status`, its message holds every given part, and no
// slot of the recording plugin ran (nothing was written).
#define EXPECT_REJECTED(call, status, ...)                                      \
  do {                                                                          \
    rec->clear();                                                               \
    const xhal_status_t s_ = (call);                                            \
    EXPECT_EQ(s_, status) << xhal_status_name(s_) << ": " << xhal_last_error(); \
    EXPECT_TRUE(::xhal::ops_test::message_has({__VA_ARGS__}));                  \
    EXPECT_TRUE(rec->calls.empty()) << "slots reached: " << slots();            \
  } while (0)
