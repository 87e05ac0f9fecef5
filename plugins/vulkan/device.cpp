// Devices and memory: pipelines (created on first use), allocations with
// device addresses, the command-buffer ring and timeline semaphore of an
// open device. Staging transfers: transfers.cpp; options: options.cpp.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <new>
#include <thread>

#include "vk_plugin.h"

namespace xhal::vk {

// ---- errors --------------------------------------------------------------------
namespace {
const xhal_plugin_host_t* g_host = nullptr;
}

void set_host(const xhal_plugin_host_t* host) { g_host = host; }
uint32_t core_abi_minor() { return g_host ? g_host->abi_minor : 0; }

xhal_status_t fail(xhal_status_t status, const char* fmt, ...) {
  char msg[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, args);
  va_end(args);
  if (g_host && g_host->set_error) g_host->set_error(msg);
  return status;
}

xhal_status_t vk_fail(VkResult r, const char* what) {
  xhal_status_t s = XHAL_PLUGIN_ERROR;
  if (r == VK_ERROR_DEVICE_LOST) s = XHAL_DEVICE_LOST;
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY ||
      r == VK_ERROR_TOO_MANY_OBJECTS)
    s = XHAL_OUT_OF_MEMORY;
  return fail(s, "%s failed: %s (%d)", what, vk_result_name(r), static_cast<int>(r));
}

uint32_t dtype_size(xhal_dtype_t d) {
  switch (d) {
    case XHAL_DTYPE_U8:
      return 1;
    case XHAL_DTYPE_F16:
    case XHAL_DTYPE_BF16:
      return 2;
    case XHAL_DTYPE_F32:
    case XHAL_DTYPE_I32:
      return 4;
    case XHAL_DTYPE_I64:
    case XHAL_DTYPE_F64:
      return 8;
    default:
      return 0;
  }
}

// ---- pipelines ---------------------------------------------------------------------
xhal_status_t Gpu::pipeline(ShaderId id, VkPipeline* out) {
  std::lock_guard lock(pipeline_mutex);
  if (pipelines[id]) {
    *out = pipelines[id];
    return XHAL_OK;
  }
  const auto& m = xhal_spirv::kModules[id];
  std::vector<uint32_t> patched;
  const uint32_t* words = m.words;
  size_t bytes = m.bytes;
  if (denorm_preserve || uses_float64(m.words, m.bytes / 4)) {
    if (!patch_float_modes(m.words, m.bytes / 4, denorm_preserve, &patched))
      return fail(XHAL_INTERNAL, "shader %s has no RoundingModeRTE mode to extend", m.name);
    words = patched.data();
    bytes = patched.size() * 4;
  }
  auto smi = vk_struct<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  smi.codeSize = bytes;
  smi.pCode = words;
  VkShaderModule module = VK_NULL_HANDLE;
  VkResult r = vk.vkCreateShaderModule(device, &smi, nullptr, &module);
  if (r != VK_SUCCESS) return vk_fail(r, "vkCreateShaderModule");
  auto cpi = vk_struct<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpi.stage.module = module;
  cpi.stage.pName = "main";
  cpi.layout = layout;
  VkPipeline p = VK_NULL_HANDLE;
  r = vk.vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &cpi, nullptr, &p);
  vk.vkDestroyShaderModule(device, module, nullptr);
  if (r != VK_SUCCESS) return vk_fail(r, "vkCreateComputePipelines");
  pipelines[id] = p;
  *out = p;
  return XHAL_OK;
}

void Gpu::destroy() {
  if (!device) return;
  vk.vkDeviceWaitIdle(device);
  for (auto& p : pipelines)
    if (p) {
      vk.vkDestroyPipeline(device, p, nullptr);
      p = VK_NULL_HANDLE;
    }
  if (layout) vk.vkDestroyPipelineLayout(device, layout, nullptr);
  vk.vkDestroyDevice(device, nullptr);
  device = VK_NULL_HANDLE;
}

