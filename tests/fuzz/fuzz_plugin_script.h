// What the fuzzed plugin (fuzz_plugin.cpp) does, decided by the plugin-table
// harness (fuzz_plugin_table.cpp) from its input. The harness executable
// exports a pointer to the current script under kScriptSymbol (it links
// with -rdynamic); the plugin finds it with dlsym(RTLD_DEFAULT, ...) each
// time its entry function runs, i.e. each time the runtime loads it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xhal/xhal_plugin.h"

namespace xhal_fuzz {

constexpr const char* kScriptSymbol = "xhal_fuzz_plugin_script";

// The function-pointer slots after the table header, in table order (the
// table grows with each plugin ABI minor).
constexpr size_t kTableHeader = offsetof(xhal_plugin_api_t, init);
static_assert((sizeof(xhal_plugin_api_t) - kTableHeader) % sizeof(void*) == 0,
              "the table's slots are pointers after the header");
constexpr int kSlotCount =
    static_cast<int>((sizeof(xhal_plugin_api_t) - kTableHeader) / sizeof(void*));
// Slots of ABI 1.0 (init .. spgemm_numeric); later ones are absent unless
// the fuzzed plugin implements them.
constexpr int kSlotsOf10 = 32;
constexpr int kRequiredSlots = 14;  // init .. buffer_fill
// Slot pairs that must be both present or both absent.
constexpr int kSlotIndexPlanCreate = 14, kSlotIndexPlanDestroy = 15;
constexpr int kSlotCsrCreate = 25, kSlotCsrDestroy = 26;

// Where a slot misbehaves (bit i of odd_slots): it returns `status` (any
// value, also outside the enum), or with `odd_throw` throws instead.
enum Slot : int {
  kInit = 0,
  kShutdown,
  kDeviceCount,
  kDeviceGetInfo,
  kDeviceOpen,
  kDeviceClose,
  kDeviceSynchronize,
  kDeviceGetCounters,
  kBufferAllocate,
  kBufferFree,
  kBufferWrite,
  kBufferRead,
  kBufferCopy,
  kBufferFill,
};

struct PluginScript {
  // Entry: 0 returns the table, 1 returns NULL, 2 throws.
  uint32_t entry;
  // Table header.
  uint64_t struct_size;
  uint32_t abi_major, abi_minor;
  uint32_t backend_name_kind;  // 0 "fuzz", 1 NULL, 2 `backend_name`
  char backend_name[24];
  uint32_t version_kind;  // 0 "0.0-fuzz", 1 NULL, 2 `version`
  char version[24];
  uint64_t null_slots;  // bit i: slot i is NULL
  uint32_t odd_slots;   // bit i: slot i misbehaves (see Slot)
  uint32_t odd_status;  // what a misbehaving slot returns
  uint32_t odd_throw;   // non-zero: it throws instead
  // init
  uint32_t note_kind;     // 0 none, 1 a note, 2 the whole capacity without a NUL
  uint32_t init_reenter;  // non-zero: init calls xhal_device_count (the app API)
  // devices
  uint32_t device_count;
  uint32_t kind;               // xhal_device_kind_t bits, maybe outside the enum
  uint32_t unterminated_name;  // name and stable id fill their arrays, no NUL
  uint64_t memory_bytes;
  uint32_t op_dtypes;        // the same mask for every op
  uint32_t open_gives_null;  // device_open / buffer_allocate say OK with NULL
};

}  // namespace xhal_fuzz
