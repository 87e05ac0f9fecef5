// Every dense op with bad input: the status of docs/semantics.md section 4,
// a message, and every output left exactly as it was (poisoned outputs are
// downloaded and compared after each call).
#include <functional>

#include "check.h"

namespace xhal::conf {
namespace {

class BadInputTest : public DeviceTest {
 protected:
  static constexpr int64_t R = 4, N = 8, kTable = 10;

  void SetUp() override {
    DeviceTest::SetUp();
    if (HasFatalFailure()) return;
    x = in({R, N});
    dy = in({R, N});
    gamma = in({N});
    beta = in({N});
    rstd = in({R}, 0.5f, 2.0f);
    mean = in({R});
    table = in({kTable, N});
    src = in({R, N});
    y = out({R, N});
    y_stats = out({R});
    y_stats2 = out({R});
    dx = out({R, N});
    dg = out({N});
    db = out({N});
    gathered = out({R, N});
    permuted = out({N, R});
    scatter_dst = out({kTable, N});
    if (device_supports(dev, XHAL_OP_INDEX_SELECT) || device_supports(dev, XHAL_OP_INDEX_ADD))
      plan = make_plan(dev, {3, 0, 9, 3}, kTable);
  }
  void TearDown() override {
    if (plan) xhal_index_plan_release(plan);
    guard.bufs.clear();
    for (auto b : owned) xhal_buffer_release(b);
    DeviceTest::TearDown();
  }

  // Every buffer has kSlack elements after its tensor, so that a shifted or
  // enlarged tensor still fits and fails only for the reason tested.
  static constexpr size_t kSlack = 16;
  xhal_tensor_t in(std::vector<int64_t> shape, float lo = -1.0f, float hi = 1.0f) {
    size_t n = kSlack;
    for (auto d : shape) n *= d;
    n = n / kSlack + kSlack;
    xhal_buffer_t b = upload(dev, random_floats(n, fresh_seed(), lo, hi));
    owned.push_back(b);
    return tensor(b, XHAL_DTYPE_F32, shape);
  }
  xhal_tensor_t out(std::vector<int64_t> shape) {
    size_t n = kSlack;
    for (auto d : shape) n *= d;
    n = n / kSlack + kSlack;
    xhal_buffer_t b = poisoned_buffer(dev, n * 4);
    owned.push_back(b);
    outputs.push_back({b, n});
    return tensor(b, XHAL_DTYPE_F32, shape);
  }
  // An f64 output (docs/semantics.md 7.4: beside f32 inputs it is a dtype
  // mismatch, whether or not the device implements f64).
  xhal_tensor_t out64(std::vector<int64_t> shape) {
    size_t n = kSlack;
    for (auto d : shape) n *= d;
    n = n / kSlack + kSlack;
    xhal_buffer_t b = poisoned_buffer(dev, n * 8);
    owned.push_back(b);
    outputs.push_back({b, 2 * n});
    return tensor(b, XHAL_DTYPE_F64, shape);
  }
  // A tensor like t with one change.
  static xhal_tensor_t with_dtype(xhal_tensor_t t, xhal_dtype_t d) {
    t.dtype = d;
    return t;
  }
  static xhal_tensor_t with_shape(xhal_tensor_t t, std::vector<int64_t> s) {
    t.rank = static_cast<uint32_t>(s.size());
    for (size_t i = 0; i < XHAL_MAX_RANK; ++i) t.shape[i] = i < s.size() ? s[i] : 0;
    return t;
  }
  static xhal_tensor_t with_offset(xhal_tensor_t t, uint64_t o) {
    t.offset = o;
    return t;
  }
  static xhal_tensor_t with_buffer(xhal_tensor_t t, xhal_buffer_t b) {
    t.buffer = b;
    return t;
  }
  // Column-major strides on a 2-D tensor: not contiguous.
  static xhal_tensor_t transposed_strides(xhal_tensor_t t) {
    t.strides[0] = 1;
    t.strides[1] = t.shape[0];
    return t;
  }
  static xhal_tensor_t negative_stride(xhal_tensor_t t) {
    t.strides[0] = -t.shape[1];
    t.strides[1] = 1;
    return t;
  }
  // The same buffer as `t`, shifted by one element (overlaps, not identical).
  static xhal_tensor_t overlapping(const xhal_tensor_t& t, std::vector<int64_t> shape) {
    xhal_tensor_t o = with_shape(t, shape);
    o.offset = t.offset + 4;
    return o;
  }
  // The tensor moved so its last element lies past the end of its buffer.
  static xhal_tensor_t past_end(xhal_tensor_t t) {
    uint64_t size = 0, elems = 1;
    xhal_buffer_size(t.buffer, &size);
    for (uint32_t i = 0; i < t.rank; ++i) elems *= t.shape[i];
    t.offset = size - elems * 4 + 4;
    return t;
  }

