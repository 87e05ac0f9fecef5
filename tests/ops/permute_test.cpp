// permute: which slot runs and with which reduced problem (perm folded into
// strides, size-1 dims dropped, adjacent dims merged), and the result, which
// the recorder computes by the plain gather rule of xhal_plugin.h.
#include <numeric>
#include <random>

#include "ops_test_support.h"

namespace xhal::ops_test {
namespace {

using Shape = std::vector<int64_t>;

// dst[i] = src[j] with j[perm[k]] = i[k], for a contiguous src.
template <typename T>
std::vector<T> host_permute(const std::vector<T>& src, const Shape& shape,
                            const std::vector<uint32_t>& perm) {
  const size_t r = shape.size();
  Shape strides(r, 1), dshape(r);
  for (size_t k = r; k-- > 1;) strides[k - 1] = strides[k] * shape[k];
  for (size_t k = 0; k < r; ++k) dshape[k] = shape[perm[k]];
  std::vector<T> out(src.size());
  Shape i(r, 0);
  for (size_t n = 0; n < src.size(); ++n) {
    int64_t from = 0;
    for (size_t k = 0; k < r; ++k) from += i[k] * strides[perm[k]];
    out[n] = src[from];
    for (size_t k = r; k-- > 0;) {
      if (++i[k] < dshape[k]) break;
      i[k] = 0;
    }
  }
  return out;
}

class PermuteTest : public OpsTest {
 protected:
  // Runs permute of an iota tensor of `shape` by `perm`; returns dst's values.
  std::vector<float> run(const Shape& shape, const std::vector<uint32_t>& perm) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<float> v(n);
    std::iota(v.begin(), v.end(), 0.0f);
    xhal_tensor_t src = tensor(upload(v), XHAL_DTYPE_F32, shape);
    Shape dshape;
    for (uint32_t p : perm) dshape.push_back(shape[p]);
    xhal_buffer_t out = buffer(n * 4);
    xhal_tensor_t dst = tensor(out, XHAL_DTYPE_F32, dshape);
    rec->clear();
    EXPECT_EQ(xhal_permute(dev, &src, perm.data(), &dst), XHAL_OK) << xhal_last_error();
    calls = rec->calls;
    auto got = download<float>(out, n);
    EXPECT_EQ(got, host_permute(v, shape, perm));
    return got;
  }
  // The reduced problem the permute slot received (src shape and strides).
  std::pair<Shape, Shape> reduced() {
    for (const auto& c : calls)
      if (c.slot == "permute") {
        const auto& s = c.tensors[0];
        const auto& d = c.tensors[1];
        EXPECT_EQ(s.rank, d.rank);
        for (uint32_t k = 0; k < s.rank; ++k) EXPECT_EQ(s.shape[k], d.shape[k]);
        return {Shape(s.shape, s.shape + s.rank), Shape(s.strides, s.strides + s.rank)};
      }
    ADD_FAILURE() << "no permute call";
    return {};
  }
  size_t count(const std::string& slot) const {
    size_t n = 0;
    for (const auto& c : calls) n += c.slot == slot;
    return n;
  }
  std::vector<recorder::Call> calls;
};

TEST_F(PermuteTest, SwapFirstTwoOfThree) {
  run({2, 3, 4}, {1, 0, 2});
  EXPECT_EQ(count("permute"), 1u);
  EXPECT_EQ(reduced(), std::make_pair(Shape{3, 2, 4}, Shape{4, 12, 1}));
}

// The case: dims 0 and 2 of [2,3,4] swapped; element [1][0][0] of
// the result is src[0][0][1] = 1.
TEST_F(PermuteTest, SwapOuterDimsDecodesWithTheOutputShape) {
  const auto got = run({2, 3, 4}, {2, 1, 0});
  EXPECT_EQ(got[1 * 6], 1.0f);
  EXPECT_EQ(reduced(), std::make_pair(Shape{4, 3, 2}, Shape{1, 4, 12}));
}

TEST_F(PermuteTest, LastTwoDimsTranspose) {
  run({2, 3, 4}, {0, 2, 1});
  EXPECT_EQ(reduced(), std::make_pair(Shape{2, 4, 3}, Shape{12, 1, 4}));
  run({8, 16}, {1, 0});
  EXPECT_EQ(reduced(), std::make_pair(Shape{16, 8}, Shape{1, 16}));
}

TEST_F(PermuteTest, AdjacentDimsMerge) {
  // [2,3,4,5] -> [4,5,2,3]: a transpose of [6, 20].
  run({2, 3, 4, 5}, {2, 3, 0, 1});
  EXPECT_EQ(reduced(), std::make_pair(Shape{20, 6}, Shape{1, 20}));
}

TEST_F(PermuteTest, MovingOnlySizeOneDimsIsACopy) {
  run({1, 5, 1, 3}, {2, 1, 0, 3});
  EXPECT_EQ(count("permute"), 0u);
  ASSERT_EQ(count("buffer_copy"), 1u);
  EXPECT_EQ(calls[0].size, 60u);
  run({4, 1, 6}, {1, 0, 2});
  EXPECT_EQ(count("permute"), 0u);
  EXPECT_EQ(count("buffer_copy"), 1u);
  run({2, 3, 4}, {0, 1, 2});
  EXPECT_EQ(count("permute"), 0u);
  EXPECT_EQ(count("buffer_copy"), 1u);
}

TEST_F(PermuteTest, RankZeroAndOneAreCopies) {
  run({}, {});
  EXPECT_EQ(count("buffer_copy"), 1u);
  EXPECT_EQ(calls[0].size, 4u);
  run({7}, {0});
  EXPECT_EQ(count("buffer_copy"), 1u);
}

TEST_F(PermuteTest, RankEightRandomPermutations) {
  std::mt19937 rng(7);
  const Shape shape = {2, 3, 1, 2, 2, 3, 1, 2};
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<uint32_t> perm(8);
    std::iota(perm.begin(), perm.end(), 0u);
    std::shuffle(perm.begin(), perm.end(), rng);
    run(shape, perm);
  }
}

