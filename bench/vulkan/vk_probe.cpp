// xhal-vk-probe: times shader variants on one Vulkan device with timestamp
// queries, to find where the vulkan plugin's compute copy and row kernels
// lose bandwidth (docs/vulkan.md, "H200 figures"). Standalone: volk (the
// loader opened at run time, as in the plugin) and the SPIR-V of
// bench/vulkan/probes/ plus the plugin's own copy.comp and norm.comp, built
// with the plugin's defines (bench/vulkan/CMakeLists.txt). No libxhal.
//
//   xhal-vk-probe [--device N] [--bytes 1G] [--rows-scale full|small|K]
//                 [--iters 20] [--wall 5] [--gs-groups G] [--only copy|rows|submit]
//                 [--queues 1|2] [--app-name N] [--engine-name N]
//                 [--json PATH] [--validate] [--pretend-fail SHADER]
//
// The device is created as plugins/vulkan/physical_device.cpp creates it
// (Vulkan 1.2; shaderInt64, bufferDeviceAddress, timelineSemaphore, 8- and
// 16-bit storage; the plugin's queue family: compute-only where one exists;
// one push-constant range of 128 bytes), and buffers as device.cpp's
// mem_create makes them (device-local, not host-visible where possible,
// device addresses, a dedicated allocation from 16 MiB), or (alloc "plain")
// without the dedicated-allocation info.
//
// Each variant: the destination is zero-filled, one warm-up dispatch runs,
// then `iters` dispatches, each after a full barrier and between two
// timestamps written at the bottom of the pipe. The table gives the median
// and the minimum GPU time per dispatch, GB/s from the median (bytes read +
// written: 2 x bytes for a copy, x read + y written for a row kernel), the
// host time of a submit-and-wait of one barrier-plus-dispatch command buffer
// (median of `wall`, about one plugin call), and a check of the result: a
// copy compares 4096 samples of 16 bytes of the destination (first, last,
// random) with the source's hash pattern; a row kernel compares 3 rows with
// the host's result in double precision. A pipeline that fails to build is
// reported and skipped (--pretend-fail probe_copy_v4 shows how, without
// asking the driver). --validate enables the Khronos validation layer and
// prints its messages.
#include <volk.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "vk_util.h"
#include "xhal_vk_probe_shaders.h"

namespace {

using xhal_spirv::Id;

using xhal::vk::vk_struct;
const char* result_name(VkResult r) { return xhal::vk::vk_result_name(r); }

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "xhal-vk-probe: %s\n", msg.c_str());
  std::exit(2);
}

// ---- options -------------------------------------------------------------------
struct Options {
  uint32_t device = 0;
  uint64_t bytes = uint64_t{1} << 30;
  uint64_t rows_divisor = 1;  // --rows-scale: full = 1, small = 32
  uint32_t iters = 20;
  uint32_t wall = 5;
  uint32_t gs_groups = 0;  // 0: 8 per SM where the SM count is known, else 1056
  bool copy = true, rows = true, submit = true;
  bool validate = false;
  std::string json;
  std::string pretend_fail;  // a shader whose pipeline is reported as failed (testing)
  uint32_t queues = 2;       // --queues 1: only the plugin's queue family, as the plugin
  std::string app_name = "xhal-vk-probe", engine_name;  // --app-name, --engine-name
};

uint64_t parse_bytes(const char* s) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  uint64_t mul = 1;
  if (*end == 'K' || *end == 'k') mul = uint64_t{1} << 10;
  if (*end == 'M' || *end == 'm') mul = uint64_t{1} << 20;
  if (*end == 'G' || *end == 'g') mul = uint64_t{1} << 30;
  if (end == s || (mul == 1 && *end != '\0') || (mul != 1 && end[1] != '\0'))
    die(format("bad size '%s' (e.g. 64M, 1G, 1048576)", s));
  return static_cast<uint64_t>(v) * mul;
}

const char kUsage[] =
    "usage: xhal-vk-probe [--device N] [--bytes 1G] [--rows-scale full|small|K] [--iters 20]\n"
    "                     [--wall 5] [--gs-groups G] [--only copy|rows|submit] [--json PATH] "
    "[--validate]\n"
    "                     [--pretend-fail SHADER] [--queues 1|2] [--app-name N] "
    "[--engine-name N]\n";

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) die("missing value after " + a);
      return argv[++i];
    };
    if (a == "--device") {
      o.device = static_cast<uint32_t>(std::strtoul(value(), nullptr, 10));
    } else if (a == "--bytes") {
      o.bytes = parse_bytes(value()) / 16 * 16;
    } else if (a == "--rows-scale") {
      const std::string v = value();
      o.rows_divisor = v == "full" ? 1 : v == "small" ? 32 : std::strtoull(v.c_str(), nullptr, 10);
      if (o.rows_divisor == 0) die("bad --rows-scale " + v);
    } else if (a == "--iters") {
      o.iters = static_cast<uint32_t>(std::strtoul(value(), nullptr, 10));
    } else if (a == "--wall") {
      o.wall = static_cast<uint32_t>(std::strtoul(value(), nullptr, 10));
    } else if (a == "--gs-groups") {
      o.gs_groups = static_cast<uint32_t>(std::strtoul(value(), nullptr, 10));
    } else if (a == "--only") {
      const std::string v = value();
      o.copy = v == "copy";
      o.rows = v == "rows";
      o.submit = v == "submit";
      if (!o.copy && !o.rows && !o.submit) die("--only takes copy, rows or submit");
    } else if (a == "--json") {
      o.json = value();
    } else if (a == "--pretend-fail") {
      o.pretend_fail = value();
    } else if (a == "--queues") {
      o.queues = static_cast<uint32_t>(std::strtoul(value(), nullptr, 10));
      if (o.queues != 1 && o.queues != 2) die("--queues takes 1 or 2");
    } else if (a == "--app-name") {
      o.app_name = value();
    } else if (a == "--engine-name") {
      o.engine_name = value();
    } else if (a == "--validate") {
      o.validate = true;
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else {
      std::fputs(kUsage, stderr);
      die("unknown argument " + a);
    }
  }
  if (o.iters == 0) o.iters = 1;
  if (o.bytes < 16) die("--bytes must be at least 16");
  return o;
}

// ---- the device ----------------------------------------------------------------
struct Queue {
  uint32_t family = UINT32_MAX;
  VkQueue queue = VK_NULL_HANDLE;
  VkCommandPool pool = VK_NULL_HANDLE;
  uint32_t timestamp_bits = 0;
  const char* name = "";
};

struct Buf {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceAddress address = 0;
  uint64_t size = 0;
  void* mapped = nullptr;
  bool dedicated = false;
};

enum class Alloc { kDedicated, kPlain, kStaging };

struct Ctx {
  Options opt;
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice phys = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties props{};
  VkPhysicalDeviceMemoryProperties memory{};
  std::string driver;
  uint32_t subgroup_size = 0;
  bool subgroup_arithmetic = false;
  uint32_t sm_count = 0;
  uint32_t device_type = UINT32_MAX, staging_type = UINT32_MAX;
  Queue queues[2];
  int queue_count = 1;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkQueryPool query_pool = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkPipeline pipelines[xhal_spirv::kCount] = {};
  std::string pipeline_error[xhal_spirv::kCount];
  bool pipeline_tried[xhal_spirv::kCount] = {};
  Buf staging;
  bool lost = false;
  int validation_messages = 0;
};
Ctx g;

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                             VkDebugUtilsMessageTypeFlagsEXT,
                                             const VkDebugUtilsMessengerCallbackDataEXT* data,
                                             void*) {
  ++g.validation_messages;
  std::printf("validation: %s\n", data->pMessage);
  std::fflush(stdout);
  return VK_FALSE;
}

