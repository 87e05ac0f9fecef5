// What a physical device offers and whether the plugin can use it: its
// features, limits, queue, stable id and the op dtypes it reports.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "vk_plugin.h"

namespace xhal::vk {
namespace {

bool has_device_extension(VkPhysicalDevice p, const char* name) {
  uint32_t n = 0;
  if (vkEnumerateDeviceExtensionProperties(p, nullptr, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> ext(n);
  if (vkEnumerateDeviceExtensionProperties(p, nullptr, &n, ext.data()) != VK_SUCCESS) return false;
  for (const auto& e : ext)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

std::string format_uuid(const uint8_t* u) {
  char s[64];
  std::snprintf(s, sizeof s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
                u[13], u[14], u[15]);
  return s;
}

}  // namespace

// Which dtypes each op supports on this plugin (every op is implemented;
// moves by element size take every dtype, arithmetic is f32; index_add and
// the row ops also take f16/bf16 storage, docs/semantics.md 7.2, converted
// in the shaders without 16-bit device features: shaders/narrow.glsl), and
// so do spmv and spmm (f16/bf16 matrices; the core refuses the other sparse
// ops on them). f64 arithmetic (7.3) on a device with binary64 under RTE
// that passes the f64 self-test: every arithmetic op (binary64 division,
// square root and xhal_exp64 are built from exact operations in
// common.glsl).
void fill_op_dtypes(const Gpu& g, xhal_plugin_device_info_t* info) {
  uint32_t all = 0;
  for (int d = XHAL_DTYPE_F32; d < XHAL_DTYPE_COUNT_; ++d) all |= 1u << d;
  const uint32_t f32 = 1u << XHAL_DTYPE_F32;
  for (int op = 0; op < XHAL_OP_COUNT_; ++op) info->op_dtypes[op] = f32;
  info->op_dtypes[XHAL_OP_INDEX_SELECT] = all;
  info->op_dtypes[XHAL_OP_PERMUTE] = all;
  const uint32_t narrow = f32 | (1u << XHAL_DTYPE_F16) | (1u << XHAL_DTYPE_BF16);
  for (int op : {XHAL_OP_INDEX_ADD, XHAL_OP_SOFTMAX_FORWARD, XHAL_OP_SOFTMAX_BACKWARD,
                 XHAL_OP_RMS_NORM_FORWARD, XHAL_OP_RMS_NORM_BACKWARD, XHAL_OP_LAYER_NORM_FORWARD,
                 XHAL_OP_LAYER_NORM_BACKWARD, XHAL_OP_SPMV, XHAL_OP_SPMM})
    info->op_dtypes[op] = narrow;
  if (g.f64)
    for (int op : {XHAL_OP_INDEX_ADD, XHAL_OP_SOFTMAX_FORWARD, XHAL_OP_SOFTMAX_BACKWARD,
                   XHAL_OP_RMS_NORM_FORWARD, XHAL_OP_RMS_NORM_BACKWARD, XHAL_OP_LAYER_NORM_FORWARD,
                   XHAL_OP_LAYER_NORM_BACKWARD, XHAL_OP_SPMV, XHAL_OP_SPMM, XHAL_OP_CSR_SOLVE,
                   XHAL_OP_CSR_SOLVE_BACKWARD, XHAL_OP_SPGEMM})
      info->op_dtypes[op] |= 1u << XHAL_DTYPE_F64;
}

// Checks what the plugin needs, creates the VkDevice. Returns "" or why the
// device cannot be used.
std::string make_gpu(VkPhysicalDevice phys, bool universal_queue, Gpu* g) {
  g->physical = phys;
  auto id =
      vk_struct<VkPhysicalDeviceIDProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES);
  auto fc = vk_struct<VkPhysicalDeviceFloatControlsProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES);
  auto pci = vk_struct<VkPhysicalDevicePCIBusInfoPropertiesEXT>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT);
  const bool has_pci = has_device_extension(phys, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
  auto driver = vk_struct<VkPhysicalDeviceDriverProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
  auto props2 =
      vk_struct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  props2.pNext = &driver;
  driver.pNext = &id;
  id.pNext = &fc;
  auto m4 = vk_struct<VkPhysicalDeviceMaintenance4Properties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES);
  vkGetPhysicalDeviceProperties(phys, &g->props);
  if (g->props.apiVersion < VK_API_VERSION_1_2) return "needs Vulkan 1.2";
  // Chain: driver -> id -> float controls [-> pci] [-> maintenance4].
  void** tail = &fc.pNext;
  if (has_pci) {
    *tail = &pci;
    tail = &pci.pNext;
  }
  if (g->props.apiVersion >= VK_API_VERSION_1_3) *tail = &m4;
  vkGetPhysicalDeviceProperties2(phys, &props2);
  vkGetPhysicalDeviceMemoryProperties(phys, &g->memory);
  g->vendor_nvidia = g->props.vendorID == 0x10de;
  if (driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE) g->loop_budget = 40000;  // of 65535
  g->max_groups_x = g->props.limits.maxComputeWorkGroupCount[0];
  if (g->props.apiVersion >= VK_API_VERSION_1_3 && m4.maxBufferSize)
    g->max_buffer_size = m4.maxBufferSize;

