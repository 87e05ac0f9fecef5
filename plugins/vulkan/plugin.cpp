// The Vulkan plugin's entry point: loads the Vulkan loader at run time
// (volk), creates one instance, and for every physical device that has what
// the shaders need creates its VkDevice and runs the arithmetic self-test.
// Devices that fail either are not listed; init's note says why. No loader,
// no instance or no usable device is a loaded plugin with zero devices.
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

struct Context {
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  std::vector<std::unique_ptr<Gpu>> gpus;  // usable devices only
};

// ---- validation ---------------------------------------------------------------
// The option validation=fatal (XHAL_DEVICE_OPTIONS=vulkan:validation=fatal)
// enables VK_LAYER_KHRONOS_validation and makes any validation warning or
// error fatal (printed, then abort()): CI runs the conformance suite so,
// where crash isolation turns the abort into a failed test and a failed
// run. validation=warn prints without aborting.
Validation g_validation = Validation::kOff;

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT type,
                                                const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                void*) {
  if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
  std::fprintf(stderr, "xhal vulkan validation: %s\n", data && data->pMessage ? data->pMessage : "?");
  std::fflush(stderr);
  if (g_validation == Validation::kFatal && (type & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT))
    std::abort();
  return VK_FALSE;
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(n);
  if (vkEnumerateInstanceLayerProperties(&n, layers.data()) != VK_SUCCESS) return false;
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

bool has_instance_extension(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> ext(n);
  if (vkEnumerateInstanceExtensionProperties(nullptr, &n, ext.data()) != VK_SUCCESS) return false;
  for (const auto& e : ext)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
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

std::string format_uuid(const uint8_t* u) {
  char s[64];
  std::snprintf(s, sizeof s,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
                u[15]);
  return s;
}

// Which dtypes each op supports on this plugin (every op is implemented;
// moves by element size take every dtype, arithmetic is f32).
void fill_op_dtypes(xhal_plugin_device_info_t* info) {
  uint32_t all = 0;
  for (int d = XHAL_DTYPE_F32; d < XHAL_DTYPE_COUNT_; ++d) all |= 1u << d;
  const uint32_t f32 = 1u << XHAL_DTYPE_F32;
  for (int op = 0; op < XHAL_OP_COUNT_; ++op) info->op_dtypes[op] = f32;
  info->op_dtypes[XHAL_OP_INDEX_SELECT] = all;
  info->op_dtypes[XHAL_OP_PERMUTE] = all;
}

// Checks what the plugin needs, creates the VkDevice. Returns "" or why the
// device cannot be used.
std::string make_gpu(VkPhysicalDevice phys, Gpu* g) {
  g->physical = phys;
  VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceFloatControlsProperties fc{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
  VkPhysicalDevicePCIBusInfoPropertiesEXT pci{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT};
  const bool has_pci = has_device_extension(phys, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props2.pNext = &driver;
  driver.pNext = &id;
  id.pNext = &fc;
  VkPhysicalDeviceMaintenance4Properties m4{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES};
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
  if (g->props.apiVersion >= VK_API_VERSION_1_3 && m4.maxBufferSize) g->max_buffer_size = m4.maxBufferSize;

  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
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

  // One compute queue: prefer a compute-only family (its queue does not
  // share time with graphics).
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qf.data());
  int family = -1;
  for (uint32_t i = 0; i < nq; ++i) {
    if (!(qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (family < 0 || !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) family = static_cast<int>(i);
    if (!(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) break;
  }
  if (family < 0) return "has no compute queue";
  g->queue_family = static_cast<uint32_t>(family);

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
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = g->queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkPhysicalDeviceVulkan11Features e11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features e12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceFeatures2 e2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  e2.pNext = &e11;
  e11.pNext = &e12;
  e2.features.shaderInt64 = VK_TRUE;
  e2.features.shaderInt16 = f2.features.shaderInt16;
  e11.storageBuffer16BitAccess = VK_TRUE;
  e12.bufferDeviceAddress = VK_TRUE;
  e12.timelineSemaphore = VK_TRUE;
  e12.storageBuffer8BitAccess = VK_TRUE;
  e12.shaderInt8 = f12.shaderInt8;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &e2;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  const VkResult r = vkCreateDevice(phys, &dci, nullptr, &g->device);
  if (r != VK_SUCCESS) return std::string("vkCreateDevice failed: ") + vk_result_name(r);
  volkLoadDeviceTable(&g->vk, g->device);
  g->vk.vkGetDeviceQueue(g->device, g->queue_family, 0, &g->queue);

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};
  VkPipelineLayoutCreateInfo lci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  lci.pushConstantRangeCount = 1;
  lci.pPushConstantRanges = &range;
  const VkResult lr = g->vk.vkCreatePipelineLayout(g->device, &lci, nullptr, &g->layout);
  if (lr != VK_SUCCESS) return std::string("vkCreatePipelineLayout failed: ") + vk_result_name(lr);

  // Device info.
  auto& info = g->info;
  std::snprintf(info.name, sizeof info.name, "%s", g->props.deviceName);
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
    case VK_PHYSICAL_DEVICE_TYPE_CPU: info.kind = XHAL_DEVICE_KIND_CPU; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: info.kind = XHAL_DEVICE_KIND_GPU; break;
    default: info.kind = XHAL_DEVICE_KIND_OTHER; break;
  }
  uint64_t bytes = 0;
  for (uint32_t h = 0; h < g->memory.memoryHeapCount; ++h)
    if (g->memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      bytes = std::max<uint64_t>(bytes, g->memory.memoryHeaps[h].size);
  info.memory_bytes = bytes;
  fill_op_dtypes(&info);
  return "";
}

void append_note(std::string& note, const std::string& text) {
  note += (note.empty() ? "" : "; ") + text;
}

xhal_status_t init(const xhal_plugin_host_t* host, void** out_context, char* out_note,
                   size_t note_capacity) {
  set_host(host);
  auto ctx = std::unique_ptr<Context>(new (std::nothrow) Context);
  if (!ctx) return XHAL_OUT_OF_MEMORY;
  std::string note;
  auto finish = [&]() {
    if (out_note && note_capacity) std::snprintf(out_note, note_capacity, "%s", note.c_str());
    *out_context = ctx.release();
    return XHAL_OK;
  };

  if (volkInitialize() != VK_SUCCESS) {
    note = "no Vulkan loader (libvulkan.so.1 could not be opened)";
    return finish();
  }
  if (volkGetInstanceVersion() < VK_API_VERSION_1_2) {
    note = "the Vulkan loader is older than 1.2";
    return finish();
  }
  // Plugin-wide options (XHAL_DEVICE_OPTIONS items for vulkan, handed over
  // in the host table since ABI 1.2): validation=off|warn|fatal.
  const bool host_has_options =
      host->struct_size >= offsetof(xhal_plugin_host_t, options) + sizeof(host->options);
  if (host_has_options && host->options) {
    Options plugin_wide;
    std::string error;
    if (!parse_options(host->options, &plugin_wide, &error))
      return fail(XHAL_INVALID_ARGUMENT, error.c_str());
    g_validation = plugin_wide.validation;
  }
  std::vector<const char*> layers, extensions;
  const bool debug_utils = has_instance_extension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  if (g_validation != Validation::kOff) {
    if (!has_layer("VK_LAYER_KHRONOS_validation")) {
      // Refused rather than run unvalidated: a CI run that asked for the
      // layer must not pass without it.
      return fail(XHAL_PLUGIN_ERROR,
                  "the option validation is set but VK_LAYER_KHRONOS_validation is not "
                  "installed (Debian: vulkan-validationlayers)");
    }
    layers.push_back("VK_LAYER_KHRONOS_validation");
    if (debug_utils) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "xhal";
  app.pEngineName = "xhal";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  ici.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ici.ppEnabledLayerNames = layers.data();
  ici.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ici.ppEnabledExtensionNames = extensions.data();
  VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                        VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  mci.pfnUserCallback = on_debug_message;
  if (g_validation != Validation::kOff && debug_utils) ici.pNext = &mci;  // instance create/destroy too
  VkResult r = vkCreateInstance(&ici, nullptr, &ctx->instance);
  if (r != VK_SUCCESS) {
    note = std::string("vkCreateInstance failed: ") + vk_result_name(r);
    return finish();
  }
  volkLoadInstanceOnly(ctx->instance);
  if (g_validation != Validation::kOff && debug_utils)
    vkCreateDebugUtilsMessengerEXT(ctx->instance, &mci, nullptr, &ctx->messenger);

  uint32_t count = 0;
  r = vkEnumeratePhysicalDevices(ctx->instance, &count, nullptr);
  std::vector<VkPhysicalDevice> phys(count);
  if (r == VK_SUCCESS && count) r = vkEnumeratePhysicalDevices(ctx->instance, &count, phys.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
    note = std::string("vkEnumeratePhysicalDevices failed: ") + vk_result_name(r);
    return finish();
  }
  std::string rejected;
  for (VkPhysicalDevice p : phys) {
    auto g = std::unique_ptr<Gpu>(new (std::nothrow) Gpu);
    if (!g) return XHAL_OUT_OF_MEMORY;
    std::string why = make_gpu(p, g.get());
    if (why.empty() && !run_selftest(*g, &why)) why = "self-test failed: " + why;
    if (!why.empty()) {
      append_note(rejected, std::string(g->props.deviceName) + " unusable: " + why);
      g->destroy();
      continue;
    }
    ctx->gpus.push_back(std::move(g));
  }
  if (ctx->gpus.empty())
    note = count == 0 ? "no Vulkan device found" : "no usable Vulkan device: " + rejected;
  else
    note = rejected;
  return finish();
}

void shutdown(void* context) {
  auto* ctx = static_cast<Context*>(context);
  if (!ctx) return;
  for (auto& g : ctx->gpus) g->destroy();
  ctx->gpus.clear();
  if (ctx->messenger) vkDestroyDebugUtilsMessengerEXT(ctx->instance, ctx->messenger, nullptr);
  if (ctx->instance) vkDestroyInstance(ctx->instance, nullptr);
  delete ctx;
}

xhal_status_t device_count(void* context, uint32_t* out_count) {
  *out_count = static_cast<uint32_t>(static_cast<Context*>(context)->gpus.size());
  return XHAL_OK;
}

xhal_status_t device_get_info(void* context, uint32_t index, xhal_plugin_device_info_t* out) {
  auto* ctx = static_cast<Context*>(context);
  if (index >= ctx->gpus.size()) return fail(XHAL_NOT_FOUND, "no device %u", index);
  const auto& info = ctx->gpus[index]->info;
  const size_t header = sizeof info.struct_size;
  const size_t limit = out->struct_size < sizeof info ? out->struct_size : sizeof info;
  if (limit > header)
    std::memcpy(reinterpret_cast<char*>(out) + header, reinterpret_cast<const char*>(&info) + header,
                limit - header);
  return XHAL_OK;
}

void destroy_device(Device* d) {
  if (!d) return;
  Gpu& g = *d->gpu;
  if (d->recording) d->abandon();
  if (d->timeline && !d->lost) d->wait(d->submitted);
  if (d->lost) g.vk.vkDeviceWaitIdle(g.device);
  mem_destroy(g, d->staging);
  mem_destroy(g, d->scratch);
  mem_destroy(g, d->params);
  if (d->pool) g.vk.vkDestroyCommandPool(g.device, d->pool, nullptr);
  if (d->timeline) g.vk.vkDestroySemaphore(g.device, d->timeline, nullptr);
  g.open = false;
  delete d;
}

xhal_status_t open_device(Gpu* g, const Options& options, Device** out) {
  if (g->open.exchange(true)) return fail(XHAL_BUSY, "%s is already open", g->info.name);
  auto* d = new (std::nothrow) Device;
  if (!d) {
    g->open = false;
    return XHAL_OUT_OF_MEMORY;
  }
  d->gpu = g;
  d->options = options;
  g->dedicated = options.dedicated;
  d->compute_copy = options.copy == CopyMode::kCompute ||
                    (options.copy == CopyMode::kAuto &&
                     g->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU);
  auto bail = [&](xhal_status_t s) {
    destroy_device(d);
    return s;
  };
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = g->queue_family;
  VkResult r = g->vk.vkCreateCommandPool(g->device, &pci, nullptr, &d->pool);
  if (r != VK_SUCCESS) return bail(vk_fail(r, "vkCreateCommandPool"));
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = d->pool;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = Device::kRing;
  VkCommandBuffer cbs[Device::kRing];
  r = g->vk.vkAllocateCommandBuffers(g->device, &cai, cbs);
  if (r != VK_SUCCESS) return bail(vk_fail(r, "vkAllocateCommandBuffers"));
  for (int i = 0; i < Device::kRing; ++i) d->ring[i].cb = cbs[i];
  VkSemaphoreTypeCreateInfo sti{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  sti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  sti.initialValue = 0;
  VkSemaphoreCreateInfo sci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  sci.pNext = &sti;
  r = g->vk.vkCreateSemaphore(g->device, &sci, nullptr, &d->timeline);
  if (r != VK_SUCCESS) return bail(vk_fail(r, "vkCreateSemaphore (timeline)"));
  xhal_status_t s = mem_create(*g, 2 * Device::kStagingHalf, true, &d->staging);
  if (s == XHAL_OK) s = mem_create(*g, Device::kParamsBytes, false, &d->params);
  if (s != XHAL_OK) return bail(s);
  *out = d;
  return XHAL_OK;
}

xhal_status_t device_open_with_options(void* context, uint32_t index, const char* options,
                                       void** out_device) {
  auto* ctx = static_cast<Context*>(context);
  if (index >= ctx->gpus.size()) return fail(XHAL_NOT_FOUND, "no device %u", index);
  Options parsed;
  std::string error;
  if (!parse_options(options ? options : "", &parsed, &error))
    return fail(XHAL_INVALID_ARGUMENT, "%s", error.c_str());
  Device* d = nullptr;
  XHAL_VK_TRY(open_device(ctx->gpus[index].get(), parsed, &d));
  *out_device = d;
  return XHAL_OK;
}

xhal_status_t device_open(void* context, uint32_t index, void** out_device) {
  return device_open_with_options(context, index, "", out_device);
}

void device_close(void* device) { destroy_device(static_cast<Device*>(device)); }

xhal_status_t device_synchronize(void* device) {
  auto* d = static_cast<Device*>(device);
  std::lock_guard lock(d->mutex);
  return d->wait_idle();
}

xhal_status_t device_get_counters(void* device, xhal_counters_t* out) {
  const auto* d = static_cast<Device*>(device);
  out->host_to_device_transfers = d->h2d_transfers.load(std::memory_order_relaxed);
  out->host_to_device_bytes = d->h2d_bytes.load(std::memory_order_relaxed);
  out->device_to_host_transfers = d->d2h_transfers.load(std::memory_order_relaxed);
  out->device_to_host_bytes = d->d2h_bytes.load(std::memory_order_relaxed);
  out->kernel_launches = d->launches.load(std::memory_order_relaxed);
  return XHAL_OK;
}

xhal_status_t device_get_options(void* device, char* out, size_t capacity) {
  const std::string s = format_options(static_cast<Device*>(device)->options);
  if (capacity) std::snprintf(out, capacity, "%s", s.c_str());
  return XHAL_OK;
}

xhal_plugin_api_t make_api() {
  xhal_plugin_api_t api{};
  api.struct_size = sizeof(xhal_plugin_api_t);
  api.abi_major = XHAL_PLUGIN_ABI_MAJOR;
  api.abi_minor = XHAL_PLUGIN_ABI_MINOR;
  api.backend_name = "vulkan";
  api.plugin_version = "0.1.0";
  api.init = init;
  api.shutdown = shutdown;
  api.device_count = device_count;
  api.device_get_info = device_get_info;
  api.device_open = device_open;
  api.device_close = device_close;
  api.device_synchronize = device_synchronize;
  api.device_get_counters = device_get_counters;
  api.buffer_allocate = buffer_allocate;
  api.buffer_free = buffer_free;
  api.buffer_write = buffer_write;
  api.buffer_read = buffer_read;
  api.buffer_copy = buffer_copy;
  api.buffer_fill = buffer_fill;
  api.index_plan_create = index_plan_create;
  api.index_plan_destroy = index_plan_destroy;
  api.index_select = index_select;
  api.index_add = index_add;
  api.permute = permute;
  api.softmax_forward = softmax_forward;
  api.softmax_backward = softmax_backward;
  api.rms_norm_forward = rms_norm_forward;
  api.rms_norm_backward = rms_norm_backward;
  api.layer_norm_forward = layer_norm_forward;
  api.layer_norm_backward = layer_norm_backward;
  api.csr_create = csr_create;
  api.csr_destroy = csr_destroy;
  api.spmv = spmv;
  api.spmm = spmm;
  api.csr_solve = csr_solve;
  api.csr_solve_backward = csr_solve_backward;
  api.spgemm_numeric = spgemm_numeric;
  api.device_open_with_options = device_open_with_options;
  api.device_get_options = device_get_options;
  return api;
}

}  // namespace

// Used by the self-test, which runs on a device opened like any other.
xhal_status_t open_for_selftest(Gpu* g, Device** out) { return open_device(g, Options{}, out); }
void close_for_selftest(Device* d) { destroy_device(d); }

}  // namespace xhal::vk

extern "C" XHAL_PLUGIN_EXPORT const xhal_plugin_api_t* xhal_plugin_get_api(void) {
  static const xhal_plugin_api_t api = xhal::vk::make_api();
  return &api;
}
