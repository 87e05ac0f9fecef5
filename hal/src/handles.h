// Opaque handles that survive misuse. An app's xhal_device_t, xhal_buffer_t,
// xhal_index_plan_t and xhal_csr_t are not pointers to core objects but
// encoded slots of one process-wide table:
//
//   bits 63..60 kind   bits 59..32 generation   bits 31..0 slot + 1
//
// A slot's generation advances when its object is released, so a released
// handle, a handle released twice, a handle of another kind (a buffer passed
// as a matrix) or a made-up value is found to be stale by comparing one
// 64-bit word; nothing is dereferenced first. A lookup is a few loads and no
// lock. Slots are reused oldest-first, and a slot's generation wraps only
// after 2^28 reuses of that one slot.
//
// The public handle structs (struct xhal_device, ...) are never defined in
// the core, so code that dereferences a handle instead of resolving it does
// not compile.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>

#include "queue_mutex.h"
#include "xhal/xhal.h"

namespace xhal {

enum class HandleKind : uint64_t { kDevice = 1, kBuffer = 2, kPlan = 3, kMatrix = 4 };

class HandleTable {
 public:
  static constexpr uint32_t kChunkBits = 12;        // 4096 slots per chunk
  static constexpr uint32_t kMaxChunks = 1u << 14;  // 2^26 live handles at most

  // A new handle for `object`; 0 when the table is full (the caller reports
  // XHAL_OUT_OF_MEMORY). Throws std::bad_alloc like any allocation.
  uint64_t add(HandleKind kind, void* object);
  // The object of a live handle of `kind`, else nullptr.
  void* find(HandleKind kind, uint64_t handle) const noexcept {
    const Slot* slot = slot_of(handle);
    if (!slot || slot->key.load(std::memory_order_acquire) != handle) return nullptr;
    if ((handle >> 60) != static_cast<uint64_t>(kind)) return nullptr;
    return slot->object.load(std::memory_order_relaxed);
  }
  // Retires a live handle (its object is returned) so that every copy of it
  // is stale from now on; nullptr when it was not live.
  void* remove(HandleKind kind, uint64_t handle) noexcept;

  uint64_t live() const noexcept { return live_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<uint64_t> key{0};  // the live handle, 0 when free
    std::atomic<void*> object{nullptr};
    uint32_t generation = 0;  // changed under mutex_
  };
  const Slot* slot_of(uint64_t handle) const noexcept {
    const uint64_t index = (handle & 0xffffffffu) - 1;  // slot + 1 = 0 wraps to huge
    const uint64_t chunk = index >> kChunkBits;
    if (chunk >= kMaxChunks) return nullptr;
    const Slot* c = chunks_[chunk].load(std::memory_order_acquire);
    return c ? &c[index & ((1u << kChunkBits) - 1)] : nullptr;
  }

  // Trivially destructible, like every other member: the table must outlive
  // static destruction, where apps still release handles.
  QueueMutex mutex_;
  std::deque<uint32_t>* free_ = nullptr;  // released slots, oldest first; never freed
  uint32_t next_ = 0;                     // slots ever used
  std::atomic<uint64_t> live_{0};
  std::atomic<Slot*> chunks_[kMaxChunks] = {};
};

// The process-wide table: constant-initialised, never destroyed.
extern HandleTable g_handle_table;
inline HandleTable& handles() { return g_handle_table; }

template <typename Handle>
inline uint64_t handle_bits(Handle h) noexcept {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(h));
}
template <typename Handle>
inline Handle to_handle(uint64_t bits) noexcept {
  return reinterpret_cast<Handle>(static_cast<uintptr_t>(bits));
}

struct Device;
struct Buffer;
struct Plan;
struct Matrix;

// Fails with XHAL_INVALID_ARGUMENT naming `arg` and saying why `bits` is not
// a live handle of `kind` (NULL, released, of another kind, made up).
xhal_status_t stale_handle(HandleKind kind, uint64_t bits, const char* arg);

// Resolve a public handle to the core's object, or fail (stale_handle).
// Inline: every op resolves two to ten of them.
template <typename T, typename Handle>
inline xhal_status_t resolve(HandleKind kind, Handle h, const char* arg, T** out) {
  const uint64_t bits = handle_bits(h);
  if (void* object = handles().find(kind, bits)) [[likely]] {
    *out = static_cast<T*>(object);
    return XHAL_OK;
  }
  return stale_handle(kind, bits, arg);
}
inline xhal_status_t get_device(xhal_device_t h, const char* arg, Device** out) {
  return resolve(HandleKind::kDevice, h, arg, out);
}
inline xhal_status_t get_buffer(xhal_buffer_t h, const char* arg, Buffer** out) {
  return resolve(HandleKind::kBuffer, h, arg, out);
}
inline xhal_status_t get_plan(xhal_index_plan_t h, const char* arg, Plan** out) {
  return resolve(HandleKind::kPlan, h, arg, out);
}
inline xhal_status_t get_matrix(xhal_csr_t h, const char* arg, Matrix** out) {
  return resolve(HandleKind::kMatrix, h, arg, out);
}

}  // namespace xhal
