#include "loader.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "resident_libraries.h"

namespace xhal {
namespace {

struct SlotName {
  size_t offset;
  const char* name;
};

#define XHAL_SLOT(name) SlotName{offsetof(xhal_plugin_api_t, name), #name}
constexpr SlotName kRequiredSlots[] = {
    XHAL_SLOT(init),           XHAL_SLOT(shutdown),
    XHAL_SLOT(device_count),   XHAL_SLOT(device_get_info),
    XHAL_SLOT(device_open),    XHAL_SLOT(device_close),
    XHAL_SLOT(device_synchronize), XHAL_SLOT(device_get_counters),
    XHAL_SLOT(buffer_allocate), XHAL_SLOT(buffer_free),
    XHAL_SLOT(buffer_write),   XHAL_SLOT(buffer_read),
    XHAL_SLOT(buffer_copy),    XHAL_SLOT(buffer_fill),
};
// Optional slots that only make sense together (a create needs its destroy).
constexpr SlotName kPairedSlots[][2] = {
    {XHAL_SLOT(index_plan_create), XHAL_SLOT(index_plan_destroy)},
    {XHAL_SLOT(csr_create), XHAL_SLOT(csr_destroy)},
};
#undef XHAL_SLOT

// The header every table starts with, whatever its version.
constexpr size_t kHeaderSize = offsetof(xhal_plugin_api_t, init);
constexpr size_t kNoteCapacity = 512;

bool slot_present(const xhal_plugin_api_t& api, size_t offset) {
  void* slot = nullptr;
  std::memcpy(&slot, reinterpret_cast<const char*>(&api) + offset, sizeof(slot));
  return slot != nullptr;
}

PluginRecord rejected(PluginRecord record, std::string reason) {
  record.state = XHAL_PLUGIN_REJECTED;
  record.reason = std::move(reason);
  record.plugin.reset();
  record.device_count = 0;
  record.devices.clear();
  return record;
}

// Checks the table copy; returns why it is unusable, or "".
std::string check_table(const xhal_plugin_api_t& api, size_t struct_size,
                        const std::string& file_backend) {
  if (api.backend_name == nullptr) return "required field 'backend_name' is NULL";
  if (api.plugin_version == nullptr) return "required field 'plugin_version' is NULL";
  if (file_backend != api.backend_name) {
    return "backend_name '" + std::string(api.backend_name) +
           "' does not match the file name (expected '" + file_backend + "')";
  }
  for (const SlotName& slot : kRequiredSlots) {
    if (slot_present(api, slot.offset)) continue;
    std::string why = "required slot '" + std::string(slot.name) + "' is missing";
    if (slot.offset + sizeof(void*) > struct_size) {
      why += " (the table ends at struct_size " + std::to_string(struct_size) + ")";
    }
    return why;
  }
  for (const auto& pair : kPairedSlots) {
    if (slot_present(api, pair[0].offset) != slot_present(api, pair[1].offset)) {
      return "optional slots '" + std::string(pair[0].name) + "' and '" +
             pair[1].name + "' must be both present or both absent";
    }
  }
  return "";
}

// Runs init and counts devices; returns why it failed, or "".
std::string start_plugin(LoadedPlugin& plugin, PluginRecord& record) {
  char note[kNoteCapacity] = {};
  take_plugin_message();
  const xhal_status_t status =
      plugin.api.init(plugin_host(), &plugin.context, note, sizeof(note));
  std::string message = take_plugin_message();
  if (status != XHAL_OK) {
    return "init failed (" + std::string(xhal_status_name(status)) + ")" +
           (message.empty() ? "" : ": " + message);
  }
  note[sizeof(note) - 1] = '\0';
  uint32_t count = 0;
  const xhal_status_t count_status = plugin.api.device_count(plugin.context, &count);
  message = take_plugin_message();
  if (count_status != XHAL_OK) {
    plugin.api.shutdown(plugin.context);
    return "device_count failed (" + std::string(xhal_status_name(count_status)) + ")" +
           (message.empty() ? "" : ": " + message);
  }
  record.devices.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    xhal_plugin_device_info_t& info = record.devices[i];
    info = {};
    info.struct_size = sizeof(info);
    const xhal_status_t info_status = plugin.api.device_get_info(plugin.context, i, &info);
    message = take_plugin_message();
    if (info_status != XHAL_OK) {
      plugin.api.shutdown(plugin.context);
      record.devices.clear();
      return "device_get_info(" + std::to_string(i) + ") failed (" +
             xhal_status_name(info_status) + ")" + (message.empty() ? "" : ": " + message);
    }
    info.name[sizeof(info.name) - 1] = '\0';
    info.stable_id[sizeof(info.stable_id) - 1] = '\0';
  }
  record.device_count = count;
  // A plugin without devices says why (e.g. "no CUDA device found").
  record.reason = note;
  return "";
}

PluginRecord open_and_start(const PluginCandidate& candidate,
                            const std::vector<PluginRecord>& earlier);

}  // namespace

