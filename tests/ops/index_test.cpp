// Index plans (validation, the counting-sort transposed selection handed to
// the plugin) and the index_select / index_add front ends.
#include "ops_test_support.h"

namespace xhal::ops_test {
namespace {

using IndexPlanTest = OpsTest;

TEST_F(IndexPlanTest, TransposedSelectionListsSourcesAscending) {
  // Row 2 is a hub (sources 0, 2, 3, 5); row 1 is untouched.
  const std::vector<int32_t> idx = {2, 0, 2, 2, 3, 2, 0};
  xhal_index_plan_t p = nullptr;
  ASSERT_EQ(xhal_index_plan_create(dev, idx.data(), XHAL_DTYPE_I32, idx.size(), 5, &p), XHAL_OK)
      << xhal_last_error();
  ASSERT_EQ(rec->plans.size(), 1u);
  const auto& plan = rec->plans[0];
  EXPECT_EQ(plan.count, 7u);
  EXPECT_EQ(plan.num_rows, 5u);
  EXPECT_EQ(plan.indices, (std::vector<int64_t>{2, 0, 2, 2, 3, 2, 0}));
  EXPECT_EQ(plan.row_ptr, (std::vector<int64_t>{0, 2, 2, 6, 7, 7}));
  EXPECT_EQ(plan.row_sources, (std::vector<int64_t>{1, 6, 0, 2, 3, 5, 4}));
  EXPECT_EQ(plan.max_sources_per_row, 4u);
  EXPECT_EQ(rec->live_plans, 1);
  ASSERT_EQ(xhal_index_plan_release(p), XHAL_OK);
  EXPECT_EQ(rec->live_plans, 0);
  EXPECT_EQ(rec->count("index_plan_destroy"), 1u);
}

TEST_F(IndexPlanTest, HubReceivingEverySourceKeepsTheirOrder) {
  std::vector<int64_t> idx(1000, 7);
  idx[500] = 0;
  plan(idx, 8);
  const auto& p = rec->plans.back();
  EXPECT_EQ(p.max_sources_per_row, 999u);
  EXPECT_EQ(p.row_ptr[7], 1);
  EXPECT_EQ(p.row_ptr[8], 1000);
  for (int64_t k = p.row_ptr[7] + 1; k < p.row_ptr[8]; ++k)
    ASSERT_LT(p.row_sources[k - 1], p.row_sources[k]) << "position " << k;
  EXPECT_EQ(p.row_sources[0], 500);
}

TEST_F(IndexPlanTest, OutOfRangeIndexNamesPositionAndValue) {
  const std::vector<int64_t> idx = {0, 3, 4, -1};
  xhal_index_plan_t p = nullptr;
  EXPECT_REJECTED(xhal_index_plan_create(dev, idx.data(), XHAL_DTYPE_I64, 4, 4, &p),
                  XHAL_OUT_OF_RANGE, "indices[2] = 4", "[0, 4)");
  EXPECT_EQ(p, nullptr);
  const std::vector<int32_t> neg = {0, -5};
  EXPECT_REJECTED(xhal_index_plan_create(dev, neg.data(), XHAL_DTYPE_I32, 2, 4, &p),
                  XHAL_OUT_OF_RANGE, "indices[1] = -5");
  EXPECT_REJECTED(xhal_index_plan_create(dev, idx.data(), XHAL_DTYPE_I64, 1, 0, &p),
                  XHAL_OUT_OF_RANGE, "indices[0] = 0", "[0, 0)");
}

TEST_F(IndexPlanTest, BadArguments) {
  const std::vector<int64_t> idx = {0};
  xhal_index_plan_t p = nullptr;
  EXPECT_REJECTED(xhal_index_plan_create(nullptr, idx.data(), XHAL_DTYPE_I64, 1, 1, &p),
                  XHAL_INVALID_ARGUMENT, "'device'");
  EXPECT_REJECTED(xhal_index_plan_create(dev, nullptr, XHAL_DTYPE_I64, 1, 1, &p),
                  XHAL_INVALID_ARGUMENT, "'indices'");
  EXPECT_REJECTED(xhal_index_plan_create(dev, idx.data(), XHAL_DTYPE_F32, 1, 1, &p),
                  XHAL_INVALID_ARGUMENT, "'index_dtype'", "f32");
  EXPECT_REJECTED(xhal_index_plan_create(dev, idx.data(), XHAL_DTYPE_I64, 1, 1, nullptr),
                  XHAL_INVALID_ARGUMENT, "'out_plan'");
  EXPECT_REJECTED(xhal_index_plan_release(nullptr), XHAL_INVALID_ARGUMENT, "'plan'");
}

TEST_F(IndexPlanTest, EmptyPlanIsValid) {
  xhal_index_plan_t p = nullptr;
  ASSERT_EQ(xhal_index_plan_create(dev, nullptr, XHAL_DTYPE_I64, 0, 0, &p), XHAL_OK)
      << xhal_last_error();
  EXPECT_EQ(rec->plans.back().row_ptr, (std::vector<int64_t>{0}));
  EXPECT_EQ(xhal_index_plan_release(p), XHAL_OK);
}

TEST_F(IndexPlanTest, BackendWithoutPlansIsUnsupported) {
  const std::vector<int64_t> idx = {0};
  xhal_index_plan_t p = nullptr;
  EXPECT_EQ(xhal_index_plan_create(devmin, idx.data(), XHAL_DTYPE_I64, 1, 1, &p), XHAL_UNSUPPORTED);
  EXPECT_TRUE(message_has({"recmin", "index plans"}));
  EXPECT_TRUE(recmin->calls.empty());
}

class IndexOpTest : public OpsTest {
 protected:
  void SetUp() override {
    OpsTest::SetUp();
    p = plan({1, 0, 1}, 2);  // count 3, num_rows 2
  }
  xhal_index_plan_t p = nullptr;
};

TEST_F(IndexOpTest, IndexAddPassesAlphaAndShapes) {
  xhal_tensor_t src = f32({3, 5}), dst = f32({2, 5});
  rec->clear();
  ASSERT_EQ(xhal_index_add(dev, p, 0.5f, &src, &dst), XHAL_OK) << xhal_last_error();
  const auto* c = rec->last("index_add");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->alpha, 0.5f);
  EXPECT_EQ(c->tensors[0].shape[0], 3);
  EXPECT_EQ(c->tensors[1].shape[0], 2);
  EXPECT_EQ(c->tensors[1].shape[1], 5);
  // Passed as checked (not reshaped): strides explicit, the rest zero, also
  // right after a rank-3 call (rejected after its tensor checks) left
  // strides[2] in the same stack slots.
  xhal_tensor_t src3 = f32({3, 5, 2}), dst3 = f32({2, 5, 2});
  ASSERT_EQ(xhal_index_add(dev, p, 0.5f, &src3, &dst3), XHAL_SHAPE_MISMATCH);
  ASSERT_EQ(xhal_index_add(dev, p, 0.5f, &src, &dst), XHAL_OK) << xhal_last_error();
  c = rec->last("index_add");
  EXPECT_EQ(c->tensors[0].strides[0], 5);
  EXPECT_EQ(c->tensors[0].strides[1], 1);
  expect_zero_past_rank(c->tensors[0]);
  expect_zero_past_rank(c->tensors[1]);
}

TEST_F(IndexOpTest, IndexAddIsFloatOnly) {
  xhal_tensor_t src = tensor(buffer(60), XHAL_DTYPE_I32, {3, 5}), dst = f32({2, 5});
  EXPECT_REJECTED(xhal_index_add(dev, p, 1.0f, &src, &dst), XHAL_INVALID_ARGUMENT,
                  "argument 'src': dtype i32 not allowed, op index_add takes f32, f16, bf16, f64");
}

TEST_F(IndexOpTest, IndexAddShapes) {
  xhal_tensor_t src = f32({3, 5}), dst = f32({3, 5}), src2 = f32({2, 5});
  EXPECT_REJECTED(xhal_index_add(dev, p, 1.0f, &src, &dst), XHAL_SHAPE_MISMATCH,
                  "argument 'dst': shape [3, 5] but expected [2, 5]");
  xhal_tensor_t dst2 = f32({2, 5});
  EXPECT_REJECTED(xhal_index_add(dev, p, 1.0f, &src2, &dst2), XHAL_SHAPE_MISMATCH,
                  "argument 'src': shape [2, 5] but expected [3, 5]");
  xhal_tensor_t flat = f32({15});
  EXPECT_REJECTED(xhal_index_add(dev, p, 1.0f, &flat, &dst2), XHAL_SHAPE_MISMATCH, "'src'",
                  "rank 1");
}

TEST_F(IndexOpTest, IndexAddDstMayNotAliasSrc) {
  xhal_buffer_t b = buffer(100 * 4);
  xhal_tensor_t src = tensor(b, XHAL_DTYPE_F32, {3, 5}),
                dst = tensor(b, XHAL_DTYPE_F32, {2, 5}, 40);
  EXPECT_REJECTED(xhal_index_add(dev, p, 1.0f, &src, &dst), XHAL_ALIASING, "'dst'", "'src'");
}

TEST_F(IndexOpTest, PlanOfAnotherDevice) {
  xhal_index_plan_t p1 = plan({0}, 1, dev1);
  xhal_tensor_t src = f32({1, 2}), out = f32({1, 2});
  EXPECT_REJECTED(xhal_index_select(dev, p1, &src, &out), XHAL_WRONG_DEVICE, "'plan'",
                  "recorder:1");
}

TEST_F(IndexOpTest, DtypeAllowedButNotImplementedIsUnsupported) {
  xhal_index_plan_t p1 = plan({0, 0}, 1, dev1);
  xhal_tensor_t src = tensor(buffer(8, dev1), XHAL_DTYPE_I32, {1, 2});
  xhal_tensor_t out = tensor(buffer(16, dev1), XHAL_DTYPE_I32, {2, 2});
  EXPECT_REJECTED(xhal_index_select(dev1, p1, &src, &out), XHAL_UNSUPPORTED, "'src'", "i32",
                  "index_select", "recorder");
  // Device 0 implements i32 gathers; the dtypes of src and out must agree.
  xhal_tensor_t src0 = tensor(buffer(32), XHAL_DTYPE_I64, {2, 2});
  xhal_tensor_t out_i32 = tensor(buffer(12 * 4), XHAL_DTYPE_I32, {3, 2});
  EXPECT_REJECTED(xhal_index_select(dev, p, &src0, &out_i32), XHAL_INVALID_ARGUMENT, "'out'", "i32",
                  "'src'", "i64");
  xhal_tensor_t out_i64 = tensor(buffer(12 * 4), XHAL_DTYPE_I64, {3, 2});
  rec->clear();
  EXPECT_EQ(xhal_index_select(dev, p, &src0, &out_i64), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(rec->count("index_select"), 1u);
}

TEST_F(IndexOpTest, ZeroWidthAndZeroCountWriteNothing) {
  xhal_tensor_t src = f32({2, 0}), out = f32({3, 0});
  rec->clear();
  EXPECT_EQ(xhal_index_select(dev, p, &src, &out), XHAL_OK) << xhal_last_error();
  xhal_tensor_t s3 = f32({3, 0}), d2 = f32({2, 0});
  EXPECT_EQ(xhal_index_add(dev, p, 1.0f, &s3, &d2), XHAL_OK) << xhal_last_error();
  xhal_index_plan_t empty = plan({}, 4);
  xhal_tensor_t s0 = f32({0, 3}), d4 = f32({4, 3});
  rec->clear();
  EXPECT_EQ(xhal_index_add(dev, empty, 1.0f, &s0, &d4), XHAL_OK) << xhal_last_error();
  EXPECT_TRUE(rec->calls.empty()) << slots();
}

TEST_F(IndexOpTest, PluginFailureIsReportedWithItsMessage) {
  xhal_tensor_t src = f32({2, 2}), out = f32({3, 2});
  rec->fail_next_op = XHAL_PLUGIN_ERROR;
  EXPECT_EQ(xhal_index_select(dev, p, &src, &out), XHAL_PLUGIN_ERROR);
  EXPECT_TRUE(message_has({"planted failure"}));
}

}  // namespace
}  // namespace xhal::ops_test
