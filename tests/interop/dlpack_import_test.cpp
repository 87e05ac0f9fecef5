// DLPack import: zero copy, the deleter exactly once (on release, and before
// returning on every refusal), read-only tensors, strides.
#include "fixture.h"

namespace xhal::interop_test {
namespace {

TEST_F(InteropTest, ImportIsZeroCopyAndDeletesOnRelease) {
  alignas(64) float host[6] = {1, 2, 3, 4, 5, 6};
  HostTensor h(host, {2, 3});
  xhal_tensor_t t{};
  ASSERT_EQ(xhal_tensor_import_dlpack(dev, &h.versioned, &t), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(t.dtype, XHAL_DTYPE_F32);
  EXPECT_EQ(t.rank, 2u);
  EXPECT_EQ(t.offset, 0u);
  xhal_native_memory_t n{};
  n.struct_size = sizeof n;
  ASSERT_EQ(xhal_buffer_get_native(t.buffer, &n), XHAL_OK);
  EXPECT_EQ(n.pointer, static_cast<void*>(host));
  EXPECT_EQ(n.size, sizeof host);
  // An op writes it, the producer sees it.
  xhal_buffer_t x = filled({0, 0, 0, 0, 0, 0});
  const xhal_tensor_t xt = tensor(x, {2, 3});
  ASSERT_EQ(xhal_softmax_forward(dev, &xt, &t), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(host[4], 1.0f / 3.0f);
  EXPECT_EQ(h.deleted.load(), 0);
  ASSERT_EQ(xhal_buffer_release(t.buffer), XHAL_OK);
  EXPECT_EQ(h.deleted.load(), 1);
}

TEST_F(InteropTest, ImportWithByteOffsetAndStrides) {
  alignas(64) float host[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  // A transposed [3, 4] view from byte 0: strides (1, 3) give shape [3, 4]?
  // Take the [4, 3] row-major block transposed: shape [3, 4], strides [1, 3].
  HostTensor h(host, {3, 4}, {2, 32, 1}, {1, 3});
  xhal_tensor_t t{};
  ASSERT_EQ(xhal_tensor_import_dlpack(dev, &h.versioned, &t), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(t.strides[0], 1);
  EXPECT_EQ(t.strides[1], 3);
  // permute takes strided sources: [3, 4] transposed back is the original.
  xhal_buffer_t out = buffer(sizeof host);
  const uint32_t perm[] = {1, 0};
  const xhal_tensor_t ot = tensor(out, {4, 3});
  ASSERT_EQ(xhal_permute(dev, &t, perm, &ot), XHAL_OK) << xhal_last_error();
  const std::vector<float> got = read(out, 12);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(got[i], static_cast<float>(i));
  ASSERT_EQ(xhal_buffer_release(t.buffer), XHAL_OK);

  // Every other column of rows 5 apart, a[:2, ::2] of a [2, 5] array:
  // strides (5, 2) for shape [2, 3]. The elements are distinct although
  // 5 < 2 * 3: the inner dim reaches offsets 0, 2, 4 only.
  HostTensor c(host, {2, 3}, {2, 32, 1}, {5, 2});
  ASSERT_EQ(xhal_tensor_import_dlpack(dev, &c.versioned, &t), XHAL_OK) << xhal_last_error();
  xhal_buffer_t cols = buffer(6 * sizeof(float));
  const uint32_t same[] = {0, 1};
  const xhal_tensor_t ct = tensor(cols, {2, 3});
  ASSERT_EQ(xhal_permute(dev, &t, same, &ct), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(read(cols, 6), (std::vector<float>{0, 2, 4, 5, 7, 9}));
  ASSERT_EQ(xhal_buffer_release(t.buffer), XHAL_OK);

  // byte_offset: the buffer starts there; extent-1 dims' strides do not
  // matter for compactness.
  HostTensor o(host, {1, 2}, {2, 32, 1}, {99, 1});
  o.versioned.dl_tensor.byte_offset = 8;
  ASSERT_EQ(xhal_tensor_import_dlpack(dev, &o.versioned, &t), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(t.strides[0], 0);
  EXPECT_EQ(t.strides[1], 0);
  EXPECT_EQ(read(t.buffer, 2)[1], 3.0f);
  ASSERT_EQ(xhal_buffer_release(t.buffer), XHAL_OK);
  EXPECT_EQ(o.deleted.load(), 1);
}

TEST_F(InteropTest, ReadOnlyImportRefusesWritesAndExportsReadOnly) {
  alignas(64) float host[4] = {1, 2, 3, 4};
  HostTensor h(host, {1, 4});
  h.versioned.flags = XHAL_DLPACK_FLAG_READ_ONLY;
  xhal_tensor_t t{};
  ASSERT_EQ(xhal_tensor_import_dlpack(dev, &h.versioned, &t), XHAL_OK) << xhal_last_error();
  const float v = 0;
  EXPECT_EQ(xhal_buffer_write(t.buffer, 0, &v, 4), XHAL_INVALID_ARGUMENT);
  xhal_buffer_t x = filled({1, 1, 1, 1});
  const xhal_tensor_t xt = tensor(x, {1, 4});
  EXPECT_EQ(xhal_softmax_forward(dev, &xt, &t), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("argument 'y': the buffer is read-only")) << xhal_last_error();
  EXPECT_EQ(xhal_softmax_forward(dev, &t, &xt), XHAL_OK) << xhal_last_error();  // reading is fine
  EXPECT_EQ(host[0], 1.0f);
  // Exported again: read-only says so; DLPack 0.x cannot, so it is refused.
  xhal_dlpack_managed_tensor_versioned_t* m = nullptr;
  ASSERT_EQ(xhal_tensor_export_dlpack(&t, 0, &m), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(m->flags & XHAL_DLPACK_FLAG_READ_ONLY, XHAL_DLPACK_FLAG_READ_ONLY);
  m->deleter(m);
  xhal_dlpack_managed_tensor_t* u = nullptr;
  EXPECT_EQ(xhal_tensor_export_dlpack_unversioned(&t, &u), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("read-only")) << xhal_last_error();
  EXPECT_EQ(u, nullptr);
  ASSERT_EQ(xhal_buffer_release(t.buffer), XHAL_OK);  // before h goes
  EXPECT_EQ(h.deleted.load(), 1);
}

// Each refusal: its status, a message naming the field, the deleter run
// exactly once before returning, and out_tensor left alone.
TEST_F(InteropTest, BadDlpackTensorsAreRefusedAndDeletedOnce) {
  alignas(64) float host[16] = {};
  struct Case {
    const char* name;
    void (*edit)(HostTensor*);
    xhal_status_t status;
    const char* message;
  };
  const Case cases[] = {
      {"major version 2",
       [](HostTensor* h) {
         h->versioned.version = {2, 0};
       },
       XHAL_UNSUPPORTED, "DLPack version 2.0"},
      {"negative stride",
       [](HostTensor* h) {
         h->strides = {-4, 1};
       },
       XHAL_UNSUPPORTED, "negative stride"},
      {"overlapping strides (0 on extent 2)",
       [](HostTensor* h) {
         h->strides = {0, 1};
       },
       XHAL_UNSUPPORTED, "overlap"},
      {"overlapping strides (2 under extent 4)",
       [](HostTensor* h) {
         h->strides = {2, 1};
       },
       XHAL_UNSUPPORTED, "overlap"},
      {"cuda device type",
       [](HostTensor* h) { h->versioned.dl_tensor.device.device_type = XHAL_DLPACK_DEVICE_CUDA; },
       XHAL_INVALID_ARGUMENT, "device_type' is 2"},
      {"device id 1", [](HostTensor* h) { h->versioned.dl_tensor.device.device_id = 1; },
       XHAL_WRONG_DEVICE, "device_id' is 1"},
      {"misaligned data",
       [](HostTensor* h) {
         h->versioned.dl_tensor.data = static_cast<char*>(h->versioned.dl_tensor.data) + 2;
       },
       XHAL_UNSUPPORTED, "not aligned to 4 bytes"},
      {"misaligned byte_offset", [](HostTensor* h) { h->versioned.dl_tensor.byte_offset = 6; },
       XHAL_UNSUPPORTED, "not aligned"},
      {"complex64",
       [](HostTensor* h) {
         h->versioned.dl_tensor.dtype = {5, 64, 1};
       },
       XHAL_UNSUPPORTED, "code 5, bits 64, lanes 1"},
      {"float32 x2 lanes",
       [](HostTensor* h) {
         h->versioned.dl_tensor.dtype = {2, 32, 2};
       },
       XHAL_UNSUPPORTED, "lanes 2"},
      {"bool",
       [](HostTensor* h) {
         h->versioned.dl_tensor.dtype = {6, 8, 1};
       },
       XHAL_UNSUPPORTED, "code 6"},
      {"ndim 9", [](HostTensor* h) { h->versioned.dl_tensor.ndim = 9; }, XHAL_UNSUPPORTED,
       "ndim' is 9"},
      {"ndim -1", [](HostTensor* h) { h->versioned.dl_tensor.ndim = -1; }, XHAL_INVALID_ARGUMENT,
       "ndim' is -1"},
      {"negative extent", [](HostTensor* h) { h->shape[1] = -1; }, XHAL_INVALID_ARGUMENT,
       "negative extent"},
      {"null shape", [](HostTensor* h) { h->versioned.dl_tensor.shape = nullptr; },
       XHAL_INVALID_ARGUMENT, "shape' is NULL"},
      {"null data", [](HostTensor* h) { h->versioned.dl_tensor.data = nullptr; },
       XHAL_INVALID_ARGUMENT, "data' is NULL"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    HostTensor h(host, {2, 4});
    c.edit(&h);
    if (!h.strides.empty()) h.versioned.dl_tensor.strides = h.strides.data();
    xhal_tensor_t t{};
    t.rank = 77;
    EXPECT_EQ(xhal_tensor_import_dlpack(dev, &h.versioned, &t), c.status);
    EXPECT_TRUE(mentions(c.message)) << xhal_last_error();
    EXPECT_EQ(h.deleted.load(), 1);
    EXPECT_EQ(t.rank, 77u);
    EXPECT_EQ(t.buffer, nullptr);
    if (t.buffer) xhal_buffer_release(t.buffer);  // a wrongly accepted tensor fails only here
  }
  // Arguments: NULL out_tensor, a NULL device; NULL managed has no deleter.
  HostTensor h(host, {2, 4});
  EXPECT_EQ(xhal_tensor_import_dlpack(dev, &h.versioned, nullptr), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("out_tensor")) << xhal_last_error();
  EXPECT_EQ(h.deleted.load(), 1);
  xhal_tensor_t t{};
  EXPECT_EQ(xhal_tensor_import_dlpack(nullptr, &h.versioned, &t), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(h.deleted.load(), 2);
  EXPECT_EQ(xhal_tensor_import_dlpack(dev, nullptr, &t), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("'managed' is NULL")) << xhal_last_error();
}

TEST_F(InteropTest, BadUnversionedTensorsAreDeletedOnce) {
  alignas(64) float host[8] = {};
  HostTensor wrong_type(host, {8});
  wrong_type.unversioned.dl_tensor.device.device_type = XHAL_DLPACK_DEVICE_ROCM;
  xhal_tensor_t t{};
  EXPECT_EQ(xhal_tensor_import_dlpack_unversioned(dev, &wrong_type.unversioned, &t),
            XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(wrong_type.deleted.load(), 1);
  HostTensor broadcast(host, {4, 2}, {2, 32, 1}, {0, 1});
  EXPECT_EQ(xhal_tensor_import_dlpack_unversioned(dev, &broadcast.unversioned, &t),
            XHAL_UNSUPPORTED);
  EXPECT_EQ(broadcast.deleted.load(), 1);
  // A good one: deleted at release, once.
  HostTensor good(host, {8});
  ASSERT_EQ(xhal_tensor_import_dlpack_unversioned(dev, &good.unversioned, &t), XHAL_OK)
      << xhal_last_error();
  ASSERT_EQ(xhal_buffer_release(t.buffer), XHAL_OK);
  EXPECT_EQ(xhal_buffer_release(t.buffer), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(good.deleted.load(), 1);
}

TEST_F(InteropTest, EmptyTensorsImport) {
  HostTensor h(nullptr, {0, 4});
  xhal_tensor_t t{};
  ASSERT_EQ(xhal_tensor_import_dlpack(dev, &h.versioned, &t), XHAL_OK) << xhal_last_error();
  uint64_t size = 1;
  EXPECT_EQ(xhal_buffer_size(t.buffer, &size), XHAL_OK);
  EXPECT_EQ(size, 0u);
  ASSERT_EQ(xhal_buffer_release(t.buffer), XHAL_OK);
  EXPECT_EQ(h.deleted.load(), 1);
}

// An xhal export imported back: one memory, two buffers; releasing the
// import runs the export's deleter, which frees the first buffer once its
// handle is gone too.
TEST_F(InteropTest, ExportImportRoundTripSharesMemory) {
  xhal_buffer_t b = filled({1, 2, 3, 4});
  forget(b);
  const xhal_tensor_t t = tensor(b, {2, 2});
  xhal_dlpack_managed_tensor_versioned_t* m = nullptr;
  ASSERT_EQ(xhal_tensor_export_dlpack(&t, 0, &m), XHAL_OK);
  xhal_tensor_t back{};
  ASSERT_EQ(xhal_tensor_import_dlpack(dev, m, &back), XHAL_OK) << xhal_last_error();
  xhal_native_memory_t n1{}, n2{};
  n1.struct_size = n2.struct_size = sizeof n1;
  ASSERT_EQ(xhal_buffer_get_native(b, &n1), XHAL_OK);
  ASSERT_EQ(xhal_buffer_get_native(back.buffer, &n2), XHAL_OK);
  EXPECT_EQ(n1.pointer, n2.pointer);
  ASSERT_EQ(xhal_buffer_release(b), XHAL_OK);  // the import's export keeps it
  EXPECT_EQ(read(back.buffer, 4)[3], 4.0f);
  EXPECT_EQ(xhal_device_release(dev), XHAL_BUSY);
  ASSERT_EQ(xhal_buffer_release(back.buffer), XHAL_OK);
}

}  // namespace
}  // namespace xhal::interop_test