  struct Case {
    const char* what;
    xhal_status_t want;
    std::function<xhal_status_t()> call;
  };
  void run(const std::vector<Case>& cases) {
    for (const Case& c : cases) {
      xhal_status_t st = c.call();
      EXPECT_EQ(st, c.want) << c.what << ": got " << xhal_status_name(st) << " ("
                            << xhal_last_error() << ")";
      if (st != XHAL_OK) {
        EXPECT_STRNE(xhal_last_error(), "") << c.what << ": no message";
      }
      ASSERT_EQ(xhal_device_synchronize(dev), XHAL_OK);
      for (const auto& [b, n] : outputs) {
        ASSERT_TRUE(all_poison(download_f32(b, n))) << c.what << ": an output was written";
      }
    }
  }
  // A second device, if this run has one (else nullptr).
  xhal_device_t other_device() {
    uint32_t count = 0;
    if (xhal_device_count(&count) != XHAL_OK) return nullptr;
    for (uint32_t i = 0; i < count; ++i) {
      if (i == GetParam().index) continue;
      xhal_device_t d = nullptr;
      if (xhal_device_open_index(i, &d) == XHAL_OK) return d;
    }
    return nullptr;
  }

  BufferGuard guard;
  std::vector<xhal_buffer_t> owned;
  std::vector<std::pair<xhal_buffer_t, size_t>> outputs;
  xhal_index_plan_t plan = nullptr;
  xhal_tensor_t x{}, dy{}, gamma{}, beta{}, rstd{}, mean{}, table{}, src{};
  xhal_tensor_t y{}, y_stats{}, y_stats2{}, dx{}, dg{}, db{}, gathered{}, permuted{}, scatter_dst{};
};

TEST_P(BadInputTest, IndexPlanCreate) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_INDEX_SELECT);  // plans exist for gather and scatter-add
  int64_t i64[4] = {1, 2, 10, 3};              // 10 is out of [0, 10)
  int64_t neg64[3] = {0, -1, 2};
  int32_t i32[4] = {1, 2, 3, 12};
  int32_t neg32[2] = {-5, 0};
  xhal_index_plan_t p = nullptr;
  EXPECT_EQ(xhal_index_plan_create(dev, i64, XHAL_DTYPE_I64, 4, 10, &p), XHAL_OUT_OF_RANGE);
  std::string msg = xhal_last_error();
  EXPECT_NE(msg.find('2'), std::string::npos) << "message should name position 2: " << msg;
  EXPECT_NE(msg.find("10"), std::string::npos) << "message should name value 10: " << msg;
  EXPECT_EQ(xhal_index_plan_create(dev, neg64, XHAL_DTYPE_I64, 3, 10, &p), XHAL_OUT_OF_RANGE);
  EXPECT_EQ(xhal_index_plan_create(dev, i32, XHAL_DTYPE_I32, 4, 10, &p), XHAL_OUT_OF_RANGE);
  EXPECT_EQ(xhal_index_plan_create(dev, neg32, XHAL_DTYPE_I32, 2, 10, &p), XHAL_OUT_OF_RANGE);
  EXPECT_EQ(xhal_index_plan_create(dev, i64, XHAL_DTYPE_I64, 2, 0, &p), XHAL_OUT_OF_RANGE)
      << "no rows to address";
  EXPECT_EQ(xhal_index_plan_create(dev, i64, XHAL_DTYPE_F32, 2, 10, &p), XHAL_INVALID_ARGUMENT)
      << "index dtype f32";
  EXPECT_EQ(xhal_index_plan_create(dev, nullptr, XHAL_DTYPE_I64, 2, 10, &p), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_index_plan_create(nullptr, i64, XHAL_DTYPE_I64, 2, 10, &p), XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(xhal_index_plan_create(dev, i64, XHAL_DTYPE_I64, 2, 10, nullptr),
            XHAL_INVALID_ARGUMENT);
  EXPECT_EQ(p, nullptr) << "a failed create returned a plan";
  EXPECT_EQ(xhal_index_plan_release(nullptr), XHAL_INVALID_ARGUMENT);
}

TEST_P(BadInputTest, IndexSelect) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_INDEX_SELECT);
  ASSERT_NE(plan, nullptr);
  run({
      {"null device", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_index_select(nullptr, plan, &table, &gathered); }},
      {"null plan", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_index_select(dev, nullptr, &table, &gathered); }},
      {"null src", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_index_select(dev, plan, nullptr, &gathered); }},
      {"null out", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_index_select(dev, plan, &table, nullptr); }},
      {"out with null buffer", XHAL_INVALID_ARGUMENT,
       [&] {
         auto o = with_buffer(gathered, nullptr);
         return xhal_index_select(dev, plan, &table, &o);
       }},
      {"invalid dtype", XHAL_INVALID_ARGUMENT,
       [&] {
         auto s = with_dtype(table, XHAL_DTYPE_INVALID);
         return xhal_index_select(dev, plan, &s, &gathered);
       }},
      {"out dtype differs from src", XHAL_INVALID_ARGUMENT,
       [&] {
         auto o = with_dtype(gathered, XHAL_DTYPE_I32);
         return xhal_index_select(dev, plan, &table, &o);
       }},
      {"out rows != plan count", XHAL_SHAPE_MISMATCH,
       [&] {
         auto o = with_shape(gathered, {R - 1, N});
         return xhal_index_select(dev, plan, &table, &o);
       }},
      {"out width != src width", XHAL_SHAPE_MISMATCH,
       [&] {
         auto o = with_shape(gathered, {R, N - 1});
         return xhal_index_select(dev, plan, &table, &o);
       }},
      {"src rows != plan num_rows", XHAL_SHAPE_MISMATCH,
       [&] {
         auto s = with_shape(table, {kTable - 1, N});
         return xhal_index_select(dev, plan, &s, &gathered);
       }},
      {"src of rank 3", XHAL_SHAPE_MISMATCH,
       [&] {
         auto s = with_shape(table, {kTable, 2, N / 2});
         return xhal_index_select(dev, plan, &s, &gathered);
       }},
      {"out past the end of its buffer", XHAL_OUT_OF_RANGE,
       [&] {
         auto o = past_end(gathered);
         return xhal_index_select(dev, plan, &table, &o);
       }},
      {"out not contiguous", XHAL_INVALID_ARGUMENT,
       [&] {
         auto o = transposed_strides(gathered);
         return xhal_index_select(dev, plan, &table, &o);
       }},
      {"negative stride", XHAL_INVALID_ARGUMENT,
       [&] {
         auto s = negative_stride(table);
         return xhal_index_select(dev, plan, &s, &gathered);
       }},
      {"out overlaps src", XHAL_ALIASING,
       [&] {
         auto o = overlapping(table, {R, N});
         return xhal_index_select(dev, plan, &table, &o);
       }},
      {"src offset not a multiple of 4 (misaligned f32)", XHAL_INVALID_ARGUMENT,
       [&] {
         auto s = with_offset(table, table.offset + 2);
         return xhal_index_select(dev, plan, &s, &gathered);
       }},
      {"out offset not a multiple of 4 (misaligned f32)", XHAL_INVALID_ARGUMENT,
       [&] {
         auto o = with_offset(gathered, gathered.offset + 1);
         return xhal_index_select(dev, plan, &table, &o);
       }},
  });
}

