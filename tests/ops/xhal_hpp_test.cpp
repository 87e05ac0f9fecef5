// The C++17 wrapper (xhal/xhal.hpp), compiled as C++17: ownership, errors as
// exceptions carrying status and message, and that each call reaches the
// same C function (checked through the recording plugin).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "recorder.h"
#include "xhal/xhal.hpp"

namespace {

static_assert(!std::is_copy_constructible_v<xhal::Buffer>);
static_assert(!std::is_copy_assignable_v<xhal::Device>);
static_assert(std::is_nothrow_move_constructible_v<xhal::Csr>);
static_assert(std::is_nothrow_move_constructible_v<xhal::IndexPlan>);

xhal::recorder::State* recorder_state() {
  const std::string path = std::string(XHAL_RECORDER_DIR) + "/libxhal-recorder.so";
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!h) return nullptr;
  auto fn = reinterpret_cast<xhal_recorder_state_fn>(dlsym(h, "xhal_recorder_state"));
  dlclose(h);
  return fn ? fn() : nullptr;
}

class HppTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = XHAL_RECORDER_DIR;
    const std::string path = dir + "/libxhal-recorder.so:" + dir + "/libxhal-recmin.so";
    xhal_runtime_options_t o{};
    o.struct_size = sizeof o;
    o.device_selector = "";
    o.plugin_path = path.c_str();
    o.plugin_path_only = 1;
    const xhal_status_t s = xhal_runtime_init(&o);
    ASSERT_TRUE(s == XHAL_OK || s == XHAL_BUSY) << xhal_last_error();
    for (uint32_t i = 0; i < xhal::Device::count(); ++i) {
      xhal_device_info_t info{};
      info.struct_size = sizeof info;
      xhal::check(xhal_device_get_info(i, &info));
      if (std::string(info.backend) == "recorder" && info.backend_index == 0) index = i;
    }
    rec = recorder_state();
    ASSERT_NE(rec, nullptr);
  }
  uint32_t index = 0;
  xhal::recorder::State* rec = nullptr;
};

TEST_F(HppTest, BuffersRoundTrip) {
  xhal::Device dev = xhal::Device::open_index(index);
  EXPECT_EQ(dev.label(), "recorder:0");
  EXPECT_TRUE(dev.supports(XHAL_OP_PERMUTE, XHAL_DTYPE_U8));
  std::vector<float> host(16);
  std::iota(host.begin(), host.end(), 1.0f);
  xhal::Buffer a = xhal::Buffer::upload(dev, host);
  EXPECT_EQ(a.size(), 64u);
  xhal::Buffer b = xhal::Buffer::allocate(dev, 64);
  b.fill(2.5f);
  EXPECT_EQ(b.read<float>(16), std::vector<float>(16, 2.5f));
  a.copy_to(b, 32, 0, 32);
  std::vector<float> got = b.read<float>(16);
  EXPECT_EQ(got[0], 2.5f);
  EXPECT_EQ(got[8], 1.0f);
  EXPECT_EQ(got[15], 8.0f);
  const xhal_counters_t c = dev.counters();
  EXPECT_GE(c.host_to_device_transfers, 1u);
}

TEST_F(HppTest, FailuresThrowWithStatusAndMessage) {
  xhal::Device dev = xhal::Device::open_index(index);
  xhal::Buffer src = xhal::Buffer::allocate(dev, 24), dst = xhal::Buffer::allocate(dev, 24);
  try {
    xhal::permute(dev, xhal::tensor<float>(src, {2, 3}), {1, 1}, xhal::tensor<float>(dst, {3, 2}));
    FAIL() << "no exception";
  } catch (const xhal::Error& e) {
    EXPECT_EQ(e.status(), XHAL_INVALID_ARGUMENT);
    EXPECT_NE(e.message().find("'perm'"), std::string::npos) << e.message();
    EXPECT_NE(std::string(e.what()).find("XHAL_INVALID_ARGUMENT"), std::string::npos) << e.what();
  }
  try {
    xhal::permute(dev, xhal::tensor<float>(src, {2, 3}), {1, 0, 2},
                  xhal::tensor<float>(dst, {3, 2}));
    FAIL() << "no exception";
  } catch (const xhal::Error& e) {
    EXPECT_EQ(e.status(), XHAL_INVALID_ARGUMENT);
  }
  EXPECT_THROW(xhal::Buffer::allocate(xhal::Device(), 4), xhal::Error);
}

