// Row-wise ops: the [rows, n] view handed to the plugin, per-row and
// per-column shapes, the in-place cases the spec allows and the ones it
// forbids.
#include "ops_test_support.h"

namespace xhal::ops_test {
namespace {

using RowsTest = OpsTest;

void expect_matrix(const xhal_plugin_tensor_t& t, int64_t rows, int64_t n) {
  EXPECT_EQ(t.rank, 2u);
  EXPECT_EQ(t.shape[0], rows);
  EXPECT_EQ(t.shape[1], n);
  EXPECT_EQ(t.strides[0], n);
  EXPECT_EQ(t.strides[1], 1);
  expect_zero_past_rank(t);
}
void expect_vector(const xhal_plugin_tensor_t& t, int64_t n) {
  EXPECT_EQ(t.rank, 1u);
  EXPECT_EQ(t.shape[0], n);
  EXPECT_EQ(t.strides[0], 1);
  expect_zero_past_rank(t);
}

TEST_F(RowsTest, LeadingDimsFoldIntoRows) {
  xhal_tensor_t x = f32({2, 3, 5}), y = f32({2, 3, 5});
  rec->clear();
  ASSERT_EQ(xhal_softmax_forward(dev, &x, &y), XHAL_OK) << xhal_last_error();
  const auto* c = rec->last("softmax_forward");
  ASSERT_NE(c, nullptr);
  expect_matrix(c->tensors[0], 6, 5);
  expect_matrix(c->tensors[1], 6, 5);
  // Rank 1 is one row.
  xhal_tensor_t v = f32({7}), w = f32({7});
  ASSERT_EQ(xhal_softmax_forward(dev, &v, &w), XHAL_OK);
  expect_matrix(rec->last("softmax_forward")->tensors[0], 1, 7);
}

TEST_F(RowsTest, RmsNormShapesAndEps) {
  xhal_tensor_t x = f32({4, 2, 8}), g = f32({8}), y = f32({4, 2, 8}), r = f32({8});
  rec->clear();
  ASSERT_EQ(xhal_rms_norm_forward(dev, &x, &g, 1e-5f, &y, &r), XHAL_OK) << xhal_last_error();
  const auto* c = rec->last("rms_norm_forward");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->eps, 1e-5f);
  expect_matrix(c->tensors[0], 8, 8);
  expect_vector(c->tensors[1], 8);
  expect_vector(c->tensors[3], 8);
  // rstd may also be shaped like x without its last dim.
  xhal_tensor_t r2 = f32({4, 2});
  ASSERT_EQ(xhal_rms_norm_forward(dev, &x, &g, 1e-5f, &y, &r2), XHAL_OK) << xhal_last_error();
  expect_vector(rec->last("rms_norm_forward")->tensors[3], 8);