bool failed(VkResult r, const char* what, std::string* err) {
  if (r == VK_SUCCESS) return false;
  if (r == VK_ERROR_DEVICE_LOST) g.lost = true;
  *err = format("%s: %s (%d)", what, result_name(r), static_cast<int>(r));
  return true;
}

bool has_device_extension(VkPhysicalDevice p, const char* name) {
  uint32_t n = 0;
  if (vkEnumerateDeviceExtensionProperties(p, nullptr, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> ext(n);
  if (vkEnumerateDeviceExtensionProperties(p, nullptr, &n, ext.data()) != VK_SUCCESS) return false;
  for (const auto& e : ext)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

std::string version_text(uint32_t v) {
  return format("%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
                VK_API_VERSION_PATCH(v));
}

void create_instance() {
  if (volkInitialize() != VK_SUCCESS) die("no Vulkan loader (libvulkan.so.1 could not be opened)");
  if (volkGetInstanceVersion() < VK_API_VERSION_1_2) die("the Vulkan loader is older than 1.2");
  auto app = vk_struct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = g.opt.app_name.c_str();
  if (!g.opt.engine_name.empty()) app.pEngineName = g.opt.engine_name.c_str();
  app.apiVersion = VK_API_VERSION_1_2;
  auto ici = vk_struct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  ici.pApplicationInfo = &app;
  const char* layer = "VK_LAYER_KHRONOS_validation";
  const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  if (g.opt.validate) {
    if (!has_layer(layer)) die("--validate: VK_LAYER_KHRONOS_validation is not installed");
    ici.enabledLayerCount = 1;
    ici.ppEnabledLayerNames = &layer;
    ici.enabledExtensionCount = 1;
    ici.ppEnabledExtensionNames = &ext;
  }
  const VkResult r = vkCreateInstance(&ici, nullptr, &g.instance);
  if (r != VK_SUCCESS) die(std::string("vkCreateInstance failed: ") + result_name(r));
  volkLoadInstanceOnly(g.instance);
  if (g.opt.validate) {
    auto mci = vk_struct<VkDebugUtilsMessengerCreateInfoEXT>(
        VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
    mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    mci.pfnUserCallback = on_validation;
    vkCreateDebugUtilsMessengerEXT(g.instance, &mci, nullptr, &g.messenger);
  }
}

void pick_device() {
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(g.instance, &n, nullptr);
  std::vector<VkPhysicalDevice> devs(n);
  vkEnumeratePhysicalDevices(g.instance, &n, devs.data());
  if (n == 0) die("no Vulkan device found");
  for (uint32_t i = 0; i < n; ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(devs[i], &p);
    std::printf("vulkan device %u: %s%s\n", i, p.deviceName,
                i == g.opt.device ? "  <- probed" : "");
  }
  if (g.opt.device >= n) die(format("--device %u: only %u devices", g.opt.device, n));
  g.phys = devs[g.opt.device];
}

void create_device() {
  VkPhysicalDevice phys = g.phys;
  vkGetPhysicalDeviceProperties(phys, &g.props);
  if (g.props.apiVersion < VK_API_VERSION_1_2) die("the device has no Vulkan 1.2");
  vkGetPhysicalDeviceMemoryProperties(phys, &g.memory);
  auto driver = vk_struct<VkPhysicalDeviceDriverProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
  auto sub = vk_struct<VkPhysicalDeviceSubgroupProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
  auto sm = vk_struct<VkPhysicalDeviceShaderSMBuiltinsPropertiesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV);
  auto props2 =
      vk_struct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  props2.pNext = &driver;
  driver.pNext = &sub;
  if (has_device_extension(phys, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) sub.pNext = &sm;
  vkGetPhysicalDeviceProperties2(phys, &props2);
  g.driver = format("%s %s", driver.driverName, driver.driverInfo);
  g.subgroup_size = sub.subgroupSize;
  g.subgroup_arithmetic = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  g.sm_count = sm.shaderSMCount;

  // The plugin's feature check and the features it enables.
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
  if (!missing.empty()) die("the device lacks " + missing);

  // Queue 0: the plugin's family (compute-only preferred). Queue 1: the
  // first graphics+compute family, where it is another family.
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qf.data());
  int family = -1, universal = -1;
  for (uint32_t i = 0; i < nq; ++i) {  // physical_device.cpp's choice
    if (!(qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (family < 0 || !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) family = static_cast<int>(i);
    if (!(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) break;
  }
  for (uint32_t i = 0; i < nq && universal < 0; ++i)
    if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && (qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
      universal = static_cast<int>(i);
  if (family < 0) die("the device has no compute queue");
  g.queues[0].family = static_cast<uint32_t>(family);
  g.queues[0].name = (qf[family].queueFlags & VK_QUEUE_GRAPHICS_BIT) ? "universal" : "compute";
  g.queues[0].timestamp_bits = qf[family].timestampValidBits;
  if (universal >= 0 && universal != family && g.opt.queues == 2) {
    g.queues[1].family = static_cast<uint32_t>(universal);
    g.queues[1].name = "universal";
    g.queues[1].timestamp_bits = qf[universal].timestampValidBits;
    g.queue_count = 2;
  }

  // Memory types as the plugin picks them.
  const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  const VkMemoryPropertyFlags visible =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (int pass = 0; pass < 3 && g.device_type == UINT32_MAX; ++pass)
    for (uint32_t i = 0; i < g.memory.memoryTypeCount; ++i) {
      const VkMemoryPropertyFlags f = g.memory.memoryTypes[i].propertyFlags;
      const bool ok = pass == 0   ? (f & local) && !(f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
                      : pass == 1 ? (f & local) != 0
                                  : true;
      if (ok) {
        g.device_type = i;
        break;
      }
    }
  for (int pass = 0; pass < 2 && g.staging_type == UINT32_MAX; ++pass)
    for (uint32_t i = 0; i < g.memory.memoryTypeCount; ++i) {
      const VkMemoryPropertyFlags f = g.memory.memoryTypes[i].propertyFlags;
      if ((f & visible) == visible && (pass == 1 || (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT))) {
        g.staging_type = i;
        break;
      }
    }
  if (g.staging_type == UINT32_MAX) die("the device has no host-visible coherent memory");

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci[2];
  for (int i = 0; i < g.queue_count; ++i) {
    qci[i] = vk_struct<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    qci[i].queueFamilyIndex = g.queues[i].family;
    qci[i].queueCount = 1;
    qci[i].pQueuePriorities = &priority;
  }
  auto e11 = vk_struct<VkPhysicalDeviceVulkan11Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  auto e12 = vk_struct<VkPhysicalDeviceVulkan12Features>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  auto e2 = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  e2.pNext = &e11;
  e11.pNext = &e12;
  e2.features.shaderInt64 = VK_TRUE;
  e2.features.shaderInt16 = f2.features.shaderInt16;
  e11.storageBuffer16BitAccess = VK_TRUE;
  e12.bufferDeviceAddress = VK_TRUE;
  e12.timelineSemaphore = VK_TRUE;
  e12.storageBuffer8BitAccess = VK_TRUE;
  e12.shaderInt8 = f12.shaderInt8;
  auto dci = vk_struct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  dci.pNext = &e2;
  dci.queueCreateInfoCount = static_cast<uint32_t>(g.queue_count);
  dci.pQueueCreateInfos = qci;
  VkResult r = vkCreateDevice(phys, &dci, nullptr, &g.device);
  if (r != VK_SUCCESS) die(std::string("vkCreateDevice failed: ") + result_name(r));
  volkLoadDevice(g.device);
  for (int i = 0; i < g.queue_count; ++i) {
    Queue& q = g.queues[i];
    vkGetDeviceQueue(g.device, q.family, 0, &q.queue);
    auto pci = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = q.family;
    r = vkCreateCommandPool(g.device, &pci, nullptr, &q.pool);
    if (r != VK_SUCCESS) die(std::string("vkCreateCommandPool failed: ") + result_name(r));
  }
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};
  auto lci = vk_struct<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  lci.pushConstantRangeCount = 1;
  lci.pPushConstantRanges = &range;
  r = vkCreatePipelineLayout(g.device, &lci, nullptr, &g.layout);
  if (r != VK_SUCCESS) die(std::string("vkCreatePipelineLayout failed: ") + result_name(r));
  auto qpi = vk_struct<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
  qpi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qpi.queryCount = 2 * std::max<uint32_t>(g.opt.iters, 2);
  r = vkCreateQueryPool(g.device, &qpi, nullptr, &g.query_pool);
  if (r != VK_SUCCESS) die(std::string("vkCreateQueryPool failed: ") + result_name(r));
  auto fci = vk_struct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
  r = vkCreateFence(g.device, &fci, nullptr, &g.fence);
  if (r != VK_SUCCESS) die(std::string("vkCreateFence failed: ") + result_name(r));
}

std::string memory_type_text(uint32_t type) {
  const VkMemoryType& t = g.memory.memoryTypes[type];
  std::string flags;
  auto add = [&](VkMemoryPropertyFlags bit, const char* name) {
    if (t.propertyFlags & bit) flags += std::string(flags.empty() ? "" : "|") + name;
  };
  add(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, "DEVICE_LOCAL");
  add(VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, "HOST_VISIBLE");
  add(VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, "HOST_COHERENT");
  add(VK_MEMORY_PROPERTY_HOST_CACHED_BIT, "HOST_CACHED");
  return format("type %u (%s) heap %u (%.1f GiB)", type, flags.empty() ? "none" : flags.c_str(),
                t.heapIndex,
                static_cast<double>(g.memory.memoryHeaps[t.heapIndex].size) / (1u << 30));
}

// ---- memory (device.cpp's mem_create, with the dedicated info optional) -------------
bool create_buf(uint64_t size, Alloc alloc, Buf* out, std::string* err) {
  Buf m;
  const uint64_t rounded = (size + 63) / 64 * 64;
  auto bci = vk_struct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  bci.size = rounded;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
              VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  if (failed(vkCreateBuffer(g.device, &bci, nullptr, &m.buffer), "vkCreateBuffer", err))
    return false;
  auto dreq =
      vk_struct<VkMemoryDedicatedRequirements>(VK_STRUCTURE_TYPE_MEMORY_DEDICATED_REQUIREMENTS);
  auto req2 = vk_struct<VkMemoryRequirements2>(VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2);
  req2.pNext = &dreq;
  auto rinfo = vk_struct<VkBufferMemoryRequirementsInfo2>(
      VK_STRUCTURE_TYPE_BUFFER_MEMORY_REQUIREMENTS_INFO_2);
  rinfo.buffer = m.buffer;
  vkGetBufferMemoryRequirements2(g.device, &rinfo, &req2);
  const VkMemoryRequirements req = req2.memoryRequirements;
  const bool host = alloc == Alloc::kStaging;
  uint32_t type = host ? g.staging_type : g.device_type;
  if (!(req.memoryTypeBits & (1u << type))) {
    const VkMemoryPropertyFlags want =
        host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT : 0;
    type = UINT32_MAX;
    for (uint32_t i = 0; i < g.memory.memoryTypeCount; ++i)
      if ((req.memoryTypeBits & (1u << i)) &&
          (g.memory.memoryTypes[i].propertyFlags & want) == want) {
        type = i;
        break;
      }
  }
  if (type == UINT32_MAX) {
    vkDestroyBuffer(g.device, m.buffer, nullptr);
    *err = "no memory type fits the buffer";
    return false;
  }
  auto flags = vk_struct<VkMemoryAllocateFlagsInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO);
  flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  auto dedicated =
      vk_struct<VkMemoryDedicatedAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO);
  dedicated.buffer = m.buffer;
  // As the plugin with alloc=dedicated (its default); "plain" leaves the
  // info out unless the driver requires it.
  const bool want_dedicated = alloc == Alloc::kPlain
                                  ? dreq.requiresDedicatedAllocation == VK_TRUE
                                  : (dreq.prefersDedicatedAllocation ||
                                     dreq.requiresDedicatedAllocation || size >= (16u << 20));
  if (want_dedicated) flags.pNext = &dedicated;
  m.dedicated = want_dedicated;
  auto mai = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  mai.pNext = &flags;
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = type;
  if (failed(vkAllocateMemory(g.device, &mai, nullptr, &m.memory), "vkAllocateMemory", err)) {
    vkDestroyBuffer(g.device, m.buffer, nullptr);
    return false;
  }
  VkResult r = vkBindBufferMemory(g.device, m.buffer, m.memory, 0);
  if (r == VK_SUCCESS && host) r = vkMapMemory(g.device, m.memory, 0, VK_WHOLE_SIZE, 0, &m.mapped);
  if (failed(r, host ? "vkBindBufferMemory/vkMapMemory" : "vkBindBufferMemory", err)) {
    vkDestroyBuffer(g.device, m.buffer, nullptr);
    vkFreeMemory(g.device, m.memory, nullptr);
    return false;
  }
  auto bai = vk_struct<VkBufferDeviceAddressInfo>(VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO);
  bai.buffer = m.buffer;
  m.address = vkGetBufferDeviceAddress(g.device, &bai);
  m.size = size;
  *out = m;
  return true;
}

void destroy_buf(Buf& m) {
  if (m.buffer) vkDestroyBuffer(g.device, m.buffer, nullptr);
  if (m.memory) vkFreeMemory(g.device, m.memory, nullptr);
  m = Buf{};
}

// ---- pipelines and command buffers ------------------------------------------------
VkPipeline pipeline(Id id, std::string* err) {
  if (!g.pipeline_tried[id]) {
    g.pipeline_tried[id] = true;
    const auto& m = xhal_spirv::kModules[id];
    if (g.opt.pretend_fail == m.name) {
      g.pipeline_error[id] = std::string(m.name) + ": failure pretended (--pretend-fail)";
      *err = g.pipeline_error[id];
      return VK_NULL_HANDLE;
    }
    auto smi = vk_struct<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
    smi.codeSize = m.bytes;
    smi.pCode = m.words;
    VkShaderModule module = VK_NULL_HANDLE;
    std::string e;
    if (!failed(vkCreateShaderModule(g.device, &smi, nullptr, &module), "vkCreateShaderModule",
                &e)) {
      auto cpi =
          vk_struct<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
      cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
      cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
      cpi.stage.module = module;
      cpi.stage.pName = "main";
      cpi.layout = g.layout;
      VkPipeline p = VK_NULL_HANDLE;
      if (!failed(vkCreateComputePipelines(g.device, VK_NULL_HANDLE, 1, &cpi, nullptr, &p),
                  "vkCreateComputePipelines", &e))
        g.pipelines[id] = p;
      vkDestroyShaderModule(g.device, module, nullptr);
    }
    if (!g.pipelines[id]) g.pipeline_error[id] = std::string(m.name) + ": " + e;
  }
  if (!g.pipelines[id]) *err = g.pipeline_error[id];
  return g.pipelines[id];
}

void full_barrier(VkCommandBuffer cb) {
  auto mb = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vkCmdPipelineBarrier(cb, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

void host_barrier(VkCommandBuffer cb) {
  auto mb = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
                       nullptr, 0, nullptr);
}

void dispatch(VkCommandBuffer cb, VkPipeline p, const void* push, uint32_t bytes, uint32_t x,
              uint32_t y) {
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p);
  vkCmdPushConstants(cb, g.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, bytes, push);
  vkCmdDispatch(cb, x, y, 1);
}

// Submits and waits: spins on the fence for 50 us (as the plugin spins on
// its timeline), then blocks, for up to two minutes.
bool submit_wait(const Queue& q, VkCommandBuffer cb, std::string* err) {
  if (failed(vkResetFences(g.device, 1, &g.fence), "vkResetFences", err)) return false;
  auto si = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  if (failed(vkQueueSubmit(q.queue, 1, &si, g.fence), "vkQueueSubmit", err)) return false;
  const auto start = std::chrono::steady_clock::now();
  VkResult r;
  while ((r = vkGetFenceStatus(g.device, g.fence)) == VK_NOT_READY &&
         std::chrono::steady_clock::now() - start < std::chrono::microseconds(50)) {
  }
  if (r == VK_NOT_READY) r = vkWaitForFences(g.device, 1, &g.fence, VK_TRUE, 120000000000ull);
  if (r == VK_TIMEOUT) g.lost = true;  // still running: nothing more can be measured
  return !failed(r, "waiting for the fence", err);
}

VkCommandBuffer begin_cb(const Queue& q, bool once, std::string* err) {
  auto ai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  ai.commandPool = q.pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  if (failed(vkAllocateCommandBuffers(g.device, &ai, &cb), "vkAllocateCommandBuffers", err))
    return VK_NULL_HANDLE;
  auto bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  bi.flags = once ? VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT : 0;
  vkBeginCommandBuffer(cb, &bi);
  return cb;
}

using Record = std::function<void(VkCommandBuffer)>;

// One command buffer with `record` in it, submitted and waited for.
bool run_once(const Queue& q, const Record& record, std::string* err) {
  VkCommandBuffer cb = begin_cb(q, true, err);
  if (!cb) return false;
  record(cb);
  bool ok = !failed(vkEndCommandBuffer(cb), "vkEndCommandBuffer", err) && submit_wait(q, cb, err);
  vkFreeCommandBuffers(g.device, q.pool, 1, &cb);
  return ok;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Timing {
  std::vector<double> us;   // GPU time of each timed dispatch
  double wall_us = NAN;     // median host time of one submit-and-wait
  bool host_timed = false;  // the queue has no timestamps: host time / iters
};

// `pre` (e.g. clearing the destination), a warm-up `one`, then the timed
// ones; then `wall` submissions of a barrier and one `one`.
bool measure(const Queue& q, const Record& pre, const Record& one, Timing* t, std::string* err) {
  const uint32_t n = g.opt.iters;
  const bool ts = q.timestamp_bits > 0;
  const auto t0 = std::chrono::steady_clock::now();
  if (!run_once(
          q,
          [&](VkCommandBuffer cb) {
            if (ts) vkCmdResetQueryPool(cb, g.query_pool, 0, 2 * n);
            if (pre) pre(cb);
            full_barrier(cb);
            one(cb);
            for (uint32_t i = 0; i < n; ++i) {
              full_barrier(cb);
              if (ts)
                vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, g.query_pool, 2 * i);
              one(cb);
              if (ts)
                vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, g.query_pool,
                                    2 * i + 1);
            }
          },
          err))
    return false;
  const double host_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  t->us.clear();
  if (ts) {
    std::vector<uint64_t> stamps(2 * n);
    if (failed(vkGetQueryPoolResults(g.device, g.query_pool, 0, 2 * n, stamps.size() * 8,
                                     stamps.data(), 8,
                                     VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
               "vkGetQueryPoolResults", err))
      return false;
    const uint64_t mask =
        q.timestamp_bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << q.timestamp_bits) - 1;
    for (uint32_t i = 0; i < n; ++i)
      t->us.push_back(static_cast<double>((stamps[2 * i + 1] - stamps[2 * i]) & mask) *
                      g.props.limits.timestampPeriod / 1000.0);
  } else {
    t->host_timed = true;
    t->us.assign(n, host_us / (n + 1));
  }
  // The host time of one plugin-like call: a recorded barrier and dispatch,
  // submitted and waited for.
  std::vector<double> wall;
  if (g.opt.wall > 0) {
    VkCommandBuffer cb = begin_cb(q, false, err);
    if (!cb) return false;
    full_barrier(cb);
    one(cb);
    bool ok = !failed(vkEndCommandBuffer(cb), "vkEndCommandBuffer", err);
    for (uint32_t i = 0; ok && i < g.opt.wall; ++i) {
      const auto w0 = std::chrono::steady_clock::now();
      ok = submit_wait(q, cb, err);
      wall.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - w0).count());
    }
    vkFreeCommandBuffers(g.device, q.pool, 1, &cb);
    if (!ok) return false;
  }
  t->wall_us = median(wall);
  return true;
}

// ---- data: a hash pattern the host can recompute ---------------------------------
uint32_t probe_hash(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}
uint32_t pattern_word(uint64_t i, uint32_t seed) {
  return probe_hash(static_cast<uint32_t>(i) + seed * 0x9e3779b9u);
}
float pattern_float(uint64_t i, uint32_t seed) {  // init.comp's MODE=1
  const uint32_t bits = (pattern_word(i, seed) & 0x807fffffu) | 0x3f800000u;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

struct CopyPush {
  uint64_t src, dst, count;
};
struct InitPush {
  uint64_t dst, words;
  uint32_t seed, mode;
};
struct NormPush {  // ops_rows.cpp's NormPush (v1 kernels read up to eps)
  uint64_t x, gamma, beta, dy, out, mean, rstd, rows, n;
  float nf, eps;
  uint32_t vec;    // rows=v2: vec4 loads (the probe's buffers are aligned, n % 4 == 0)
  uint32_t phase;  // rows=v2: 0, one workgroup per row (the plugin's rows=v2row)
  uint64_t scratch;
};

// A 2-D grid of `groups` workgroups: the plugin's (x = min(groups, 65535),
// y = ceil(groups / x): up to 65534 idle workgroups) or balanced (y =
// ceil(groups / 65535), x = ceil(groups / y)).
bool grid(uint64_t groups, bool plugin, uint32_t* x, uint32_t* y) {
  if (groups == 0) groups = 1;
  uint64_t gx, gy;
  if (plugin) {
    gx = std::min<uint64_t>(groups, 65535);
    gy = std::min<uint64_t>((groups + gx - 1) / gx, 65535);
  } else {
    gy = (groups + 65534) / 65535;
    gx = (groups + gy - 1) / gy;
  }
  if (gy > 65535 || gx * gy < groups) return false;
  *x = static_cast<uint32_t>(gx);
  *y = static_cast<uint32_t>(gy);
  return true;
}

bool init_words(const Buf& b, uint64_t words, uint32_t seed, uint32_t mode, std::string* err) {
  VkPipeline p = pipeline(xhal_spirv::probe_init, err);
  if (!p) return false;
  uint32_t x = 1, y = 1;
  grid((words + 255) / 256, false, &x, &y);  // the shader loops past the grid
  const InitPush push{b.address, words, seed, mode};
  return run_once(
      g.queues[0], [&](VkCommandBuffer cb) { dispatch(cb, p, &push, sizeof push, x, y); }, err);
}

// Copies `regions` of device memory into staging (after a barrier) and
// waits: the bytes are at g.staging.mapped in region order.
bool read_back(const Buf& src, const std::vector<VkBufferCopy>& regions, std::string* err) {
  return run_once(
      g.queues[0],
      [&](VkCommandBuffer cb) {
        full_barrier(cb);
        vkCmdCopyBuffer(cb, src.buffer, g.staging.buffer, static_cast<uint32_t>(regions.size()),
                        regions.data());
        host_barrier(cb);
      },
      err);
}

// ---- results ---------------------------------------------------------------------
struct Result {
  std::string group, key, what, alloc, queue, shape, shader;
  std::string status = "ok";  // ok, FAILED: ..., skipped: ...
  std::string check;
  double median_us = NAN, min_us = NAN, max_us = NAN, gbs = NAN, wall_us = NAN;
  uint64_t bytes = 0;  // read + written per dispatch
  uint32_t grid_x = 0, grid_y = 0, local = 0;
  bool check_ok = false;
};
std::vector<Result> g_results;

void print_header() {
  std::printf("\n%-4s %-3s %-44s %-10s %-9s %-13s %-13s %10s %10s %7s %10s  %s\n", "grp", "key",
              "variant", "alloc", "queue", "shape", "grid x local", "median_us", "min_us", "GB/s",
              "wall_us", "check / status");
}

void report(Result r) {
  auto num = [](double v, const char* f) {
    return std::isnan(v) ? std::string("-") : format(f, v);
  };
  const std::string tail = r.status == "ok" ? r.check : r.status;
  const std::string grid =
      r.local ? format("%ux%ux%u", r.grid_x, r.grid_y, r.local) : std::string("-");
  std::printf("%-4s %-3s %-44s %-10s %-9s %-13s %-13s %10s %10s %7s %10s  %s\n", r.group.c_str(),
              r.key.c_str(), r.what.c_str(), r.alloc.c_str(), r.queue.c_str(), r.shape.c_str(),
              grid.c_str(), num(r.median_us, "%.1f").c_str(), num(r.min_us, "%.1f").c_str(),
              num(r.gbs, "%.0f").c_str(), num(r.wall_us, "%.1f").c_str(), tail.c_str());
  std::fflush(stdout);
  g_results.push_back(std::move(r));
}

void fill_timing(Result& r, const Timing& t) {
  std::vector<double> v = t.us;
  std::sort(v.begin(), v.end());
  r.median_us = median(v);
  r.min_us = v.front();
  r.max_us = v.back();
  r.gbs = static_cast<double>(r.bytes) / (r.median_us * 1e3);
  r.wall_us = t.wall_us;
  if (t.host_timed) r.check += " (no timestamps on this queue: host time)";
}

// ---- copy variants ---------------------------------------------------------------
enum class Grid { kPlugin, kBalanced, kStride, kTransfer };
struct CopyVariant {
  const char* key;
  const char* what;
  Id shader;
  uint32_t unit;       // bytes per item
  uint32_t per_group;  // items per workgroup (kStride: per iteration)
  Grid grid;
  bool index32;
};
const CopyVariant kCopies[] = {
    {"a", "plugin copy.comp u128, plugin 2-D grid", xhal_spirv::probe_copy_plugin, 16, 1024,
     Grid::kPlugin, false},
    {"a2", "plugin copy.comp u128, balanced 2-D grid", xhal_spirv::probe_copy_plugin, 16, 1024,
     Grid::kBalanced, false},
    {"ao", "(a) after spirv-opt -O", xhal_spirv::probe_copy_plugin_opt, 16, 1024, Grid::kPlugin,
     false},
    {"b", "copy.comp logic, no exec modes, plugin grid", xhal_spirv::probe_copy_nomodes, 16, 1024,
     Grid::kPlugin, false},
    {"b2", "(b) + the 2 exec modes, no common.glsl", xhal_spirv::probe_copy_modes_only, 16, 1024,
     Grid::kPlugin, false},
    {"c", "1 uint/inv, 32-bit index, 256 wide", xhal_spirv::probe_copy_u32, 4, 256, Grid::kBalanced,
     true},
    {"d", "1 uvec4/inv, 32-bit index", xhal_spirv::probe_copy_v4, 16, 256, Grid::kBalanced, true},
    {"d2", "(d) with the plugin's exec modes", xhal_spirv::probe_copy_v4_modes, 16, 256,
     Grid::kBalanced, true},
    {"e", "grid-stride uvec4, fixed workgroups", xhal_spirv::probe_copy_gridstride, 16, 256,
     Grid::kStride, true},
    {"f", "plugin blocks, 32-bit index, plugin grid", xhal_spirv::probe_copy_block32, 16, 1024,
     Grid::kPlugin, true},
    {"x", "vkCmdCopyBuffer", xhal_spirv::probe_copy_plugin, 16, 0, Grid::kTransfer, false},
};

uint32_t gs_groups() {
  if (g.opt.gs_groups) return g.opt.gs_groups;
  return g.sm_count ? 8 * g.sm_count : 1056;
}

// 4096 samples of 16 bytes (the first, the last, the rest random) compared
// with the source's pattern (seed).
bool check_copy(const Buf& dst, uint64_t bytes, uint32_t seed, std::string* text,
                std::string* err) {
  const uint64_t units = bytes / 16;
  const uint64_t samples = std::min<uint64_t>(4096, units);
  std::vector<VkBufferCopy> regions;
  uint64_t lcg = 0x2545f4914f6cdd1dull;
  for (uint64_t k = 0; k < samples; ++k) {
    uint64_t u = k == 0 ? 0 : k == 1 ? units - 1 : 0;
    if (k >= 2) {
      lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
      u = (lcg >> 17) % units;
    }
    regions.push_back(VkBufferCopy{u * 16, k * 16, 16});
  }
  if (!read_back(dst, regions, err)) return false;
  const auto* got = static_cast<const uint32_t*>(g.staging.mapped);
  uint64_t bad = 0;
  std::string first;
  for (uint64_t k = 0; k < samples; ++k)
    for (uint64_t w = 0; w < 4; ++w) {
      const uint64_t word = regions[k].srcOffset / 4 + w;
      const uint32_t want = pattern_word(word, seed);
      if (got[k * 4 + w] != want) {
        if (!bad)
          first = format(" (first at byte %" PRIu64 ": 0x%08x, want 0x%08x)", word * 4,
                         got[k * 4 + w], want);
        ++bad;
      }
    }
  *text =
      bad ? format("BAD %" PRIu64 " of %" PRIu64 " words differ%s", bad, samples * 4, first.c_str())
          : format("ok (%" PRIu64 " x 16 B sampled)", samples);
  return bad == 0;
}

void run_copy(const CopyVariant& v, const Buf& src, const Buf& dst, const char* alloc, int qi,
              uint32_t seed) {
  const Queue& q = g.queues[qi];
  Result r;
  r.group = "copy";
  r.key = v.key;
  r.what = v.what;
  r.alloc = alloc;
  r.queue = q.name;
  const uint64_t bytes = g.opt.bytes;
  r.shape = format("%.0f MiB", static_cast<double>(bytes) / (1 << 20));
  r.bytes = 2 * bytes;
  r.shader = v.grid == Grid::kTransfer ? "" : xhal_spirv::kModules[v.shader].name;
  if (g.lost) {
    r.status = "skipped: device lost earlier";
    return report(r);
  }
  std::string err;
  const uint64_t count = bytes / v.unit;
  VkPipeline p = VK_NULL_HANDLE;
  uint32_t x = 1, y = 1;
  if (v.grid != Grid::kTransfer) {
    p = pipeline(v.shader, &err);
    if (!p) {
      r.status = "FAILED (pipeline, skipped): " + err;
      return report(r);
    }
    if (v.grid == Grid::kStride) {
      x = gs_groups();
    } else if (!grid((count + v.per_group - 1) / v.per_group, v.grid == Grid::kPlugin, &x, &y)) {
      r.status = "skipped: too many workgroups for a 65535 x 65535 grid";
      return report(r);
    }
    const uint64_t reach =
        v.grid == Grid::kStride ? count + uint64_t{x} * 256 : uint64_t{x} * y * v.per_group;
    if (v.index32 && reach > 0xffffffffull) {
      r.status = "skipped: indices past 32 bits at this size";
      return report(r);
    }
    r.grid_x = x;
    r.grid_y = y;
    r.local = 256;
  }
  const CopyPush push{src.address, dst.address, count};
  const Record one = [&](VkCommandBuffer cb) {
    if (v.grid == Grid::kTransfer) {
      const VkBufferCopy region{0, 0, bytes};
      vkCmdCopyBuffer(cb, src.buffer, dst.buffer, 1, &region);
    } else {
      dispatch(cb, p, &push, sizeof push, x, y);
    }
  };
  const Record clear = [&](VkCommandBuffer cb) {
    vkCmdFillBuffer(cb, dst.buffer, 0, VK_WHOLE_SIZE, 0);
  };
  Timing t;
  if (!measure(q, clear, one, &t, &err)) {
    r.status = "FAILED: " + err;
    return report(r);
  }
  if (!check_copy(dst, bytes, seed, &r.check, &err)) {
    if (r.check.empty()) r.check = "check FAILED: " + err;
  } else {
    r.check_ok = true;
  }
  fill_timing(r, t);
  report(r);
}

void copy_section() {
  const uint32_t seed = 1;
  std::printf("\ncopy: %" PRIu64 " bytes per buffer; GB/s counts 2 x bytes\n", g.opt.bytes);
  print_header();
  for (Alloc alloc : {Alloc::kDedicated, Alloc::kPlain}) {
    const char* name = alloc == Alloc::kDedicated ? "dedicated" : "plain";
    Buf src, dst;
    std::string err;
    if (!create_buf(g.opt.bytes, alloc, &src, &err) ||
        !create_buf(g.opt.bytes, alloc, &dst, &err) ||
        !init_words(src, g.opt.bytes / 4, seed, 0, &err)) {
      for (const auto& v : kCopies) {
        Result r;
        r.group = "copy";
        r.key = v.key;
        r.what = v.what;
        r.alloc = name;
        r.queue = g.queues[0].name;
        r.status = "skipped: buffers: " + err;
        report(r);
      }
      destroy_buf(src);
      destroy_buf(dst);
      continue;
    }
    std::string alloc_name = name;
    if (alloc == Alloc::kPlain && src.dedicated) alloc_name = "plain(req)";
    for (const auto& v : kCopies) run_copy(v, src, dst, alloc_name.c_str(), 0, seed);
    // A few of them on the other queue family, where there is one.
    if (alloc == Alloc::kDedicated && g.queue_count == 2)
      for (const auto& v : kCopies)
        if (!std::strcmp(v.key, "a") || !std::strcmp(v.key, "d") || !std::strcmp(v.key, "e") ||
            !std::strcmp(v.key, "x"))
          run_copy(v, src, dst, alloc_name.c_str(), 1, seed);
    destroy_buf(src);
    destroy_buf(dst);
  }
}

// ---- row variants ----------------------------------------------------------------
enum class Expect { kRms, kSumScale };
struct RowVariant {
  const char* key;
  const char* what;
  Id c4, c8;           // by the plugin's CPG rule (ops_rows.cpp row_variant)
  bool v2;             // rows=v2 kernel: c4 for rows of 4096, c8 holds CPG=16
  bool nf_reciprocal;  // push constant nf holds 1/n instead of n
  Expect expect;
  double tol;  // relative, against the host in double
};
const RowVariant kRows[] = {
    {"p", "plugin norm.comp RMS_FWD, CPG by its rule", xhal_spirv::probe_rms_plugin_c4,
     xhal_spirv::probe_rms_plugin_c8, false, false, Expect::kRms, 1e-5},
    {"q", "plugin norm2.comp RMS_FWD (rows=v2row)", xhal_spirv::probe_rms_v2_c4,
     xhal_spirv::probe_rms_v2_c16, true, false, Expect::kRms, 1e-5},
    {"n", "(p) with stand-in div/sqrt* (not exact)", xhal_spirv::probe_rms_native_c4,
     xhal_spirv::probe_rms_native_c8, false, true, Expect::kRms, 1e-4},
    {"z", "(p) without finish (stack,bcast,div,sqrt)", xhal_spirv::probe_rms_nofinish_c4,
     xhal_spirv::probe_rms_nofinish_c8, false, false, Expect::kSumScale, 1e-4},
    {"r", "ref: 256/row, vec4, subgroupAdd, rsqrt*", xhal_spirv::probe_rms_ref,
     xhal_spirv::probe_rms_ref, false, true, Expect::kRms, 1e-4},
};
const float kEps = 1e-5f;

uint32_t plugin_cpg(uint64_t n) {
  const uint64_t chunks = (n + 1023) / 1024;
  uint32_t step = 0;
  while (step < 3 && (uint64_t{1} << step) < chunks) ++step;
  return 1u << step;
}

// rows=v2 (ops_rows.cpp row_variant2): up to 16 chunks.
uint32_t plugin_cpg2(uint64_t n) {
  const uint64_t chunks = (n + 1023) / 1024;
  uint32_t step = 0;
  while (step < 4 && (uint64_t{1} << step) < chunks) ++step;
  return 1u << step;
}

// Rows 0, rows / 2 and rows - 1 of y against the host (double).
bool check_rows(const Buf& y, uint64_t rows, uint64_t n, Expect expect, double tol,
                std::string* text, std::string* err) {
  std::vector<uint64_t> pick = {0, rows / 2, rows - 1};
  pick.erase(std::unique(pick.begin(), pick.end()), pick.end());
  std::vector<VkBufferCopy> regions;
  for (size_t k = 0; k < pick.size(); ++k)
    regions.push_back(VkBufferCopy{pick[k] * n * 4, k * n * 4, n * 4});
  if (!read_back(y, regions, err)) return false;
  const auto* got = static_cast<const float*>(g.staging.mapped);
  double worst = 0;
  uint64_t bad = 0;
  std::string first;
  for (size_t k = 0; k < pick.size(); ++k) {
    const uint64_t row = pick[k];
    double ss = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const double v = pattern_float(row * n + i, 3);
      ss += v * v;
    }
    const double scale =
        expect == Expect::kRms ? 1.0 / std::sqrt(ss / static_cast<double>(n) + kEps) : ss;
    for (uint64_t i = 0; i < n; ++i) {
      const double want = pattern_float(row * n + i, 3) * scale * pattern_float(i, 7);
      const double have = got[k * n + i];
      const double rel = std::fabs(have - want) / std::max(std::fabs(want), 1e-30);
      worst = std::max(worst, std::isnan(rel) ? INFINITY : rel);
      if (!(rel <= tol)) {
        if (!bad)
          first = format(" (first: row %" PRIu64 " col %" PRIu64 ": %.9g, want %.9g)", row, i, have,
                         want);
        ++bad;
      }
    }
  }
  *text = bad ? format("BAD %" PRIu64 " values off by more than %.0e%s", bad, tol, first.c_str())
              : format("ok (%zu rows, max rel err %.1e)", pick.size(), worst);
  return bad == 0;
}

void rows_section() {
  uint64_t shapes[2][2] = {{16384, 4096}, {64, 262144}};
  std::printf(
      "\nrows: RMSNorm forward f32, one dispatch of min(rows, 65535) workgroups; GB/s "
      "counts x read + y written; * = 1/n from the host and a Newton rsqrt of precise "
      "multiplies (the shader lint refuses native div/sqrt)\n");
  print_header();
  for (auto& shape : shapes) {
    const uint64_t rows = std::max<uint64_t>(2, shape[0] / g.opt.rows_divisor), n = shape[1];
    const std::string shape_text = format("%" PRIu64 "x%" PRIu64, rows, n);
    Buf x, gamma, y, rstd;
    std::string err;
    bool ok = create_buf(rows * n * 4, Alloc::kDedicated, &x, &err) &&
              create_buf(n * 4, Alloc::kDedicated, &gamma, &err) &&
              create_buf(rows * n * 4, Alloc::kDedicated, &y, &err) &&
              create_buf(rows * 4, Alloc::kDedicated, &rstd, &err) &&
              init_words(x, rows * n, 3, 1, &err) && init_words(gamma, n, 7, 1, &err);
    if (ok && g.staging.size < 3 * n * 4) {
      ok = false;
      err = "rows too long for the staging buffer";
    }
    for (const auto& v : kRows) {
      Result r;
      r.group = "rows";
      r.key = v.key;
      r.what = v.what;
      r.alloc = "dedicated";
      r.queue = g.queues[0].name;
      r.shape = shape_text;
      r.bytes = 2 * rows * n * 4;
      if (!ok || g.lost) {
        r.status = g.lost ? "skipped: device lost earlier" : "skipped: buffers: " + err;
        report(r);
        continue;
      }
      const bool ref = v.c4 == v.c8;
      const uint32_t cpg = v.v2 ? plugin_cpg2(n) : plugin_cpg(n);
      if (!ref && cpg != 4 && cpg != (v.v2 ? 16u : 8u)) {
        r.status = format("skipped: CPG=%u is not built", cpg);
        report(r);
        continue;
      }
      const Id id = ref ? v.c4 : cpg == 4 ? v.c4 : v.c8;
      r.shader = xhal_spirv::kModules[id].name;
      if (ref && !g.subgroup_arithmetic) {
        r.status = "skipped: no subgroup arithmetic in compute shaders";
        report(r);
        continue;
      }
      std::string e;
      VkPipeline p = pipeline(id, &e);
      if (!p) {
        r.status = "FAILED (pipeline, skipped): " + e;
        report(r);
        continue;
      }
      NormPush push{};
      push.x = x.address;
      push.gamma = gamma.address;
      push.out = y.address;
      push.rstd = rstd.address;
      push.rows = rows;
      push.n = n;
      push.nf = v.nf_reciprocal ? 1.0f / static_cast<float>(n) : static_cast<float>(n);
      push.eps = kEps;
      push.vec = 1;
      const uint32_t groups = static_cast<uint32_t>(std::min<uint64_t>(rows, 65535));
      r.grid_x = groups;
      r.grid_y = 1;
      r.local = ref ? 256 : (v.v2 ? 32 : 128) * cpg;
      const Record one = [&](VkCommandBuffer cb) {
        dispatch(cb, p, &push, sizeof push, groups, 1);
      };
      const Record clear = [&](VkCommandBuffer cb) {
        vkCmdFillBuffer(cb, y.buffer, 0, VK_WHOLE_SIZE, 0);
      };
      Timing t;
      if (!measure(g.queues[0], clear, one, &t, &e)) {
        r.status = "FAILED: " + e;
        report(r);
        continue;
      }
      if (check_rows(y, rows, n, v.expect, v.tol, &r.check, &e)) r.check_ok = true;
      else if (r.check.empty()) r.check = "check FAILED: " + e;
      fill_timing(r, t);
      report(r);
    }
    destroy_buf(x);
    destroy_buf(gamma);
    destroy_buf(y);
    destroy_buf(rstd);
  }
}

// ---- submissions the way the plugin makes them ----------------------------------
// The copy section times dispatches recorded back to back in one command
// buffer. The plugin records one command buffer per call (a timestamp, a
// barrier, the dispatch, a timestamp) and xhal-bench alternates between the
// op's buffers and the reference copy's, on sources the host wrote through
// staging memory. Each row here submits such command buffers one at a time
// and waits, changing one of those things, so a per-call GPU time that
// depends on the buffers' history or contents shows up.
enum class Init { kShaderHash, kShaderFloat, kUpload };
struct SubmitCase {
  const char* key;
  const char* what;
  int pairs;
  uint32_t gap_us;
  Init init;
  int small_first = 0;  // device buffers of 1 MiB + 64 B allocated before the pairs
};
const SubmitCase kSubmits[] = {
    {"s1", "per-call cb, one pair", 1, 0, Init::kShaderHash},
    {"s2", "per-call cb, two pairs alternating", 2, 0, Init::kShaderHash},
    {"s3", "per-call cb, one pair, 300 us host pause", 1, 300, Init::kShaderHash},
    {"s5", "per-call cb, source floats in [1,2)", 1, 0, Init::kShaderFloat},
    {"s6", "per-call cb, source uploaded via staging", 1, 0, Init::kUpload},
    {"s7", "per-call cb, after one small allocation", 1, 0, Init::kShaderHash, 1},
    {"s8", "per-call cb, after five small allocations", 1, 0, Init::kShaderHash, 5},
};

// The hash pattern written from the host through the staging buffer with
// vkCmdCopyBuffer, as the plugin's buffer_write does.
bool upload_words(const Buf& b, uint64_t words, uint32_t seed, std::string* err) {
  const uint64_t chunk_words = g.staging.size / 4;
  auto* host = static_cast<uint32_t*>(g.staging.mapped);
  for (uint64_t first = 0; first < words; first += chunk_words) {
    const uint64_t n = std::min(chunk_words, words - first);
    for (uint64_t i = 0; i < n; ++i) host[i] = pattern_word(first + i, seed);
    const VkBufferCopy region{0, first * 4, n * 4};
    if (!run_once(
            g.queues[0],
            [&](VkCommandBuffer cb) {
              vkCmdCopyBuffer(cb, g.staging.buffer, b.buffer, 1, &region);
            },
            err))
      return false;
  }
  return true;
}

void submit_case(const SubmitCase& c) {
  const Queue& q = g.queues[0];
  const uint64_t bytes = g.opt.bytes, count = bytes / 16;
  Result r;
  r.group = "sub";
  r.key = c.key;
  r.what = c.what;
  r.alloc = "dedicated";
  r.queue = q.name;
  r.shape = format("%.0f MiB", static_cast<double>(bytes) / (1 << 20));
  r.bytes = 2 * bytes;
  r.shader = xhal_spirv::kModules[xhal_spirv::probe_copy_plugin].name;
  std::string err;
  Buf buf[2][2];
  VkCommandBuffer cb[2] = {};
  bool ok = !g.lost && q.timestamp_bits > 0;
  if (!ok) err = g.lost ? "device lost earlier" : "no timestamps on the queue";
  std::vector<Buf> smalls(static_cast<size_t>(c.small_first));
  for (Buf& b : smalls)
    if (ok) ok = create_buf((1u << 20) + 64, Alloc::kDedicated, &b, &err);
  for (int k = 0; ok && k < c.pairs; ++k) {
    const uint32_t seed = 1 + static_cast<uint32_t>(k);
    ok = create_buf(bytes, Alloc::kDedicated, &buf[k][0], &err) &&
         create_buf(bytes, Alloc::kDedicated, &buf[k][1], &err) &&
         (c.init == Init::kUpload
              ? upload_words(buf[k][0], bytes / 4, seed, &err)
              : init_words(buf[k][0], bytes / 4, seed, c.init == Init::kShaderFloat ? 1 : 0, &err));
  }
  VkPipeline p = ok ? pipeline(xhal_spirv::probe_copy_plugin, &err) : VK_NULL_HANDLE;
  uint32_t x = 1, y = 1;
  if (p && !grid((count + 1023) / 1024, true, &x, &y)) {
    err = "too many workgroups";
    p = VK_NULL_HANDLE;
  }
  r.grid_x = x;
  r.grid_y = y;
  r.local = 256;
  for (int k = 0; p && k < c.pairs; ++k) {
    cb[k] = begin_cb(q, false, &err);
    if (!cb[k]) {
      p = VK_NULL_HANDLE;
      break;
    }
    const CopyPush push{buf[k][0].address, buf[k][1].address, count};
    const uint32_t q0 = 2 * static_cast<uint32_t>(k);
    vkCmdResetQueryPool(cb[k], g.query_pool, q0, 2);
    vkCmdWriteTimestamp(cb[k], VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, g.query_pool, q0);
    full_barrier(cb[k]);
    dispatch(cb[k], p, &push, sizeof push, x, y);
    vkCmdWriteTimestamp(cb[k], VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, g.query_pool, q0 + 1);
    if (failed(vkEndCommandBuffer(cb[k]), "vkEndCommandBuffer", &err)) p = VK_NULL_HANDLE;
  }
  const uint64_t mask =
      q.timestamp_bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << q.timestamp_bits) - 1;
  const uint32_t n = std::max<uint32_t>(g.opt.iters, 30);
  std::vector<double> gpu, wall;
  for (uint32_t i = 0; p && i < n + 4; ++i) {
    const uint32_t k = i % static_cast<uint32_t>(c.pairs);
    if (c.gap_us) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(c.gap_us);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
    const auto w0 = std::chrono::steady_clock::now();
    uint64_t st[2] = {};
    if (!submit_wait(q, cb[k], &err) ||
        failed(vkGetQueryPoolResults(g.device, g.query_pool, 2 * k, 2, sizeof st, st, 8,
                                     VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
               "vkGetQueryPoolResults", &err)) {
      p = VK_NULL_HANDLE;
      break;
    }
    const double w =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - w0).count();
    if (i >= 4) {  // four warm-up calls
      gpu.push_back(static_cast<double>((st[1] - st[0]) & mask) * g.props.limits.timestampPeriod /
                    1000.0);
      wall.push_back(w);
    }
  }
  if (!p) {
    r.status = "FAILED: " + err;
  } else {
    Timing t;
    t.us = gpu;
    t.wall_us = median(wall);
    // Floats keep the hash's sign and mantissa; only the hash words are checked.
    if (c.init == Init::kShaderFloat) {
      r.check_ok = true;
      r.check = "not checked (float pattern)";
    } else {
      std::string text;
      r.check_ok = check_copy(buf[0][1], bytes, 1, &text, &err) &&
                   (c.pairs == 1 || check_copy(buf[1][1], bytes, 2, &text, &err));
      r.check = r.check_ok ? text : "check FAILED: " + text + err;
    }
    r.check += format("; src 0x%" PRIx64 " dst 0x%" PRIx64, buf[0][0].address, buf[0][1].address);
    fill_timing(r, t);
  }
  report(r);
  for (Buf& b : smalls) destroy_buf(b);
  for (auto& one : cb)
    if (one) vkFreeCommandBuffers(g.device, q.pool, 1, &one);
  for (auto& pair : buf)
    for (auto& b : pair) destroy_buf(b);
}

void submit_section() {
  std::printf("\nsubmit: %" PRIu64 " bytes per buffer, one command buffer per call\n", g.opt.bytes);
  print_header();
  for (const SubmitCase& c : kSubmits) submit_case(c);
}

// ---- JSON ------------------------------------------------------------------------
std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      o += format("\\u%04x", c);
    } else {
      o += c;
    }
  }
  return o + "\"";
}
std::string json_number(double v) { return std::isfinite(v) ? format("%.9g", v) : "null"; }

