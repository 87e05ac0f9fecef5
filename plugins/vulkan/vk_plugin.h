// Internals of the Vulkan plugin shared by its files: the physical device
// (Gpu: VkDevice, queue, pipelines, created once at init by the self-test),
// the open device (Device: command-buffer ring, timeline semaphore, staging,
// scratch, counters), buffers, and the recording helpers the ops use.
#pragma once

#include <volk.h>

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "vk_util.h"
#include "xhal/xhal_plugin.h"
#include "xhal_vk_shaders.h"

namespace xhal::vk {

// ---- errors ----------------------------------------------------------------
void set_host(const xhal_plugin_host_t* host);
// The core's plugin ABI minor (0 before init): which desc fields it fills.
uint32_t core_abi_minor();
// Sets the call's message (printf style) and returns `status`.
xhal_status_t fail(xhal_status_t status, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
// Maps a failed VkResult to a status (device lost, out of memory, else
// XHAL_PLUGIN_ERROR) with a message naming `what`.
xhal_status_t vk_fail(VkResult r, const char* what);

#define XHAL_VK_TRY(expr)                         \
  do {                                            \
    const xhal_status_t xhal_vk_s_ = (expr);      \
    if (xhal_vk_s_ != XHAL_OK) return xhal_vk_s_; \
  } while (0)

using ShaderId = xhal_spirv::Id;

// ---- memory ----------------------------------------------------------------
// A VkBuffer with its own allocation and its device address. Every shader
// reaches memory through such addresses (GL_EXT_buffer_reference), so no
// binding is limited by maxStorageBufferRange.
struct Mem {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceAddress address = 0;
  uint64_t size = 0;
  void* mapped = nullptr;  // host-visible allocations only
};

// ---- one physical device ---------------------------------------------------
struct Gpu {
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VolkDeviceTable vk{};
  uint32_t queue_family = 0;
  uint32_t timestamp_bits = 0;  // of the queue family; 0: no timestamps
  VkQueue queue = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties props{};
  VkPhysicalDeviceMemoryProperties memory{};
  uint32_t device_type = UINT32_MAX;   // memory type of buffers
  uint32_t staging_type = UINT32_MAX;  // host-visible, coherent (cached if possible)
  bool denorm_preserve = false;        // device reports shaderDenormPreserveFloat32
  // shaderFloat64 with RTE and SignedZeroInfNanPreserve for width 64: the F64
  // kernels (index_add, spmv, spmm, spgemm) exist; cleared when the f64
  // self-test fails.
  bool f64 = false;
  bool vendor_nvidia = false;
  // llvmpipe (lavapipe) ends every loop of an invocation once the loops of
  // its shader have taken 65535 iterations in all (gallivm's loop limiter,
  // LP_MAX_TGSI_LOOP_ITERATIONS): work that loops longer is silently cut
  // short. Dispatches are split so that no invocation comes near it.
  uint64_t loop_budget = UINT64_MAX;
  uint32_t max_groups_x = 65535;
  uint64_t max_buffer_size = UINT64_MAX;  // maintenance4 (Vulkan 1.3), else no stated limit
  VkPipelineLayout layout = VK_NULL_HANDLE;
  std::mutex pipeline_mutex;
  VkPipeline pipelines[xhal_spirv::kCount] = {};
  xhal_plugin_device_info_t info{};
  std::atomic<bool> open{false};
  bool dedicated = true;     // from the open device's options
  bool trace_alloc = false;  // profile=on: buffers of 64 MiB or more are listed on stderr

  // Creates the pipeline of `id` on first use.
  xhal_status_t pipeline(ShaderId id, VkPipeline* out);
  void destroy();
};

// Allocation helpers on a Gpu (sizes are rounded up; size 0 gets 64 bytes).
xhal_status_t mem_create(Gpu& g, uint64_t size, bool host_visible, Mem* out);
void mem_destroy(Gpu& g, Mem& m);

// ---- device options (device_open_with_options) -----------------------------
enum class CopyMode { kAuto, kTransfer, kCompute };
// validation=off|warn|fatal: the Khronos validation layer, read in init
// from the plugin-wide options (xhal_plugin_host_t::options).
enum class Validation { kOff, kWarn, kFatal };

struct Options {
  Validation validation = Validation::kOff;
  CopyMode copy = CopyMode::kAuto;
  bool dedicated = true;  // alloc=dedicated|plain: large buffers own their VkDeviceMemory
  // wait_spin_us=N: how long a wait polls the timeline before it blocks in
  // vkWaitSemaphores, which wakes up about 1 ms late on NVIDIA.
  uint32_t wait_spin_us = 20000;
  // profile=on: GPU timestamps around every command buffer, summed per
  // device and printed to stderr when it closes (a diagnostic; costs three
  // timestamp writes per op).
  bool profile = false;
  // wait=timeline|fence: what a wait watches. timeline: the queue's
  // timeline semaphore; fence: the fence of the ring slot that signals the
  // value (docs/vulkan.md, "H200 figures": the two were compared there).
  bool fence_wait = false;
  // queue=compute|universal (plugin-wide, read at init): a compute-only
  // queue family where the device has one, or the graphics+compute family.
  bool universal_queue = false;
  // rows=v1|v2|v2row (1, 2, 3): the row kernels of softmax and the norms
  // (ops_rows.cpp). v2: four canonical lanes per invocation, vec4 loads, two
  // barriers per reduction, rows over 16,384 elements split over several
  // workgroups; v2row: v2 with one workgroup per row always; v1: one lane
  // per invocation, a barrier per tree level.
  uint32_t rows = 2;
  // transpose=auto|tile32|wide: the tiled permute's kernel. auto: 64 x 64
  // tiles in 16-byte runs where aligned, else 32 x 32 tiles; 32-bit offsets
  // where every offset fits. tile32: never the runs. wide: 32 x 32 tiles
  // with 64-bit offsets always (the large-tensor path, for checking).
  enum class Transpose { kAuto, kTile32, kWide } transpose = Transpose::kAuto;
  // The solve's one-workgroup runs (ops_sparse.cpp): solve_run=N invocations
  // (64, 256 or 1024; 0: 64 on lavapipe, 1024 elsewhere); solve_narrow=N the
  // most step-1 items (row or chunk x RHS) of a level that joins a run (0: 4 x
  // the run size on a CPU device, 2 x elsewhere).
  uint32_t solve_run = 0;
  uint64_t solve_narrow = 0;
  // solve_ahead=on|off: the runs load each row's x-independent inputs
  // levels ahead (solve.comp).
  bool solve_ahead = true;
  // sparse_index=auto|64: a matrix's uploaded pattern, lists and schedules
  // as int32 when every value fits (auto), or int64 always (the large-matrix
  // path, for checking and A/B).
  bool sparse_index64 = false;
};
bool parse_options(const char* text, Options* out, std::string* error);
// Fills `g` for a usable physical device; else returns why it is not usable
// (physical_device.cpp).
std::string make_gpu(VkPhysicalDevice phys, bool universal_queue, Gpu* g);
std::string format_options(const Options& o);

// ---- one open device ----------------------------------------------------------
struct Device {
  Gpu* gpu = nullptr;
  Options options;
  bool compute_copy = false;  // resolved from options.copy

  std::mutex mutex;  // the core serialises a device's calls; this guards the rest
  VkCommandPool pool = VK_NULL_HANDLE;
  static constexpr int kRing = 16;
  struct Slot {
    VkCommandBuffer cb = VK_NULL_HANDLE;
    uint64_t value = 0;  // timeline value its last submission signals
    // profile=on: host times of its submission, and whether its
    // timestamps are still to be read.
    std::chrono::steady_clock::time_point submit_start, submit_end;
    bool profiled = false;
    const char* label = nullptr;     // the shader of its first dispatch
    VkFence fence = VK_NULL_HANDLE;  // wait=fence: signalled with `value`
  } ring[kRing];
  // profile=on: three timestamps per ring slot (start, after the leading
  // barrier, end) and the sums over every profiled submission.
  VkQueryPool queries = VK_NULL_HANDLE;
  struct Profile {
    const char* label = nullptr;  // shader name; nullptr: no dispatch (transfers)
    uint64_t submissions = 0;
    double submit_call_us = 0, gpu_us = 0, barrier_us = 0, host_us = 0;
  };
  static constexpr int kProfiles = 48;
  Profile profiles[kProfiles];  // by the label of the command buffer
  void profile_label(VkPipeline p);
  void profile_collect();  // reads the slots whose submissions completed
  void profile_print() const;
  int next_slot = 0;
  VkCommandBuffer recording = VK_NULL_HANDLE;  // open command buffer, or null
  int recording_slot = -1;
  VkPipeline bound = VK_NULL_HANDLE;
  VkSemaphore timeline = VK_NULL_HANDLE;
  uint64_t submitted = 0;  // last value signalled
  uint64_t completed = 0;  // last value seen reached
  bool lost = false;

  // Staging: two halves used in turn by blocking reads and writes.
  static constexpr uint64_t kStagingHalf = 16u << 20;
  Mem staging;
  uint64_t staging_value[2] = {0, 0};
  Mem scratch;  // per-op temporaries (grows)
  Mem params;   // argument blocks too big for push constants
  static constexpr uint64_t kParamsBytes = 4096;

  std::atomic<uint64_t> h2d_transfers{0}, h2d_bytes{0}, d2h_transfers{0}, d2h_bytes{0}, launches{0};

  const VolkDeviceTable& vk() const { return gpu->vk; }

  // ---- recording: every op is one command buffer, submitted at its end ----
  // begin() opens a command buffer whose first command is a full barrier
  // against everything submitted before (the in-order queue); dispatches
  // within an op are separated by barrier() where they depend.
  xhal_status_t begin();
  void barrier();
  void dispatch(VkPipeline p, const void* push, uint32_t push_bytes, uint64_t groups);
  // A 2-D grid of `groups` workgroups (x at most 65535) for the blocked
  // kernels, whose workgroups each take one block of items.
  void dispatch2d(VkPipeline p, const void* push, uint32_t push_bytes, uint64_t groups);
  // Fills the params block (vkCmdUpdateBuffer, recorded like push
  // constants) and makes it visible to the next dispatch.
  void update_params(const void* data, uint32_t bytes);
  xhal_status_t submit();  // ends and submits the open command buffer
  void abandon();          // drops the open command buffer unsubmitted
  xhal_status_t wait(uint64_t value);
  xhal_status_t wait_idle();
  // Scratch of at least `bytes` (waits for the device when it must grow).
  xhal_status_t need_scratch(uint64_t bytes);
  uint64_t groups_for(uint64_t items, uint32_t local) const;

  // Blocking transfers through staging (counted as host transfers).
  xhal_status_t upload(const Mem& dst, uint64_t offset, const void* src, uint64_t size);
  xhal_status_t download(const Mem& src, uint64_t offset, void* dst, uint64_t size);
  // Device-side copy (transfer or compute, per options).
  void record_copy(const Mem& src, uint64_t src_offset, const Mem& dst, uint64_t dst_offset,
                   uint64_t size, VkPipeline u8, VkPipeline u32, VkPipeline u128);

  xhal_status_t check_lost() const;
};

// A plugin buffer handle is a Buffer*.
struct Buffer {
  Mem mem;
  uint64_t size = 0;
};

inline uint64_t address_of(const xhal_plugin_tensor_t* t) {
  return static_cast<Buffer*>(t->buffer)->mem.address + t->offset;
}

uint32_t dtype_size(xhal_dtype_t d);

// Push-constant blocks: std430, 64-bit fields first. Each op file declares
// its own; this checks they fit the 128 bytes Vulkan guarantees.
template <typename T>
constexpr bool fits_push() {
  return sizeof(T) <= 128;
}

// Pipelines of one op, fetched (and created on first use) together so that
// an op fails before it records anything.
template <size_t N>
xhal_status_t pipelines(Device* d, const ShaderId (&ids)[N], VkPipeline (&out)[N]) {
  for (size_t i = 0; i < N; ++i) XHAL_VK_TRY(d->gpu->pipeline(ids[i], &out[i]));
  return XHAL_OK;
}

// ---- slots implemented across files ------------------------------------------
xhal_status_t buffer_allocate(void* device, uint64_t size, void** out_buffer);
void buffer_free(void* device, void* buffer);
xhal_status_t buffer_write(void* device, void* dst, uint64_t offset, const void* src,
                           uint64_t size);
xhal_status_t buffer_read(void* device, void* src, uint64_t offset, void* dst, uint64_t size);
xhal_status_t buffer_copy(void* device, void* src, uint64_t src_offset, void* dst,
                          uint64_t dst_offset, uint64_t size);
xhal_status_t buffer_fill(void* device, void* dst, uint64_t offset, uint64_t size,
                          const void* pattern, uint32_t pattern_size);

xhal_status_t index_plan_create(void* device, const xhal_plugin_index_plan_desc_t* desc,
                                void** out_plan);
void index_plan_destroy(void* device, void* plan);
xhal_status_t index_select(void* device, void* plan, const xhal_plugin_tensor_t* src,
                           const xhal_plugin_tensor_t* out);
xhal_status_t index_add(void* device, void* plan, float alpha, const xhal_plugin_tensor_t* src,
                        const xhal_plugin_tensor_t* dst);
xhal_status_t permute(void* device, const xhal_plugin_tensor_t* src,
                      const xhal_plugin_tensor_t* dst);

xhal_status_t softmax_forward(void* device, const xhal_plugin_tensor_t* x,
                              const xhal_plugin_tensor_t* y);
xhal_status_t softmax_backward(void* device, const xhal_plugin_tensor_t* y,
                               const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx);
xhal_status_t rms_norm_forward(void* device, const xhal_plugin_tensor_t* x,
                               const xhal_plugin_tensor_t* gamma, float eps,
                               const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* rstd);
xhal_status_t rms_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                const xhal_plugin_tensor_t* gamma, const xhal_plugin_tensor_t* rstd,
                                const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx,
                                const xhal_plugin_tensor_t* dgamma);
xhal_status_t layer_norm_forward(void* device, const xhal_plugin_tensor_t* x,
                                 const xhal_plugin_tensor_t* gamma,
                                 const xhal_plugin_tensor_t* beta, float eps,
                                 const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* mean,
                                 const xhal_plugin_tensor_t* rstd);
xhal_status_t layer_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                  const xhal_plugin_tensor_t* gamma,
                                  const xhal_plugin_tensor_t* mean,
                                  const xhal_plugin_tensor_t* rstd, const xhal_plugin_tensor_t* dy,
                                  const xhal_plugin_tensor_t* dx,
                                  const xhal_plugin_tensor_t* dgamma,
                                  const xhal_plugin_tensor_t* dbeta);