TEST_P(BadInputTest, IndexAdd) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_INDEX_ADD);
  ASSERT_NE(plan, nullptr);
  run({
      {"null device", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_index_add(nullptr, plan, 1.0f, &src, &scatter_dst); }},
      {"null plan", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_index_add(dev, nullptr, 1.0f, &src, &scatter_dst); }},
      {"null src", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_index_add(dev, plan, 1.0f, nullptr, &scatter_dst); }},
      {"null dst", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_index_add(dev, plan, 1.0f, &src, nullptr); }},
      {"src i32", XHAL_INVALID_ARGUMENT,
       [&] {
         auto s = with_dtype(src, XHAL_DTYPE_I32);
         return xhal_index_add(dev, plan, 1.0f, &s, &scatter_dst);
       }},
      {"dst i64", XHAL_INVALID_ARGUMENT,
       [&] {
         auto d = with_dtype(scatter_dst, XHAL_DTYPE_I64);
         return xhal_index_add(dev, plan, 1.0f, &src, &d);
       }},
      {"src rows != plan count", XHAL_SHAPE_MISMATCH,
       [&] {
         auto s = with_shape(src, {R - 1, N});
         return xhal_index_add(dev, plan, 1.0f, &s, &scatter_dst);
       }},
      {"dst rows != plan num_rows", XHAL_SHAPE_MISMATCH,
       [&] {
         auto d = with_shape(scatter_dst, {kTable - 1, N});
         return xhal_index_add(dev, plan, 1.0f, &src, &d);
       }},
      {"widths differ", XHAL_SHAPE_MISMATCH,
       [&] {
         auto d = with_shape(scatter_dst, {kTable, N - 1});
         return xhal_index_add(dev, plan, 1.0f, &src, &d);
       }},
      {"dst past the end", XHAL_OUT_OF_RANGE,
       [&] {
         auto d = past_end(scatter_dst);
         return xhal_index_add(dev, plan, 1.0f, &src, &d);
       }},
      {"dst not contiguous", XHAL_INVALID_ARGUMENT,
       [&] {
         auto d = with_shape(scatter_dst, {kTable, N});
         d.strides[0] = 1;
         d.strides[1] = kTable;
         return xhal_index_add(dev, plan, 1.0f, &src, &d);
       }},
      {"dst overlaps src", XHAL_ALIASING,
       [&] {
         // src [4, 8] lies inside dst's buffer, shifted by one element.
         auto s = overlapping(scatter_dst, {R, N});
         return xhal_index_add(dev, plan, 1.0f, &s, &scatter_dst);
       }},
  });
}