  xhal_tensor_t r_bad = f32({4});
  EXPECT_REJECTED(xhal_rms_norm_forward(dev, &x, &g, 1e-5f, &y, &r_bad), XHAL_SHAPE_MISMATCH,
                  "argument 'rstd': shape [4] but expected [8]");
  xhal_tensor_t g_bad = f32({2});
  EXPECT_REJECTED(xhal_rms_norm_forward(dev, &x, &g_bad, 1e-5f, &y, &r), XHAL_SHAPE_MISMATCH,
                  "argument 'gamma': shape [2] but expected [8]");
  xhal_tensor_t y_bad = f32({8, 8});
  EXPECT_REJECTED(xhal_rms_norm_forward(dev, &x, &g, 1e-5f, &y_bad, &r), XHAL_SHAPE_MISMATCH,
                  "argument 'y': shape [8, 8] but expected [4, 2, 8]");
}

TEST_F(RowsTest, InPlaceAllowedOnlyWhenIdentical) {
  xhal_buffer_t b = buffer(64 * 4);
  xhal_tensor_t x = tensor(b, XHAL_DTYPE_F32, {4, 8});
  ASSERT_EQ(xhal_softmax_forward(dev, &x, &x), XHAL_OK) << xhal_last_error();
  xhal_tensor_t shifted = tensor(b, XHAL_DTYPE_F32, {4, 8}, 4);
  EXPECT_REJECTED(xhal_softmax_forward(dev, &x, &shifted), XHAL_ALIASING, "'y'", "'x'");
  xhal_tensor_t reshaped = tensor(b, XHAL_DTYPE_F32, {2, 16});
  EXPECT_REJECTED(xhal_softmax_forward(dev, &x, &reshaped), XHAL_SHAPE_MISMATCH, "'y'");

  // backward: dx may be dy, never y.
  xhal_tensor_t y = f32({4, 8}), dy = tensor(b, XHAL_DTYPE_F32, {4, 8});
  ASSERT_EQ(xhal_softmax_backward(dev, &y, &dy, &dy), XHAL_OK) << xhal_last_error();
  EXPECT_REJECTED(xhal_softmax_backward(dev, &y, &dy, &y), XHAL_ALIASING, "'dx'", "'y'");
}

TEST_F(RowsTest, NormOutputsMayNotOverlapOtherArguments) {
  xhal_buffer_t b = buffer(1024);
  xhal_tensor_t x = tensor(b, XHAL_DTYPE_F32, {4, 8});       // bytes [0, 128)
  xhal_tensor_t g = tensor(b, XHAL_DTYPE_F32, {8}, 128);     // [128, 160)
  xhal_tensor_t bt = tensor(b, XHAL_DTYPE_F32, {8}, 160);    // [160, 192)
  xhal_tensor_t y = tensor(b, XHAL_DTYPE_F32, {4, 8}, 192);  // [192, 320)
  xhal_tensor_t m = tensor(b, XHAL_DTYPE_F32, {4}, 320);     // [320, 336)
  xhal_tensor_t r = tensor(b, XHAL_DTYPE_F32, {4}, 336);     // [336, 352)
  ASSERT_EQ(xhal_layer_norm_forward(dev, &x, &g, &bt, 1e-5f, &y, &m, &r), XHAL_OK)
      << xhal_last_error();
  ASSERT_EQ(xhal_layer_norm_forward(dev, &x, &g, &bt, 1e-5f, &x, &m, &r), XHAL_OK)
      << "y may be x: " << xhal_last_error();
  xhal_tensor_t r_on_g = tensor(b, XHAL_DTYPE_F32, {4}, 136);
  EXPECT_REJECTED(xhal_layer_norm_forward(dev, &x, &g, &bt, 1e-5f, &y, &m, &r_on_g), XHAL_ALIASING,
                  "'rstd'", "'gamma'");
  EXPECT_REJECTED(xhal_layer_norm_forward(dev, &x, &g, &bt, 1e-5f, &y, &m, &m), XHAL_ALIASING,
                  "'rstd'", "'mean'");
  xhal_tensor_t y_on_beta = tensor(b, XHAL_DTYPE_F32, {4, 8}, 164);
  EXPECT_REJECTED(xhal_layer_norm_forward(dev, &x, &g, &bt, 1e-5f, &y_on_beta, &m, &r),
                  XHAL_ALIASING, "'y'");

  // Backward: dgamma and dbeta overlap nothing; dx may be dy.
  xhal_tensor_t dy = tensor(b, XHAL_DTYPE_F32, {4, 8}, 384);  // [384, 512)
  xhal_tensor_t dg = tensor(b, XHAL_DTYPE_F32, {8}, 512);     // [512, 544)
  xhal_tensor_t db = tensor(b, XHAL_DTYPE_F32, {8}, 544);
  ASSERT_EQ(xhal_layer_norm_backward(dev, &x, &g, &m, &r, &dy, &dy, &dg, &db), XHAL_OK)
      << xhal_last_error();
  EXPECT_REJECTED(xhal_layer_norm_backward(dev, &x, &g, &m, &r, &dy, &dy, &dg, &dg), XHAL_ALIASING,
                  "'dbeta'", "'dgamma'");
  xhal_tensor_t dg_on_dy = tensor(b, XHAL_DTYPE_F32, {8}, 480);
  EXPECT_REJECTED(xhal_layer_norm_backward(dev, &x, &g, &m, &r, &dy, &dy, &dg_on_dy, &db),
                  XHAL_ALIASING, "'dgamma'", "'dy'");
  EXPECT_REJECTED(xhal_rms_norm_backward(dev, &x, &g, &r, &dy, &x, &dg), XHAL_ALIASING, "'dx'",
                  "'x'");
}

TEST_F(RowsTest, BackwardPassesEveryTensorInOrder) {
  xhal_tensor_t x = f32({3, 4}), g = f32({4}), r = f32({3}), dy = f32({3, 4}), dx = f32({3, 4}),
                dg = f32({4});
  rec->clear();
  ASSERT_EQ(xhal_rms_norm_backward(dev, &x, &g, &r, &dy, &dx, &dg), XHAL_OK) << xhal_last_error();
  const auto* c = rec->last("rms_norm_backward");
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->tensors.size(), 6u);
  expect_matrix(c->tensors[0], 3, 4);
  expect_vector(c->tensors[1], 4);
  expect_vector(c->tensors[2], 3);
  expect_matrix(c->tensors[3], 3, 4);
  expect_matrix(c->tensors[4], 3, 4);
  expect_vector(c->tensors[5], 4);
}

