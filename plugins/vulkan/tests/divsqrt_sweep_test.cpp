// vulkan.divsqrt_sweep: proves the shaders' xdiv and xsqrt (common.glsl: a
// float estimate, then an exact integer decision) bit-identical with the
// host's IEEE binary32 a / b and std::sqrt on a large sweep. A standalone
// Vulkan program (volk, no libxhal): it runs divsqrt_sweep.comp on the first
// Vulkan 1.2 device and compares every result; NaN results must be exactly
// the plugin's quiet NaN 0x7fc00000. Exits 0 with "no device" where no
// Vulkan device exists, like the other vulkan tests.
//
// Usage: xhal-vulkan-divsqrt-test [millions of random draws, default 4; ctest runs 16]
#include <volk.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "xhal_vk_divsqrt_shaders.h"

namespace {

float from_bits(uint32_t b) { return std::bit_cast<float>(b); }
uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

struct Pair {
  float a, b;
};

uint64_t g_state = 0x9e3779b97f4a7c15ull;
uint32_t next() {
  g_state ^= g_state << 13;
  g_state ^= g_state >> 7;
  g_state ^= g_state << 17;
  return static_cast<uint32_t>(g_state >> 11);
}
uint32_t pack(uint32_t sign, uint32_t be, uint32_t mant) {
  return (sign << 31) | ((be & 0xffu) << 23) | (mant & 0x7fffffu);
}

void add(std::vector<Pair>& v, uint32_t a, uint32_t b) {
  v.push_back({from_bits(a), from_bits(b)});
}

std::vector<Pair> make_inputs(uint64_t random_count) {
  std::vector<Pair> v;
  const uint32_t specials[] = {
      0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x00000002u, 0x00000003u, 0x007fffffu,
      0x807fffffu, 0x00400000u, 0x00400001u, 0x00800000u, 0x80800000u, 0x00800001u, 0x00ffffffu,
      0x3f800000u, 0xbf800000u, 0x3f000000u, 0x40000000u, 0x3f800001u, 0x3f7fffffu, 0x3fffffffu,
      0x40400000u, 0x40800000u, 0x7f7fffffu, 0xff7fffffu, 0x7f000000u, 0x7f800000u, 0xff800000u,
      0x7fc00000u, 0x7f800001u, 0xffc00001u, 0x7fffffffu, 0x34000000u, 0x33800000u, 0x4b800000u,
      0x1f800000u, 0x5f800000u, 0x0c000000u, 0x72800000u};
  for (uint32_t a : specials)
    for (uint32_t b : specials) add(v, a, b);
  // Every exponent (both parities for sqrt) with its extreme mantissas.
  for (uint32_t be = 0; be < 256; ++be)
    for (uint32_t mant : {0u, 1u, 2u, 0x400000u, 0x7ffffeu, 0x7fffffu})
      for (uint32_t bm : {0u, 1u, 0x7fffffu}) add(v, pack(0, be, mant), pack(0, 127, bm));
  const uint64_t n = random_count;
  for (uint64_t i = 0; i < n; ++i) {
    switch (i % 10) {
      case 0:
      case 1:  // any bit patterns (NaN, inf, zeros, subnormals among them)
        add(v, next(), next());
        break;
      case 2: {  // quotients near the subnormal range and near overflow
        const uint32_t ea = next() % 256, target = (next() & 1) ? next() % 40 : 230 + next() % 30;
        const int eb = static_cast<int>(ea) - static_cast<int>(target) + 127;
        if (eb < 0 || eb > 254) {
          add(v, pack(next() & 1, ea, next()), pack(next() & 1, 0, next()));
        } else {
          add(v, pack(next() & 1, ea, next()), pack(next() & 1, static_cast<uint32_t>(eb), next()));
        }
        break;
      }
      case 3: {  // exact quotients c = a / b: b and c of 12 significant bits
        const float b = from_bits(pack(next() & 1, 100 + next() % 55, next() & 0x7ff000u));
        const float c = from_bits(pack(next() & 1, 100 + next() % 55, next() & 0x7ff000u));
        add(v, bits(b * c), bits(b));
        // and exact roots: a = c^2, plus its neighbours
        const float s = from_bits(pack(0, 40 + next() % 175, next() & 0x7ff000u));
        const uint32_t sq = bits(s * s);
        add(v, sq, bits(b));
        add(v, sq + 1u, bits(c));
        add(v, sq - 1u, bits(c));
        break;
      }
      case 4: {  // ties: a / 2^k landing on a subnormal midpoint
        const uint32_t ea = 1 + next() % 40;
        const uint32_t k = 1 + next() % 30;
        add(v, pack(next() & 1, ea, next()),
            pack(next() & 1, 127 + k, (next() & 1) ? 0u : 0x400000u));
        break;
      }
      case 5:  // subnormal operands
        add(v, pack(next() & 1, 0, next()), pack(next() & 1, next() % 256, next()));
        add(v, pack(next() & 1, next() % 256, next()), pack(next() & 1, 0, next()));
        break;
      case 6: {  // a close to b (quotients near 1, 2^-1), mantissas near 1 and 2
        const uint32_t b = pack(next() & 1, 1 + next() % 254, next());
        const int32_t d = static_cast<int32_t>(next() % 17) - 8;
        add(v, static_cast<uint32_t>(static_cast<int32_t>(b) + d), b);
        add(v, pack(0, 1 + next() % 254, next() % 64),
            pack(0, 1 + next() % 254, 0x7fffffu - next() % 64));
        add(v, pack(0, 1 + next() % 254, 0x7fffffu - next() % 64),
            pack(0, 1 + next() % 254, next() % 64));
        break;
      }
      default:  // finite normal operands, every exponent (sqrt: both parities)
        add(v, pack(next() & 1, next() % 255, next()), pack(next() & 1, next() % 255, next()));
        break;
    }
  }
  return v;
}

#define VK(call)                                                            \
  do {                                                                      \
    VkResult r_ = (call);                                                   \
    if (r_ != VK_SUCCESS) {                                                 \
      std::fprintf(stderr, "%s failed: %d\n", #call, static_cast<int>(r_)); \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)

struct Buffer {
  VkBuffer buf = VK_NULL_HANDLE;
  VkDeviceMemory mem = VK_NULL_HANDLE;
  void* map = nullptr;
  uint64_t address = 0;
};

Buffer make_buffer(VkPhysicalDevice pd, VkDevice dev, uint64_t bytes) {
  Buffer b;
  VkBufferCreateInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bi.size = bytes;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  VK(vkCreateBuffer(dev, &bi, nullptr, &b.buf));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev, b.buf, &req);
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(pd, &mp);
  const VkMemoryPropertyFlags want =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  uint32_t type = UINT32_MAX;
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
    if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) {
      type = i;
      break;
    }
  if (type == UINT32_MAX) {
    std::fprintf(stderr, "no host-visible coherent memory type\n");
    std::exit(1);
  }
  VkMemoryAllocateFlagsInfo fi{};
  fi.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO;
  fi.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  ai.pNext = &fi;
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = type;
  VK(vkAllocateMemory(dev, &ai, nullptr, &b.mem));
  VK(vkBindBufferMemory(dev, b.buf, b.mem, 0));
  VK(vkMapMemory(dev, b.mem, 0, VK_WHOLE_SIZE, 0, &b.map));
  VkBufferDeviceAddressInfo ad{};
  ad.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO;
  ad.buffer = b.buf;
  b.address = vkGetBufferDeviceAddress(dev, &ad);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t millions = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4;
  if (volkInitialize() != VK_SUCCESS) {
    std::printf("nothing to test: no device (no Vulkan loader)\n");
    return 0;
  }
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ici{};
  ici.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ici.pApplicationInfo = &app;
  VkInstance inst;
  if (vkCreateInstance(&ici, nullptr, &inst) != VK_SUCCESS) {
    std::printf("nothing to test: no device (no instance)\n");
    return 0;
  }
  volkLoadInstance(inst);
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(inst, &count, nullptr);
  std::vector<VkPhysicalDevice> pds(count);
  if (count) vkEnumeratePhysicalDevices(inst, &count, pds.data());
  VkPhysicalDevice pd = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties props{};
  for (VkPhysicalDevice p : pds) {
    vkGetPhysicalDeviceProperties(p, &props);
    if (props.apiVersion >= VK_API_VERSION_1_2) {
      pd = p;
      break;
    }
  }
  if (pd == VK_NULL_HANDLE) {
    std::printf("nothing to test: no device\n");
    vkDestroyInstance(inst, nullptr);
    return 0;
  }
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf.data());
  uint32_t family = 0;
  while (family < nq && !(qf[family].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++family;
  const float prio = 1.0f;
  VkDeviceQueueCreateInfo qi{};
  qi.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qi.queueFamilyIndex = family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &prio;
  VkPhysicalDeviceVulkan12Features f12{};
  f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  f12.bufferDeviceAddress = VK_TRUE;
  VkPhysicalDeviceFeatures2 f2{};
  f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  f2.pNext = &f12;
  f2.features.shaderInt64 = VK_TRUE;
  VkDeviceCreateInfo dci{};
  dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  dci.pNext = &f2;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qi;
  VkDevice dev;
  VK(vkCreateDevice(pd, &dci, nullptr, &dev));
  volkLoadDevice(dev);
  VkQueue queue;
  vkGetDeviceQueue(dev, family, 0, &queue);

  const std::vector<Pair> in = make_inputs(millions * 1000000ull);
  const uint64_t n = in.size();
  Buffer bin = make_buffer(pd, dev, n * sizeof(Pair));
  Buffer bout = make_buffer(pd, dev, n * 2 * sizeof(float));
  std::memcpy(bin.map, in.data(), n * sizeof(Pair));

  const auto& mod = xhal_spirv::kModules[xhal_spirv::divsqrt_sweep];
  VkShaderModuleCreateInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  si.codeSize = mod.bytes;
  si.pCode = mod.words;
  VkShaderModule sm;
  VK(vkCreateShaderModule(dev, &si, nullptr, &sm));
  VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, 24};
  VkPipelineLayoutCreateInfo pli{};
  pli.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &pcr;
  VkPipelineLayout layout;
  VK(vkCreatePipelineLayout(dev, &pli, nullptr, &layout));
  VkComputePipelineCreateInfo cpi{};
  cpi.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpi.stage.module = sm;
  cpi.stage.pName = "main";
  cpi.layout = layout;
  VkPipeline pipe;
  VK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpi, nullptr, &pipe));