TEST_P(BadInputTest, Permute) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_PERMUTE);
  uint32_t perm[2] = {1, 0}, dup[2] = {0, 0}, big[2] = {0, 2};
  run({
      {"null device", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_permute(nullptr, &x, perm, &permuted); }},
      {"null src", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_permute(dev, nullptr, perm, &permuted); }},
      {"null perm", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_permute(dev, &x, nullptr, &permuted); }},
      {"null dst", XHAL_INVALID_ARGUMENT, [&] { return xhal_permute(dev, &x, perm, nullptr); }},
      {"perm repeats a dim", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_permute(dev, &x, dup, &permuted); }},
      {"perm names dim 2 of a rank-2 tensor", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_permute(dev, &x, big, &permuted); }},
      {"dst shape not the permuted shape", XHAL_SHAPE_MISMATCH,
       [&] {
         auto d = with_shape(permuted, {R, N});
         return xhal_permute(dev, &x, perm, &d);
       }},
      {"dst rank differs", XHAL_SHAPE_MISMATCH,
       [&] {
         auto d = with_shape(permuted, {N * R});
         return xhal_permute(dev, &x, perm, &d);
       }},
      {"dtypes differ", XHAL_INVALID_ARGUMENT,
       [&] {
         auto d = with_dtype(permuted, XHAL_DTYPE_I32);
         return xhal_permute(dev, &x, perm, &d);
       }},
      {"rank 9", XHAL_INVALID_ARGUMENT,
       [&] {
         auto s = x;
         s.rank = XHAL_MAX_RANK + 1;
         return xhal_permute(dev, &s, perm, &permuted);
       }},
      {"dst not contiguous", XHAL_INVALID_ARGUMENT,
       [&] {
         auto d = transposed_strides(permuted);
         return xhal_permute(dev, &x, perm, &d);
       }},
      {"src view strides reach past its buffer", XHAL_OUT_OF_RANGE,
       [&] {
         auto s = x;
         s.strides[0] = 100;  // element 3*100 + 7 lies far past the buffer
         s.strides[1] = 1;
         return xhal_permute(dev, &s, perm, &permuted);
       }},
      {"dst past the end", XHAL_OUT_OF_RANGE,
       [&] {
         auto d = past_end(permuted);
         return xhal_permute(dev, &x, perm, &d);
       }},
      {"dst overlaps src", XHAL_ALIASING,
       [&] {
         auto d = overlapping(x, {N, R});
         return xhal_permute(dev, &x, perm, &d);
       }},
      {"dst is src", XHAL_ALIASING,
       [&] {
         auto d = with_shape(x, {N, R});
         return xhal_permute(dev, &x, perm, &d);
       }},
      {"src offset misaligned", XHAL_INVALID_ARGUMENT,
       [&] {
         auto s = with_offset(x, x.offset + 2);
         return xhal_permute(dev, &s, perm, &permuted);
       }},
  });
}