  auto f11 = vk_struct<VkPhysicalDeviceVulkan11Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  auto f12 = vk_struct<VkPhysicalDeviceVulkan12Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  auto f2 = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  f2.pNext = &f11;
  f11.pNext = &f12;
  vkGetPhysicalDeviceFeatures2(phys, &f2);
  std::string missing;
  auto need = [&](bool ok, const char* what) {
    if (!ok) missing += std::string(missing.empty() ? "" : ", ") + what;
  };
  need(f2.features.shaderInt64, "shaderInt64");
  need(f12.bufferDeviceAddress, "bufferDeviceAddress");
  need(f12.timelineSemaphore, "timelineSemaphore");
  need(f12.storageBuffer8BitAccess, "storageBuffer8BitAccess");
  need(f11.storageBuffer16BitAccess, "storageBuffer16BitAccess");
  need(fc.shaderRoundingModeRTEFloat32, "shaderRoundingModeRTEFloat32");
  need(fc.shaderSignedZeroInfNanPreserveFloat32, "shaderSignedZeroInfNanPreserveFloat32");
  if (!missing.empty()) return "lacks " + missing;
  g->denorm_preserve = fc.shaderDenormPreserveFloat32 == VK_TRUE;
  g->f64 = f2.features.shaderFloat64 && fc.shaderRoundingModeRTEFloat64 &&
           fc.shaderSignedZeroInfNanPreserveFloat64;

