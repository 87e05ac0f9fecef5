// What a device's description promises (docs/plugin-guide.md "Device
// info"): a stable id a selector can name, memory_bytes, and the same
// description however it is asked for.
#include <cctype>
#include <string>

#include "check.h"

namespace xhal::conf {
namespace {

class DeviceContractTest : public DeviceTest {
 protected:
  xhal_device_info_t query() {
    xhal_device_info_t info{};
    info.struct_size = sizeof info;
    EXPECT_EQ(xhal_device_query(dev, &info), XHAL_OK) << xhal_last_error();
    return info;
  }
};

// Why `id` cannot be a stable id, or "".
std::string stable_id_problem(const std::string& id) {
  if (id.empty()) return "it is empty";
  if (id.size() > 127) return "it is longer than 127 bytes";
  for (char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' &&
        c != ':')
      return std::string("it holds '") + c +
             "'; a stable id holds letters, digits, '_', '-', "
             "'.' and ':' only (the selector grammar, docs/device-selection.md)";
  if (id.find_first_not_of("0123456789") == std::string::npos)
    return "it is all digits, which a selector reads as a device index";
  return "";
}

// The stable id is usable in a selector (`XHAL_DEVICE=<backend>:<id>`), and
// no other device of the backend has it.
TEST_P(DeviceContractTest, StableIdIsSelectable) {
  const xhal_device_info_t info = query();
  const std::string id = info.stable_id ? info.stable_id : "";
  const std::string problem = stable_id_problem(id);
  EXPECT_TRUE(problem.empty()) << "stable id '" << id << "' of " << GetParam().name << ": "
                               << problem;
  uint32_t count = 0;
  ASSERT_EQ(xhal_device_count(&count), XHAL_OK) << xhal_last_error();
  for (uint32_t i = 0; i < count; ++i) {
    if (i == GetParam().index) continue;
    xhal_device_info_t other{};
    other.struct_size = sizeof other;
    ASSERT_EQ(xhal_device_get_info(i, &other), XHAL_OK) << xhal_last_error();
    if (std::string(other.backend) != info.backend) continue;
    EXPECT_NE(id, std::string(other.stable_id ? other.stable_id : ""))
        << GetParam().name << " and " << other.backend << ":" << other.backend_index
        << " have the same stable id; two devices of one backend need two";
  }
}

// memory_bytes: the device's memory, more than 0, and the same in the
// device list and on the open device.
TEST_P(DeviceContractTest, MemoryBytesDescribesTheDevice) {
  const xhal_device_info_t info = query();
  EXPECT_GT(info.memory_bytes, 0u)
      << GetParam().name << " reports memory_bytes 0; it is the memory its buffers come from";
  xhal_device_info_t listed{};
  listed.struct_size = sizeof listed;
  ASSERT_EQ(xhal_device_get_info(GetParam().index, &listed), XHAL_OK) << xhal_last_error();
  EXPECT_EQ(listed.memory_bytes, info.memory_bytes);
  EXPECT_STREQ(listed.stable_id, info.stable_id);
  EXPECT_EQ(listed.supported_ops, info.supported_ops);
}

// The counters only grow: a write, a copy, a fill and a read in a row never
// make one go down (they are totals since the device opened).
TEST_P(DeviceContractTest, CountersOnlyGrow) {
  BufferGuard g;
  const std::vector<float> data = random_floats(1000, fresh_seed());
  xhal_counters_t last = counters(dev);
  auto step = [&](const char* what) {
    const xhal_counters_t now = counters(dev);
    EXPECT_GE(now.host_to_device_transfers, last.host_to_device_transfers) << what;
    EXPECT_GE(now.host_to_device_bytes, last.host_to_device_bytes) << what;
    EXPECT_GE(now.device_to_host_transfers, last.device_to_host_transfers) << what;
    EXPECT_GE(now.device_to_host_bytes, last.device_to_host_bytes) << what;
    EXPECT_GE(now.kernel_launches, last.kernel_launches) << what;
    last = now;
  };
  xhal_buffer_t a = g.add(upload(dev, data));
  step("write");
  xhal_buffer_t b = g.add(poisoned_buffer(dev, data.size() * 4));
  step("fill");
  ASSERT_EQ(xhal_buffer_copy(a, 0, b, 0, data.size() * 4), XHAL_OK) << xhal_last_error();
  ASSERT_EQ(xhal_device_synchronize(dev), XHAL_OK);
  step("copy");
  EXPECT_TRUE(compare_bits(download_f32(b, data.size()), data).equal);
  step("read");
}

XHAL_CONF_INSTANTIATE(DeviceContractTest);

}  // namespace
}  // namespace xhal::conf