TEST_F(HppTest, PermuteThroughTheWrapper) {
  xhal::Device dev = xhal::Device::open_index(index);
  xhal::Buffer src = xhal::Buffer::upload(dev, std::vector<int32_t>{0, 1, 2, 3, 4, 5});
  xhal::Buffer dst = xhal::Buffer::allocate(dev, 24);
  xhal::permute(dev, xhal::tensor<int32_t>(src, {2, 3}), {1, 0},
                xhal::tensor<int32_t>(dst, {3, 2}));
  EXPECT_EQ(dst.read<int32_t>(6), (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
  const xhal_tensor_t v = xhal::permute_view(xhal::tensor<int32_t>(src, {2, 3}), {1, 0});
  EXPECT_EQ(v.shape[0], 3);
  EXPECT_EQ(v.strides[0], 1);
  EXPECT_EQ(v.strides[1], 3);
}

TEST_F(HppTest, HandlesReleaseOnceAndMove) {
  xhal::Device dev = xhal::Device::open_index(index);
  const int64_t plans_before = rec->live_plans;
  {
    xhal::IndexPlan p = xhal::IndexPlan::create(dev, std::vector<int32_t>{2, 0, 2}, 3);
    EXPECT_EQ(rec->live_plans, plans_before + 1);
    EXPECT_EQ(rec->plans.back().row_sources, (std::vector<int64_t>{1, 0, 2}));
    xhal::IndexPlan q = std::move(p);
    EXPECT_FALSE(p);
    EXPECT_TRUE(q);
    xhal::IndexPlan r;
    r = std::move(q);
    EXPECT_EQ(rec->live_plans, plans_before + 1);
  }
  EXPECT_EQ(rec->live_plans, plans_before);
  // close() reports a release failure instead of swallowing it.
  xhal::Buffer keep = xhal::Buffer::allocate(dev, 4);
  try {
    dev.close();
    FAIL() << "a device with a live buffer closed";
  } catch (const xhal::Error& e) {
    EXPECT_EQ(e.status(), XHAL_BUSY);
  }
  EXPECT_TRUE(dev);
}

// Value dtypes through the wrapper (docs/semantics.md 7.3, 7.4). The
// recorder claims no f64 sparse op, so an f64 matrix is XHAL_UNSUPPORTED
// there; on its f32 matrices the typed calls take float only. (The f64
// round trip runs in the conformance suite, sparse_f64.cpp, on the cpu
// plugin.)
TEST_F(HppTest, CsrValueDtypes) {
  xhal::Device dev = xhal::Device::open_index(index);
  const std::vector<double> v = {1.0 + 0x1p-40, -2.5, 3.0};
  try {
    xhal::Csr::create(dev, 2, 3, std::vector<int32_t>{0, 2, 3}, std::vector<int32_t>{0, 2, 1}, v);
    FAIL() << "an f64 matrix on a device without f64 sparse ops";
  } catch (const xhal::Error& e) {
    EXPECT_EQ(e.status(), XHAL_UNSUPPORTED) << e.what();
  }
  xhal::Csr a = xhal::Csr::create(dev, 2, 3, std::vector<int32_t>{0, 2, 3},
                                  std::vector<int32_t>{0, 2, 1}, {1, 2, 3});
  EXPECT_EQ(a.values_dtype(), XHAL_DTYPE_F32);
  try {
    a.values<double>();
    FAIL() << "f64 values read from an f32 matrix";
  } catch (const xhal::Error& e) {
    EXPECT_EQ(e.status(), XHAL_INVALID_ARGUMENT) << e.what();
  }
  EXPECT_THROW(a.set_values(v), xhal::Error);
  a.set_values(std::vector<float>{4, 5, 6});
  EXPECT_EQ(a.values(), (std::vector<float>{4, 5, 6}));
}

TEST_F(HppTest, CsrPatternValuesAndSpgemm) {
  xhal::Device dev = xhal::Device::open_index(index);
  const xhal::Csr a32 = xhal::Csr::create(dev, 2, 3, std::vector<int32_t>{0, 2, 3},
                                          std::vector<int32_t>{0, 2, 1}, {1, 2, 3});
  const xhal::Csr b64 =
      xhal::Csr::create(dev, 3, 2, std::vector<int64_t>{0, 1, 1, 2}, std::vector<int64_t>{1, 0});
  EXPECT_EQ(a32.nnz(), 3);
  EXPECT_EQ(a32.values(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(b64.values(), (std::vector<float>{0, 0}));
  std::vector<int64_t> rp, ci;
  a32.pattern(&rp, &ci);
  EXPECT_EQ(rp, (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(ci, (std::vector<int64_t>{0, 2, 1}));
  b64.pattern(&rp, &ci);
  EXPECT_EQ(rp, (std::vector<int64_t>{0, 1, 1, 2}));
  EXPECT_EQ(ci, (std::vector<int64_t>{1, 0}));
  xhal::Csr c = xhal::spgemm(dev, a32, b64);
  EXPECT_EQ(c.rows(), 2);
  EXPECT_EQ(c.cols(), 2);
  c.pattern(&rp, &ci);
  EXPECT_EQ(rp, (std::vector<int64_t>{0, 2, 2}));
  EXPECT_EQ(ci, (std::vector<int64_t>{0, 1}));
  try {
    xhal::Csr::create(dev, 2, 2, std::vector<int64_t>{0, 2, 1}, std::vector<int64_t>{0, 1});
    FAIL() << "no exception";
  } catch (const xhal::Error& e) {
    EXPECT_EQ(e.status(), XHAL_INVALID_STRUCTURE);
    EXPECT_NE(e.message().find("row 1"), std::string::npos) << e.message();
  }
}

TEST_F(HppTest, DeviceOnANativeQueue) {
  void* const queue = reinterpret_cast<void*>(uintptr_t{0x9000});
  {
    xhal::Device d = xhal::Device::open_on_native_queue("recorder:1", queue);
    EXPECT_EQ(d.native_queue(), queue);
    EXPECT_EQ(rec->last_open_queue, queue);
    // One device, one queue: another one is refused with XHAL_BUSY.
    try {
      xhal::Device::open_on_native_queue("recorder:1", nullptr);
      ADD_FAILURE() << "a second queue was accepted";
    } catch (const xhal::Error& e) {
      EXPECT_EQ(e.status(), XHAL_BUSY);
    }
  }
  // Released: the next opening may take another queue.
  xhal::Device d = xhal::Device::open_on_native_queue("recorder:1", nullptr);
  EXPECT_EQ(d.native_queue(), nullptr);
}

}  // namespace