TEST_F(RowsTest, DtypeRankAndSupport) {
  xhal_tensor_t xi = tensor(buffer(48), XHAL_DTYPE_I32, {3, 4}), y = f32({3, 4});
  EXPECT_REJECTED(
      xhal_softmax_forward(dev, &xi, &y), XHAL_INVALID_ARGUMENT,
      "argument 'x': dtype i32 not allowed, op softmax_forward takes f32, f16, bf16, f64");
  xhal_tensor_t s = tensor(buffer(4), XHAL_DTYPE_F32, {}),
                s2 = tensor(buffer(4), XHAL_DTYPE_F32, {});
  EXPECT_REJECTED(xhal_softmax_forward(dev, &s, &s2), XHAL_SHAPE_MISMATCH, "'x'", "rank 0");
  xhal_tensor_t x = f32({3, 4});
  EXPECT_REJECTED(xhal_softmax_forward(nullptr, &x, &y), XHAL_INVALID_ARGUMENT, "'device'");
  EXPECT_REJECTED(xhal_softmax_forward(dev, &x, nullptr), XHAL_INVALID_ARGUMENT, "'y'");
  xhal_tensor_t y1 = f32({3, 4}, dev1);
  EXPECT_REJECTED(xhal_softmax_forward(dev, &x, &y1), XHAL_WRONG_DEVICE, "'y'");
}

// f64 is allowed by the spec for the row ops and index_add (docs/semantics.md
// 7.3), but the recorder claims only f32 for them: the core answers
// XHAL_UNSUPPORTED naming the argument, the dtype, the op and the backend,
// and no slot runs (never a silent conversion). Mixed dtypes are
// XHAL_INVALID_ARGUMENT naming the second argument and both dtypes, on every
// backend (the check runs before the device's dtype bits are read).
TEST_F(RowsTest, F64WithoutTheDtypeBitIsUnsupported) {
  auto f64 = [this](std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return tensor(buffer(static_cast<uint64_t>(n) * 8), XHAL_DTYPE_F64, shape);
  };
  xhal_tensor_t x = f64({3, 4}), y = f64({3, 4}), dy = f64({3, 4}), dx = f64({3, 4});
  xhal_tensor_t g = f64({4}), b = f64({4}), m = f64({3}), r = f64({3}), dg = f64({4}),
                db = f64({4});
  EXPECT_REJECTED(xhal_softmax_forward(dev, &x, &y), XHAL_UNSUPPORTED,
                  "argument 'x': dtype f64 of op softmax_forward is not implemented by backend "
                  "'recorder' (it implements f32)");
  EXPECT_REJECTED(xhal_softmax_backward(dev, &y, &dy, &dx), XHAL_UNSUPPORTED, "'y'", "f64",
                  "softmax_backward");
  EXPECT_REJECTED(xhal_rms_norm_forward(dev, &x, &g, 1e-5f, &y, &r), XHAL_UNSUPPORTED, "f64",
                  "rms_norm_forward");
  EXPECT_REJECTED(xhal_rms_norm_backward(dev, &x, &g, &r, &dy, &dx, &dg), XHAL_UNSUPPORTED, "f64",
                  "rms_norm_backward");
  EXPECT_REJECTED(xhal_layer_norm_forward(dev, &x, &g, &b, 1e-5f, &y, &m, &r), XHAL_UNSUPPORTED,
                  "f64", "layer_norm_forward");
  EXPECT_REJECTED(xhal_layer_norm_backward(dev, &x, &g, &m, &r, &dy, &dx, &dg, &db),
                  XHAL_UNSUPPORTED, "f64", "layer_norm_backward");
  // Zero rows: still unsupported (the core would otherwise write dgamma itself).
  xhal_tensor_t x0 = f64({0, 4}), r0 = f64({0}), m0 = f64({0});
  EXPECT_REJECTED(xhal_layer_norm_backward(dev, &x0, &g, &m0, &r0, &x0, &x0, &dg, &db),
                  XHAL_UNSUPPORTED, "f64", "layer_norm_backward");
  xhal_index_plan_t p = plan({0, 2, 0}, 3);
  xhal_tensor_t src = f64({3, 4}), dst = f64({3, 4});
  EXPECT_REJECTED(xhal_index_add(dev, p, 1.0f, &src, &dst), XHAL_UNSUPPORTED,
                  "argument 'src': dtype f64 of op index_add is not implemented");

  // Mixed: f32 where x is f64 (and the reverse) names the argument and both dtypes.
  xhal_tensor_t y32 = f32({3, 4}), g32 = f32({4}), r32 = f32({3}), x32 = f32({3, 4});
  EXPECT_REJECTED(xhal_softmax_forward(dev, &x, &y32), XHAL_INVALID_ARGUMENT,
                  "argument 'y': dtype f32 but argument 'x' is f64");
  EXPECT_REJECTED(xhal_rms_norm_forward(dev, &x, &g32, 1e-5f, &y, &r), XHAL_INVALID_ARGUMENT,
                  "argument 'gamma': dtype f32 but argument 'x' is f64");
  EXPECT_REJECTED(xhal_rms_norm_forward(dev, &x32, &g32, 1e-5f, &y32, &r), XHAL_INVALID_ARGUMENT,
                  "argument 'rstd': dtype f64 but argument 'x' is f32");
  EXPECT_REJECTED(xhal_layer_norm_forward(dev, &x32, &g32, &g32, 1e-5f, &y32, &m, &r32),
                  XHAL_INVALID_ARGUMENT, "argument 'mean': dtype f64 but argument 'x' is f32");
  EXPECT_REJECTED(xhal_index_add(dev, p, 1.0f, &src, &y32), XHAL_INVALID_ARGUMENT,
                  "argument 'dst': dtype f32 but argument 'src' is f64");
}

