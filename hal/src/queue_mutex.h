// A small mutex for the core's hot paths.
#pragma once

#include <atomic>

namespace xhal {

// The lock of a device's queue (and of the handle table): one compare-and-swap to take and one
// exchange to drop when nobody waits (a std::mutex costs two library calls
// per op call); waiters sleep on the word (C++20 atomic wait, a futex on
// Linux). Used with std::lock_guard.
class QueueMutex {
 public:
  void lock() noexcept {
    int expected = 0;
    if (!state_.compare_exchange_strong(expected, 1, std::memory_order_acquire)) [[unlikely]]
      lock_contended();
  }
  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) [[unlikely]]
      state_.notify_one();
  }

 private:
  void lock_contended() noexcept {
    // 2: locked and someone may sleep on it, so the unlock must wake.
    while (state_.exchange(2, std::memory_order_acquire) != 0) state_.wait(2);
  }
  std::atomic<int> state_{0};  // 0 free, 1 locked, 2 locked with sleepers
};

}  // namespace xhal
