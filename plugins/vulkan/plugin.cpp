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
bool g_universal_queue = false;  // queue=universal (plugin-wide)

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT type,
                                                const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                void*) {
  if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
  std::fprintf(stderr, "xhal vulkan validation: %s\n",
               data && data->pMessage ? data->pMessage : "?");
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
    g_universal_queue = plugin_wide.universal_queue;
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
  auto app = vk_struct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "xhal";
  app.pEngineName = "xhal";
  app.apiVersion = VK_API_VERSION_1_2;
  auto ici = vk_struct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  ici.pApplicationInfo = &app;
  ici.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ici.ppEnabledLayerNames = layers.data();
  ici.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ici.ppEnabledExtensionNames = extensions.data();
  auto mci = vk_struct<VkDebugUtilsMessengerCreateInfoEXT>(
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
  mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                        VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  mci.pfnUserCallback = on_debug_message;
  if (g_validation != Validation::kOff && debug_utils)
    ici.pNext = &mci;  // instance create/destroy too
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
    std::string why = make_gpu(p, g_universal_queue, g.get());
    if (why.empty() && !run_selftest(*g, &why)) why = "self-test failed: " + why;
    if (!why.empty()) {
      append_note(rejected, std::string(g->props.deviceName) + " unusable: " + why);
      g->destroy();
      continue;
    }
    // f64 is claimed only when its own self-test passes; a device that
    // fails it keeps its f32 and narrow ops, and the note says why.
    if (g->f64 && !run_selftest_f64(*g, &why)) {
      g->f64 = false;
      fill_op_dtypes(*g, &g->info);
      append_note(rejected, std::string(g->props.deviceName) + ": f64 not claimed: " + why);
    }
    ctx->gpus.push_back(std::move(g));
  }
  if (ctx->gpus.empty())
    note = count == 0 ? "no Vulkan device found" : "no usable Vulkan device: " + rejected;
  else note = rejected;
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
    std::memcpy(reinterpret_cast<char*>(out) + header,
                reinterpret_cast<const char*>(&info) + header, limit - header);
  return XHAL_OK;
}

void destroy_device(Device* d) {
  if (!d) return;
  Gpu& g = *d->gpu;
  if (d->recording) d->abandon();
  if (d->timeline && !d->lost) d->wait(d->submitted);
  if (d->lost) g.vk.vkDeviceWaitIdle(g.device);
  if (d->queries) {
    if (!d->lost) d->profile_print();
    g.vk.vkDestroyQueryPool(g.device, d->queries, nullptr);
  }
  mem_destroy(g, d->staging);
  mem_destroy(g, d->scratch);
  mem_destroy(g, d->params);
  for (Device::Slot& slot : d->ring)
    if (slot.fence) g.vk.vkDestroyFence(g.device, slot.fence, nullptr);
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
  g->trace_alloc = options.profile;
  d->compute_copy =
      options.copy == CopyMode::kCompute ||
      (options.copy == CopyMode::kAuto && g->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU);
  auto bail = [&](xhal_status_t s) {
    destroy_device(d);
    return s;
  };
  auto pci = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = g->queue_family;
  VkResult r = g->vk.vkCreateCommandPool(g->device, &pci, nullptr, &d->pool);
  if (r != VK_SUCCESS) return bail(vk_fail(r, "vkCreateCommandPool"));
  auto cai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  cai.commandPool = d->pool;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = Device::kRing;
  VkCommandBuffer cbs[Device::kRing];
  r = g->vk.vkAllocateCommandBuffers(g->device, &cai, cbs);
  if (r != VK_SUCCESS) return bail(vk_fail(r, "vkAllocateCommandBuffers"));
  for (int i = 0; i < Device::kRing; ++i) d->ring[i].cb = cbs[i];
  if (options.fence_wait) {
    auto fci = vk_struct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    for (Device::Slot& slot : d->ring) {
      r = g->vk.vkCreateFence(g->device, &fci, nullptr, &slot.fence);
      if (r != VK_SUCCESS) return bail(vk_fail(r, "vkCreateFence"));
    }
  }
  auto sti = vk_struct<VkSemaphoreTypeCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO);
  sti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  sti.initialValue = 0;
  auto sci = vk_struct<VkSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO);
  sci.pNext = &sti;
  r = g->vk.vkCreateSemaphore(g->device, &sci, nullptr, &d->timeline);
  if (r != VK_SUCCESS) return bail(vk_fail(r, "vkCreateSemaphore (timeline)"));
  if (options.profile) {
    if (g->timestamp_bits == 0)
      return bail(fail(XHAL_UNSUPPORTED, "option 'profile': %s has no timestamps on its queue",
                       g->info.name));
    auto qpi = vk_struct<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
    qpi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qpi.queryCount = 3 * Device::kRing;
    r = g->vk.vkCreateQueryPool(g->device, &qpi, nullptr, &d->queries);
    if (r != VK_SUCCESS) return bail(vk_fail(r, "vkCreateQueryPool"));
  }
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
