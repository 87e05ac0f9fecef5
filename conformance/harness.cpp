#include "harness.h"

#include <bit>

#include "report.h"
#include "runner.h"

namespace xhal::conf {

namespace {
std::vector<DeviceParam>& device_list() {
  static std::vector<DeviceParam> devices;
  return devices;
}
constexpr uint32_t kPoisonBits = 0x7fc0dead;
}  // namespace

namespace {
bool g_require_bit_exact = false;
}
void set_require_bit_exact(bool on) { g_require_bit_exact = on; }
bool require_bit_exact() { return g_require_bit_exact; }

void set_selected_devices(std::vector<DeviceParam> devices) { device_list() = std::move(devices); }
std::vector<DeviceParam> selected_devices() { return device_list(); }

void PrintTo(const DeviceParam& param, std::ostream* os) { *os << param.name; }

std::string device_param_name(const ::testing::TestParamInfo<DeviceParam>& info) {
  std::string s = info.param.name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

void DeviceTest::SetUp() {
  if (TestRecord* r = report().current()) r->device = GetParam().name;
  ASSERT_EQ(xhal_device_open_index(GetParam().index, &dev), XHAL_OK)
      << "opening " << GetParam().name << ": " << xhal_last_error();
}

void DeviceTest::TearDown() {
  if (dev) {
    // XHAL_BUSY here means the test leaked a buffer, plan or matrix.
    EXPECT_EQ(xhal_device_release(dev), XHAL_OK) << xhal_last_error();
    dev = nullptr;
  }
}

void record_op(xhal_op_t op) {
  if (TestRecord* r = report().current()) r->op = op;
  report().note_op(op);  // a crash later in the test still names its op
}

void record_level(Level level) {
  if (TestRecord* r = report().current())
    if (!r->level || level < *r->level) r->level = level;
}

void mark_unsupported(const std::string& why) {
  if (TestRecord* r = report().current()) {
    r->unsupported = true;
    r->message = why;
  }
}

namespace {
void upload_into(xhal_device_t dev, const void* data, uint64_t bytes, xhal_buffer_t* out) {
  *out = nullptr;
  xhal_buffer_t buf = nullptr;
  ASSERT_EQ(xhal_buffer_allocate(dev, bytes, &buf), XHAL_OK)
      << "allocating " << bytes << " bytes: " << xhal_last_error();
  if (bytes) {
    xhal_status_t st = xhal_buffer_write(buf, 0, data, bytes);
    if (st != XHAL_OK) xhal_buffer_release(buf);
    ASSERT_EQ(st, XHAL_OK) << "writing " << bytes << " bytes: " << xhal_last_error();
  }
  *out = buf;
}
}  // namespace

xhal_buffer_t upload(xhal_device_t dev, const void* data, uint64_t bytes) {
  xhal_buffer_t buf = nullptr;
  upload_into(dev, data, bytes, &buf);
  return buf;
}

std::vector<uint8_t> download_bytes(xhal_buffer_t buf, uint64_t offset, uint64_t bytes) {
  std::vector<uint8_t> v(bytes);
  if (bytes == 0) return v;
  xhal_status_t st = xhal_buffer_read(buf, offset, v.data(), bytes);
  EXPECT_EQ(st, XHAL_OK) << "reading " << bytes << " bytes at " << offset << ": "
                         << xhal_last_error();
  return v;
}

xhal_tensor_t tensor(xhal_buffer_t buf, xhal_dtype_t dtype, std::vector<int64_t> shape,
                     uint64_t offset) {
  xhal_tensor_t t{};
  t.buffer = buf;
  t.offset = offset;
  t.dtype = dtype;
  t.rank = static_cast<uint32_t>(shape.size());
  for (size_t i = 0; i < shape.size() && i < XHAL_MAX_RANK; ++i) t.shape[i] = shape[i];
  return t;
}

void poison(xhal_buffer_t buf) {
  uint64_t size = 0;
  ASSERT_EQ(xhal_buffer_size(buf, &size), XHAL_OK) << xhal_last_error();
  uint64_t words = size / 4 * 4;
  if (words) {
    ASSERT_EQ(xhal_buffer_fill(buf, 0, words, &kPoisonBits, 4), XHAL_OK) << xhal_last_error();
  }
  if (size > words) {
    uint8_t tail = 0xad;
    ASSERT_EQ(xhal_buffer_fill(buf, words, size - words, &tail, 1), XHAL_OK) << xhal_last_error();
  }
}

bool is_poison(float v) { return std::bit_cast<uint32_t>(v) == kPoisonBits; }
bool is_poison(double v) {
  return std::bit_cast<uint64_t>(v) == (uint64_t{kPoisonBits} << 32 | kPoisonBits);
}

xhal_counters_t counters(xhal_device_t dev) {
  xhal_counters_t c{};
  EXPECT_EQ(xhal_device_get_counters(dev, &c), XHAL_OK) << xhal_last_error();
  return c;
}

OpCounters::OpCounters(xhal_device_t dev, uint64_t launches) : dev_(dev), launches_(launches) {
  EXPECT_EQ(xhal_device_synchronize(dev_), XHAL_OK) << xhal_last_error();
  before_ = counters(dev_);
}

OpCounters::~OpCounters() {
  EXPECT_EQ(xhal_device_synchronize(dev_), XHAL_OK) << xhal_last_error();
  const xhal_counters_t after = counters(dev_);
  XHAL_CONF_EXPECT_OP_COUNTERS(before_, after, launches_);
}

}  // namespace xhal::conf