// ---- memory -------------------------------------------------------------------------
xhal_status_t mem_create(Gpu& g, uint64_t size, bool host_visible, Mem* out) {
  Mem m;
  const uint64_t rounded = size == 0 ? 64 : (size + 63) / 64 * 64;
  if (rounded < size)
    return fail(XHAL_OUT_OF_MEMORY, "allocation of %" PRIu64 " bytes overflows", size);
  // Sizes past the device's stated limits are invalid usage, not a failing
  // call: refuse them here as out of memory.
  if (rounded > g.max_buffer_size)
    return fail(XHAL_OUT_OF_MEMORY,
                "buffer of %" PRIu64 " bytes exceeds the device's maxBufferSize (%" PRIu64 ")",
                size, g.max_buffer_size);
  auto bci = vk_struct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  bci.size = rounded;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
              VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r = g.vk.vkCreateBuffer(g.device, &bci, nullptr, &m.buffer);
  if (r != VK_SUCCESS) {
    const xhal_status_t s = vk_fail(r, "vkCreateBuffer");
    return s == XHAL_PLUGIN_ERROR
               ? fail(XHAL_OUT_OF_MEMORY, "vkCreateBuffer of %" PRIu64 " bytes failed: %s", size,
                      vk_result_name(r))
               : s;
  }
  // Ask whether the driver wants the buffer to own its allocation (NVIDIA
  // does for large buffers; every buffer here has its own allocation anyway,
  // and saying so lets the driver place and page it as it prefers).
  auto dreq =
      vk_struct<VkMemoryDedicatedRequirements>(VK_STRUCTURE_TYPE_MEMORY_DEDICATED_REQUIREMENTS);
  auto req2 = vk_struct<VkMemoryRequirements2>(VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2);
  req2.pNext = &dreq;
  auto rinfo = vk_struct<VkBufferMemoryRequirementsInfo2>(
      VK_STRUCTURE_TYPE_BUFFER_MEMORY_REQUIREMENTS_INFO_2);
  rinfo.buffer = m.buffer;
  g.vk.vkGetBufferMemoryRequirements2(g.device, &rinfo, &req2);
  const VkMemoryRequirements req = req2.memoryRequirements;
  uint32_t type = host_visible ? g.staging_type : g.device_type;
  if (!(req.memoryTypeBits & (1u << type))) {
    // Fall back to any allowed type with the properties asked for.
    const VkMemoryPropertyFlags want =
        host_visible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                     : 0;
    type = UINT32_MAX;
    for (uint32_t i = 0; i < g.memory.memoryTypeCount; ++i)
      if ((req.memoryTypeBits & (1u << i)) &&
          (g.memory.memoryTypes[i].propertyFlags & want) == want) {
        type = i;
        break;
      }
  }
  if (type == UINT32_MAX) {
    g.vk.vkDestroyBuffer(g.device, m.buffer, nullptr);
    return fail(XHAL_PLUGIN_ERROR, "no memory type fits a buffer");
  }
  const uint64_t heap = g.memory.memoryHeaps[g.memory.memoryTypes[type].heapIndex].size;
  if (req.size > heap) {
    g.vk.vkDestroyBuffer(g.device, m.buffer, nullptr);
    return fail(XHAL_OUT_OF_MEMORY,
                "buffer of %" PRIu64 " bytes is larger than its memory heap (%" PRIu64 " bytes)",
                size, heap);
  }
  auto flags = vk_struct<VkMemoryAllocateFlagsInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO);
  flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  auto dedicated =
      vk_struct<VkMemoryDedicatedAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO);
  dedicated.buffer = m.buffer;
  if (g.dedicated &&
      (dreq.prefersDedicatedAllocation || dreq.requiresDedicatedAllocation || size >= (16u << 20)))
    flags.pNext = &dedicated;
  auto mai = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  mai.pNext = &flags;
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = type;
  r = g.vk.vkAllocateMemory(g.device, &mai, nullptr, &m.memory);
  if (r != VK_SUCCESS) {
    g.vk.vkDestroyBuffer(g.device, m.buffer, nullptr);
    if (r == VK_ERROR_DEVICE_LOST) return vk_fail(r, "vkAllocateMemory");
    return fail(XHAL_OUT_OF_MEMORY, "vkAllocateMemory of %" PRIu64 " bytes failed: %s", size,
                vk_result_name(r));
  }
  r = g.vk.vkBindBufferMemory(g.device, m.buffer, m.memory, 0);
  if (r == VK_SUCCESS && host_visible)
    r = g.vk.vkMapMemory(g.device, m.memory, 0, VK_WHOLE_SIZE, 0, &m.mapped);
  if (r != VK_SUCCESS) {
    g.vk.vkDestroyBuffer(g.device, m.buffer, nullptr);
    g.vk.vkFreeMemory(g.device, m.memory, nullptr);
    return vk_fail(r, host_visible ? "vkMapMemory" : "vkBindBufferMemory");
  }
  auto bai = vk_struct<VkBufferDeviceAddressInfo>(VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO);
  bai.buffer = m.buffer;
  m.address = g.vk.vkGetBufferDeviceAddress(g.device, &bai);
  m.size = size;
  if (g.trace_alloc && size >= (64u << 20))
    std::fprintf(stderr,
                 "xhal vulkan profile: buffer of %" PRIu64 " bytes at device address 0x%" PRIx64
                 " (memory type %u, %s allocation of %" PRIu64 " bytes, alignment %" PRIu64 ")\n",
                 size, m.address, type, flags.pNext ? "dedicated" : "plain", req.size,
                 req.alignment);
  *out = m;
  return XHAL_OK;
}