TEST_P(BadInputTest, Softmax) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SOFTMAX_FORWARD);
  run({
      {"null device", XHAL_INVALID_ARGUMENT, [&] { return xhal_softmax_forward(nullptr, &x, &y); }},
      {"null x", XHAL_INVALID_ARGUMENT, [&] { return xhal_softmax_forward(dev, nullptr, &y); }},
      {"null y", XHAL_INVALID_ARGUMENT, [&] { return xhal_softmax_forward(dev, &x, nullptr); }},
      {"x i32", XHAL_INVALID_ARGUMENT,
       [&] {
         auto t = with_dtype(x, XHAL_DTYPE_I32);
         return xhal_softmax_forward(dev, &t, &y);
       }},
      {"y shape differs", XHAL_SHAPE_MISMATCH,
       [&] {
         auto t = with_shape(y, {R, N - 1});
         return xhal_softmax_forward(dev, &x, &t);
       }},
      {"y past the end", XHAL_OUT_OF_RANGE,
       [&] {
         auto t = past_end(y);
         return xhal_softmax_forward(dev, &x, &t);
       }},
      {"x not contiguous", XHAL_INVALID_ARGUMENT,
       [&] {
         auto t = transposed_strides(x);
         return xhal_softmax_forward(dev, &t, &y);
       }},
      {"y overlaps x, not identical", XHAL_ALIASING,
       [&] {
         auto t = overlapping(x, {R, N});
         return xhal_softmax_forward(dev, &x, &t);
       }},
      {"backward: dx overlaps y", XHAL_ALIASING,
       [&] { return xhal_softmax_backward(dev, &x, &dy, &x); }},
      {"backward: dy shape differs", XHAL_SHAPE_MISMATCH,
       [&] {
         auto t = with_shape(dy, {R - 1, N});
         return xhal_softmax_backward(dev, &x, &t, &dx);
       }},
      {"backward: null dy", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_softmax_backward(dev, &x, nullptr, &dx); }},
      {"backward: dx f64 beside f32 y and dy", XHAL_INVALID_ARGUMENT,
       [&] {
         auto t = out64({R, N});
         return xhal_softmax_backward(dev, &x, &dy, &t);
       }},
      {"forward: y f64 beside f32 x", XHAL_INVALID_ARGUMENT,
       [&] {
         auto t = out64({R, N});
         return xhal_softmax_forward(dev, &x, &t);
       }},
      {"x offset misaligned", XHAL_INVALID_ARGUMENT,
       [&] {
         auto t = with_offset(x, x.offset + 2);
         return xhal_softmax_forward(dev, &t, &y);
       }},
      {"backward: dx offset misaligned", XHAL_INVALID_ARGUMENT,
       [&] {
         auto t = with_offset(dx, dx.offset + 3);
         return xhal_softmax_backward(dev, &x, &dy, &t);
       }},
  });
}

