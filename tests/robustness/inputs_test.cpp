// Inputs outside the bad-input catalogue: misaligned offsets, struct_size
// cutting a field, enum values outside their enum, extents whose product
// overflows, rows of length 0, and the index dtype of a matrix.
#include <dlfcn.h>
#include <gmock/gmock.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cpu_fixture.h"
#include "raw_calls.h"

namespace xhal::robustness_test {
namespace {

using ::testing::HasSubstr;

// ---- misaligned offsets ------------------------------------------------

TEST_F(CpuTest, MisalignedOffsetIsRejectedBeforeThePlugin) {
  xhal_buffer_t x = filled({1, 2, 3, 4, 5}), y = filled({9, 9, 9, 9, 9});
  const xhal_tensor_t tx = tensor(x, {1, 4}, 2), ty = tensor(y, {1, 4});
  EXPECT_EQ(xhal_softmax_forward(dev, &tx, &ty), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(),
              HasSubstr("argument 'x': byte offset 2 is not a multiple of 4, the size of f32"));
  EXPECT_EQ(read(y, 5), (std::vector<float>(5, 9.0f)));
  const xhal_tensor_t tx_ok = tensor(x, {1, 4}, 4), ty_bad = tensor(y, {1, 4}, 1);
  EXPECT_EQ(xhal_softmax_forward(dev, &tx_ok, &ty_bad), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'y': byte offset 1"));
  // An aligned offset that is not a multiple of 16 is fine.
  const xhal_tensor_t ty_ok = tensor(y, {1, 4}, 4);
  EXPECT_EQ(xhal_softmax_forward(dev, &tx_ok, &ty_ok), XHAL_OK) << xhal_last_error();
}

TEST_F(CpuTest, AlignmentFollowsTheElementSize) {
  const int64_t idx[] = {0};
  xhal_index_plan_t p = nullptr;
  ASSERT_EQ(xhal_index_plan_create(dev, idx, XHAL_DTYPE_I64, 1, 1, &p), XHAL_OK);
  plans.push_back(p);
  xhal_buffer_t src = buffer(64), out = buffer(64);
  const xhal_tensor_t s16 = tensor(src, {1, 3}, 2, XHAL_DTYPE_F16),
                      o16 = tensor(out, {1, 3}, 6, XHAL_DTYPE_F16);
  EXPECT_EQ(xhal_index_select(dev, p, &s16, &o16), XHAL_OK) << xhal_last_error();
  const xhal_tensor_t s16odd = tensor(src, {1, 3}, 3, XHAL_DTYPE_F16);
  EXPECT_EQ(xhal_index_select(dev, p, &s16odd, &o16), XHAL_INVALID_ARGUMENT);
  const xhal_tensor_t s8 = tensor(src, {1, 3}, 3, XHAL_DTYPE_U8),
                      o8 = tensor(out, {1, 3}, 5, XHAL_DTYPE_U8);
  EXPECT_EQ(xhal_index_select(dev, p, &s8, &o8), XHAL_OK);
  const xhal_tensor_t s64 = tensor(src, {1, 3}, 4, XHAL_DTYPE_I64),
                      o64 = tensor(out, {1, 3}, 0, XHAL_DTYPE_I64);
  EXPECT_EQ(xhal_index_select(dev, p, &s64, &o64), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("not a multiple of 8, the size of i64"));
}

TEST_F(CpuTest, TensorInitChecksTheOffsetAndTheBuffer) {
  xhal_buffer_t b = buffer(64);
  const int64_t shape[] = {2};
  xhal_tensor_t t{};
  t.rank = 77;
  EXPECT_EQ(xhal_tensor_init(b, 2, XHAL_DTYPE_F32, 1, shape, &t), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'offset'"));
  EXPECT_EQ(t.rank, 77u);
  EXPECT_EQ(xhal_tensor_init(b, 8, XHAL_DTYPE_F32, 1, shape, &t), XHAL_OK);
  ASSERT_EQ(xhal_buffer_release(b), XHAL_OK);
  forget(buffers, b);
  EXPECT_EQ(xhal_tensor_init(b, 8, XHAL_DTYPE_F32, 1, shape, &t), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'buffer'"));
}

// ---- struct_size -------------------------------------------------------

TEST_F(CpuTest, DeviceInfoFieldsStraddlingStructSizeAreNotWritten) {
  xhal_device_info_t info;
  std::memset(&info, 0xab, sizeof info);
  // Ends 4 bytes into memory_bytes.
  info.struct_size = offsetof(xhal_device_info_t, memory_bytes) + 4;
  ASSERT_EQ(xhal_device_query(dev, &info), XHAL_OK);
  EXPECT_EQ(info.kind, XHAL_DEVICE_KIND_CPU);
  uint64_t untouched;
  std::memset(&untouched, 0xab, sizeof untouched);
  EXPECT_EQ(info.memory_bytes, untouched);
  EXPECT_EQ(info.struct_size, offsetof(xhal_device_info_t, memory_bytes) + 4);

  // Half of a pointer.
  std::memset(&info, 0xab, sizeof info);
  info.struct_size = 12;
  ASSERT_EQ(xhal_device_get_info(0, &info), XHAL_OK);
  const char* pattern;
  std::memset(&pattern, 0xab, sizeof pattern);
  EXPECT_EQ(info.backend, pattern);

  // Array elements count one by one.
  std::memset(&info, 0xab, sizeof info);
  info.struct_size = offsetof(xhal_device_info_t, op_dtypes) + 3 * sizeof(uint32_t) + 2;
  ASSERT_EQ(xhal_device_query(dev, &info), XHAL_OK);
  EXPECT_NE(info.op_dtypes[0], 0xababababu);
  EXPECT_NE(info.op_dtypes[2], 0xababababu);
  EXPECT_EQ(info.op_dtypes[3], 0xababababu);
}

TEST_F(CpuTest, PluginInfoFieldsStraddlingStructSizeAreNotWritten) {
  xhal_plugin_info_t info;
  std::memset(&info, 0xcd, sizeof info);
  info.struct_size = 12;
  ASSERT_EQ(xhal_plugin_get_info(0, &info), XHAL_OK);
  const char* pattern;
  std::memset(&pattern, 0xcd, sizeof pattern);
  EXPECT_EQ(info.path, pattern);

  std::memset(&info, 0xcd, sizeof info);
  info.struct_size = offsetof(xhal_plugin_info_t, state) + sizeof(info.state);
  ASSERT_EQ(xhal_plugin_get_info(0, &info), XHAL_OK);
  EXPECT_NE(info.path, pattern);
  EXPECT_EQ(info.state, XHAL_PLUGIN_LOADED);
  EXPECT_EQ(info.reason, pattern);
}

// ---- enum values outside their enum ------------------------------------
// Loading such a value as the C++ enum is undefined (UBSan reports it in the
// asan preset); the core reads enum arguments as integers.

TEST_F(CpuTest, EnumArgumentsOutsideTheirRangeAreStatuses) {
  xhal_csr_t m = lower2();
  xhal_buffer_t x = filled({1, 1}), y = filled({5, 5});
  const xhal_tensor_t tx = tensor(x, {2}), ty = tensor(y, {2});
  const uint32_t bad = 157;
  EXPECT_EQ(raw_spmv(dev, m, bad, 1.0f, &tx, 0.0f, &ty), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'trans': 157"));
  EXPECT_EQ(raw_csr_solve(dev, m, XHAL_TRANSPOSE_NONE, bad, XHAL_DIAGONAL_STORED, &tx, &ty),
            XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'triangle'"));
  EXPECT_EQ(raw_csr_solve_backward(dev, m, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER, bad, &tx, &tx,
                                   &ty, nullptr),
            XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'diagonal'"));
  EXPECT_EQ(read(y, 2), (std::vector<float>{5, 5}));

  const uint32_t bad_dtype = 300;
  EXPECT_EQ(raw_dtype_size(bad_dtype), 0u);
  EXPECT_STREQ(raw_dtype_name(bad_dtype), "unknown");
  const int64_t idx[] = {0};
  xhal_index_plan_t p = nullptr;
  EXPECT_EQ(raw_index_plan_create(dev, idx, bad_dtype, 1, 1, &p), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("argument 'index_dtype': 300"));
  const int64_t shape[] = {2};
  xhal_tensor_t t{};
  EXPECT_EQ(raw_tensor_init(x, 0, bad_dtype, 1, shape, &t), XHAL_INVALID_ARGUMENT);
  xhal_tensor_t tbad = tx;
  std::memcpy(&tbad.dtype, &bad_dtype, sizeof bad_dtype);
  EXPECT_EQ(xhal_softmax_forward(dev, &tbad, &ty), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(xhal_last_error(), HasSubstr("dtype 300 is not a dtype"));
}

// ---- extents whose product overflows -----------------------------------

TEST_F(CpuTest, EmptyTensorWithHugeExtentsIsAnEmptyOp) {
  xhal_buffer_t b = buffer(16);
  const xhal_tensor_t t = tensor(b, {0, 3260886666541213964, 4});
  EXPECT_EQ(xhal_softmax_forward(dev, &t, &t), XHAL_OK) << xhal_last_error();
  const uint32_t perm[] = {2, 1, 0};
  xhal_tensor_t v{};
  EXPECT_EQ(xhal_tensor_permute_view(&t, perm, &v), XHAL_OK);
  EXPECT_EQ(v.shape[0], 4);
  EXPECT_EQ(v.shape[2], 0);
}

TEST_F(CpuTest, PermuteViewOfTooManyElementsIsOutOfRange) {
  xhal_buffer_t b = buffer(16);
  const xhal_tensor_t t = tensor(b, {int64_t{1} << 62, 4});
  const uint32_t perm[] = {1, 0};
  xhal_tensor_t v{};
  v.rank = 99;
  EXPECT_EQ(xhal_tensor_permute_view(&t, perm, &v), XHAL_OUT_OF_RANGE);
  EXPECT_THAT(xhal_last_error(), HasSubstr("too many elements"));
  EXPECT_EQ(v.rank, 99u);
}

// ---- norms over rows of length 0 ---------------------------------------

TEST_F(CpuTest, NormRowsOfLengthZeroAreAShapeError) {
  xhal_buffer_t x = buffer(16), g = buffer(16), y = buffer(16), st = filled({3, 3, 3}),
                st2 = filled({4, 4, 4});
  const xhal_tensor_t tx = tensor(x, {3, 0}), tg = tensor(g, {0}), ty = tensor(y, {3, 0}),
                      ts = tensor(st, {3}), ts2 = tensor(st2, {3});
  EXPECT_EQ(xhal_rms_norm_forward(dev, &tx, &tg, 1e-5f, &ty, &ts), XHAL_SHAPE_MISMATCH);
  EXPECT_THAT(xhal_last_error(), HasSubstr("rows of length 0"));
  EXPECT_EQ(xhal_layer_norm_forward(dev, &tx, &tg, &tg, 1e-5f, &ty, &ts, &ts2),
            XHAL_SHAPE_MISMATCH);
  EXPECT_EQ(read(st, 3), (std::vector<float>{3, 3, 3}));
  EXPECT_EQ(read(st2, 3), (std::vector<float>{4, 4, 4}));
  // No rows at all: nothing to do.
  const xhal_tensor_t tx0 = tensor(x, {0, 0}), ty0 = tensor(y, {0, 0}), ts0 = tensor(st, {0});
  EXPECT_EQ(xhal_rms_norm_forward(dev, &tx0, &tg, 1e-5f, &ty0, &ts0), XHAL_OK) << xhal_last_error();
}

// ---- index dtype of a matrix -------------------------------------------

TEST_F(CpuTest, MatrixIndexDtypeIsReported) {
  const int32_t row_ptr[] = {0, 1, 2}, col_idx[] = {0, 1};
  xhal_csr_desc_t d{};
  d.struct_size = sizeof d;
  d.rows = d.cols = 2;
  d.nnz = 2;
  d.index_dtype = XHAL_DTYPE_I32;
  d.row_ptr = row_ptr;
  d.col_idx = col_idx;
  xhal_csr_t a32 = nullptr;
  ASSERT_EQ(xhal_csr_create(dev, &d, &a32), XHAL_OK);
  matrices.push_back(a32);
  xhal_csr_t a64 = lower2();
  xhal_dtype_t dt = XHAL_DTYPE_INVALID;
  ASSERT_EQ(xhal_csr_get_index_dtype(a32, &dt), XHAL_OK);
  EXPECT_EQ(dt, XHAL_DTYPE_I32);
  ASSERT_EQ(xhal_csr_get_index_dtype(a64, &dt), XHAL_OK);
  EXPECT_EQ(dt, XHAL_DTYPE_I64);
  EXPECT_EQ(xhal_csr_get_index_dtype(a64, nullptr), XHAL_INVALID_ARGUMENT);
  xhal_csr_t c = nullptr;
  ASSERT_EQ(xhal_spgemm(dev, a32, a32, &c), XHAL_OK);
  matrices.push_back(c);
  ASSERT_EQ(xhal_csr_get_index_dtype(c, &dt), XHAL_OK);
  EXPECT_EQ(dt, XHAL_DTYPE_I32);
  ASSERT_EQ(xhal_spgemm(dev, a32, a64, &c), XHAL_OK);
  matrices.push_back(c);
  ASSERT_EQ(xhal_csr_get_index_dtype(c, &dt), XHAL_OK);
  EXPECT_EQ(dt, XHAL_DTYPE_I64);
}

}  // namespace
}  // namespace xhal::robustness_test

namespace xhal::robustness_test {
namespace {

// ---- device options ----------------------------------------------------

class DeviceOptionsTest : public CpuTest {
 protected:
  // Closes the fixture's device, opens it again under `options`.
  xhal_status_t reopen_with(const char* options) {
    EXPECT_EQ(xhal_device_release(dev), XHAL_OK);
    dev = nullptr;
    setenv("XHAL_DEVICE_OPTIONS", options, 1);
    xhal_device_t d = nullptr;
    const xhal_status_t s = xhal_device_open("cpu", &d);
    const std::string message = xhal_last_error();
    unsetenv("XHAL_DEVICE_OPTIONS");
    if (s == XHAL_OK) dev = d;
    else EXPECT_EQ(xhal_device_open("cpu", &dev), XHAL_OK);  // for TearDown
    last_message = message;
    return s;
  }
  std::string last_message;
};

TEST_F(DeviceOptionsTest, AnOptionTheCpuPluginDoesNotKnowFailsTheOpen) {
  EXPECT_EQ(reopen_with("cpu:threads=2"), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(last_message,
              HasSubstr("cpu plugin: unknown option 'threads'; the cpu plugin knows: devices"));
  EXPECT_EQ(reopen_with("threads=2"), XHAL_INVALID_ARGUMENT);  // unprefixed: every backend
  for (const char* bad : {"cpu:devices=0", "cpu:devices=17", "cpu:devices=two",
                          "cpu:devices=", "cpu:devices=-1", "cpu:devices=2x"}) {
    EXPECT_EQ(reopen_with(bad), XHAL_INVALID_ARGUMENT) << bad;
    EXPECT_THAT(last_message, HasSubstr("option 'devices' has value")) << bad;
  }
}

TEST_F(DeviceOptionsTest, OptionsOfAnotherBackendAreIgnored) {
  EXPECT_EQ(reopen_with("cuda:solve.poll=16,vulkan:x=1"), XHAL_OK) << last_message;
  char text[16] = "junk";
  size_t length = 99;
  ASSERT_EQ(xhal_device_get_options(dev, text, sizeof text, &length), XHAL_OK);
  EXPECT_STREQ(text, "devices=1");  // the cpu plugin's defaults
  EXPECT_EQ(length, 9u);
}

TEST_F(DeviceOptionsTest, MalformedItemsAreNamed) {
  EXPECT_EQ(reopen_with("cuda:solve.poll=16,oops"), XHAL_INVALID_ARGUMENT);
  EXPECT_THAT(last_message, HasSubstr("item 'oops' is not [backend:]name=value"));
  EXPECT_EQ(reopen_with("=3"), XHAL_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace xhal::robustness_test

namespace xhal::robustness_test {
namespace {

// A desc whose struct_size ends inside a field: the field is absent (zero),
// never its leading bytes (which would be a garbage buffer handle).
TEST_F(CpuTest, CsrDescFieldCutByStructSizeIsAbsent) {
  const int64_t row_ptr[] = {0, 1, 2}, col_idx[] = {0, 1};
  xhal_csr_desc_t d;
  std::memset(&d, 0x5a, sizeof d);  // garbage everywhere a field is cut
  d.struct_size = offsetof(xhal_csr_desc_t, values_buffer) + 4;
  d.rows = d.cols = 2;
  d.nnz = 2;
  d.index_dtype = XHAL_DTYPE_I64;
  d.row_ptr = row_ptr;
  d.col_idx = col_idx;
  d.values = nullptr;
  d.row_ptr_buffer = nullptr;
  d.col_idx_buffer = nullptr;
  xhal_csr_t m = nullptr;
  ASSERT_EQ(xhal_csr_create(dev, &d, &m), XHAL_OK) << xhal_last_error();
  matrices.push_back(m);
  float values[2] = {7, 7};
  ASSERT_EQ(xhal_csr_read(m, nullptr, nullptr, values), XHAL_OK);
  EXPECT_EQ(values[0], 0.0f);  // no values given: they start at zero
  EXPECT_EQ(values[1], 0.0f);
}

}  // namespace
}  // namespace xhal::robustness_test

namespace xhal::robustness_test {
namespace {

// ---- virtual cpu devices (cpu:devices=N) -------------------------------

// Restarts the runtime on the cpu plugin under XHAL_DEVICE_OPTIONS=`options`.
xhal_status_t restart_with(const char* options) {
  EXPECT_EQ(xhal_runtime_shutdown(), XHAL_OK) << xhal_last_error();
  setenv("XHAL_DEVICE_OPTIONS", options, 1);
  const xhal_status_t s = start_cpu_runtime();
  unsetenv("XHAL_DEVICE_OPTIONS");
  return s;
}

TEST(VirtualCpuDevices, DevicesOptionListsThatManyDistinctDevices) {
  ASSERT_EQ(restart_with("cpu:devices=3"), XHAL_OK) << xhal_last_error();
  uint32_t n = 0;
  ASSERT_EQ(xhal_device_count(&n), XHAL_OK);
  ASSERT_EQ(n, 3u);
  std::vector<std::string> ids, names;
  for (uint32_t i = 0; i < n; ++i) {
    xhal_device_info_t info{};
    info.struct_size = sizeof info;
    ASSERT_EQ(xhal_device_get_info(i, &info), XHAL_OK);
    EXPECT_STREQ(info.backend, "cpu");
    EXPECT_EQ(info.backend_index, i);
    ids.push_back(info.stable_id);
    names.push_back(info.name);
  }
  EXPECT_NE(ids[0], ids[1]);
  EXPECT_NE(ids[1], ids[2]);
  // Device 0 keeps the id it has without the option.
  EXPECT_EQ(ids[1], ids[0] + ":virtual-1");
  EXPECT_THAT(names[2], HasSubstr("[virtual 2]"));

  xhal_device_t d0 = nullptr, d2 = nullptr;
  ASSERT_EQ(xhal_device_open("cpu:0", &d0), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_device_open("cpu:2", &d2), XHAL_OK) << xhal_last_error();
  EXPECT_NE(d0, d2);
  char text[32];
  ASSERT_EQ(xhal_device_get_options(d2, text, sizeof text, nullptr), XHAL_OK);
  EXPECT_STREQ(text, "devices=3");

  // A buffer of cpu:2 in an op on cpu:0 is another device's, and nothing is written.
  const float ones[4] = {1, 1, 1, 1};
  xhal_buffer_t b0 = nullptr, b2 = nullptr;
  ASSERT_EQ(xhal_buffer_allocate(d0, 16, &b0), XHAL_OK);
  ASSERT_EQ(xhal_buffer_allocate(d2, 16, &b2), XHAL_OK);
  ASSERT_EQ(xhal_buffer_write(b0, 0, ones, 16), XHAL_OK);
  const int64_t shape[] = {4};
  xhal_tensor_t x{}, y{};
  ASSERT_EQ(xhal_tensor_init(b2, 0, XHAL_DTYPE_F32, 1, shape, &x), XHAL_OK);
  ASSERT_EQ(xhal_tensor_init(b0, 0, XHAL_DTYPE_F32, 1, shape, &y), XHAL_OK);
  EXPECT_EQ(xhal_softmax_forward(d0, &x, &y), XHAL_WRONG_DEVICE);
  float back[4] = {};
  ASSERT_EQ(xhal_buffer_read(b0, 0, back, 16), XHAL_OK);
  EXPECT_EQ(std::vector<float>(back, back + 4), std::vector<float>(ones, ones + 4));
  EXPECT_EQ(xhal_buffer_release(b0), XHAL_OK);
  EXPECT_EQ(xhal_buffer_release(b2), XHAL_OK);
  EXPECT_EQ(xhal_device_release(d0), XHAL_OK);
  EXPECT_EQ(xhal_device_release(d2), XHAL_OK);
  ASSERT_EQ(restart_with(""), XHAL_OK) << xhal_last_error();
}

TEST(VirtualCpuDevices, BadDevicesValueRejectsThePluginWithTheReason) {
  // A rejected plugin is unloaded, and with it the libgomp it pulled in,
  // whose own start-up allocation LeakSanitizer would then report: the test
  // holds a reference so that the plugin (and libgomp) stay mapped.
  void* keep = dlopen(XHAL_CPU_PLUGIN, RTLD_NOW);
  ASSERT_NE(keep, nullptr) << dlerror();
  ASSERT_EQ(restart_with("cpu:devices=99"), XHAL_OK) << xhal_last_error();
  xhal_plugin_info_t info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(xhal_plugin_get_info(0, &info), XHAL_OK);
  EXPECT_EQ(info.state, XHAL_PLUGIN_REJECTED);
  EXPECT_THAT(info.reason, HasSubstr("option 'devices' has value '99'; expected a whole number "
                                     "from 1 to 16"));
  ASSERT_EQ(restart_with(""), XHAL_OK) << xhal_last_error();
  dlclose(keep);
}

}  // namespace
}  // namespace xhal::robustness_test
