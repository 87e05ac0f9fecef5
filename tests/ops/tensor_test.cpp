// Tensor descriptors and the shared per-tensor checks (through index_select,
// the op that takes any dtype).
#include "ops_test_support.h"

namespace xhal::ops_test {
namespace {

TEST(Dtype, SizesAndNames) {
  EXPECT_EQ(xhal_dtype_size(XHAL_DTYPE_F32), 4u);
  EXPECT_EQ(xhal_dtype_size(XHAL_DTYPE_F16), 2u);
  EXPECT_EQ(xhal_dtype_size(XHAL_DTYPE_BF16), 2u);
  EXPECT_EQ(xhal_dtype_size(XHAL_DTYPE_I32), 4u);
  EXPECT_EQ(xhal_dtype_size(XHAL_DTYPE_I64), 8u);
  EXPECT_EQ(xhal_dtype_size(XHAL_DTYPE_U8), 1u);
  EXPECT_EQ(xhal_dtype_size(XHAL_DTYPE_F64), 8u);
  EXPECT_EQ(xhal_dtype_size(XHAL_DTYPE_INVALID), 0u);
  EXPECT_EQ(xhal_dtype_size(static_cast<xhal_dtype_t>(99)), 0u);
  EXPECT_STREQ(xhal_dtype_name(XHAL_DTYPE_BF16), "bf16");
  EXPECT_STREQ(xhal_dtype_name(static_cast<xhal_dtype_t>(99)), "unknown");
}

using TensorTest = OpsTest;

TEST_F(TensorTest, InitFillsAContiguousDescriptor) {
  xhal_buffer_t b = buffer(64);
  const int64_t shape[] = {2, 3};
  xhal_tensor_t t;
  std::memset(&t, 0xff, sizeof t);
  ASSERT_EQ(xhal_tensor_init(b, 8, XHAL_DTYPE_F32, 2, shape, &t), XHAL_OK);
  EXPECT_EQ(t.buffer, b);
  EXPECT_EQ(t.offset, 8u);
  EXPECT_EQ(t.rank, 2u);
  EXPECT_EQ(t.shape[0], 2);
  EXPECT_EQ(t.shape[1], 3);
  for (int k = 0; k < XHAL_MAX_RANK; ++k) EXPECT_EQ(t.strides[k], 0) << k;
  for (int k = 2; k < XHAL_MAX_RANK; ++k) EXPECT_EQ(t.shape[k], 0) << k;

  const int64_t negative[] = {2, -1};
  EXPECT_EQ(xhal_tensor_init(b, 0, XHAL_DTYPE_F32, 2, negative, &t), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has({"shape[1] = -1"}));
  EXPECT_EQ(xhal_tensor_init(b, 0, XHAL_DTYPE_F32, 9, shape, &t), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has({"'rank'", "9"}));
  EXPECT_EQ(xhal_tensor_init(b, 0, XHAL_DTYPE_INVALID, 2, shape, &t), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_tensor_init(nullptr, 0, XHAL_DTYPE_F32, 2, shape, &t), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has({"'buffer'"}));
}

TEST_F(TensorTest, PermuteViewReordersShapeAndStrides) {
  xhal_tensor_t t = tensor(buffer(96), XHAL_DTYPE_F32, {2, 3, 4});
  const uint32_t perm[] = {2, 0, 1};
  xhal_tensor_t v{};
  rec->clear();
  ASSERT_EQ(xhal_tensor_permute_view(&t, perm, &v), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(v.rank, 3u);
  EXPECT_EQ((std::vector<int64_t>{v.shape[0], v.shape[1], v.shape[2]}),
            (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ((std::vector<int64_t>{v.strides[0], v.strides[1], v.strides[2]}),
            (std::vector<int64_t>{1, 12, 4}));
  EXPECT_TRUE(rec->calls.empty()) << "a view moves no data";

  const uint32_t repeated[] = {0, 0, 1};
  EXPECT_EQ(xhal_tensor_permute_view(&t, repeated, &v), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has({"'perm'", "(0, 0, 1)", "repeats"}));
  const uint32_t outside[] = {0, 3, 1};
  EXPECT_EQ(xhal_tensor_permute_view(&t, outside, &v), XHAL_INVALID_ARGUMENT);
  EXPECT_TRUE(message_has({"'perm'", "out of range"}));
}

// Per-tensor checks, seen through index_select (any dtype, contiguous).
class TensorChecks : public OpsTest {
 protected:
  void SetUp() override {
    OpsTest::SetUp();
    p = plan({1, 0, 1}, 2);
    src_buf = buffer(2 * 4 * 4);
    src = tensor(src_buf, XHAL_DTYPE_F32, {2, 4});
    out = f32({3, 4});
  }
  xhal_index_plan_t p = nullptr;
  xhal_buffer_t src_buf = nullptr;
  xhal_tensor_t src{}, out{};
};

TEST_F(TensorChecks, ValidCallReachesThePluginWithExplicitStrides) {
  rec->clear();
  ASSERT_EQ(xhal_index_select(dev, p, &src, &out), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(rec->count("index_select"), 1u);
  const auto& c = *rec->last("index_select");
  EXPECT_EQ(c.tensors[0].rank, 2u);
  EXPECT_EQ(c.tensors[0].strides[0], 4);
  EXPECT_EQ(c.tensors[0].strides[1], 1);
  EXPECT_EQ(c.tensors[1].shape[0], 3);
}

TEST_F(TensorChecks, NullArguments) {
  EXPECT_REJECTED(xhal_index_select(nullptr, p, &src, &out), XHAL_INVALID_ARGUMENT, "'device'");
  EXPECT_REJECTED(xhal_index_select(dev, nullptr, &src, &out), XHAL_INVALID_ARGUMENT, "'plan'");
  EXPECT_REJECTED(xhal_index_select(dev, p, nullptr, &out), XHAL_INVALID_ARGUMENT, "'src'");
  EXPECT_REJECTED(xhal_index_select(dev, p, &src, nullptr), XHAL_INVALID_ARGUMENT, "'out'");
  xhal_tensor_t no_buffer = out;
  no_buffer.buffer = nullptr;
  EXPECT_REJECTED(xhal_index_select(dev, p, &src, &no_buffer), XHAL_INVALID_ARGUMENT, "'out'");
}

TEST_F(TensorChecks, BadDtypeRankExtentStride) {
  xhal_tensor_t t = out;
  t.dtype = static_cast<xhal_dtype_t>(42);
  EXPECT_REJECTED(xhal_index_select(dev, p, &src, &t), XHAL_INVALID_ARGUMENT, "'out'", "42");
  t = out;
  t.rank = 9;
  EXPECT_REJECTED(xhal_index_select(dev, p, &src, &t), XHAL_INVALID_ARGUMENT, "'out'", "rank 9");
  t = out;
  t.shape[1] = -4;
  EXPECT_REJECTED(xhal_index_select(dev, p, &src, &t), XHAL_INVALID_ARGUMENT, "'out'", "[3, -4]");
  t = out;
  t.strides[0] = -4;
  t.strides[1] = 1;
  EXPECT_REJECTED(xhal_index_select(dev, p, &src, &t), XHAL_INVALID_ARGUMENT, "'out'",
                  "strides[0] = -4");
  // Column-major is a valid view but index_select needs contiguous tensors.
  t = out;
  t.strides[0] = 1;
  t.strides[1] = 3;
  EXPECT_REJECTED(xhal_index_select(dev, p, &src, &t), XHAL_INVALID_ARGUMENT, "'out'",
                  "not contiguous");
}

TEST_F(TensorChecks, ExplicitRowMajorStridesAreContiguous) {
  xhal_tensor_t t = out;
  t.strides[0] = 4;
  t.strides[1] = 1;
  EXPECT_EQ(xhal_index_select(dev, p, &src, &t), XHAL_OK) << xhal_last_error();
}

TEST_F(TensorChecks, BytesOutsideTheBuffer) {
  xhal_tensor_t t = src;
  t.offset = 4;  // 32 bytes at offset 4 in a 32-byte buffer
  EXPECT_REJECTED(xhal_index_select(dev, p, &t, &out), XHAL_OUT_OF_RANGE, "'src'", "36 bytes",
                  "has 32");
  // Extents whose byte count wraps 64 bits must not pass.
  t = src;
  t.rank = 3;
  t.shape[0] = 2;
  t.shape[1] = 4;
  t.shape[2] = int64_t{1} << 61;
  EXPECT_REJECTED(xhal_index_select(dev, p, &t, &out), XHAL_OUT_OF_RANGE, "'src'");
  t = src;
  t.offset = ~uint64_t{0} - 3;
  EXPECT_REJECTED(xhal_index_select(dev, p, &t, &out), XHAL_OUT_OF_RANGE, "'src'");
}

TEST_F(TensorChecks, ShapeMismatchNamesArgumentAndShapes) {
  xhal_tensor_t bad = f32({3, 5});
  EXPECT_REJECTED(xhal_index_select(dev, p, &src, &bad), XHAL_SHAPE_MISMATCH,
                  "argument 'out': shape [3, 5] but expected [3, 4]");
  xhal_tensor_t bad_src = f32({3, 4});
  EXPECT_REJECTED(xhal_index_select(dev, p, &bad_src, &out), XHAL_SHAPE_MISMATCH,
                  "argument 'src': shape [3, 4] but expected [2, 4]");
}

TEST_F(TensorChecks, BufferOfAnotherDevice) {
  xhal_tensor_t other = f32({3, 4}, dev1);
  EXPECT_REJECTED(xhal_index_select(dev, p, &src, &other), XHAL_WRONG_DEVICE, "'out'",
                  "recorder:1");
}

TEST_F(TensorChecks, OverlappingOutputIsAliasing) {
  xhal_buffer_t b = buffer(2 * 4 * 4 + 3 * 4 * 4);
  xhal_tensor_t s = tensor(b, XHAL_DTYPE_F32, {2, 4});
  xhal_tensor_t o = tensor(b, XHAL_DTYPE_F32, {3, 4}, 28);  // shares bytes [28, 32)
  EXPECT_REJECTED(xhal_index_select(dev, p, &s, &o), XHAL_ALIASING, "'out'", "'src'");
  o = tensor(b, XHAL_DTYPE_F32, {3, 4}, 32);  // adjacent, disjoint
  EXPECT_EQ(xhal_index_select(dev, p, &s, &o), XHAL_OK) << xhal_last_error();
}

}  // namespace
}  // namespace xhal::ops_test