TEST_P(BadInputTest, RmsNorm) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_RMS_NORM_FORWARD);
  const float eps = 1e-5f;
  run({
      {"null device", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_rms_norm_forward(nullptr, &x, &gamma, eps, &y, &y_stats); }},
      {"null gamma", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_rms_norm_forward(dev, &x, nullptr, eps, &y, &y_stats); }},
      {"null rstd", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_rms_norm_forward(dev, &x, &gamma, eps, &y, nullptr); }},
      {"gamma i32", XHAL_INVALID_ARGUMENT,
       [&] {
         auto g = with_dtype(gamma, XHAL_DTYPE_I32);
         return xhal_rms_norm_forward(dev, &x, &g, eps, &y, &y_stats);
       }},
      {"gamma [n-1]", XHAL_SHAPE_MISMATCH,
       [&] {
         auto g = with_shape(gamma, {N - 1});
         return xhal_rms_norm_forward(dev, &x, &g, eps, &y, &y_stats);
       }},
      {"rstd offset misaligned", XHAL_INVALID_ARGUMENT,
       [&] {
         auto r = with_offset(y_stats, y_stats.offset + 2);
         return xhal_rms_norm_forward(dev, &x, &gamma, eps, &y, &r);
       }},
      {"rstd [rows+1]", XHAL_SHAPE_MISMATCH,
       [&] {
         auto r = with_shape(y_stats, {R + 1});
         return xhal_rms_norm_forward(dev, &x, &gamma, eps, &y, &r);
       }},
      {"rstd past the end", XHAL_OUT_OF_RANGE,
       [&] {
         auto r = past_end(y_stats);
         return xhal_rms_norm_forward(dev, &x, &gamma, eps, &y, &r);
       }},
      {"rstd inside x", XHAL_ALIASING,
       [&] {
         auto r = overlapping(x, {R});
         return xhal_rms_norm_forward(dev, &x, &gamma, eps, &y, &r);
       }},
      {"y overlaps gamma", XHAL_ALIASING,
       [&] {
         auto t = with_shape(gamma, {1, N});
         auto xx = with_shape(x, {1, N});
         auto r = with_shape(y_stats, {1});
         return xhal_rms_norm_forward(dev, &xx, &gamma, eps, &t, &r);
       }},
      {"backward: dgamma overlaps dy", XHAL_ALIASING,
       [&] {
         auto g = with_shape(dy, {N});
         return xhal_rms_norm_backward(dev, &x, &gamma, &rstd, &dy, &dx, &g);
       }},
      {"backward: dx is x", XHAL_ALIASING,
       [&] { return xhal_rms_norm_backward(dev, &x, &gamma, &rstd, &dy, &x, &dg); }},
      {"backward: rstd [rows-1]", XHAL_SHAPE_MISMATCH,
       [&] {
         auto r = with_shape(rstd, {R - 1});
         return xhal_rms_norm_backward(dev, &x, &gamma, &r, &dy, &dx, &dg);
       }},
      {"backward: null dgamma", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_rms_norm_backward(dev, &x, &gamma, &rstd, &dy, &dx, nullptr); }},
  });
}