TEST_F(PermuteTest, StridedSourceView) {
  // Columns 1..3 of a [4, 6] matrix, transposed: offset 4 bytes, strides [6, 1].
  std::vector<float> v(24);
  std::iota(v.begin(), v.end(), 0.0f);
  xhal_tensor_t src = tensor(upload(v), XHAL_DTYPE_F32, {4, 3}, 4);
  src.strides[0] = 6;
  src.strides[1] = 1;
  xhal_buffer_t out = buffer(12 * 4);
  xhal_tensor_t dst = tensor(out, XHAL_DTYPE_F32, {3, 4});
  const uint32_t perm[] = {1, 0};
  rec->clear();
  ASSERT_EQ(xhal_permute(dev, &src, perm, &dst), XHAL_OK) << xhal_last_error();
  const auto* c = rec->last("permute");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->tensors[0].offset, 4u);
  EXPECT_EQ(c->tensors[0].strides[0], 1);
  EXPECT_EQ(c->tensors[0].strides[1], 6);
  EXPECT_EQ(download<float>(out, 12),
            (std::vector<float>{1, 7, 13, 19, 2, 8, 14, 20, 3, 9, 15, 21}));
  // Identity on the same view is not one run: still a gather.
  xhal_tensor_t dst2 = tensor(buffer(48), XHAL_DTYPE_F32, {4, 3});
  const uint32_t id[] = {0, 1};
  rec->clear();
  ASSERT_EQ(xhal_permute(dev, &src, id, &dst2), XHAL_OK);
  EXPECT_EQ(rec->count("permute"), 1u);
  EXPECT_EQ(rec->count("buffer_copy"), 0u);
}