  VkCommandPoolCreateInfo cpci{};
  cpci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  cpci.queueFamilyIndex = family;
  VkCommandPool pool;
  VK(vkCreateCommandPool(dev, &cpci, nullptr, &pool));
  VkCommandBufferAllocateInfo cbai{};
  cbai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cbai.commandPool = pool;
  cbai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cbai.commandBufferCount = 1;
  VkCommandBuffer cb;
  VK(vkAllocateCommandBuffers(dev, &cbai, &cb));
  VkCommandBufferBeginInfo cbbi{};
  cbbi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  VK(vkBeginCommandBuffer(cb, &cbbi));
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
  const uint64_t push[3] = {bin.address, bout.address, n};
  vkCmdPushConstants(cb, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, push);
  const uint64_t groups = (n + 63) / 64;
  vkCmdDispatch(cb, static_cast<uint32_t>(groups < 65535 ? groups : 65535), 1, 1);
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                       &mb, 0, nullptr, 0, nullptr);
  VK(vkEndCommandBuffer(cb));
  VkFenceCreateInfo fci{};
  fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  VkFence fence;
  VK(vkCreateFence(dev, &fci, nullptr, &fence));
  VkSubmitInfo sub{};
  sub.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  sub.commandBufferCount = 1;
  sub.pCommandBuffers = &cb;
  VK(vkQueueSubmit(queue, 1, &sub, fence));
  VK(vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX));

  const float* out = static_cast<const float*>(bout.map);
  uint64_t bad[2] = {0, 0}, nan_results = 0, subnormal_results = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const float want[2] = {in[i].a / in[i].b, std::sqrt(in[i].a)};
    for (int k = 0; k < 2; ++k) {
      const uint32_t w = std::isnan(want[k]) ? 0x7fc00000u : bits(want[k]);
      const uint32_t got = bits(out[2 * i + k]);
      if (std::isnan(want[k])) ++nan_results;
      if ((w & 0x7f800000u) == 0 && (w & 0x7fffffu) != 0) ++subnormal_results;
      if (got == w) continue;
      if (bad[k]++ < 10)
        std::printf("MISMATCH %s a=%08x b=%08x: shader %08x, host %08x\n",
                    k == 0 ? "a/b" : "sqrt(a)", bits(in[i].a), bits(in[i].b), got, w);
    }
  }
  std::printf(
      "device %s: %llu inputs, %llu results (%llu NaN, %llu subnormal): "
      "%llu a/b and %llu sqrt differ from the host\n",
      props.deviceName, static_cast<unsigned long long>(n), static_cast<unsigned long long>(2 * n),
      static_cast<unsigned long long>(nan_results),
      static_cast<unsigned long long>(subnormal_results), static_cast<unsigned long long>(bad[0]),
      static_cast<unsigned long long>(bad[1]));

  vkDestroyFence(dev, fence, nullptr);
  vkDestroyCommandPool(dev, pool, nullptr);
  vkDestroyPipeline(dev, pipe, nullptr);
  vkDestroyPipelineLayout(dev, layout, nullptr);
  vkDestroyShaderModule(dev, sm, nullptr);
  for (Buffer* b : {&bin, &bout}) {
    vkUnmapMemory(dev, b->mem);
    vkDestroyBuffer(dev, b->buf, nullptr);
    vkFreeMemory(dev, b->mem, nullptr);
  }
  vkDestroyDevice(dev, nullptr);
  vkDestroyInstance(inst, nullptr);
  return bad[0] + bad[1] == 0 ? 0 : 1;
}
