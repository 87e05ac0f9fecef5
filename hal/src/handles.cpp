#include "handles.h"

#include <mutex>

namespace xhal {

constinit HandleTable g_handle_table;

uint64_t HandleTable::add(HandleKind kind, void* object) {
  std::lock_guard lock(mutex_);
  if (!free_) free_ = new std::deque<uint32_t>;
  uint32_t index;
  // Reuse the oldest free slot, but keep a reserve so that a slot is not
  // handed out again right after its release (a stale copy would still be
  // caught by the generation; the reserve only makes wraps rarer).
  if (free_->size() > 1024 || (!free_->empty() && next_ >= (kMaxChunks << kChunkBits))) {
    index = free_->front();
    free_->pop_front();
  } else {
    if (next_ >= (kMaxChunks << kChunkBits)) return 0;
    index = next_;
    const uint32_t chunk = index >> kChunkBits;
    if (!chunks_[chunk].load(std::memory_order_relaxed))
      chunks_[chunk].store(new Slot[1u << kChunkBits], std::memory_order_release);
    ++next_;
  }
  Slot& slot = chunks_[index >> kChunkBits].load(
      std::memory_order_relaxed)[index & ((1u << kChunkBits) - 1)];
  const uint64_t handle = (static_cast<uint64_t>(kind) << 60) |
                          (static_cast<uint64_t>(slot.generation & 0x0fffffffu) << 32) |
                          (static_cast<uint64_t>(index) + 1);
  slot.object.store(object, std::memory_order_relaxed);
  slot.key.store(handle, std::memory_order_release);
  live_.fetch_add(1, std::memory_order_relaxed);
  return handle;
}

void* HandleTable::remove(HandleKind kind, uint64_t handle) noexcept {
  if ((handle >> 60) != static_cast<uint64_t>(kind)) return nullptr;
  std::lock_guard lock(mutex_);
  Slot* slot = const_cast<Slot*>(slot_of(handle));
  uint64_t expected = handle;
  // Two threads releasing one handle: exactly one wins.
  if (!slot || !slot->key.compare_exchange_strong(expected, 0, std::memory_order_acq_rel))
    return nullptr;
  void* object = slot->object.exchange(nullptr, std::memory_order_relaxed);
  ++slot->generation;
  try {
    if (!free_) free_ = new std::deque<uint32_t>;
    free_->push_back(static_cast<uint32_t>((handle & 0xffffffffu) - 1));
  } catch (...) {
    // The slot is lost for reuse; its handle is retired all the same.
  }
  live_.fetch_sub(1, std::memory_order_relaxed);
  return object;
}

}  // namespace xhal
