// xhal_index_plan_create_from_tensor: the plan of indices in a device
// tensor is the plan of the same host list (same gathers, same refusals and
// messages), at the cost of one counted device-to-host transfer.
#include <string>

#include "fixture.h"

namespace xhal::interop_test {
namespace {

std::vector<float> gather(xhal_device_t dev, xhal_index_plan_t plan, xhal_buffer_t table,
                          int64_t rows, int64_t count) {
  xhal_tensor_t src{}, out{};
  src.buffer = table;
  src.dtype = XHAL_DTYPE_F32;
  src.rank = 2;
  src.shape[0] = rows;
  src.shape[1] = 2;
  xhal_buffer_t ob = nullptr;
  EXPECT_EQ(xhal_buffer_allocate(dev, static_cast<uint64_t>(count) * 8, &ob), XHAL_OK);
  out = src;
  out.buffer = ob;
  out.shape[0] = count;
  EXPECT_EQ(xhal_index_select(dev, plan, &src, &out), XHAL_OK) << xhal_last_error();
  std::vector<float> v(static_cast<size_t>(count) * 2);
  EXPECT_EQ(xhal_buffer_read(ob, 0, v.data(), v.size() * 4), XHAL_OK);
  xhal_buffer_release(ob);
  return v;
}

TEST_F(InteropTest, PlanFromTensorMatchesTheHostPath) {
  xhal_buffer_t table = filled({0, 1, 10, 11, 20, 21, 30, 31});
  const int64_t idx64[] = {3, 0, 3, 1, 2};
  const int32_t idx32[] = {3, 0, 3, 1, 2};
  xhal_index_plan_t host_plan = nullptr;
  ASSERT_EQ(xhal_index_plan_create(dev, idx64, XHAL_DTYPE_I64, 5, 4, &host_plan), XHAL_OK);
  const std::vector<float> expected = gather(dev, host_plan, table, 4, 5);
  xhal_index_plan_release(host_plan);

  for (bool wide : {true, false}) {
    SCOPED_TRACE(wide ? "i64" : "i32");
    const uint64_t bytes = wide ? sizeof idx64 : sizeof idx32;
    xhal_buffer_t ib = buffer(bytes + 8);
    ASSERT_EQ(xhal_buffer_write(ib, 8, wide ? static_cast<const void*>(idx64) : idx32, bytes),
              XHAL_OK);
    const xhal_tensor_t it = tensor(ib, {5}, 8, wide ? XHAL_DTYPE_I64 : XHAL_DTYPE_I32);
    xhal_counters_t before{}, after{};
    ASSERT_EQ(xhal_device_get_counters(dev, &before), XHAL_OK);
    xhal_index_plan_t plan = nullptr;
    ASSERT_EQ(xhal_index_plan_create_from_tensor(dev, &it, 4, &plan), XHAL_OK) << xhal_last_error();
    ASSERT_EQ(xhal_device_get_counters(dev, &after), XHAL_OK);
    // The documented cost of this first version: one read of the indices.
    EXPECT_EQ(after.device_to_host_transfers - before.device_to_host_transfers, 1u);
    EXPECT_EQ(after.device_to_host_bytes - before.device_to_host_bytes, bytes);
    EXPECT_EQ(gather(dev, plan, table, 4, 5), expected);
    ASSERT_EQ(xhal_index_plan_release(plan), XHAL_OK);
  }
}

TEST_F(InteropTest, PlanFromTensorRefusesLikeTheHostPath) {
  const int64_t idx[] = {0, 7, 1};
  xhal_index_plan_t plan = nullptr;
  ASSERT_EQ(xhal_index_plan_create(dev, idx, XHAL_DTYPE_I64, 3, 4, &plan), XHAL_OUT_OF_RANGE);
  const std::string host_message = xhal_last_error();
  xhal_buffer_t ib = buffer(sizeof idx);
  ASSERT_EQ(xhal_buffer_write(ib, 0, idx, sizeof idx), XHAL_OK);
  xhal_tensor_t it = tensor(ib, {3}, 0, XHAL_DTYPE_I64);
  EXPECT_EQ(xhal_index_plan_create_from_tensor(dev, &it, 4, &plan), XHAL_OUT_OF_RANGE);
  EXPECT_EQ(host_message, xhal_last_error());
  EXPECT_TRUE(mentions("indices[1] = 7")) << xhal_last_error();
  EXPECT_EQ(plan, nullptr);

  it.dtype = XHAL_DTYPE_F32;
  it.shape[0] = 6;
  EXPECT_EQ(xhal_index_plan_create_from_tensor(dev, &it, 8, &plan), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions("argument 'indices': dtype f32 not allowed")) << xhal_last_error();
  it = tensor(ib, {3, 1}, 0, XHAL_DTYPE_I64);
  EXPECT_EQ(xhal_index_plan_create_from_tensor(dev, &it, 8, &plan), XHAL_SHAPE_MISMATCH);
  it = tensor(ib, {4}, 0, XHAL_DTYPE_I64);  // past the buffer
  EXPECT_EQ(xhal_index_plan_create_from_tensor(dev, &it, 8, &plan), XHAL_OUT_OF_RANGE);
  it = tensor(ib, {3}, 0, XHAL_DTYPE_I64);
  EXPECT_EQ(xhal_index_plan_create_from_tensor(dev, nullptr, 8, &plan), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_index_plan_create_from_tensor(dev, &it, 8, nullptr), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
}

// Indices a framework owns, imported through DLPack: the GNN's edge index.
TEST_F(InteropTest, PlanFromAnImportedTensor) {
  alignas(64) int32_t edges[4] = {1, 1, 0, 2};
  HostTensor h(edges, {4}, {XHAL_DLPACK_DTYPE_INT, 32, 1});
  xhal_tensor_t it{};
  ASSERT_EQ(xhal_tensor_import_dlpack(dev, &h.versioned, &it), XHAL_OK) << xhal_last_error();
  xhal_index_plan_t plan = nullptr;
  ASSERT_EQ(xhal_index_plan_create_from_tensor(dev, &it, 3, &plan), XHAL_OK) << xhal_last_error();
  xhal_buffer_t table = filled({0, 1, 10, 11, 20, 21});
  EXPECT_EQ(gather(dev, plan, table, 3, 4), (std::vector<float>{10, 11, 10, 11, 0, 1, 20, 21}));
  ASSERT_EQ(xhal_index_plan_release(plan), XHAL_OK);
  ASSERT_EQ(xhal_buffer_release(it.buffer), XHAL_OK);
  EXPECT_EQ(h.deleted.load(), 1);
}

}  // namespace
}  // namespace xhal::interop_test
