#include "loader.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "entry.h"
#include "resident_libraries.h"

namespace xhal {
namespace {

struct SlotName {
  size_t offset;
  const char* name;
};

#define XHAL_SLOT(name) \
  SlotName { offsetof(xhal_plugin_api_t, name), #name }
constexpr SlotName kRequiredSlots[] = {
    XHAL_SLOT(init),
    XHAL_SLOT(shutdown),
    XHAL_SLOT(device_count),
    XHAL_SLOT(device_get_info),
    XHAL_SLOT(device_open),
    XHAL_SLOT(device_close),
    XHAL_SLOT(device_synchronize),
    XHAL_SLOT(device_get_counters),
    XHAL_SLOT(buffer_allocate),
    XHAL_SLOT(buffer_free),
    XHAL_SLOT(buffer_write),
    XHAL_SLOT(buffer_read),
    XHAL_SLOT(buffer_copy),
    XHAL_SLOT(buffer_fill),
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
// More devices than any machine has: a larger count is a plugin bug (an
// uninitialised or negative number), and sizing tables by it would exhaust
// memory (docs/abi.md, "Loading and rejection reasons").
constexpr uint32_t kMaxDevicesPerPlugin = 4096;

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
      return "optional slots '" + std::string(pair[0].name) + "' and '" + pair[1].name +
             "' must be both present or both absent";
    }
  }
  return "";
}

// A slot's status as a plain number: a plugin may return any bits, and
// reading an out-of-range value through the enum type is undefined.
int32_t raw_status(const xhal_status_t& status) {
  int32_t raw = 0;
  std::memcpy(&raw, &status, sizeof(raw));
  return raw;
}

// "XHAL_PLUGIN_ERROR", or "unknown status 1234" for a value outside the enum.
std::string status_text(int32_t raw) {
  if (raw < XHAL_OK || raw > XHAL_INTERNAL) return "unknown status " + std::to_string(raw);
  return xhal_status_name(static_cast<xhal_status_t>(raw));
}

// Marks this thread as running plugin code: a call back into the app API
// from there is XHAL_BUSY (entry()) instead of a deadlock on the runtime
// mutex this thread holds.
struct DepthCount {
  int& depth = plugin_depth();
  DepthCount() { ++depth; }
  ~DepthCount() { --depth; }
};

// Runs one call into plugin code (the entry function or a slot) as plugin
// code; what the plugin throws becomes `*why` ("init threw a C++ exception:
// ...") and false.
template <typename Call>
bool guarded(const char* what, std::string* why, Call&& call) {
  try {
    DepthCount inside;
    call();
    return true;
  } catch (const std::exception& e) {
    // Copied now: the exception object's code lives in the plugin.
    *why = std::string(what) + " threw a C++ exception: " + e.what();
  } catch (...) {
    *why = std::string(what) + " threw an exception of unknown type";
  }
  return false;
}

// Calls the plugin's shutdown; what it throws is dropped (nothing to undo).
void shut_down(LoadedPlugin& plugin) {
  call_void_slot([&] { plugin.api.shutdown(plugin.context); });
}

// Why a device description is unusable, or "". Strings were cut to their
// arrays already; memory_bytes may be anything; op_dtypes are masked later.
std::string check_device_info(uint32_t index, const xhal_plugin_device_info_t& info) {
  int32_t kind = 0;
  std::memcpy(&kind, &info.kind, sizeof(kind));  // raw: may be outside the enum
  if (kind != XHAL_DEVICE_KIND_CPU && kind != XHAL_DEVICE_KIND_GPU &&
      kind != XHAL_DEVICE_KIND_OTHER) {
    return "device_get_info(" + std::to_string(index) + ") gave kind " + std::to_string(kind) +
           ", not an xhal_device_kind_t (0 cpu, 1 gpu, 2 other)";
  }
  return "";
}

// Runs init and counts devices; returns why it failed, or "". `initialised`
// is true while init has succeeded and shutdown is still owed: a failure
// after init shuts the plugin down again here.
std::string start_plugin(LoadedPlugin& plugin, PluginRecord& record, bool& initialised) {
  char note[kNoteCapacity] = {};
  take_plugin_message();
  std::string why;
  // A malformed XHAL_DEVICE_OPTIONS is reported when a device opens; the
  // plugin-wide part is then empty.
  if (options_for(plugin.backend, &plugin.options) != XHAL_OK) {
    plugin.options.clear();
    thread_state().last_error.clear();  // not this start's failure
  }
  plugin.host = plugin_host(plugin.options.c_str());
  xhal_status_t status = XHAL_OK;
  if (!guarded("init", &why, [&] {
        status = plugin.api.init(&plugin.host, &plugin.context, note, sizeof(note));
      })) {
    take_plugin_message();
    return why;
  }
  std::string message = take_plugin_message();
  if (raw_status(status) != XHAL_OK) {
    return "init failed (" + status_text(raw_status(status)) + ")" +
           (message.empty() ? "" : ": " + message);
  }
  initialised = true;
  note[sizeof(note) - 1] = '\0';
  // From here on a failure must undo init.
  auto failed = [&](std::string reason) {
    take_plugin_message();
    initialised = false;
    shut_down(plugin);
    record.devices.clear();
    return reason;
  };
  uint32_t count = 0;
  xhal_status_t count_status = XHAL_OK;
  if (!guarded("device_count", &why,
               [&] { count_status = plugin.api.device_count(plugin.context, &count); })) {
    return failed(why);
  }
  message = take_plugin_message();
  if (raw_status(count_status) != XHAL_OK) {
    return failed("device_count failed (" + status_text(raw_status(count_status)) + ")" +
                  (message.empty() ? "" : ": " + message));
  }
  if (count > kMaxDevicesPerPlugin) {
    return failed("device_count gave " + std::to_string(count) + " devices; at most " +
                  std::to_string(kMaxDevicesPerPlugin) + " per plugin are accepted");
  }
  record.devices.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    xhal_plugin_device_info_t& info = record.devices[i];
    // The plugin may write only inside struct_size (docs/plugin-guide.md
    // "Device info"): a plugin built against a newer header, with a longer
    // op_dtypes, that ignores it lands in the canary, not in the next
    // device's record, and is rejected.
    struct {
      xhal_plugin_device_info_t info;
      unsigned char canary[64];
    } guarded_info;
    guarded_info.info = {};
    guarded_info.info.struct_size = sizeof(guarded_info.info);
    std::memset(guarded_info.canary, 0xA5, sizeof guarded_info.canary);
    xhal_status_t info_status = XHAL_OK;
    const std::string slot = "device_get_info(" + std::to_string(i) + ")";
    if (!guarded(slot.c_str(), &why, [&] {
          info_status = plugin.api.device_get_info(plugin.context, i, &guarded_info.info);
        })) {
      return failed(why);
    }
    for (unsigned char c : guarded_info.canary)
      if (c != 0xA5)
        return failed(slot + " wrote past the struct_size of " +
                      std::to_string(sizeof(guarded_info.info)) +
                      " bytes it was given (a plugin writes only the fields inside struct_size)");
    if (guarded_info.info.struct_size != sizeof(guarded_info.info))
      return failed(slot + " changed struct_size, which belongs to the core");
    info = guarded_info.info;
    message = take_plugin_message();
    if (raw_status(info_status) != XHAL_OK) {
      return failed(slot + " failed (" + status_text(raw_status(info_status)) + ")" +
                    (message.empty() ? "" : ": " + message));
    }
    info.name[sizeof(info.name) - 1] = '\0';
    info.stable_id[sizeof(info.stable_id) - 1] = '\0';
    if (std::string bad = check_device_info(i, info); !bad.empty()) return failed(bad);
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
  {
    // The library's static constructors run inside dlopen: counted as plugin
    // code, so a call back into the app API is XHAL_BUSY. An exception must
    // not be caught here: unwound through dlopen it would leave the dynamic
    // loader's lock held, and every later dlopen would hang.
    DepthCount inside;
    // rtld_now: unresolved symbols surface here with dlerror's text, not later.
    plugin->library.load(candidate.path, ec,
                         boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  }
  if (ec || !plugin->library.is_loaded()) {
    const char* dl_why = dlerror();
    return rejected(std::move(record),
                    std::string("dlopen failed: ") + (dl_why ? dl_why : ec.message()));
  }
  if (!plugin->library.has(XHAL_PLUGIN_ENTRY_SYMBOL)) {
    return rejected(std::move(record), "missing entry symbol '" XHAL_PLUGIN_ENTRY_SYMBOL "'");
  }
  const auto entry = plugin->library.get<const xhal_plugin_api_t*()>(XHAL_PLUGIN_ENTRY_SYMBOL);
  const xhal_plugin_api_t* table = nullptr;
  std::string why;
  if (!guarded("entry symbol '" XHAL_PLUGIN_ENTRY_SYMBOL "'", &why, [&] { table = entry(); })) {
    return rejected(std::move(record), why);
  }
  if (table == nullptr) {
    return rejected(std::move(record), "entry symbol '" XHAL_PLUGIN_ENTRY_SYMBOL "' returned NULL");
  }
  if (table->struct_size < kHeaderSize) {
    return rejected(std::move(record), "table struct_size " + std::to_string(table->struct_size) +
                                           " is smaller than the table header (" +
                                           std::to_string(kHeaderSize) + " bytes)");
  }
  record.abi_major = table->abi_major;
  record.abi_minor = table->abi_minor;
  if (table->abi_major != XHAL_PLUGIN_ABI_MAJOR) {
    return rejected(std::move(record), "plugin ABI " + std::to_string(table->abi_major) + "." +
                                           std::to_string(table->abi_minor) + ", core supports " +
                                           std::to_string(XHAL_PLUGIN_ABI_MAJOR) + ".x");
  }
  // Older tables end early: the zeroed tail reads as absent slots. Newer
  // tables are longer: the core ignores what it does not know. Only whole
  // slots are copied: a struct_size that cuts a slot leaves it absent, never
  // half a function pointer.
  size_t copied = std::min(table->struct_size, sizeof(xhal_plugin_api_t));
  if (copied > kHeaderSize) copied -= (copied - kHeaderSize) % sizeof(void*);
  std::memcpy(&plugin->api, table, copied);
  plugin->api.struct_size = table->struct_size;
  if (plugin->api.plugin_version) record.plugin_version = plugin->api.plugin_version;
  if (std::string bad = check_table(plugin->api, table->struct_size, candidate.backend);
      !bad.empty()) {
    return rejected(std::move(record), bad);
  }
  // A core failure (out of memory) while starting must not leave the plugin
  // initialised when its library is unloaded on the way out.
  struct ShutDownIfOwed {
    LoadedPlugin& plugin;
    bool initialised = false;
    ~ShutDownIfOwed() {
      if (initialised) shut_down(plugin);
    }
  } owed{*plugin};
  if (std::string bad = start_plugin(*plugin, record, owed.initialised); !bad.empty()) {
    return rejected(std::move(record), bad);
  }
  owed.initialised = false;  // the record owns the running plugin now
  record.state = XHAL_PLUGIN_LOADED;
  record.plugin = std::move(plugin);
  return record;
}

}  // namespace

void unload_plugin(PluginRecord& record, bool unload) {
  if (!record.plugin) return;
  shut_down(*record.plugin);
  if (!unload) {
    // Marks the loaded object RTLD_NODELETE, so the dlclose below keeps it.
    dlopen(record.path.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  }
  record.plugin->library.unload();
  record.plugin.reset();
}

}  // namespace xhal