  // One compute queue: prefer a compute-only family (its queue does not
  // share time with graphics).
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qf.data());
  int family = -1;
  for (uint32_t i = 0; i < nq; ++i) {
    if (!(qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    const bool graphics = (qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) != 0;
    if (universal_queue) {
      if (family < 0 || graphics) family = static_cast<int>(i);
      if (graphics) break;
      continue;
    }
    if (family < 0 || !graphics) family = static_cast<int>(i);
    if (!graphics) break;
  }
  if (family < 0) return "has no compute queue";
  g->queue_family = static_cast<uint32_t>(family);
  g->timestamp_bits = qf[family].timestampValidBits;

  // Memory types: buffers in device-local memory (not host-visible where
  // the device has such a type), staging in host-visible coherent memory
  // (cached where possible, since reads go through it).
  const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  const VkMemoryPropertyFlags visible =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (int pass = 0; pass < 3 && g->device_type == UINT32_MAX; ++pass)
    for (uint32_t i = 0; i < g->memory.memoryTypeCount; ++i) {
      const VkMemoryPropertyFlags f = g->memory.memoryTypes[i].propertyFlags;
      const bool ok = pass == 0   ? (f & local) && !(f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
                      : pass == 1 ? (f & local) != 0
                                  : true;
      if (ok) {
        g->device_type = i;
        break;
      }
    }
  for (int pass = 0; pass < 2 && g->staging_type == UINT32_MAX; ++pass)
    for (uint32_t i = 0; i < g->memory.memoryTypeCount; ++i) {
      const VkMemoryPropertyFlags f = g->memory.memoryTypes[i].propertyFlags;
      const bool cached = f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
      if ((f & visible) == visible && (pass == 1 || cached)) {
        g->staging_type = i;
        break;
      }
    }
  if (g->staging_type == UINT32_MAX) return "has no host-visible coherent memory";

  const float priority = 1.0f;
  auto qci = vk_struct<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  qci.queueFamilyIndex = g->queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  auto e11 = vk_struct<VkPhysicalDeviceVulkan11Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  auto e12 = vk_struct<VkPhysicalDeviceVulkan12Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  auto e2 = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  e2.pNext = &e11;
  e11.pNext = &e12;
  e2.features.shaderInt64 = VK_TRUE;
  e2.features.shaderInt16 = f2.features.shaderInt16;
  e2.features.shaderFloat64 = g->f64 ? VK_TRUE : VK_FALSE;
  e11.storageBuffer16BitAccess = VK_TRUE;
  e12.bufferDeviceAddress = VK_TRUE;
  e12.timelineSemaphore = VK_TRUE;
  e12.storageBuffer8BitAccess = VK_TRUE;
  e12.shaderInt8 = f12.shaderInt8;
  auto dci = vk_struct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  dci.pNext = &e2;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  const VkResult r = vkCreateDevice(phys, &dci, nullptr, &g->device);
  if (r != VK_SUCCESS) return std::string("vkCreateDevice failed: ") + vk_result_name(r);
  volkLoadDeviceTable(&g->vk, g->device);
  g->vk.vkGetDeviceQueue(g->device, g->queue_family, 0, &g->queue);

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};
  auto lci = vk_struct<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  lci.pushConstantRangeCount = 1;
  lci.pPushConstantRanges = &range;
  const VkResult lr = g->vk.vkCreatePipelineLayout(g->device, &lci, nullptr, &g->layout);
  if (lr != VK_SUCCESS) return std::string("vkCreatePipelineLayout failed: ") + vk_result_name(lr);

  // Device info.
  auto& info = g->info;
  // The name is cut to fit (the precision says so: no -Wformat-truncation).
  std::snprintf(info.name, sizeof info.name, "%.*s", static_cast<int>(sizeof info.name - 1),
                g->props.deviceName);
  const std::string uuid = format_uuid(id.deviceUUID);
  if (g->vendor_nvidia) {
    // The text the cuda plugin reports for the same GPU (NVIDIA's Vulkan
    // deviceUUID is the CUDA device UUID).
    std::snprintf(info.stable_id, sizeof info.stable_id, "GPU-%s", uuid.c_str());
  } else if (has_pci) {
    std::snprintf(info.stable_id, sizeof info.stable_id, "pci:%04x:%02x:%02x.%x", pci.pciDomain,
                  pci.pciBus, pci.pciDevice, pci.pciFunction);
  } else {
    std::snprintf(info.stable_id, sizeof info.stable_id, "vk-%s", uuid.c_str());
  }
  switch (g->props.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      info.kind = XHAL_DEVICE_KIND_CPU;
      break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      info.kind = XHAL_DEVICE_KIND_GPU;
      break;
    default:
      info.kind = XHAL_DEVICE_KIND_OTHER;
      break;
  }
  uint64_t bytes = 0;
  for (uint32_t h = 0; h < g->memory.memoryHeapCount; ++h)
    if (g->memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      bytes = std::max<uint64_t>(bytes, g->memory.memoryHeaps[h].size);
  info.memory_bytes = bytes;
  fill_op_dtypes(*g, &info);
  return "";
}

}  // namespace xhal::vk