// f16 and bf16 (docs/semantics.md 7.2, 7.4): allowed for the row ops and
// index_add, XHAL_UNSUPPORTED on the recorder (it claims f32 only); norm
// gamma/beta in x's dtype or f32, dgamma/dbeta in gamma's, saved statistics
// f32. Every other combination is XHAL_INVALID_ARGUMENT naming the argument,
// and narrow dtypes stay refused for the solve.
TEST_F(RowsTest, NarrowDtypesAndTheirMixes) {
  auto of = [this](xhal_dtype_t d, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return tensor(buffer(static_cast<uint64_t>(n) * 8), d, shape);
  };
  for (xhal_dtype_t d : {XHAL_DTYPE_F16, XHAL_DTYPE_BF16}) {
    const xhal_dtype_t other = d == XHAL_DTYPE_F16 ? XHAL_DTYPE_BF16 : XHAL_DTYPE_F16;
    const std::string name = xhal_dtype_name(d), other_name = xhal_dtype_name(other);
    xhal_tensor_t x = of(d, {3, 4}), y = of(d, {3, 4}), dy = of(d, {3, 4}), dx = of(d, {3, 4});
    xhal_tensor_t g = of(d, {4}), b = of(d, {4}), dg = of(d, {4}), db = of(d, {4});
    xhal_tensor_t g32 = f32({4}), b32 = f32({4}), m = f32({3}), r = f32({3});
    xhal_tensor_t g_other = of(other, {4}), y_other = of(other, {3, 4}),
                  r64 = of(XHAL_DTYPE_F64, {3});
    // Valid combinations reach the dtype check: unsupported on the recorder.
    EXPECT_REJECTED(xhal_softmax_forward(dev, &x, &y), XHAL_UNSUPPORTED,
                    "argument 'x': dtype " + name + " of op softmax_forward is not implemented");
    EXPECT_REJECTED(xhal_rms_norm_forward(dev, &x, &g, 1e-5f, &y, &r), XHAL_UNSUPPORTED, name);
    EXPECT_REJECTED(xhal_rms_norm_forward(dev, &x, &g32, 1e-5f, &y, &r), XHAL_UNSUPPORTED, name);
    EXPECT_REJECTED(xhal_layer_norm_forward(dev, &x, &g32, &b32, 1e-5f, &y, &m, &r),
                    XHAL_UNSUPPORTED, name);
    xhal_tensor_t dg32 = f32({4}), db32 = f32({4});
    EXPECT_REJECTED(xhal_layer_norm_backward(dev, &x, &g32, &m, &r, &dy, &dx, &dg32, &db32),
                    XHAL_UNSUPPORTED, name);
    EXPECT_REJECTED(xhal_layer_norm_backward(dev, &x, &g, &m, &r, &dy, &dx, &dg, &db),
                    XHAL_UNSUPPORTED, name);
    // Mixes.
    EXPECT_REJECTED(xhal_softmax_forward(dev, &x, &y_other), XHAL_INVALID_ARGUMENT,
                    "argument 'y': dtype " + other_name + " but argument 'x' is " + name);
    EXPECT_REJECTED(xhal_rms_norm_forward(dev, &x, &g_other, 1e-5f, &y, &r), XHAL_INVALID_ARGUMENT,
                    "argument 'gamma': dtype " + other_name + " but argument 'x' is " + name);
    EXPECT_REJECTED(xhal_rms_norm_forward(dev, &x, &g, 1e-5f, &y, &r64), XHAL_INVALID_ARGUMENT,
                    "argument 'rstd': dtype f64 but argument 'x' is " + name);
    EXPECT_REJECTED(xhal_layer_norm_forward(dev, &x, &g32, &b, 1e-5f, &y, &m, &r),
                    XHAL_INVALID_ARGUMENT,
                    "argument 'beta': dtype " + name + " but argument 'gamma' is f32");
    EXPECT_REJECTED(xhal_layer_norm_backward(dev, &x, &g, &m, &r, &dy, &dx, &dg32, &db),
                    XHAL_INVALID_ARGUMENT,
                    "argument 'dgamma': dtype f32 but argument 'gamma' is " + name);
    EXPECT_REJECTED(xhal_layer_norm_backward(dev, &x, &g32, &m, &r, &dy, &dx, &dg32, &db),
                    XHAL_INVALID_ARGUMENT,
                    "argument 'dbeta': dtype " + name + " but argument 'gamma' is f32");
    // f32 x with narrow gamma: gamma must be f32 then.
    xhal_tensor_t x32 = f32({3, 4}), y32 = f32({3, 4});
    EXPECT_REJECTED(xhal_rms_norm_forward(dev, &x32, &g, 1e-5f, &y32, &r), XHAL_INVALID_ARGUMENT,
                    "argument 'gamma': dtype " + name + " but argument 'x' is f32");
    xhal_index_plan_t p = plan({0, 2, 0}, 3);
    EXPECT_REJECTED(xhal_index_add(dev, p, 1.0f, &x, &y_other), XHAL_INVALID_ARGUMENT,
                    "argument 'dst': dtype " + other_name + " but argument 'src' is " + name);
    EXPECT_REJECTED(xhal_index_add(dev, p, 1.0f, &x, &y), XHAL_UNSUPPORTED,
                    "argument 'src': dtype " + name + " of op index_add is not implemented");
  }
}