void mem_destroy(Gpu& g, Mem& m) {
  if (m.buffer) g.vk.vkDestroyBuffer(g.device, m.buffer, nullptr);
  if (m.memory) g.vk.vkFreeMemory(g.device, m.memory, nullptr);
  m = Mem{};
}

// ---- recording ----------------------------------------------------------------------
xhal_status_t Device::check_lost() const {
  if (lost) return fail(XHAL_DEVICE_LOST, "the Vulkan device was lost earlier");
  return XHAL_OK;
}

namespace {
void full_barrier(const VolkDeviceTable& vk, VkCommandBuffer cb) {
  auto mb = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vk.vkCmdPipelineBarrier(cb, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
}
}  // namespace

xhal_status_t Device::begin() {
  XHAL_VK_TRY(check_lost());
  if (recording) abandon();
  Slot& s = ring[next_slot];
  XHAL_VK_TRY(wait(s.value));
  auto bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  const VkResult r = vk().vkBeginCommandBuffer(s.cb, &bi);
  if (r != VK_SUCCESS) return vk_fail(r, "vkBeginCommandBuffer");
  recording = s.cb;
  recording_slot = next_slot;
  bound = VK_NULL_HANDLE;
  const uint32_t q = 3 * static_cast<uint32_t>(next_slot);
  s.label = nullptr;
  if (queries) {
    vk().vkCmdResetQueryPool(recording, queries, q, 3);
    vk().vkCmdWriteTimestamp(recording, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries, q);
  }
  // Commands of earlier submissions on this queue are in this barrier's
  // first scope: the op sees everything queued before it.
  full_barrier(vk(), recording);
  if (queries)
    vk().vkCmdWriteTimestamp(recording, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, q + 1);
  return XHAL_OK;
}

void Device::barrier() { full_barrier(vk(), recording); }

uint64_t Device::groups_for(uint64_t items, uint32_t local) const {
  const uint64_t cap = gpu->max_groups_x < 65535u ? gpu->max_groups_x : 65535u;
  const uint64_t g = (items + local - 1) / local;
  return g < cap ? g : cap;
}

void Device::dispatch(VkPipeline p, const void* push, uint32_t push_bytes, uint64_t groups) {
  if (groups == 0) return;
  if (p != bound) {
    vk().vkCmdBindPipeline(recording, VK_PIPELINE_BIND_POINT_COMPUTE, p);
    bound = p;
    if (queries) profile_label(p);
  }
  if (push_bytes) {
    uint32_t bytes = (push_bytes + 3) / 4 * 4;
    vk().vkCmdPushConstants(recording, gpu->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, bytes, push);
  }
  const uint64_t cap = gpu->max_groups_x < 65535u ? gpu->max_groups_x : 65535u;
  vk().vkCmdDispatch(recording, static_cast<uint32_t>(groups < cap ? groups : cap), 1, 1);
  launches.fetch_add(1, std::memory_order_relaxed);
}

void Device::dispatch2d(VkPipeline p, const void* push, uint32_t push_bytes, uint64_t groups) {
  if (groups == 0) return;
  if (p != bound) {
    vk().vkCmdBindPipeline(recording, VK_PIPELINE_BIND_POINT_COMPUTE, p);
    bound = p;
    if (queries) profile_label(p);
  }
  if (push_bytes)
    vk().vkCmdPushConstants(recording, gpu->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                            (push_bytes + 3) / 4 * 4, push);
  const uint64_t x = groups < 65535 ? groups : 65535;
  uint64_t y = (groups + x - 1) / x;
  if (y > 65535) y = 65535;  // kernels that loop over blocks cover the rest
  vk().vkCmdDispatch(recording, static_cast<uint32_t>(x), static_cast<uint32_t>(y), 1);
  launches.fetch_add(1, std::memory_order_relaxed);
}

void Device::update_params(const void* data, uint32_t bytes) {
  vk().vkCmdUpdateBuffer(recording, params.buffer, 0, (bytes + 3) / 4 * 4, data);
  barrier();
}

xhal_status_t Device::submit() {
  if (queries)
    vk().vkCmdWriteTimestamp(recording, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries,
                             3 * static_cast<uint32_t>(recording_slot) + 2);
  VkResult r = vk().vkEndCommandBuffer(recording);
  if (r != VK_SUCCESS) {
    recording = VK_NULL_HANDLE;
    return vk_fail(r, "vkEndCommandBuffer");
  }
  const uint64_t value = submitted + 1;
  auto tsi =
      vk_struct<VkTimelineSemaphoreSubmitInfo>(VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO);
  tsi.signalSemaphoreValueCount = 1;
  tsi.pSignalSemaphoreValues = &value;
  auto si = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  si.pNext = &tsi;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &recording;
  si.signalSemaphoreCount = 1;
  si.pSignalSemaphores = &timeline;
  Slot& slot = ring[recording_slot];
  if (slot.fence) {
    r = vk().vkResetFences(gpu->device, 1, &slot.fence);  // its last submission is done
    if (r != VK_SUCCESS) {
      recording = VK_NULL_HANDLE;
      return vk_fail(r, "vkResetFences");
    }
  }
  if (queries) slot.submit_start = std::chrono::steady_clock::now();
  r = vk().vkQueueSubmit(gpu->queue, 1, &si, slot.fence);
  if (queries) {
    slot.submit_end = std::chrono::steady_clock::now();
    slot.profiled = r == VK_SUCCESS;
  }
  recording = VK_NULL_HANDLE;
  if (r != VK_SUCCESS) {
    if (r == VK_ERROR_DEVICE_LOST) lost = true;
    return vk_fail(r, "vkQueueSubmit");
  }
  submitted = value;
  ring[recording_slot].value = value;
  next_slot = (recording_slot + 1) % kRing;
  return XHAL_OK;
}

void Device::abandon() {
  if (!recording) return;
  vk().vkEndCommandBuffer(recording);
  vk().vkResetCommandBuffer(recording, 0);
  recording = VK_NULL_HANDLE;
}

xhal_status_t Device::wait(uint64_t value) {
  if (value <= completed) return XHAL_OK;
  XHAL_VK_TRY(check_lost());
  // Poll the counter first: a poll sees it sooner than a blocking wait
  // (VULKAN.md: 15 us against 45 us; on the H200 0.1-0.2 ms less per call of
  // 1.5 ms, docs/vulkan.md). Past the first 50 us the poll yields the core
  // between reads; past wait_spin_us it blocks.
  const auto start = std::chrono::steady_clock::now();
  const auto spin = std::chrono::microseconds(options.wait_spin_us);
  if (options.fence_wait) {
    // The fence of the submission that signals `value`: it signals once
    // that batch and everything submitted before it on the queue are done.
    VkFence fence = VK_NULL_HANDLE;
    for (const Slot& s : ring)
      if (s.value == value) fence = s.fence;
    if (fence) {
      for (;;) {
        VkResult r = vk().vkGetFenceStatus(gpu->device, fence);
        if (r == VK_NOT_READY) {
          const auto waited = std::chrono::steady_clock::now() - start;
          if (waited <= spin) {
            if (waited > std::chrono::microseconds(50)) std::this_thread::yield();
            continue;
          }
          r = vk().vkWaitForFences(gpu->device, 1, &fence, VK_TRUE, 1000000000ull);
          if (r == VK_TIMEOUT) continue;
        }
        if (r == VK_SUCCESS) break;
        if (r == VK_ERROR_DEVICE_LOST) lost = true;
        return vk_fail(r, "vkWaitForFences");
      }
      completed = value;
      if (queries) profile_collect();
      return XHAL_OK;
    }
  }
  for (;;) {
    uint64_t now = 0;
    const VkResult r = vk().vkGetSemaphoreCounterValue(gpu->device, timeline, &now);
    if (r != VK_SUCCESS) {
      if (r == VK_ERROR_DEVICE_LOST) lost = true;
      return vk_fail(r, "vkGetSemaphoreCounterValue");
    }
    if (now >= value) {
      completed = now;
      if (queries) profile_collect();
      return XHAL_OK;
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    if (waited > spin) break;
    if (waited > std::chrono::microseconds(50)) std::this_thread::yield();
  }
  auto wi = vk_struct<VkSemaphoreWaitInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO);
  wi.semaphoreCount = 1;
  wi.pSemaphores = &timeline;
  wi.pValues = &value;
  for (;;) {
    const VkResult r = vk().vkWaitSemaphores(gpu->device, &wi, 1000000000ull);
    if (r == VK_SUCCESS) break;
    if (r == VK_TIMEOUT) continue;  // long kernels are fine; a lost device returns an error
    if (r == VK_ERROR_DEVICE_LOST) lost = true;
    return vk_fail(r, "vkWaitSemaphores");
  }
  completed = value;
  if (queries) profile_collect();
  return XHAL_OK;
}

void Device::profile_label(VkPipeline p) {
  Slot& s = ring[recording_slot];
  if (s.label) return;
  for (int id = 0; id < static_cast<int>(xhal_spirv::kCount); ++id)
    if (gpu->pipelines[id] == p) s.label = xhal_spirv::kModules[id].name;
}

// profile=on: for every slot whose submission has completed, the host time
// from its vkQueueSubmit to now (when a wait saw it done; an upper bound
// for submissions nobody waited on) and its GPU timestamps, summed by the
// shader of the command buffer's first dispatch.
void Device::profile_collect() {
  const auto now = std::chrono::steady_clock::now();
  const double tick_us = gpu->props.limits.timestampPeriod * 1e-3;
  for (int i = 0; i < kRing; ++i) {
    Slot& s = ring[i];
    if (!s.profiled || s.value > completed) continue;
    s.profiled = false;
    uint64_t t[3] = {};
    const VkResult r =
        vk().vkGetQueryPoolResults(gpu->device, queries, 3 * static_cast<uint32_t>(i), 3, sizeof t,
                                   t, sizeof(uint64_t), VK_QUERY_RESULT_64_BIT);
    if (r != VK_SUCCESS) continue;
    Profile* p = &profiles[kProfiles - 1];  // the last entry takes any overflow
    for (int k = 0; k < kProfiles - 1; ++k) {
      if (profiles[k].submissions == 0) profiles[k].label = s.label;
      if (profiles[k].label == s.label) {
        p = &profiles[k];
        break;
      }
    }
    p->submissions += 1;
    p->submit_call_us +=
        std::chrono::duration<double, std::micro>(s.submit_end - s.submit_start).count();
    p->host_us += std::chrono::duration<double, std::micro>(now - s.submit_start).count();
    p->gpu_us += static_cast<double>(t[2] - t[0]) * tick_us;
    p->barrier_us += static_cast<double>(t[1] - t[0]) * tick_us;
  }
}

void Device::profile_print() const {
  std::fprintf(stderr,
               "xhal vulkan profile (%s), mean per command buffer, by its first shader: "
               "count, vkQueueSubmit us, GPU start to end us (leading barrier us), host "
               "submit to seen done us\n",
               gpu->info.name);
  for (const Profile& p : profiles) {
    if (p.submissions == 0) continue;
    const double n = static_cast<double>(p.submissions);
    std::fprintf(stderr, "  %-18s %8llu %9.1f %11.1f (%7.1f) %11.1f\n",
                 p.label ? p.label : "(no dispatch)",
                 static_cast<unsigned long long>(p.submissions), p.submit_call_us / n, p.gpu_us / n,
                 p.barrier_us / n, p.host_us / n);
  }
}

xhal_status_t Device::wait_idle() {
  if (recording) XHAL_VK_TRY(submit());
  return wait(submitted);
}

xhal_status_t Device::need_scratch(uint64_t bytes) {
  if (scratch.buffer && scratch.size >= bytes) return XHAL_OK;
  XHAL_VK_TRY(wait_idle());
  uint64_t size = scratch.size * 2;
  if (size < bytes) size = bytes;
  if (size < (1u << 20)) size = 1u << 20;
  mem_destroy(*gpu, scratch);
  return mem_create(*gpu, size, false, &scratch);
}

}  // namespace xhal::vk
