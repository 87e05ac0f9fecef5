// Small Vulkan helpers shared by the plugin and bench/vulkan/xhal-vk-probe
// (which builds vk_util.cpp without the rest of the plugin).
#pragma once

#include <volk.h>

namespace xhal::vk {

// A Vulkan info or output struct: sType set, every other member zero. The
// same as `VkFoo x{VK_STRUCTURE_TYPE_FOO}` without the partial initializer
// (-Wmissing-field-initializers).
template <typename T>
T vk_struct(VkStructureType type) {
  T t{};
  t.sType = type;
  return t;
}

// The enumerator's name ("VK_ERROR_DEVICE_LOST"), for messages.
const char* vk_result_name(VkResult r);

}  // namespace xhal::vk