TEST_P(BadInputTest, LayerNorm) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_LAYER_NORM_FORWARD);
  const float eps = 1e-5f;
  run({
      {"null device", XHAL_INVALID_ARGUMENT,
       [&] {
         return xhal_layer_norm_forward(nullptr, &x, &gamma, &beta, eps, &y, &y_stats, &y_stats2);
       }},
      {"null beta", XHAL_INVALID_ARGUMENT,
       [&] {
         return xhal_layer_norm_forward(dev, &x, &gamma, nullptr, eps, &y, &y_stats, &y_stats2);
       }},
      {"beta u8", XHAL_INVALID_ARGUMENT,
       [&] {
         auto b = with_dtype(beta, XHAL_DTYPE_U8);
         return xhal_layer_norm_forward(dev, &x, &gamma, &b, eps, &y, &y_stats, &y_stats2);
       }},
      {"mean [rows, 1]", XHAL_SHAPE_MISMATCH,
       [&] {
         auto m = with_shape(y_stats, {R, 1});
         return xhal_layer_norm_forward(dev, &x, &gamma, &beta, eps, &y, &m, &y_stats2);
       }},
      {"y past the end", XHAL_OUT_OF_RANGE,
       [&] {
         auto t = past_end(y);
         return xhal_layer_norm_forward(dev, &x, &gamma, &beta, eps, &t, &y_stats, &y_stats2);
       }},
      {"mean inside beta", XHAL_ALIASING,
       [&] {
         auto m = with_shape(beta, {R});
         return xhal_layer_norm_forward(dev, &x, &gamma, &beta, eps, &y, &m, &y_stats2);
       }},
      {"backward: dx is x", XHAL_ALIASING,
       [&] { return xhal_layer_norm_backward(dev, &x, &gamma, &mean, &rstd, &dy, &x, &dg, &db); }},
      {"backward: dbeta inside gamma", XHAL_ALIASING,
       [&] {
         return xhal_layer_norm_backward(dev, &x, &gamma, &mean, &rstd, &dy, &dx, &dg, &gamma);
       }},
      {"backward: mean [rows+1]", XHAL_SHAPE_MISMATCH,
       [&] {
         auto m = with_shape(mean, {R + 1});
         return xhal_layer_norm_backward(dev, &x, &gamma, &m, &rstd, &dy, &dx, &dg, &db);
       }},
      {"backward: dy not contiguous", XHAL_INVALID_ARGUMENT,
       [&] {
         auto t = transposed_strides(dy);
         return xhal_layer_norm_backward(dev, &x, &gamma, &mean, &rstd, &t, &dx, &dg, &db);
       }},
      {"backward: null mean", XHAL_INVALID_ARGUMENT,
       [&] {
         return xhal_layer_norm_backward(dev, &x, &gamma, nullptr, &rstd, &dy, &dx, &dg, &db);
       }},
  });
}

// Plans and buffers of another device: XHAL_WRONG_DEVICE. Needs a second
// device in the run (two opens of one device are the same device).
TEST_P(BadInputTest, HandlesOfAnotherDevice) {
  xhal_device_t other = other_device();
  if (!other) GTEST_SKIP() << "only one device in this run; the wrong-device checks need two";
  xhal_buffer_t their_buf = upload(other, random_floats(R * N, fresh_seed()));
  xhal_tensor_t theirs = tensor(their_buf, XHAL_DTYPE_F32, {R, N});
  xhal_index_plan_t their_plan = nullptr;
  uint32_t perm[2] = {1, 0};
  std::vector<Case> cases;
  if (plan && device_supports(other, XHAL_OP_INDEX_SELECT)) {
    their_plan = make_plan(other, {1, 2, 3, 4}, kTable);
    cases.push_back({"plan of another device", XHAL_WRONG_DEVICE,
                     [&] { return xhal_index_select(dev, their_plan, &table, &gathered); }});
  }
  if (plan && device_supports(dev, XHAL_OP_INDEX_ADD))
    cases.push_back({"src of another device", XHAL_WRONG_DEVICE,
                     [&] { return xhal_index_add(dev, plan, 1.0f, &theirs, &scatter_dst); }});
  if (device_supports(dev, XHAL_OP_SOFTMAX_FORWARD))
    cases.push_back({"x of another device", XHAL_WRONG_DEVICE,
                     [&] { return xhal_softmax_forward(dev, &theirs, &y); }});
  if (device_supports(dev, XHAL_OP_PERMUTE))
    cases.push_back({"permute src of another device", XHAL_WRONG_DEVICE,
                     [&] { return xhal_permute(dev, &theirs, perm, &permuted); }});
  run(cases);
  if (their_plan) xhal_index_plan_release(their_plan);
  xhal_buffer_release(their_buf);
  xhal_device_release(other);
  if (cases.empty())
    XHAL_CONF_UNSUPPORTED("the device implements none of the ops these checks use");
}