TEST_F(PermuteTest, AnyElementSize) {
  std::vector<uint8_t> v(15);
  std::iota(v.begin(), v.end(), uint8_t{0});
  xhal_tensor_t src = tensor(upload(v), XHAL_DTYPE_U8, {3, 5});
  xhal_buffer_t out = buffer(15);
  xhal_tensor_t dst = tensor(out, XHAL_DTYPE_U8, {5, 3});
  const uint32_t perm[] = {1, 0};
  ASSERT_EQ(xhal_permute(dev, &src, perm, &dst), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(download<uint8_t>(out, 15), host_permute(v, {3, 5}, {1, 0}));
}

TEST_F(PermuteTest, BadInput) {
  xhal_tensor_t src = f32({2, 3, 4}), dst = f32({3, 2, 4});
  const uint32_t good[] = {1, 0, 2}, repeated[] = {1, 1, 2}, outside[] = {1, 0, 3};
  EXPECT_REJECTED(xhal_permute(dev, &src, repeated, &dst), XHAL_INVALID_ARGUMENT,
                  "argument 'perm': (1, 1, 2) is not a permutation of 0..2");
  EXPECT_REJECTED(xhal_permute(dev, &src, outside, &dst), XHAL_INVALID_ARGUMENT, "'perm'",
                  "(1, 0, 3)");
  EXPECT_REJECTED(xhal_permute(dev, &src, nullptr, &dst), XHAL_INVALID_ARGUMENT, "'perm'");
  xhal_tensor_t wrong = f32({2, 3, 4});
  EXPECT_REJECTED(xhal_permute(dev, &src, good, &wrong), XHAL_SHAPE_MISMATCH,
                  "argument 'dst': shape [2, 3, 4] but expected [3, 2, 4]");
  xhal_tensor_t strided_dst = dst;
  strided_dst.strides[0] = 1;
  strided_dst.strides[1] = 3;
  strided_dst.strides[2] = 6;
  EXPECT_REJECTED(xhal_permute(dev, &src, good, &strided_dst), XHAL_INVALID_ARGUMENT, "'dst'",
                  "not contiguous");
  xhal_tensor_t neg = src;
  neg.strides[0] = -12;
  neg.strides[1] = 4;
  neg.strides[2] = 1;
  EXPECT_REJECTED(xhal_permute(dev, &neg, good, &dst), XHAL_INVALID_ARGUMENT, "'src'", "negative");
  xhal_tensor_t i32 = tensor(buffer(96), XHAL_DTYPE_I32, {3, 2, 4});
  EXPECT_REJECTED(xhal_permute(dev, &src, good, &i32), XHAL_INVALID_ARGUMENT, "'dst'", "i32",
                  "f32");
  // dst overlapping src.
  xhal_buffer_t b = buffer(2 * 96);
  xhal_tensor_t s = tensor(b, XHAL_DTYPE_F32, {2, 3, 4}),
                d = tensor(b, XHAL_DTYPE_F32, {3, 2, 4}, 92);
  EXPECT_REJECTED(xhal_permute(dev, &s, good, &d), XHAL_ALIASING, "'dst'", "'src'");
  // In place is not allowed either, even for an identity permutation.
  xhal_tensor_t same = tensor(b, XHAL_DTYPE_F32, {2, 3, 4});
  const uint32_t id[] = {0, 1, 2};
  EXPECT_REJECTED(xhal_permute(dev, &s, id, &same), XHAL_ALIASING, "'dst'");
}

TEST_F(PermuteTest, UnsupportedDtypeAndBackend) {
  xhal_tensor_t src = tensor(buffer(24, dev1), XHAL_DTYPE_I32, {2, 3});
  xhal_tensor_t dst = tensor(buffer(24, dev1), XHAL_DTYPE_I32, {3, 2});
  const uint32_t perm[] = {1, 0};
  EXPECT_REJECTED(xhal_permute(dev1, &src, perm, &dst), XHAL_UNSUPPORTED, "'src'", "i32", "permute",
                  "recorder");
  xhal_tensor_t s = f32({2, 3}, devmin), d = f32({3, 2}, devmin);
  recmin->clear();
  EXPECT_EQ(xhal_permute(devmin, &s, perm, &d), XHAL_UNSUPPORTED);
  EXPECT_TRUE(message_has({"op permute", "recmin"}));
  EXPECT_TRUE(recmin->calls.empty());
}

}  // namespace
}  // namespace xhal::ops_test
