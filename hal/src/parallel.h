// Host-side helpers for the core's pattern work (CSR creation): index arrays
// whose elements are not zeroed on allocation, so that the threads that
// fill them are the first to touch their pages, and a split of [0, n) over
// threads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace xhal {

// std::allocator whose value-initialising construct() leaves the element
// uninitialised: resize() then costs no single-threaded pass over fresh
// pages (page faults dominate filling a new 80 MB array). Blocks of 4 MiB
// and more are 2 MiB aligned and asked for transparent huge pages on Linux
// (where THP is in "madvise" mode, a fresh array otherwise takes one fault
// per 4 KiB page).
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <class U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  static constexpr size_t kHuge = size_t{2} << 20;
  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    if (bytes < 2 * kHuge) return std::allocator<T>::allocate(n);
    void* p = std::aligned_alloc(kHuge, (bytes + kHuge - 1) / kHuge * kHuge);
    if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, (bytes + kHuge - 1) / kHuge * kHuge, MADV_HUGEPAGE);  // advice only
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) < 2 * kHuge) std::allocator<T>::deallocate(p, n);
    else std::free(p);
  }
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// A pattern's index array (row pointers, columns, the transpose): resize()
// leaves new elements uninitialised.
using IndexArray = std::vector<int64_t, DefaultInitAllocator<int64_t>>;

// Runs part(0 .. parts-1), parts 1.. on their own threads; a thread that
// cannot be started runs its part on the caller instead.
template <class F>
void run_parts(int64_t parts, F part) {
  std::vector<std::thread> threads;
  std::vector<int64_t> inline_parts;
  for (int64_t t = 1; t < parts; ++t) {
    try {
      threads.emplace_back(part, t);
    } catch (const std::system_error&) {
      inline_parts.push_back(t);
    }
  }
  part(int64_t{0});
  for (int64_t t : inline_parts) part(t);
  for (auto& th : threads) th.join();
}

// Threads for `work` items: one per 2^20, at most 16 and the hardware's
// count.
inline int64_t parts_for(int64_t work) {
  const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  return std::max<int64_t>(1, std::min<int64_t>({hw, 16, work >> 20}));
}

// Calls f(begin, end) over [0, n) cut into parts_for(n) equal ranges, one
// thread each; f(begin, end, part) gets the part number too.
template <class F>
void parallel_ranges(int64_t n, F f) {
  const int64_t parts = parts_for(n);
  run_parts(parts,
            [&](int64_t t) { f(n / parts * t, t + 1 == parts ? n : n / parts * (t + 1), t); });
}

}  // namespace xhal
