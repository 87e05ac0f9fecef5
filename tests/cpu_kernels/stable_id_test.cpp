// The cpu plugin's stable ids (plugins/cpu/stable_id.h): every id must be
// usable in a selector term `cpu:<id>`, whose stable ids hold only letters,
// digits, '_', '-', '.' and ':' (docs/device-selection.md, "Grammar"), and
// each virtual device must have an id of its own. Model names as
// /proc/cpuinfo gives them on common machines.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "stable_id.h"

namespace xhal::cpu {
namespace {

// The selector's rule for the device part of a term (hal/src/selector.cpp).
bool selectable(const std::string& id) {
  if (id.empty() || id.back() == ':') return false;
  for (const char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.' || c == ':';
    if (!ok) return false;
  }
  return true;
}

TEST(CpuStableId, ModelNamesBecomeSelectableIds) {
  EXPECT_EQ(stable_id_of("AMD EPYC"), "cpu:AMD-EPYC");  // unchanged from before
  EXPECT_EQ(stable_id_of("AMD EPYC 9654 96-Core Processor"), "cpu:AMD-EPYC-9654-96-Core-Processor");
  EXPECT_EQ(stable_id_of("Intel(R) Xeon(R) Platinum 8480+"), "cpu:Intel-R-Xeon-R-Platinum-8480");
  EXPECT_EQ(stable_id_of("Intel(R) Xeon(R) CPU @ 2.20GHz"), "cpu:Intel-R-Xeon-R-CPU-2.20GHz");
  EXPECT_EQ(stable_id_of("  Neoverse-N1\t"), "cpu:Neoverse-N1");
  EXPECT_EQ(stable_id_of("a:b / c"), "cpu:a-b-c");  // no ':' from the model
  EXPECT_EQ(stable_id_of("(R)"), "cpu:R");
  EXPECT_EQ(stable_id_of("@@@"), "cpu:unknown");
  EXPECT_EQ(stable_id_of(""), "cpu:unknown");
  EXPECT_EQ(stable_id_of(std::string(300, 'x')).size(), 100u);
  for (const char* model : {"AMD EPYC", "Intel(R) Xeon(R) Platinum 8480+",
                            "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz", "unknown CPU", "-- x --"})
    EXPECT_TRUE(selectable(stable_id_of(model))) << model << " -> " << stable_id_of(model);
}

TEST(CpuStableId, EachVirtualDeviceHasItsOwnSelectableId) {
  const std::string id0 = stable_id_of("Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_EQ(virtual_stable_id(id0, 1), "cpu:Intel-R-Xeon-R-Platinum-8480:virtual-1");
  std::set<std::string> ids = {id0};
  for (uint32_t k = 1; k <= 16; ++k) {
    const std::string id = virtual_stable_id(id0, k);
    EXPECT_TRUE(selectable(id)) << id;
    EXPECT_LT(id.size(), 128u) << id;  // fits xhal_plugin_device_info_t::stable_id
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 17u);
  // The longest model still leaves room for the suffix.
  EXPECT_LT(virtual_stable_id(stable_id_of(std::string(300, 'x')), 16).size(), 128u);
}

}  // namespace
}  // namespace xhal::cpu
