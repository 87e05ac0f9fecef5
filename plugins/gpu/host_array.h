// Host arrays the plugin fills in csr_create (narrowed patterns): resize()
// leaves elements uninitialised so that the threads that fill them take
// the page faults side by side, and blocks of 4 MiB and more are 2 MiB
// aligned and advised for transparent huge pages on Linux. (The core has
// the same idea for its int64 arrays, hal/src/parallel.h; a plugin is
// built without the core's private headers.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace xhal::gpu {

template <class T>
struct HostArrayAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = HostArrayAllocator<U>;
  };
  HostArrayAllocator() = default;
  template <class U>
  HostArrayAllocator(const HostArrayAllocator<U>&) noexcept {}
  static constexpr size_t kPage = size_t{2} << 20;
  static size_t rounded(size_t n) { return (n * sizeof(T) + kPage - 1) / kPage * kPage; }
  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T) - kPage) throw std::bad_alloc();
    if (n * sizeof(T) < 2 * kPage) return std::allocator<T>::allocate(n);
    void* p = std::aligned_alloc(kPage, rounded(n));
    if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, rounded(n), MADV_HUGEPAGE);  // advice only
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) < 2 * kPage) std::allocator<T>::deallocate(p, n);
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

template <class T>
using HostArray = std::vector<T, HostArrayAllocator<T>>;

}  // namespace xhal::gpu
