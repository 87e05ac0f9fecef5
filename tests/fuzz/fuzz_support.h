// Shared pieces of the libFuzzer harnesses (docs/robustness.md):
//  - Input: typed reads from the fuzzer's bytes through LLVM's
//    FuzzedDataProvider (tests/fuzz/make_corpus.py writes seeds in the same
//    layout: integers from the end of the input, strings and bytes from the
//    front);
//  - checks that turn a broken API promise into a crash libFuzzer reports;
//  - the cpu device the op harnesses share across iterations;
//  - a pool of device buffers whose contents are compared before and after
//    each failed call ("nothing is written on failure", docs/abi.md).
#pragma once

#include <dlfcn.h>
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "xhal/xhal.h"

namespace xhal_fuzz {

// ---- reading the input ----------------------------------------------------
// Every read has a fixed width, so make_corpus.py can encode seeds.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : fdp_(data, size) {}

  // 0 .. n-1
  uint32_t pick(uint32_t n) { return fdp_.ConsumeIntegralInRange<uint32_t>(0, n - 1); }
  bool flag() { return fdp_.ConsumeBool(); }
  uint8_t u8() { return fdp_.ConsumeIntegral<uint8_t>(); }
  uint32_t u32() { return fdp_.ConsumeIntegral<uint32_t>(); }
  uint64_t u64() { return fdp_.ConsumeIntegral<uint64_t>(); }
  int64_t i64() { return fdp_.ConsumeIntegral<int64_t>(); }
  int64_t range(int64_t lo, int64_t hi) { return fdp_.ConsumeIntegralInRange<int64_t>(lo, hi); }
  float f32_bits() {
    const uint32_t bits = u32();
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  // A float that is usually tame: 0, 1, 0.5, -2, or (1 in 5) raw bits.
  float scalar() {
    switch (pick(5)) {
      case 0:
        return 0.0f;
      case 1:
        return 1.0f;
      case 2:
        return 0.5f;
      case 3:
        return -2.0f;
      default:
        return f32_bits();
    }
  }
  std::string text(size_t max_length) { return fdp_.ConsumeRandomLengthString(max_length); }
  size_t remaining() { return fdp_.remaining_bytes(); }

 private:
  FuzzedDataProvider fdp_;
};

inline bool verbose() {
  static const bool v = [] {
    const char* e = std::getenv("XHAL_FUZZ_VERBOSE");
    return e && e[0] == '1';
  }();
  return v;
}

// ---- promises of the API, checked on every call --------------------------
// XHAL_INTERNAL means a bug in the core, unless a plugin returned it (the
// core passes a plugin's in-range status on): the plugin-table harness,
// whose plugin returns any status, turns this off.
inline bool& internal_is_a_core_bug() {
  static bool yes = true;
  return yes;
}

[[noreturn]] inline void broken(const char* what, const char* call, xhal_status_t s) {
  std::fprintf(stderr,
               "xhal fuzz: broken promise: %s\n  call: %s\n  status: %d (%s)\n  last error: %s\n",
               what, call, static_cast<int>(s), xhal_status_name(s), xhal_last_error());
  std::abort();
}

// Every status is one of the enum's values; a failure explains itself and
// a success leaves the message empty (docs/abi.md, "Status and last error").
inline xhal_status_t checked(xhal_status_t s, const char* call, bool quiet = false) {
  if (verbose() && !quiet)
    std::fprintf(stderr, "  %-28s -> %s %s\n", call, xhal_status_name(s), xhal_last_error());
  if (static_cast<uint32_t>(s) > static_cast<uint32_t>(XHAL_INTERNAL))
    broken("status outside the enum", call, s);
  const char* message = xhal_last_error();
  if (!message) broken("xhal_last_error returned NULL", call, s);
  if (s == XHAL_OK && message[0] != '\0') broken("success with a message", call, s);
  if (s != XHAL_OK && message[0] == '\0') broken("failure without a message", call, s);
  if (s == XHAL_INTERNAL && internal_is_a_core_bug())
    broken("XHAL_INTERNAL from the core", call, s);
  return s;
}
#define XF_CALL(call) ::xhal_fuzz::checked((call), #call)

// Where the harness needs a call to succeed (setup, cleanup; not printed by
// XHAL_FUZZ_VERBOSE).
#define XF_MUST(call)                                                                     \
  do {                                                                                    \
    const xhal_status_t s_ = ::xhal_fuzz::checked((call), #call, true);                   \
    if (s_ != XHAL_OK) ::xhal_fuzz::broken("a call that must succeed failed", #call, s_); \
  } while (0)

// ---- plugins stay mapped -------------------------------------------------------
// The plugins are built with coverage counters, which libFuzzer registers
// when a plugin is loaded; if the runtime's shutdown unmapped a plugin,
// libFuzzer would write to the unmapped counters on the next input. So the
// harnesses load every plugin they use once, with RTLD_NODELETE, before
// fuzzing: the runtime's own dlopen and dlclose then only count references.
//
// One OpenMP thread: LLVM 14's LeakSanitizer reads a garbage dynamic-TLS
// range of libomp's worker threads (glibc 2.36) and dies in its exit-time
// leak check ("Tracer caught signal 11"), which libFuzzer reports as a crash
// of whatever input ran last. The harnesses explore arguments and results,
// which do not depend on the thread count; threading is the TSan stress
// test's (tests/stress).
inline void keep_loaded(const std::string& path) {
  setenv("OMP_NUM_THREADS", "1", 1);
  if (!dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) {
    std::fprintf(stderr, "xhal fuzz: cannot load %s: %s\n", path.c_str(), dlerror());
    std::abort();
  }
}
inline void keep_folder_loaded(const std::string& folder) {
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("libxhal-", 0) == 0 && name.size() > 3 &&
        name.compare(name.size() - 3, 3, ".so") == 0)
      keep_loaded(entry.path().string());
  }
}

// ---- the cpu device shared by the op harnesses -----------------------------
// Starting the runtime (dlopen of the cpu plugin and its OpenMP runtime) per
// input would cost far more than the ops, so the first input starts it and
// keeps one open count for the process. Each input then opens the device
// again (count 2) and releases it at its end, so open/release still run per
// input, and every buffer, plan and matrix an input creates is released
// before it returns: nothing carries over between inputs.
inline xhal_device_t shared_cpu_device() {
  static xhal_device_t device = [] {
    xhal_runtime_options_t o{};
    o.struct_size = sizeof o;
    o.device_selector = "cpu";
    o.plugin_path = XHAL_FUZZ_CPU_PLUGIN;
    o.plugin_path_only = 1;
    XF_MUST(xhal_runtime_init(&o));
    xhal_device_t d = nullptr;
    XF_MUST(xhal_device_open("cpu", &d));
    return d;
  }();
  return device;
}

// ---- device buffers of one input -----------------------------------------
constexpr uint64_t kMaxBufferBytes = 1 << 16;
constexpr size_t kMaxBuffers = 40;

class Pool {
 public:
  explicit Pool(xhal_device_t device) : device_(device) {}
  ~Pool() {
    for (size_t i = 0; i < buffers_.size(); ++i)
      if (!released_[i]) XF_MUST(xhal_buffer_release(buffers_[i]));
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  size_t size() const { return buffers_.size(); }
  xhal_buffer_t at(size_t i) const { return buffers_[i]; }
  uint64_t bytes(size_t i) const { return sizes_[i]; }

  // A new buffer of `bytes` (capped), filled with values derived from
  // `seed`: floats in [-4, 4) mostly, with a NaN, an inf and a -0 now and
  // then when `specials`. Returns its index, or -1 when the pool is full.
  int add(uint64_t bytes, uint32_t seed, bool specials) {
    if (buffers_.size() >= kMaxBuffers) return -1;
    if (bytes > kMaxBufferBytes) bytes = kMaxBufferBytes;
    xhal_buffer_t b = nullptr;
    XF_MUST(xhal_buffer_allocate(device_, bytes, &b));
    std::vector<unsigned char> fill(bytes);
    uint32_t state = seed * 2654435761u + 12345u;
    for (uint64_t i = 0; i + 4 <= bytes; i += 4) {
      state = state * 1664525u + 1013904223u;
      float v = static_cast<float>(static_cast<int32_t>(state >> 8) % 64) / 8.0f;
      if (specials && (state >> 28) == 0)
        v = (state & 3) == 0 ? NAN : (state & 3) == 1 ? INFINITY : -0.0f;
      std::memcpy(&fill[i], &v, 4);
    }
    if (bytes) XF_MUST(xhal_buffer_write(b, 0, fill.data(), bytes));
    buffers_.push_back(b);
    sizes_.push_back(bytes);
    released_.push_back(false);
    return static_cast<int>(buffers_.size() - 1);
  }

  // Releases buffer i but keeps its (now stale) handle in the pool, so
  // later tensors of the input may still name it: docs/abi.md promises
  // XHAL_INVALID_ARGUMENT for a released handle. A second release must say
  // the same.
  void release_early(size_t i) {
    if (i >= buffers_.size() || released_[i]) return;
    XF_MUST(xhal_buffer_release(buffers_[i]));
    released_[i] = true;
    const xhal_status_t again = XF_CALL(xhal_buffer_release(buffers_[i]));
    if (again != XHAL_INVALID_ARGUMENT)
      broken("releasing a buffer twice", "xhal_buffer_release", again);
    uint64_t size = 0;
    const xhal_status_t s = XF_CALL(xhal_buffer_size(buffers_[i], &size));
    if (s != XHAL_INVALID_ARGUMENT) broken("the size of a released buffer", "xhal_buffer_size", s);
  }

  // Contents of every buffer, to prove a failed call wrote nothing.
  std::vector<std::vector<unsigned char>> snapshot() const {
    std::vector<std::vector<unsigned char>> out(buffers_.size());
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (released_[i]) continue;
      out[i].resize(sizes_[i]);
      if (sizes_[i]) XF_MUST(xhal_buffer_read(buffers_[i], 0, out[i].data(), sizes_[i]));
    }
    return out;
  }
  void expect_unchanged(const std::vector<std::vector<unsigned char>>& before, const char* call,
                        xhal_status_t s) const {
    for (size_t i = 0; i < before.size(); ++i) {
      if (released_[i]) continue;
      std::vector<unsigned char> now(sizes_[i]);
      if (sizes_[i]) XF_MUST(xhal_buffer_read(buffers_[i], 0, now.data(), sizes_[i]));
      if (now != before[i]) broken("a failed call wrote into a buffer", call, s);
    }
  }

