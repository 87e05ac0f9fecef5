// xhal_buffer_import, xhal_buffer_get_native, read-only buffers, the native
// queue and signal/wait on the cpu device.
#include <cstddef>
#include <string>

#include "fixture.h"

namespace xhal::interop_test {
namespace {

TEST_F(InteropTest, ImportedHostMemoryIsZeroCopyBothWays) {
  alignas(64) float host[8] = {};
  std::atomic<int> released{0};
  const xhal_external_memory_t m = host_memory(host, sizeof host, &released);
  xhal_buffer_t b = nullptr;
  ASSERT_EQ(xhal_buffer_import(dev, &m, &b), XHAL_OK) << xhal_last_error();

  xhal_native_memory_t n{};
  n.struct_size = sizeof n;
  ASSERT_EQ(xhal_buffer_get_native(b, &n), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(n.pointer, static_cast<void*>(host));
  EXPECT_EQ(n.kind, XHAL_MEMORY_HOST);
  EXPECT_EQ(n.device_ordinal, 0);
  EXPECT_EQ(n.size, sizeof host);

  // An xhal op writes the imported memory: the host sees it.
  xhal_buffer_t x = filled({0, 0, 0, 0, 1, 1, 1, 1});
  const xhal_tensor_t xt = tensor(x, {2, 4}), yt = tensor(b, {2, 4});
  ASSERT_EQ(xhal_softmax_forward(dev, &xt, &yt), XHAL_OK) << xhal_last_error();
  for (float v : host) EXPECT_EQ(v, 0.25f);
  // The host writes it: xhal reads it.
  host[3] = 42.0f;
  EXPECT_EQ(read(b, 8)[3], 42.0f);

  EXPECT_EQ(released.load(), 0);
  ASSERT_EQ(xhal_buffer_release(b), XHAL_OK);
  EXPECT_EQ(released.load(), 1);
  EXPECT_EQ(xhal_buffer_release(b), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(released.load(), 1);
}

TEST_F(InteropTest, AllocatedBufferHasANativePointer) {
  xhal_buffer_t b = filled({1, 2, 3});
  xhal_native_memory_t n{};
  n.struct_size = sizeof n;
  ASSERT_EQ(xhal_buffer_get_native(b, &n), XHAL_OK) << xhal_last_error();
  ASSERT_NE(n.pointer, nullptr);
  EXPECT_EQ(static_cast<float*>(n.pointer)[2], 3.0f);
  static_cast<float*>(n.pointer)[0] = 7.0f;
  EXPECT_EQ(read(b, 1)[0], 7.0f);
}

// Every failing import runs the release callback once, before it returns,
// and writes no handle.
TEST_F(InteropTest, FailedImportReleasesOnce) {
  alignas(64) float host[4] = {};
  struct Case {
    const char* name;
    void (*edit)(xhal_external_memory_t*);
    xhal_status_t status;
    const char* message;
  };
  const Case cases[] = {
      {"kind outside the enum",
       [](xhal_external_memory_t* m) {
         const uint32_t raw = 7;  // as bytes: C++ may not load it as the enum
         std::memcpy(&m->kind, &raw, sizeof raw);
       },
       XHAL_INVALID_ARGUMENT, "memory->kind' is 7"},
      {"cuda memory on cpu", [](xhal_external_memory_t* m) { m->kind = XHAL_MEMORY_CUDA; },
       XHAL_INVALID_ARGUMENT, "memory->kind' is 2"},
      {"rocm memory on cpu", [](xhal_external_memory_t* m) { m->kind = XHAL_MEMORY_ROCM; },
       XHAL_INVALID_ARGUMENT, "memory->kind' is 10"},
      {"another ordinal", [](xhal_external_memory_t* m) { m->device_ordinal = 1; },
       XHAL_WRONG_DEVICE, "memory->device_ordinal' is 1"},
      {"null pointer with a size", [](xhal_external_memory_t* m) { m->pointer = nullptr; },
       XHAL_INVALID_ARGUMENT, "memory->pointer' is NULL"},
      {"unknown flag", [](xhal_external_memory_t* m) { m->flags = 2; }, XHAL_INVALID_ARGUMENT,
       "memory->flags' is 0x2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::atomic<int> released{0};
    xhal_external_memory_t m = host_memory(host, sizeof host, &released);
    c.edit(&m);
    xhal_buffer_t b = reinterpret_cast<xhal_buffer_t>(uintptr_t{0x1234});
    EXPECT_EQ(xhal_buffer_import(dev, &m, &b), c.status);
    EXPECT_TRUE(mentions(c.message)) << xhal_last_error();
    EXPECT_EQ(released.load(), 1);
    if (b != reinterpret_cast<xhal_buffer_t>(uintptr_t{0x1234})) {
      ADD_FAILURE() << "a handle was written";
      xhal_buffer_release(b);  // a wrongly accepted import fails only here
    }
  }
  // NULL out_buffer, a NULL or released device.
  std::atomic<int> released{0};
  xhal_external_memory_t m = host_memory(host, sizeof host, &released);
  EXPECT_EQ(xhal_buffer_import(dev, &m, nullptr), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("out_buffer")) << xhal_last_error();
  EXPECT_EQ(released.load(), 1);
  xhal_buffer_t b = nullptr;
  EXPECT_EQ(xhal_buffer_import(nullptr, &m, &b), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("'device'")) << xhal_last_error();
  EXPECT_EQ(released.load(), 2);
  EXPECT_EQ(b, nullptr);
  // No struct to read a callback from.
  EXPECT_EQ(xhal_buffer_import(dev, nullptr, &b), XHAL_INVALID_ARGUMENT);
  m.struct_size = sizeof(size_t) - 1;
  EXPECT_EQ(xhal_buffer_import(dev, &m, &b), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("struct_size is 7")) << xhal_last_error();
  EXPECT_EQ(released.load(), 2);
  EXPECT_EQ(b, nullptr);
}

// Fields past struct_size are not read: an older caller's struct.
TEST_F(InteropTest, ExternalMemoryStructSizeEdges) {
  alignas(64) float host[4] = {1, 2, 3, 4};
  std::atomic<int> released{0};
  // Ends before `flags`: the READ_ONLY bit left in memory is not read.
  xhal_external_memory_t m = host_memory(host, sizeof host, &released);
  m.flags = XHAL_EXTERNAL_MEMORY_READ_ONLY;
  m.struct_size = offsetof(xhal_external_memory_t, flags);
  xhal_buffer_t b = nullptr;
  ASSERT_EQ(xhal_buffer_import(dev, &m, &b), XHAL_OK) << xhal_last_error();
  const float one = 1.0f;
  EXPECT_EQ(xhal_buffer_write(b, 0, &one, sizeof one), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_buffer_release(b), XHAL_OK);
  EXPECT_EQ(released.load(), 1);

  // Ends inside `release`: no callback is read, so none runs.
  m = host_memory(host, sizeof host, &released);
  m.struct_size = offsetof(xhal_external_memory_t, release) + sizeof(void*) - 1;
  ASSERT_EQ(xhal_buffer_import(dev, &m, &b), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_buffer_release(b), XHAL_OK);
  EXPECT_EQ(released.load(), 1);

  // Ends inside `size`: size reads 0, an empty buffer.
  m = host_memory(host, sizeof host, &released);
  m.struct_size = offsetof(xhal_external_memory_t, size) + 4;
  ASSERT_EQ(xhal_buffer_import(dev, &m, &b), XHAL_OK) << xhal_last_error();
  uint64_t size = 99;
  EXPECT_EQ(xhal_buffer_size(b, &size), XHAL_OK);
  EXPECT_EQ(size, 0u);
  ASSERT_EQ(xhal_buffer_release(b), XHAL_OK);

  // Ends inside `kind`: kind reads 0, not a memory kind.
  m = host_memory(host, sizeof host, &released);
  m.struct_size = offsetof(xhal_external_memory_t, kind) + 2;
  b = nullptr;
  EXPECT_EQ(xhal_buffer_import(dev, &m, &b), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("memory->kind' is 0")) << xhal_last_error();
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(released.load(), 1);  // `release` lies outside struct_size
}

TEST_F(InteropTest, NativeMemoryStructSizeEdges) {
  xhal_buffer_t b = filled({1, 2});
  unsigned char raw[sizeof(xhal_native_memory_t)];
  auto* n = reinterpret_cast<xhal_native_memory_t*>(raw);
  auto untouched_from = [&](size_t offset) {
    for (size_t i = offset; i < sizeof raw; ++i)
      if (raw[i] != 0xab) return false;
    return true;
  };
  // Too small: an error, nothing written.
  std::memset(raw, 0xab, sizeof raw);
  n->struct_size = sizeof(size_t) - 1;
  EXPECT_EQ(xhal_buffer_get_native(b, n), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("out_memory->struct_size is 7")) << xhal_last_error();
  EXPECT_TRUE(untouched_from(sizeof(size_t)));
  EXPECT_EQ(n->struct_size, sizeof(size_t) - 1);
  // Only the header: nothing but struct_size, which stays.
  n->struct_size = sizeof(size_t);
  EXPECT_EQ(xhal_buffer_get_native(b, n), XHAL_OK) << xhal_last_error();
  EXPECT_TRUE(untouched_from(sizeof(size_t)));
  // Up to `pointer`, with `size` cut: size stays as it was.
  n->struct_size = offsetof(xhal_native_memory_t, size) + 7;
  EXPECT_EQ(xhal_buffer_get_native(b, n), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(n->struct_size, offsetof(xhal_native_memory_t, size) + 7);
  EXPECT_EQ(n->kind, XHAL_MEMORY_HOST);
  EXPECT_EQ(n->device_ordinal, 0);
  EXPECT_NE(n->pointer, nullptr);
  EXPECT_TRUE(untouched_from(offsetof(xhal_native_memory_t, size)));
  // NULL and a released buffer.
  EXPECT_EQ(xhal_buffer_get_native(b, nullptr), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("out_memory")) << xhal_last_error();
  EXPECT_EQ(xhal_buffer_get_native(nullptr, n), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("'buffer'")) << xhal_last_error();
}

// A read-only buffer: reads and ops that read it work; every write is
// refused before the device is called, naming the argument.
TEST_F(InteropTest, ReadOnlyImportRefusesWrites) {
  alignas(64) float host[4] = {1, 2, 3, 4};
  std::atomic<int> released{0};
  xhal_external_memory_t m = host_memory(host, sizeof host, &released);
  m.flags = XHAL_EXTERNAL_MEMORY_READ_ONLY;
  xhal_buffer_t ro = nullptr;
  ASSERT_EQ(xhal_buffer_import(dev, &m, &ro), XHAL_OK) << xhal_last_error();
  buffers.push_back(ro);
  xhal_buffer_t rw = buffer(sizeof host);
  xhal_counters_t before{}, after{};
  ASSERT_EQ(xhal_device_get_counters(dev, &before), XHAL_OK);

  const float v = 9.0f;
  EXPECT_EQ(xhal_buffer_write(ro, 0, &v, sizeof v), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("argument 'dst': the buffer is read-only")) << xhal_last_error();
  EXPECT_EQ(xhal_buffer_fill(ro, 0, 4, &v, 4), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("'dst'")) << xhal_last_error();
  EXPECT_EQ(xhal_buffer_copy(rw, 0, ro, 0, 4), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("'dst'")) << xhal_last_error();
  const xhal_tensor_t rot = tensor(ro, {1, 4}), rwt = tensor(rw, {1, 4});
  EXPECT_EQ(xhal_softmax_forward(dev, &rwt, &rot), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("argument 'y': the buffer is read-only")) << xhal_last_error();
  // In place on a read-only buffer: y is x, still a write.
  EXPECT_EQ(xhal_softmax_forward(dev, &rot, &rot), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("'y'")) << xhal_last_error();
  ASSERT_EQ(xhal_device_get_counters(dev, &after), XHAL_OK);
  EXPECT_EQ(after.kernel_launches, before.kernel_launches);
  EXPECT_EQ(after.host_to_device_transfers, before.host_to_device_transfers);
  EXPECT_EQ(host[0], 1.0f);
  EXPECT_EQ(host[3], 4.0f);

  // Reads are fine: buffer_read, a copy from it, an op input.
  EXPECT_EQ(read(ro, 4)[2], 3.0f);
  EXPECT_EQ(xhal_buffer_copy(ro, 0, rw, 0, sizeof host), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(read(rw, 4)[3], 4.0f);
  EXPECT_EQ(xhal_softmax_forward(dev, &rot, &rwt), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(host[0], 1.0f);
}

// Imported memory may start anywhere: alignment is checked on the address.
TEST_F(InteropTest, MisalignedImportChecksTheAddress) {
  alignas(64) unsigned char host[64] = {};
  const xhal_external_memory_t m = host_memory(host + 2, 32);
  xhal_buffer_t b = nullptr;
  ASSERT_EQ(xhal_buffer_import(dev, &m, &b), XHAL_OK) << xhal_last_error();
  buffers.push_back(b);
  xhal_buffer_t x = filled({1, 2, 3, 4});
  const xhal_tensor_t xt = tensor(x, {1, 4});
  xhal_tensor_t yt = tensor(b, {1, 4});
  EXPECT_EQ(xhal_softmax_forward(dev, &xt, &yt), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("imported memory starts")) << xhal_last_error();
  yt.offset = 2;  // host + 4: aligned for f32
  EXPECT_EQ(xhal_softmax_forward(dev, &xt, &yt), XHAL_OK) << xhal_last_error();
}

TEST_F(InteropTest, CpuQueueIsNullAndOrderingIsANoOp) {
  void* queue = reinterpret_cast<void*>(uintptr_t{1});
  ASSERT_EQ(xhal_device_get_native_queue(dev, &queue), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(queue, nullptr);
  EXPECT_EQ(xhal_device_signal_external_queue(dev, nullptr), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(xhal_device_wait_external_queue(dev, nullptr), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(xhal_device_get_native_queue(dev, nullptr), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("out_queue")) << xhal_last_error();
  EXPECT_EQ(xhal_device_signal_external_queue(nullptr, nullptr), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_device_wait_external_queue(nullptr, nullptr), XHAL_INVALID_ARGUMENT);
}

// The cpu device has no queue: "on the caller's queue" with NULL is a plain
// open (the same handle), anything else is refused naming the argument.
TEST_F(InteropTest, CpuDeviceOpensOnTheNullQueueOnly) {
  xhal_device_t same = nullptr;
  ASSERT_EQ(xhal_device_open_on_native_queue("cpu", nullptr, &same), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(same, dev);
  ASSERT_EQ(xhal_device_release(same), XHAL_OK);
  // dev is open on its own (no) queue: a non-NULL queue is refused before the
  // plugin sees it (one device, one queue); closed, the plugin refuses it.
  xhal_device_t other = nullptr;
  int queue = 0;
  EXPECT_EQ(xhal_device_open_on_native_queue("cpu", &queue, &other), XHAL_BUSY);
  EXPECT_EQ(other, nullptr);
  ASSERT_EQ(xhal_device_release(dev), XHAL_OK);
  EXPECT_EQ(xhal_device_open_on_native_queue("cpu", &queue, &other), XHAL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(xhal_last_error()).find("argument 'native_queue'"), std::string::npos)
      << xhal_last_error();
  EXPECT_EQ(other, nullptr);
  ASSERT_EQ(xhal_device_open_on_native_queue("cpu", nullptr, &dev), XHAL_OK)
      << xhal_last_error();  // TearDown releases it
  void* q = &queue;
  ASSERT_EQ(xhal_device_get_native_queue(dev, &q), XHAL_OK);
  EXPECT_EQ(q, nullptr);
}

}  // namespace
}  // namespace xhal::interop_test