xhal_status_t csr_create(void* device, const xhal_plugin_csr_desc_t* desc, void** out_matrix);
void csr_destroy(void* device, void* matrix);
xhal_status_t spmv(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y);
xhal_status_t spmm(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y);
xhal_status_t csr_solve(void* device, void* a, xhal_transpose_t trans, xhal_triangle_t triangle,
                        xhal_diagonal_t diagonal, const xhal_plugin_tensor_t* b,
                        const xhal_plugin_tensor_t* x);
xhal_status_t csr_solve_backward(void* device, void* a, xhal_transpose_t trans,
                                 xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                                 const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* dx,
                                 const xhal_plugin_tensor_t* gb, const xhal_plugin_tensor_t* ga);
xhal_status_t spgemm_numeric(void* device, void* a, void* b, void* c);

// ---- SPIR-V patching (spirv_patch.cpp) ---------------------------------------
// Next to the module's RoundingModeRTE mode: with denorm32, `OpCapability
// DenormPreserve` and `OpExecutionMode DenormPreserve 32`; in a module that
// declares Float64, RoundingModeRTE 64 and SignedZeroInfNanPreserve 64.
// Returns false if the module has no RoundingModeRTE mode to anchor on.
bool patch_float_modes(const uint32_t* words, size_t count, bool denorm32,
                       std::vector<uint32_t>* out);
// Whether the module declares the Float64 capability.
bool uses_float64(const uint32_t* words, size_t count);

// ---- self-test (selftest.cpp) ------------------------------------------------
// Runs the arithmetic self-test on `g`; on a mismatch returns false with the
// first differences described in `why`.
bool run_selftest(Gpu& g, std::string* why);
// The binary64 self-test of the F64 kernels' operations (run when g.f64).
bool run_selftest_f64(Gpu& g, std::string* why);
// The op/dtype bits of docs/semantics.md 7 for this device (g.f64 decides
// the f64 bits).
void fill_op_dtypes(const Gpu& g, xhal_plugin_device_info_t* info);

}  // namespace xhal::vk