 private:
  xhal_device_t device_;
  std::vector<xhal_buffer_t> buffers_;
  std::vector<uint64_t> sizes_;
  std::vector<bool> released_;
};

// Runs an op call: on failure, every buffer of the pool must be unchanged.
#define XF_OP(pool, call)                                           \
  do {                                                              \
    const auto before_ = (pool).snapshot();                         \
    const xhal_status_t s_ = XF_CALL(call);                         \
    if (s_ != XHAL_OK) (pool).expect_unchanged(before_, #call, s_); \
  } while (0)

// ---- tensor descriptors from the input -------------------------------------
// A dtype: usually f32, else any defined value, or raw bits (an enum value
// out of range, as a C caller may pass).
inline uint32_t dtype_bits(Input& in) {
  switch (in.pick(4)) {
    case 0:
      return XHAL_DTYPE_F32;
    case 1:
      return in.pick(XHAL_DTYPE_COUNT_ + 1);
    case 2:
      return in.u32();
    default:
      return XHAL_DTYPE_F32;
  }
}

inline uint32_t dtype_size_of(uint32_t dtype) {
  return xhal_dtype_size(static_cast<xhal_dtype_t>(dtype & 7));  // only for sizing
}

// A tensor meant to have shape `want` (its contents are valid descriptors
// in mode 0), or a descriptor bent in the ways the input chooses.
//   layout (make_corpus.py, tensor()): mode = pick(4); then per mode below.
inline xhal_tensor_t tensor(Input& in, Pool& pool, std::initializer_list<int64_t> want) {
  xhal_tensor_t t{};
  uint32_t dtype = XHAL_DTYPE_F32;
  const uint32_t mode = in.pick(4);
  int64_t elements = 1;
  if (mode == 0 || mode == 1) {
    // Mode 0: exact, contiguous, own buffer. Mode 1: the same shape in an
    // existing buffer at an offset from the input (aliasing, misalignment,
    // out of range), with the dtype from the input.
    if (mode == 1) dtype = dtype_bits(in);
    t.rank = static_cast<uint32_t>(want.size());
    uint32_t k = 0;
    for (int64_t d : want) {
      t.shape[k++] = d;
      // Saturates: a raw plan size may make the product overflow; the
      // buffer is capped at kMaxBufferBytes anyway.
      if (__builtin_mul_overflow(elements, d, &elements)) elements = INT64_MAX / 8;
    }
    const uint64_t bytes =
        static_cast<uint64_t>(elements) * (dtype_size_of(dtype) ? dtype_size_of(dtype) : 4);
    if (mode == 0 || pool.size() == 0) {
      const int i = pool.add(bytes, static_cast<uint32_t>(bytes) ^ 0x5a5a, false);
      t.buffer = i >= 0 ? pool.at(i) : nullptr;
    } else {
      const size_t i = in.pick(static_cast<uint32_t>(pool.size()));
      t.buffer = pool.at(i);
      switch (in.pick(3)) {
        case 0:
          t.offset = 4 * in.range(0, static_cast<int64_t>(pool.bytes(i) / 4));
          break;
        case 1:
          t.offset = in.range(0, static_cast<int64_t>(pool.bytes(i)));
          break;
        default:
          t.offset = in.u64();
          break;
      }
    }
  } else {
    // Mode 2: every field from the input. Mode 3: like 2 with strides too.
    const int64_t bytes = in.range(0, static_cast<int64_t>(kMaxBufferBytes));
    int i;
    if (in.flag() && pool.size()) {
      i = static_cast<int>(in.pick(static_cast<uint32_t>(pool.size())));
    } else {
      const uint32_t seed = in.u32();
      const bool specials = in.flag();
      i = pool.add(static_cast<uint64_t>(bytes), seed, specials);
    }
    t.buffer = i >= 0 ? pool.at(i) : nullptr;
    t.offset = in.flag() ? 0 : in.u64();
    dtype = dtype_bits(in);
    t.rank = in.flag() ? static_cast<uint32_t>(want.size())
                       : (in.flag() ? in.pick(XHAL_MAX_RANK + 2) : in.u32());
    auto it = want.begin();
    for (uint32_t k = 0; k < XHAL_MAX_RANK; ++k) {
      const int64_t w = it != want.end() ? *it++ : 1;
      switch (in.pick(4)) {
        case 0:
          t.shape[k] = w;
          break;
        case 1:
          t.shape[k] = in.range(0, 64);
          break;
        case 2:
          t.shape[k] = w + in.range(-1, 1);
          break;
        default:
          t.shape[k] = in.i64();
          break;
      }
      if (mode == 3) t.strides[k] = in.flag() ? in.range(0, 128) : in.i64();
    }
  }
  if (in.pick(8) == 0) t.buffer = nullptr;      // a NULL handle now and then
  std::memcpy(&t.dtype, &dtype, sizeof dtype);  // raw bits, no enum load here
  return t;
}

}  // namespace xhal_fuzz