// A plugin's dtype claims are masked by what the spec allows for the op, so
// xhal-info and xhal_device_query list only dtypes a call can use: the
// recorder's device 1 claims every dtype for softmax_forward.
TEST_F(RowsTest, DtypeClaimsAreMaskedBySpec) {
  xhal_device_info_t info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(xhal_device_query(dev1, &info), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(info.op_dtypes[XHAL_OP_SOFTMAX_FORWARD],
            (1u << XHAL_DTYPE_F32) | (1u << XHAL_DTYPE_F16) | (1u << XHAL_DTYPE_BF16) |
                (1u << XHAL_DTYPE_F64));
  EXPECT_EQ(info.op_dtypes[XHAL_OP_SOFTMAX_BACKWARD], 1u << XHAL_DTYPE_F32);
}

TEST_F(RowsTest, EmptyInputs) {
  // No rows: nothing to normalise, but dgamma/dbeta are column sums over no
  // rows, +0, written by the core without calling the op slot.
  xhal_tensor_t x = f32({0, 4}), g = f32({4}), m = f32({0}), r = f32({0}), dy = f32({0, 4}),
                dx = f32({0, 4});
  xhal_buffer_t gb = buffer(32);
  xhal_tensor_t dg = tensor(gb, XHAL_DTYPE_F32, {4}), db = tensor(gb, XHAL_DTYPE_F32, {4}, 16);
  const std::vector<float> poison(8, 7.0f);
  ASSERT_EQ(xhal_buffer_write(gb, 0, poison.data(), 32), XHAL_OK);
  rec->clear();
  ASSERT_EQ(xhal_layer_norm_backward(dev, &x, &g, &m, &r, &dy, &dx, &dg, &db), XHAL_OK)
      << xhal_last_error();
  EXPECT_EQ(rec->count("layer_norm_backward"), 0u);
  EXPECT_EQ(download<float>(gb, 8), std::vector<float>(8, 0.0f));
  ASSERT_EQ(xhal_buffer_write(gb, 0, poison.data(), 32), XHAL_OK);
  ASSERT_EQ(xhal_rms_norm_backward(dev, &x, &g, &r, &dy, &dx, &dg), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(download<float>(gb, 8), (std::vector<float>{0, 0, 0, 0, 7, 7, 7, 7}));
  xhal_tensor_t y = f32({0, 4});
  rec->clear();
  ASSERT_EQ(xhal_softmax_forward(dev, &x, &y), XHAL_OK);
  EXPECT_TRUE(rec->calls.empty()) << slots();
}

}  // namespace
}  // namespace xhal::ops_test