void write_json(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "xhal-vk-probe: cannot write %s\n", path.c_str());
    return;
  }
  std::fprintf(f, "{\n  \"device\": {\"name\": %s, \"driver\": %s, \"api\": %s,\n",
               json_string(g.props.deviceName).c_str(), json_string(g.driver).c_str(),
               json_string(version_text(g.props.apiVersion)).c_str());
  std::fprintf(f,
               "    \"timestamp_period_ns\": %s, \"subgroup_size\": %u, \"sm_count\": %u, "
               "\"buffer_memory\": %s},\n",
               json_number(g.props.limits.timestampPeriod).c_str(), g.subgroup_size, g.sm_count,
               json_string(memory_type_text(g.device_type)).c_str());
  std::fprintf(f,
               "  \"options\": {\"bytes\": %" PRIu64 ", \"rows_divisor\": %" PRIu64
               ", \"iters\": %u, \"wall\": %u, \"gs_groups\": %u},\n",
               g.opt.bytes, g.opt.rows_divisor, g.opt.iters, g.opt.wall, gs_groups());
  std::fprintf(f, "  \"results\": [\n");
  for (size_t i = 0; i < g_results.size(); ++i) {
    const Result& r = g_results[i];
    std::fprintf(
        f,
        "    {\"group\": %s, \"key\": %s, \"variant\": %s, \"shader\": %s, \"alloc\": %s, "
        "\"queue\": %s, \"shape\": %s, \"status\": %s, \"check\": %s, \"check_ok\": %s, "
        "\"grid\": [%u, %u], \"local_size\": %u, \"bytes\": %" PRIu64
        ", \"median_us\": %s, \"min_us\": %s, \"max_us\": %s, \"gb_per_s\": %s, \"wall_us\": "
        "%s}%s\n",
        json_string(r.group).c_str(), json_string(r.key).c_str(), json_string(r.what).c_str(),
        json_string(r.shader).c_str(), json_string(r.alloc).c_str(), json_string(r.queue).c_str(),
        json_string(r.shape).c_str(), json_string(r.status).c_str(), json_string(r.check).c_str(),
        r.check_ok ? "true" : "false", r.grid_x, r.grid_y, r.local, r.bytes,
        json_number(r.median_us).c_str(), json_number(r.min_us).c_str(),
        json_number(r.max_us).c_str(), json_number(r.gbs).c_str(), json_number(r.wall_us).c_str(),
        i + 1 < g_results.size() ? "," : "");
  }
  std::fprintf(f, "  ],\n  \"validation_messages\": %d\n}\n", g.validation_messages);
  std::fclose(f);
  std::printf("JSON: %s\n", path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  g.opt = parse(argc, argv);
  const auto start = std::chrono::steady_clock::now();
  create_instance();
  pick_device();
  create_device();
  std::printf("device: %s; driver %s; Vulkan %s\n", g.props.deviceName, g.driver.c_str(),
              version_text(g.props.apiVersion).c_str());
  std::printf("timestampPeriod %.3f ns; subgroup size %u; SMs %s\n", g.props.limits.timestampPeriod,
              g.subgroup_size, g.sm_count ? format("%u", g.sm_count).c_str() : "unknown");
  for (int i = 0; i < g.queue_count; ++i)
    std::printf("queue %s: family %u, %u timestamp bits%s\n", g.queues[i].name, g.queues[i].family,
                g.queues[i].timestamp_bits, i == 0 ? " (the plugin's choice)" : "");
  std::printf("buffers: %s; staging: %s\n", memory_type_text(g.device_type).c_str(),
              memory_type_text(g.staging_type).c_str());
  std::printf(
      "each variant: 1 warm-up + %u timed dispatches (median, min); wall = submit+wait "
      "of one barrier+dispatch, median of %u\n",
      g.opt.iters, g.opt.wall);
  std::fflush(stdout);

  std::string err;
  if (!create_buf(16u << 20, Alloc::kStaging, &g.staging, &err)) die("staging buffer: " + err);
  if (g.opt.copy) copy_section();
  if (g.opt.rows) rows_section();
  if (g.opt.submit) submit_section();

  int measured = 0, bad = 0, failed_pipelines = 0;
  for (const auto& r : g_results) {
    if (r.status == "ok") ++measured;
    if (r.status == "ok" && !r.check_ok) ++bad;
    if (r.status.rfind("FAILED (pipeline", 0) == 0) ++failed_pipelines;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "\n%d measured, %d with a failed check, %d failed pipelines, %zu other "
      "skipped/failed; %d validation messages; %.1f s\n",
      measured, bad, failed_pipelines,
      g_results.size() - static_cast<size_t>(measured + failed_pipelines), g.validation_messages,
      secs);
  if (!g.opt.json.empty()) write_json(g.opt.json);

  destroy_buf(g.staging);
  for (auto& p : g.pipelines)
    if (p) vkDestroyPipeline(g.device, p, nullptr);
  vkDestroyFence(g.device, g.fence, nullptr);
  vkDestroyQueryPool(g.device, g.query_pool, nullptr);
  vkDestroyPipelineLayout(g.device, g.layout, nullptr);
  for (int i = 0; i < g.queue_count; ++i) vkDestroyCommandPool(g.device, g.queues[i].pool, nullptr);
  vkDestroyDevice(g.device, nullptr);
  if (g.messenger) vkDestroyDebugUtilsMessengerEXT(g.instance, g.messenger, nullptr);
  vkDestroyInstance(g.instance, nullptr);
  return g.lost ? 1 : 0;
}
