// libFuzzer harness (d): plugin tables. The input becomes a PluginScript
// (fuzz_plugin_script.h) that libxhal-fuzz.so (fuzz_plugin.cpp) turns into
// its table when the runtime loads it: header fields, NULL slots, slots that
// return odd statuses or throw, absurd device counts, garbage kinds,
// unterminated strings, OK with a NULL handle. Per input: start the runtime
// on that plugin only, read the plugin report, list and query the devices,
// open device 0, a buffer round trip, release, shut down.
//
// Oracles: the sanitizers; statuses and messages (fuzz_support.h); a table
// that breaks a rule of docs/abi.md ("Loading and rejection reasons") is
// REJECTED and a well-behaved one is LOADED; info structs are written only
// for fields inside struct_size; device kinds are inside the enum; bytes
// written to a buffer read back the same; shutdown succeeds once every
// handle is released.
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_plugin_script.h"
#include "fuzz_support.h"
#include "xhal/xhal_plugin.h"

using namespace xhal_fuzz;

// The plugin reads the current script through this symbol (see
// fuzz_plugin_script.h); the executable is linked with -rdynamic.
extern "C" __attribute__((visibility("default"))) const PluginScript* xhal_fuzz_plugin_script =
    nullptr;

namespace {

constexpr size_t kHeader = kTableHeader;

// Layout (make_corpus.py, plugin_script()).
PluginScript read_script(Input& in) {
  PluginScript s{};
  const uint32_t e = in.pick(16);
  s.entry = e == 0 ? 1 : e == 1 ? 2 : 0;
  switch (in.pick(6)) {
    case 1:
      s.struct_size = static_cast<uint64_t>(in.range(0, sizeof(xhal_plugin_api_t) + 64));
      break;
    case 2:
      s.struct_size = kHeader;
      break;
    case 3:
      s.struct_size = kHeader + kRequiredSlots * sizeof(void*);
      break;
    case 4:
      s.struct_size = sizeof(xhal_plugin_api_t) + static_cast<uint64_t>(in.range(1, 64));
      break;
    default:
      s.struct_size = sizeof(xhal_plugin_api_t);
      break;
  }
  switch (in.pick(8)) {
    case 0:
      s.abi_major = in.u32();
      break;
    case 1:
      s.abi_major = 0;
      break;
    case 2:
      s.abi_major = 2;
      break;
    default:
      s.abi_major = XHAL_PLUGIN_ABI_MAJOR;
      break;
  }
  s.abi_minor = in.pick(4) == 0 ? in.u32() : XHAL_PLUGIN_ABI_MINOR;
  const uint32_t bn = in.pick(8);
  s.backend_name_kind = bn == 0 ? 1 : bn == 1 ? 2 : 0;
  if (s.backend_name_kind == 2) {
    const std::string t = in.text(sizeof s.backend_name - 1);
    std::memcpy(s.backend_name, t.data(), t.size());
  }
  const uint32_t vn = in.pick(8);
  s.version_kind = vn == 0 ? 1 : vn == 1 ? 2 : 0;
  if (s.version_kind == 2) {
    const std::string t = in.text(sizeof s.version - 1);
    std::memcpy(s.version, t.data(), t.size());
  }
  switch (in.pick(4)) {
    case 1:
      s.null_slots = uint64_t{1} << in.pick(kSlotCount);
      break;
    case 2:
      s.null_slots = in.u64();
      break;
    default:
      s.null_slots = 0;
      break;
  }
  switch (in.pick(4)) {
    case 1:
      s.odd_slots = 1u << in.pick(kRequiredSlots);
      break;
    case 2:
      s.odd_slots = in.u32() & ((1u << kRequiredSlots) - 1);
      break;
    default:
      s.odd_slots = 0;
      break;
  }
  switch (in.pick(3)) {
    case 0:
      s.odd_status = in.pick(XHAL_INTERNAL + 1);
      break;
    case 1:
      s.odd_status = in.u32();
      break;
    default:
      s.odd_status = XHAL_PLUGIN_ERROR;
      break;
  }
  s.odd_throw = in.pick(8) == 0;
  s.note_kind = in.pick(3);
  s.init_reenter = in.pick(16) == 0;
  switch (in.pick(6)) {
    case 0:
      s.device_count = 0;
      break;
    case 2:
      s.device_count = 2;
      break;
    case 3:
      s.device_count = 0xFFFFFFFFu;
      break;
    case 4:
      s.device_count = in.u32();
      break;
    default:
      s.device_count = 1;
      break;
  }
  s.kind = in.pick(4) == 0 ? in.u32() : in.pick(3);
  s.unterminated_name = in.pick(8) == 0;
  s.memory_bytes = in.u64();
  s.op_dtypes = in.u32();
  s.open_gives_null = in.pick(16) == 0;
  return s;
}

bool slot_present(const PluginScript& s, int i) {
  return !((s.null_slots >> i) & 1) && kHeader + (i + 1) * sizeof(void*) <= s.struct_size;
}
static_assert(kSlotCount <= 64, "null_slots has a bit per slot");

// The table rules of docs/abi.md: any broken one rejects the plugin.
bool table_acceptable(const PluginScript& s) {
  if (s.entry != 0 || s.struct_size < kHeader || s.abi_major != XHAL_PLUGIN_ABI_MAJOR) return false;
  if (s.backend_name_kind == 1 || s.version_kind == 1) return false;
  if (s.backend_name_kind == 2 && std::strncmp(s.backend_name, "fuzz", sizeof s.backend_name) != 0)
    return false;
  for (int i = 0; i < kRequiredSlots; ++i)
    if (!slot_present(s, i)) return false;
  if (slot_present(s, kSlotIndexPlanCreate) != slot_present(s, kSlotIndexPlanDestroy)) return false;
  if (slot_present(s, kSlotCsrCreate) != slot_present(s, kSlotCsrDestroy)) return false;
  return true;
}

// Nothing odd in what loading runs (entry, init, device_count, get_info).
bool loads_cleanly(const PluginScript& s) {
  const uint32_t load_slots = (1u << kInit) | (1u << kDeviceCount) | (1u << kDeviceGetInfo);
  return table_acceptable(s) && !(s.odd_slots & load_slots) && !s.init_reenter &&
         s.device_count <= 2 && s.note_kind != 2 && s.kind <= XHAL_DEVICE_KIND_OTHER &&
         !s.unterminated_name;
}

struct Field {
  size_t offset, size;
};

// A struct of `fields` filled with 0xA5, struct_size set to `size`: after
// the call, every field not entirely inside `size` must still be 0xA5.
template <typename Info>
void check_fields_outside(const Info& info, size_t size, std::initializer_list<Field> fields,
                          const char* call) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(&info);
  for (const Field& f : fields) {
    if (f.offset + f.size <= size) continue;
    for (size_t i = f.offset; i < f.offset + f.size; ++i)
      if (bytes[i] != 0xA5) broken("a field past struct_size was written", call, XHAL_OK);
  }
}