// Handles used after their release, released twice, of another kind, or
// made up: XHAL_INVALID_ARGUMENT with nothing written, and the device still
// computes the right answer afterwards (a backend never sees such a call).
TEST_P(BadInputTest, ReleasedAndForgedHandles) {
  XHAL_CONF_REQUIRE_OP(XHAL_OP_SOFTMAX_FORWARD);
  xhal_buffer_t gone = upload(dev, random_floats(R * N + kSlack, fresh_seed()));
  ASSERT_EQ(xhal_buffer_release(gone), XHAL_OK);
  const xhal_tensor_t stale = tensor(gone, XHAL_DTYPE_F32, {R, N});
  int local = 0;
  const auto forged = reinterpret_cast<xhal_buffer_t>(&local);
  std::vector<Case> cases = {
      {"x in a released buffer", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_softmax_forward(dev, &stale, &y); }},
      {"buffer released twice", XHAL_INVALID_ARGUMENT, [&] { return xhal_buffer_release(gone); }},
      {"write to a released buffer", XHAL_INVALID_ARGUMENT,
       [&] {
         float v = 1;
         return xhal_buffer_write(gone, 0, &v, 4);
       }},
      {"x in a made-up buffer handle", XHAL_INVALID_ARGUMENT,
       [&] {
         auto t = with_buffer(x, forged);
         return xhal_softmax_forward(dev, &t, &y);
       }},
      {"device handle that is a buffer", XHAL_INVALID_ARGUMENT,
       [&] { return xhal_softmax_forward(reinterpret_cast<xhal_device_t>(x.buffer), &x, &y); }},
  };
  xhal_index_plan_t gone_plan = nullptr;
  if (plan) {
    gone_plan = make_plan(dev, {1, 2}, kTable);
    EXPECT_EQ(xhal_index_plan_release(gone_plan), XHAL_OK);
    cases.push_back({"released plan", XHAL_INVALID_ARGUMENT,
                     [&] { return xhal_index_select(dev, gone_plan, &table, &gathered); }});
    cases.push_back({"plan released twice", XHAL_INVALID_ARGUMENT,
                     [&] { return xhal_index_plan_release(gone_plan); }});
  }
  run(cases);
  // The device is intact: softmax of a known row gives the canonical bits.
  std::vector<float> row(N, 0.0f);
  xhal_buffer_t in_b = upload(dev, row);
  xhal_buffer_t out_b = poisoned_buffer(dev, N * 4);
  const xhal_tensor_t tin = tensor(in_b, XHAL_DTYPE_F32, {1, N}),
                      tout = tensor(out_b, XHAL_DTYPE_F32, {1, N});
  ASSERT_EQ(xhal_softmax_forward(dev, &tin, &tout), XHAL_OK) << xhal_last_error();
  for (float v : download_f32(out_b, N)) EXPECT_EQ(v, 1.0f / N);
  xhal_buffer_release(in_b);
  xhal_buffer_release(out_b);
}

XHAL_CONF_INSTANTIATE(BadInputTest);

}  // namespace
}  // namespace xhal::conf
