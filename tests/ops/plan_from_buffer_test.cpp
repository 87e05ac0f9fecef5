// xhal_index_plan_create_from_tensor in the core, with a plugin that has the
// ABI 1.5 slot index_plan_create_from_buffer (the recorder): the tensor's
// buffer, byte offset, dtype, count and num_rows reach the slot, nothing is
// read to the host, the plan works in the ops; a fault the plugin names
// gets the host path's message and writes no plan; an empty list never
// reaches the slot.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ops_test_support.h"

namespace xhal::ops_test {
namespace {

using ::testing::HasSubstr;

TEST_F(OpsTest, PlanFromTensorIsBuiltByThePluginWhereTheIndicesAre) {
  const std::vector<int32_t> idx = {9, 9, 4, 4, 4, 0, 7, 1};  // 2 padding, then 6 indices
  xhal_buffer_t ib = upload(idx);
  const xhal_tensor_t it = tensor(ib, XHAL_DTYPE_I32, {6}, 8);
  xhal_index_plan_t p = nullptr;
  ASSERT_EQ(xhal_index_plan_create_from_tensor(dev, &it, 8, &p), XHAL_OK) << xhal_last_error();
  const recorder::Call* c = rec->last("index_plan_create_from_buffer");
  ASSERT_NE(c, nullptr) << slots();
  EXPECT_EQ(c->src_offset, 8u);
  EXPECT_EQ(c->size, 6u);
  EXPECT_EQ(c->index_dtype, XHAL_DTYPE_I32);
  EXPECT_EQ(c->num_rows, 8u);
  // Copied: the calls below grow rec->calls, which moves its elements.
  void* const slot_plan = c->plan_or_matrix;
  ASSERT_EQ(rec->plans.size(), 1u);
  EXPECT_EQ(rec->plans[0].indices, (std::vector<int64_t>{4, 4, 4, 0, 7, 1}));
  // Neither a read of the list nor the host path's index_plan_create.
  EXPECT_EQ(rec->count("buffer_read"), 0u) << slots();
  EXPECT_EQ(rec->count("index_plan_create"), 0u) << slots();

  // The handle is a plan like any other: its plugin plan reaches the ops.
  const xhal_tensor_t src = f32({8, 2}), out = f32({6, 2});
  ASSERT_EQ(xhal_index_select(dev, p, &src, &out), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(rec->last("index_select")->plan_or_matrix, slot_plan);
  // A row count that does not match the plan is refused as for a host plan.
  const xhal_tensor_t small = f32({7, 2});
  EXPECT_EQ(xhal_index_select(dev, p, &small, &out), XHAL_SHAPE_MISMATCH);
  EXPECT_EQ(rec->live_plans, 1);
  ASSERT_EQ(xhal_index_plan_release(p), XHAL_OK);
  EXPECT_EQ(rec->live_plans, 0);
}

TEST_F(OpsTest, PlanFromTensorFaultGetsTheHostPathsMessage) {
  const std::vector<int64_t> idx = {1, 2, 3, 4, 5, 6};
  xhal_buffer_t ib = upload(idx);
  const xhal_tensor_t it = tensor(ib, XHAL_DTYPE_I64, {6});
  rec->fault_status = XHAL_OUT_OF_RANGE;
  rec->fault = {4, -3};
  auto* sentinel = reinterpret_cast<xhal_index_plan_t>(uintptr_t{0x77});
  xhal_index_plan_t p = sentinel;
  EXPECT_EQ(xhal_index_plan_create_from_tensor(dev, &it, 10, &p), XHAL_OUT_OF_RANGE);
  EXPECT_EQ(std::string(xhal_last_error()),
            "argument 'indices': indices[4] = -3 is outside [0, 10)");
  EXPECT_EQ(p, sentinel);
  EXPECT_EQ(rec->live_plans, 0);

  // A fault position past the list is not taken as a name: the plugin's own
  // message stands.
  rec->fault_status = XHAL_OUT_OF_RANGE;
  rec->fault = {6, 99};
  EXPECT_EQ(xhal_index_plan_create_from_tensor(dev, &it, 10, &p), XHAL_OUT_OF_RANGE);
  EXPECT_THAT(xhal_last_error(), HasSubstr("recorder: planted fault"));
  // Any other failure passes through with its status.
  rec->fault_status = XHAL_OUT_OF_MEMORY;
  EXPECT_EQ(xhal_index_plan_create_from_tensor(dev, &it, 10, &p), XHAL_OUT_OF_MEMORY);
  EXPECT_EQ(p, sentinel);
}

TEST_F(OpsTest, PlanFromAnEmptyTensorNeverReachesTheSlot) {
  xhal_buffer_t ib = buffer(8);
  const xhal_tensor_t it = tensor(ib, XHAL_DTYPE_I64, {0});
  xhal_index_plan_t p = nullptr;
  ASSERT_EQ(xhal_index_plan_create_from_tensor(dev, &it, 5, &p), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(rec->count("index_plan_create_from_buffer"), 0u) << slots();
  EXPECT_EQ(rec->count("index_plan_create"), 1u) << slots();
  ASSERT_EQ(xhal_index_plan_release(p), XHAL_OK);
}

}  // namespace
}  // namespace xhal::ops_test
