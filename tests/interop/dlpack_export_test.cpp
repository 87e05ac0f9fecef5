// DLPack export: the view it gives, zero copy both ways, the deleter keeping
// a released buffer alive, device release while an export lives, flags.
#include <thread>

#include "fixture.h"

namespace xhal::interop_test {
namespace {

TEST_F(InteropTest, ExportIsAZeroCopyView) {
  xhal_buffer_t b = filled({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  const xhal_tensor_t t = tensor(b, {2, 3}, 16);  // elements 4..9
  xhal_dlpack_managed_tensor_versioned_t* m = nullptr;
  ASSERT_EQ(xhal_tensor_export_dlpack(&t, 0, &m), XHAL_OK) << xhal_last_error();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->version.major, 1u);
  EXPECT_EQ(m->version.minor, 0u);
  EXPECT_EQ(m->flags, 0u);
  const xhal_dlpack_tensor_t& d = m->dl_tensor;
  xhal_native_memory_t n{};
  n.struct_size = sizeof n;
  ASSERT_EQ(xhal_buffer_get_native(b, &n), XHAL_OK);
  EXPECT_EQ(d.data, n.pointer);
  EXPECT_EQ(d.byte_offset, 16u);
  EXPECT_EQ(d.device.device_type, XHAL_DLPACK_DEVICE_CPU);
  EXPECT_EQ(d.device.device_id, 0);
  EXPECT_EQ(d.ndim, 2);
  EXPECT_EQ(d.dtype.code, XHAL_DLPACK_DTYPE_FLOAT);
  EXPECT_EQ(d.dtype.bits, 32);
  EXPECT_EQ(d.dtype.lanes, 1);
  EXPECT_EQ(d.shape[0], 2);
  EXPECT_EQ(d.shape[1], 3);
  ASSERT_NE(d.strides, nullptr);
  EXPECT_EQ(d.strides[0], 3);
  EXPECT_EQ(d.strides[1], 1);
  // A write through the DLPack view is what xhal reads.
  float* data = reinterpret_cast<float*>(static_cast<char*>(d.data) + d.byte_offset);
  EXPECT_EQ(data[0], 4.0f);
  data[5] = -1.0f;
  EXPECT_EQ(read(b, 1, 36)[0], -1.0f);
  m->deleter(m);
}

// The export holds the buffer: its handle may go, the memory stays until
// the deleter, and the device cannot be released before it.
TEST_F(InteropTest, ExportKeepsAReleasedBufferAlive) {
  xhal_buffer_t b = filled({1, 2, 3, 4});
  forget(b);
  const xhal_tensor_t t = tensor(b, {4});
  xhal_dlpack_managed_tensor_versioned_t* m = nullptr;
  ASSERT_EQ(xhal_tensor_export_dlpack(&t, 0, &m), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_buffer_release(b), XHAL_OK);
  uint64_t size = 0;
  EXPECT_EQ(xhal_buffer_size(b, &size), XHAL_INVALID_ARGUMENT);  // the handle is gone
  auto* data = static_cast<float*>(m->dl_tensor.data);
  EXPECT_EQ(data[3], 4.0f);  // the memory is not (ASan: no use after free)
  data[3] = 5.0f;
  EXPECT_EQ(xhal_device_release(dev), XHAL_BUSY);
  EXPECT_TRUE(mentions("DLPack exports")) << xhal_last_error();
  m->deleter(m);  // frees the buffer; TearDown's device release succeeds
}

TEST_F(InteropTest, DeviceReleaseIsBusyWhileAnExportLives) {
  xhal_buffer_t b = filled({1, 2});
  const xhal_tensor_t t = tensor(b, {2});
  xhal_dlpack_managed_tensor_t* m = nullptr;
  ASSERT_EQ(xhal_tensor_export_dlpack_unversioned(&t, &m), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_buffer_release(b), XHAL_OK);
  forget(b);
  EXPECT_EQ(xhal_device_release(dev), XHAL_BUSY);
  EXPECT_TRUE(mentions("1 DLPack exports")) << xhal_last_error();
  // The deleter may run on any thread.
  std::thread([m] { m->deleter(m); }).join();
}

TEST_F(InteropTest, ManyExportsOfOneBuffer) {
  xhal_buffer_t b = filled({1, 2, 3});
  forget(b);
  const xhal_tensor_t t = tensor(b, {3});
  std::vector<xhal_dlpack_managed_tensor_versioned_t*> exports(8);
  for (auto& m : exports) ASSERT_EQ(xhal_tensor_export_dlpack(&t, 0, &m), XHAL_OK);
  ASSERT_EQ(xhal_buffer_release(b), XHAL_OK);
  std::vector<std::thread> threads;
  for (auto* m : exports) threads.emplace_back([m] { m->deleter(m); });
  for (auto& th : threads) th.join();
}

// Deleters on other threads while this one runs ops on the same device:
// the frees take the device's queue lock like any call.
TEST_F(InteropTest, DeletersRaceWithOps) {
  xhal_buffer_t x = filled(std::vector<float>(256, 1.0f));
  xhal_buffer_t y = buffer(256 * sizeof(float));
  const xhal_tensor_t xt = tensor(x, {16, 16}), yt = tensor(y, {16, 16});
  std::vector<xhal_dlpack_managed_tensor_versioned_t*> exports;
  for (int i = 0; i < 32; ++i) {
    xhal_buffer_t b = buffer(64);
    forget(b);
    const xhal_tensor_t t = tensor(b, {16});
    xhal_dlpack_managed_tensor_versioned_t* m = nullptr;
    ASSERT_EQ(xhal_tensor_export_dlpack(&t, 0, &m), XHAL_OK);
    ASSERT_EQ(xhal_buffer_release(b), XHAL_OK);  // the export holds the last reference
    exports.push_back(m);
  }
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&exports, k] {
      for (size_t i = static_cast<size_t>(k); i < exports.size(); i += 4)
        exports[i]->deleter(exports[i]);
    });
  xhal_status_t s = XHAL_OK;
  for (int i = 0; i < 200 && s == XHAL_OK; ++i) s = xhal_softmax_forward(dev, &xt, &yt);
  for (auto& th : threads) th.join();  // before any assertion returns
  EXPECT_EQ(s, XHAL_OK) << xhal_last_error();
}

TEST_F(InteropTest, ExportDtypesAndRankZero) {
  const struct {
    xhal_dtype_t dtype;
    uint8_t code, bits;
  } table[] = {{XHAL_DTYPE_F32, 2, 32}, {XHAL_DTYPE_F16, 2, 16}, {XHAL_DTYPE_BF16, 4, 16},
               {XHAL_DTYPE_F64, 2, 64}, {XHAL_DTYPE_I32, 0, 32}, {XHAL_DTYPE_I64, 0, 64},
               {XHAL_DTYPE_U8, 1, 8}};
  xhal_buffer_t b = buffer(64);
  for (const auto& row : table) {
    SCOPED_TRACE(xhal_dtype_name(row.dtype));
    const xhal_tensor_t t = tensor(b, {}, 0, row.dtype);
    xhal_dlpack_managed_tensor_versioned_t* m = nullptr;
    ASSERT_EQ(xhal_tensor_export_dlpack(&t, 0, &m), XHAL_OK) << xhal_last_error();
    EXPECT_EQ(m->dl_tensor.ndim, 0);
    EXPECT_EQ(m->dl_tensor.dtype.code, row.code);
    EXPECT_EQ(m->dl_tensor.dtype.bits, row.bits);
    EXPECT_EQ(m->dl_tensor.dtype.lanes, 1);
    // And back: the same dtype, the same memory.
    xhal_tensor_t back{};
    ASSERT_EQ(xhal_tensor_import_dlpack(dev, m, &back), XHAL_OK) << xhal_last_error();
    EXPECT_EQ(back.dtype, row.dtype);
    EXPECT_EQ(back.rank, 0u);
    ASSERT_EQ(xhal_buffer_release(back.buffer), XHAL_OK);  // runs the export's deleter
  }
}

TEST_F(InteropTest, ExportRefusals) {
  xhal_buffer_t b = filled({1, 2, 3, 4});
  xhal_tensor_t t = tensor(b, {4});
  xhal_dlpack_managed_tensor_versioned_t* m = nullptr;
  EXPECT_EQ(xhal_tensor_export_dlpack(&t, 4, &m), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("argument 'flags' is 0x4")) << xhal_last_error();
  EXPECT_EQ(xhal_tensor_export_dlpack(nullptr, 0, &m), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_tensor_export_dlpack(&t, 0, nullptr), XHAL_INVALID_ARGUMENT);
  t.shape[0] = 5;  // past the buffer
  EXPECT_EQ(xhal_tensor_export_dlpack(&t, 0, &m), XHAL_OUT_OF_RANGE);
  t.shape[0] = 4;
  t.offset = 2;  // misaligned
  EXPECT_EQ(xhal_tensor_export_dlpack(&t, 0, &m), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(m, nullptr);
  // A read-only flag the caller asks for is passed on.
  t.offset = 0;
  ASSERT_EQ(xhal_tensor_export_dlpack(&t, XHAL_DLPACK_FLAG_READ_ONLY, &m), XHAL_OK);
  EXPECT_EQ(m->flags, XHAL_DLPACK_FLAG_READ_ONLY);
  m->deleter(m);
}

TEST_F(InteropTest, UnversionedRoundTrip) {
  xhal_buffer_t b = filled({1, 2, 3, 4, 5, 6});
  const xhal_tensor_t t = tensor(b, {3, 2});
  xhal_dlpack_managed_tensor_t* m = nullptr;
  ASSERT_EQ(xhal_tensor_export_dlpack_unversioned(&t, &m), XHAL_OK) << xhal_last_error();
  xhal_tensor_t back{};
  ASSERT_EQ(xhal_tensor_import_dlpack_unversioned(dev, m, &back), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(back.rank, 2u);
  EXPECT_EQ(back.shape[0], 3);
  EXPECT_EQ(back.strides[0], 0);  // row-major: compact
  EXPECT_EQ(read(back.buffer, 6)[5], 6.0f);
  // The two handles share memory: a write through one shows in the other.
  const float v = 9.0f;
  ASSERT_EQ(xhal_buffer_write(back.buffer, 0, &v, sizeof v), XHAL_OK);
  EXPECT_EQ(read(b, 1)[0], 9.0f);
  ASSERT_EQ(xhal_buffer_release(back.buffer), XHAL_OK);
}

}  // namespace
}  // namespace xhal::interop_test