size_t info_size(Input& in, size_t full) {
  return in.pick(4) == 0 ? static_cast<size_t>(in.range(0, full)) : full;
}

#define XF_FIELD(type, name) \
  Field { offsetof(type, name), sizeof(type::name) }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xhal_fuzz::keep_folder_loaded(XHAL_FUZZ_PLUGIN_DIR);
  xhal_fuzz::internal_is_a_core_bug() = false;  // the fuzzed plugin returns it too
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  PluginScript script = read_script(in);
  xhal_fuzz_plugin_script = &script;
  if (verbose())
    std::fprintf(
        stderr,
        "script: entry %u struct_size %llu abi %u.%u name %u '%.24s' version %u null %016llx "
        "odd %04x status %u throw %u note %u reenter %u count %u kind %u unterminated %u "
        "null_handles %u\n",
        script.entry, static_cast<unsigned long long>(script.struct_size), script.abi_major,
        script.abi_minor, script.backend_name_kind, script.backend_name, script.version_kind,
        static_cast<unsigned long long>(script.null_slots), script.odd_slots, script.odd_status,
        script.odd_throw, script.note_kind, script.init_reenter, script.device_count, script.kind,
        script.unterminated_name, script.open_gives_null);

  xhal_runtime_options_t o{};
  o.struct_size = sizeof o;
  o.device_selector = "";
  o.plugin_path = XHAL_FUZZ_PLUGIN_DIR;
  o.plugin_path_only = 1;
  XF_MUST(xhal_runtime_init(&o));

  uint32_t plugins = 0;
  XF_MUST(xhal_plugin_count(&plugins));
  if (plugins != 1) broken("expected one candidate, libxhal-fuzz.so", "xhal_plugin_count", XHAL_OK);

  xhal_plugin_info_t pinfo;
  std::memset(&pinfo, 0xA5, sizeof pinfo);
  const size_t psize = info_size(in, sizeof pinfo);
  pinfo.struct_size = psize;
  const xhal_status_t ps = XF_CALL(xhal_plugin_get_info(0, &pinfo));
  if (psize < sizeof(size_t)) {
    if (ps != XHAL_INVALID_ARGUMENT)
      broken("struct_size < sizeof(size_t) accepted", "xhal_plugin_get_info", ps);
  } else {
    if (ps != XHAL_OK) broken("plugin_get_info failed", "xhal_plugin_get_info", ps);
    check_fields_outside(
        pinfo, psize,
        {XF_FIELD(xhal_plugin_info_t, path), XF_FIELD(xhal_plugin_info_t, backend),
         XF_FIELD(xhal_plugin_info_t, state), XF_FIELD(xhal_plugin_info_t, reason),
         XF_FIELD(xhal_plugin_info_t, abi_major), XF_FIELD(xhal_plugin_info_t, abi_minor),
         XF_FIELD(xhal_plugin_info_t, plugin_version), XF_FIELD(xhal_plugin_info_t, device_count)},
        "xhal_plugin_get_info");
    if (psize == sizeof pinfo) {
      uint32_t state;
      std::memcpy(&state, &pinfo.state, sizeof state);
      if (state != XHAL_PLUGIN_LOADED && state != XHAL_PLUGIN_REJECTED)
        broken("plugin state is neither LOADED nor REJECTED", "xhal_plugin_get_info", ps);
      if (!pinfo.reason || !pinfo.path || !pinfo.backend || !pinfo.plugin_version)
        broken("a string of the plugin report is NULL", "xhal_plugin_get_info", ps);
      if (!table_acceptable(script) && state != XHAL_PLUGIN_REJECTED)
        broken("a table breaking the rules was not rejected", "xhal_plugin_get_info", ps);
      if (loads_cleanly(script) && state != XHAL_PLUGIN_LOADED) {
        std::fprintf(stderr, "reason: %s\n", pinfo.reason);
        broken("a well-behaved table was not loaded", "xhal_plugin_get_info", ps);
      }
    }
  }

  uint32_t count = 0;
  const xhal_status_t cs = XF_CALL(xhal_device_count(&count));
  if (cs != XHAL_OK && cs != XHAL_NOT_FOUND) broken("device_count", "xhal_device_count", cs);
  for (uint32_t i = 0; cs == XHAL_OK && i < count && i < 3; ++i) {
    xhal_device_info_t info;
    std::memset(&info, 0xA5, sizeof info);
    const size_t isize = info_size(in, sizeof info);
    info.struct_size = isize;
    const xhal_status_t is = XF_CALL(xhal_device_get_info(i, &info));
    if (isize < sizeof(size_t)) continue;
    if (is != XHAL_OK)
      broken("device_get_info of a listed device failed", "xhal_device_get_info", is);
    check_fields_outside(
        info, isize,
        {XF_FIELD(xhal_device_info_t, backend), XF_FIELD(xhal_device_info_t, backend_index),
         XF_FIELD(xhal_device_info_t, name), XF_FIELD(xhal_device_info_t, stable_id),
         XF_FIELD(xhal_device_info_t, kind), XF_FIELD(xhal_device_info_t, memory_bytes),
         XF_FIELD(xhal_device_info_t, supported_ops)},
        "xhal_device_get_info");
    if (isize == sizeof info) {
      uint32_t kind;
      std::memcpy(&kind, &info.kind, sizeof kind);
      if (kind > XHAL_DEVICE_KIND_OTHER)
        broken("a device kind outside the enum reached the app", "xhal_device_get_info", is);
      if (std::strlen(info.name) >= sizeof(xhal_plugin_device_info_t::name))
        broken("device name longer than the plugin's array", "xhal_device_get_info", is);
    }
  }

  if (cs == XHAL_OK && count > 0) {
    xhal_device_t dev = nullptr;
    const xhal_status_t os = XF_CALL(xhal_device_open_index(0, &dev));
    if (os == XHAL_OK) {
      xhal_device_info_t qinfo{};
      qinfo.struct_size = sizeof qinfo;
      XF_CALL(xhal_device_query(dev, &qinfo));
      xhal_counters_t counters{};
      XF_CALL(xhal_device_get_counters(dev, &counters));
      XF_CALL(xhal_device_synchronize(dev));
      const uint64_t bytes = static_cast<uint64_t>(in.range(0, 256));
      xhal_buffer_t b = nullptr;
      if (XF_CALL(xhal_buffer_allocate(dev, bytes, &b)) == XHAL_OK) {
        std::vector<unsigned char> out(bytes), back(bytes, 0);
        for (uint64_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(i * 7 + 3);
        const xhal_status_t ws = XF_CALL(xhal_buffer_write(b, 0, out.data(), bytes));
        const xhal_status_t rs = XF_CALL(xhal_buffer_read(b, 0, back.data(), bytes));
        // A slot told to misbehave may also answer XHAL_OK without doing
        // the work; only an honest plugin's bytes must come back.
        const bool honest =
            !((script.odd_slots >> kBufferWrite) & 1) && !((script.odd_slots >> kBufferRead) & 1);
        if (honest && ws == XHAL_OK && rs == XHAL_OK && out != back)
          broken("buffer round trip changed the bytes", "xhal_buffer_read", rs);
        const uint32_t pattern = 0x01020304u;
        const uint32_t psz = 1u << in.pick(3);
        const uint64_t fill_bytes = bytes / psz * psz;
        XF_CALL(xhal_buffer_fill(b, 0, fill_bytes, &pattern, psz));
        if (bytes >= 2) XF_CALL(xhal_buffer_copy(b, 0, b, bytes / 2, bytes / 2));
        XF_MUST(xhal_buffer_release(b));
      }
      XF_MUST(xhal_device_release(dev));
    }
  }
  XF_MUST(xhal_runtime_shutdown());
  xhal_fuzz_plugin_script = nullptr;
  return 0;
}
