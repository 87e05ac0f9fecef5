// Runtime start and shutdown cycles: a start that fails part way (here: the
// core runs out of memory at each of its allocations in turn) leaves nothing
// behind, and init/shutdown cycles do not grow the process (the exit handler
// used to be registered once more per start).
//
// This executable replaces operator new, so it has its own binary.
#include <gmock/gmock.h>

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "test_support.h"

namespace {

// > 0: allocations left until one fails; <= 0: no failure planted.
std::atomic<long> g_allocations_left{0};
std::atomic<bool> g_failure_fired{false};

void* allocate(std::size_t size) {
  if (g_allocations_left.load(std::memory_order_relaxed) > 0 &&
      g_allocations_left.fetch_sub(1) == 1) {
    g_failure_fired = true;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}

}  // namespace

// Every form that allocates with malloc, so that each is freed by the
// matching delete below (AddressSanitizer checks the pairing).
void* operator new(std::size_t size) { return allocate(size); }
void* operator new[](std::size_t size) { return allocate(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocate(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace xhal::test {
namespace {

// A good plugin, and one rejected after its init ran.
std::string corpus_path() {
  return fake_dir("good") + ":" + fake_dir("faulty") + "/libxhal-throwinit.so";
}

struct Outcome {
  std::string path, reason;
  xhal_plugin_state_t state;
  bool operator==(const Outcome&) const = default;
};
std::vector<Outcome> outcomes() {
  std::vector<Outcome> out;
  for (const PluginView& p : plugins()) out.push_back({p.path, p.reason, p.state});
  return out;
}

TEST(RuntimeStart, FailingAtAnyAllocationLeavesNothingBehind) {
  ASSERT_EQ(start(corpus_path()), XHAL_OK) << xhal_last_error();
  const std::vector<Outcome> expected = outcomes();
  ASSERT_EQ(expected.size(), 2u);
  ASSERT_EQ(xhal_runtime_shutdown(), XHAL_OK);

  const std::string path = corpus_path();
  int failed_starts = 0;
  for (long n = 1;; ++n) {
    g_failure_fired = false;
    g_allocations_left = n;
    const xhal_status_t status = start(path);
    g_allocations_left = 0;
    if (!g_failure_fired) {  // the start needs fewer than n allocations
      ASSERT_EQ(status, XHAL_OK) << xhal_last_error();
      ASSERT_EQ(xhal_runtime_shutdown(), XHAL_OK);
      break;
    }
    if (status == XHAL_OK) {
      // Absorbed (a plugin's init saw the failure and was rejected).
      ASSERT_EQ(xhal_runtime_shutdown(), XHAL_OK) << "allocation " << n;
    } else {
      ++failed_starts;
      ASSERT_EQ(status, XHAL_OUT_OF_MEMORY) << "allocation " << n << ": " << xhal_last_error();
    }
    // Nothing of the attempt stays: no plugin mapped, and the next start
    // sees each candidate once, with its usual outcome.
    for (const Outcome& o : expected) {
      ASSERT_FALSE(library_mapped(o.path)) << o.path << " still loaded (allocation " << n << ")";
    }
    ASSERT_EQ(start(path), XHAL_OK) << "allocation " << n << ": " << xhal_last_error();
    ASSERT_EQ(outcomes(), expected) << "allocation " << n;
    ASSERT_EQ(xhal_runtime_shutdown(), XHAL_OK);
  }
  EXPECT_GT(failed_starts, 10);  // the loop did reach the core's allocations
}

TEST(RuntimeStart, InitShutdownCyclesDoNotGrowTheHeap) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "mallinfo2 does not see AddressSanitizer's allocator";
#else
  auto cycle = [] {
    ASSERT_EQ(start(fake_dir("good")), XHAL_OK) << xhal_last_error();
    uint32_t n = 0;
    ASSERT_EQ(xhal_device_count(&n), XHAL_OK);
    ASSERT_EQ(xhal_runtime_shutdown(), XHAL_OK);
  };
  for (int i = 0; i < 50; ++i) cycle();  // caches settle
  const size_t before = mallinfo2().uordblks;
  for (int i = 0; i < 1000; ++i) cycle();
  const size_t after = mallinfo2().uordblks;
  // One exit-handler registration per start is 32 bytes of libc's exit list,
  // about 32 KB over 1000 cycles.
  EXPECT_LT(after, before + 4096) << "heap grew by " << (after - before) << " bytes";
#endif
}

}  // namespace
}  // namespace xhal::test