PluginRecord load_plugin(const PluginCandidate& candidate,
                         const std::vector<PluginRecord>& earlier) {
  if (!candidate.problem.empty()) {
    PluginRecord record;
    record.path = candidate.path;
    record.backend = candidate.backend;
    return rejected(std::move(record), candidate.problem);
  }
  const std::vector<std::string> before = mapped_objects();
  PluginRecord record = open_and_start(candidate, earlier);
  keep_new_dependencies_resident(before, candidate.path);
  return record;
}

namespace {

PluginRecord open_and_start(const PluginCandidate& candidate,
                            const std::vector<PluginRecord>& earlier) {
  PluginRecord record;
  record.path = candidate.path;
  record.backend = candidate.backend;

  // First in search order wins; the later file is not even opened.
  for (const PluginRecord& other : earlier) {
    if (other.state == XHAL_PLUGIN_LOADED && other.backend == candidate.backend) {
      return rejected(std::move(record), "duplicate backend '" + candidate.backend +
                                             "': already provided by " + other.path);
    }
  }

  auto plugin = std::make_unique<LoadedPlugin>();
  plugin->backend = candidate.backend;
  boost::dll::fs::error_code ec;
  dlerror();
  // rtld_now: unresolved symbols surface here with dlerror's text, not later.
  plugin->library.load(candidate.path, ec,
                       boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  if (ec || !plugin->library.is_loaded()) {
    const char* why = dlerror();
    return rejected(std::move(record),
                    std::string("dlopen failed: ") + (why ? why : ec.message()));
  }
  if (!plugin->library.has(XHAL_PLUGIN_ENTRY_SYMBOL)) {
    return rejected(std::move(record),
                    "missing entry symbol '" XHAL_PLUGIN_ENTRY_SYMBOL "'");
  }
  const auto entry =
      plugin->library.get<const xhal_plugin_api_t*()>(XHAL_PLUGIN_ENTRY_SYMBOL);
  const xhal_plugin_api_t* table = entry();
  if (table == nullptr) {
    return rejected(std::move(record), "entry symbol '" XHAL_PLUGIN_ENTRY_SYMBOL
                                       "' returned NULL");
  }
  if (table->struct_size < kHeaderSize) {
    return rejected(std::move(record),
                    "table struct_size " + std::to_string(table->struct_size) +
                        " is smaller than the table header (" +
                        std::to_string(kHeaderSize) + " bytes)");
  }
  record.abi_major = table->abi_major;
  record.abi_minor = table->abi_minor;
  if (table->abi_major != XHAL_PLUGIN_ABI_MAJOR) {
    return rejected(std::move(record),
                    "plugin ABI " + std::to_string(table->abi_major) + "." +
                        std::to_string(table->abi_minor) + ", core supports " +
                        std::to_string(XHAL_PLUGIN_ABI_MAJOR) + ".x");
  }
  // Older tables end early: the zeroed tail reads as absent slots. Newer
  // tables are longer: the core ignores what it does not know.
  std::memcpy(&plugin->api, table, std::min(table->struct_size, sizeof(xhal_plugin_api_t)));
  plugin->api.struct_size = table->struct_size;
  if (plugin->api.plugin_version) record.plugin_version = plugin->api.plugin_version;
  if (std::string why = check_table(plugin->api, table->struct_size, candidate.backend);
      !why.empty()) {
    return rejected(std::move(record), why);
  }
  if (std::string why = start_plugin(*plugin, record); !why.empty()) {
    return rejected(std::move(record), why);
  }
  record.state = XHAL_PLUGIN_LOADED;
  record.plugin = std::move(plugin);
  return record;
}

}  // namespace

void unload_plugin(PluginRecord& record, bool unload) {
  if (!record.plugin) return;
  record.plugin->api.shutdown(record.plugin->context);
  if (!unload) {
    // Marks the loaded object RTLD_NODELETE, so the dlclose below keeps it.
    dlopen(record.path.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  }
  record.plugin->library.unload();
  record.plugin.reset();
}

}  // namespace xhal
