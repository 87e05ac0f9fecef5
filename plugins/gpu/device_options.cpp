// Device options of the GPU plugins: one table names every option once, with
// the backends it applies to, its parser and its printer (docs/device-options.md).
#include "device_options.h"

#include <cstring>

namespace xhal::gpu {
namespace {

enum class Parsed { kOk, kNotNumber, kOutOfRange, kNotChoice, kNotHere };

// A decimal number without sign or spaces, at most `max`.
Parsed parse_uint(const std::string& v, uint64_t max, uint64_t* out) {
  if (v.empty()) return Parsed::kNotNumber;
  for (char c : v)
    if (c < '0' || c > '9') return Parsed::kNotNumber;
  uint64_t n = 0;
  for (char c : v) {
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (n > (UINT64_MAX - digit) / 10) return Parsed::kOutOfRange;
    n = n * 10 + digit;
  }
  if (n > max) return Parsed::kOutOfRange;
  *out = n;
  return Parsed::kOk;
}

struct OptionSpec {
  const char* name;
  bool on_cuda, on_rocm;
  const char* expects;  // the accepted values, for messages
  Parsed (*parse)(const std::string& value, GpuBackend backend, DeviceOptions* o);
  std::string (*format)(const DeviceOptions& o);
};

std::string auto_or(int v) { return v == 0 ? std::string("auto") : std::to_string(v); }

constexpr uint64_t kMaxFusedFromRows = uint64_t{1} << 40;

const OptionSpec kOptions[] = {
    {"solve.schedule", true, true, "syncfree or levels (rocm: levels)",
     [](const std::string& v, GpuBackend b, DeviceOptions* o) {
       if (v == "levels") {
         o->solve_schedule = SolveSchedule::kLevels;
         return Parsed::kOk;
       }
       if (v != "syncfree") return Parsed::kNotChoice;
       if (b == GpuBackend::kRocm) return Parsed::kNotHere;  // needs CUDA's thread scheduling
       o->solve_schedule = SolveSchedule::kSyncFree;
       return Parsed::kOk;
     },
     [](const DeviceOptions& o) {
       return std::string(o.solve_schedule == SolveSchedule::kLevels ? "levels" : "syncfree");
     }},
    {"solve.block_threads", true, false, "a multiple of 32 in 32..256",
     [](const std::string& v, GpuBackend, DeviceOptions* o) {
       uint64_t n = 0;
       const Parsed p = parse_uint(v, 256, &n);
       if (p != Parsed::kOk) return p;
       if (n < 32 || n % 32 != 0) return Parsed::kOutOfRange;
       o->solve_block_threads = static_cast<int>(n);
       return Parsed::kOk;
     },
     [](const DeviceOptions& o) { return std::to_string(o.solve_block_threads); }},
    {"solve.blocks_per_sm", true, false, "auto or 1..32",
     [](const std::string& v, GpuBackend, DeviceOptions* o) {
       uint64_t n = 0;
       if (v == "auto") {
         o->solve_blocks_per_sm = 0;
         return Parsed::kOk;
       }
       const Parsed p = parse_uint(v, 32, &n);
       if (p != Parsed::kOk) return p;
       if (n < 1) return Parsed::kOutOfRange;
       o->solve_blocks_per_sm = static_cast<int>(n);
       return Parsed::kOk;
     },
     [](const DeviceOptions& o) { return auto_or(o.solve_blocks_per_sm); }},
    {"solve.poll", true, false, "auto, converged or lanes",
     [](const std::string& v, GpuBackend, DeviceOptions* o) {
       if (v == "auto") o->solve_poll = SolvePoll::kAuto;
       else if (v == "converged") o->solve_poll = SolvePoll::kConverged;
       else if (v == "lanes") o->solve_poll = SolvePoll::kLanes;
       else return Parsed::kNotChoice;
       return Parsed::kOk;
     },
     [](const DeviceOptions& o) {
       return std::string(o.solve_poll == SolvePoll::kAuto        ? "auto"
                          : o.solve_poll == SolvePoll::kConverged ? "converged"
                                                                  : "lanes");
     }},
    {"solve.poll_terms", true, false, "auto, 16 or 32",
     [](const std::string& v, GpuBackend, DeviceOptions* o) {
       if (v == "auto") o->solve_poll_terms = 0;
       else if (v == "16") o->solve_poll_terms = 16;
       else if (v == "32") o->solve_poll_terms = 32;
       else return Parsed::kNotChoice;
       return Parsed::kOk;
     },
     [](const DeviceOptions& o) { return auto_or(o.solve_poll_terms); }},
    {"solve.sleep_ns", true, false, "0..1000000",
     [](const std::string& v, GpuBackend, DeviceOptions* o) {
       uint64_t n = 0;
       const Parsed p = parse_uint(v, 1000000, &n);
       if (p == Parsed::kOk) o->solve_sleep_ns = static_cast<uint32_t>(n);
       return p;
     },
     [](const DeviceOptions& o) { return std::to_string(o.solve_sleep_ns); }},
    {"norm_backward.fused_from_rows", true, true, "0..1099511627776",
     [](const std::string& v, GpuBackend, DeviceOptions* o) {
       uint64_t n = 0;
       const Parsed p = parse_uint(v, kMaxFusedFromRows, &n);
       if (p == Parsed::kOk) o->norm_backward_fused_from_rows = static_cast<int64_t>(n);
       return p;
     },
     [](const DeviceOptions& o) { return std::to_string(o.norm_backward_fused_from_rows); }},
    {"rows.resident", true, false, "0 or 1",
     [](const std::string& v, GpuBackend, DeviceOptions* o) {
       if (v == "0") o->rows_resident = false;
       else if (v == "1") o->rows_resident = true;
       else return Parsed::kNotChoice;
       return Parsed::kOk;
     },
     [](const DeviceOptions& o) { return std::string(o.rows_resident ? "1" : "0"); }},
    {"sparse_index", true, true, "auto or 64",
     [](const std::string& v, GpuBackend, DeviceOptions* o) {
       if (v == "auto") o->sparse_index64 = false;
       else if (v == "64") o->sparse_index64 = true;
       else return Parsed::kNotChoice;
       return Parsed::kOk;
     },
     [](const DeviceOptions& o) { return std::string(o.sparse_index64 ? "64" : "auto"); }},
    {"spmv.combine", true, true, "fused or launch",
     [](const std::string& v, GpuBackend, DeviceOptions* o) {
       if (v == "fused") o->spmv_fused_combine = true;
       else if (v == "launch") o->spmv_fused_combine = false;
       else return Parsed::kNotChoice;
       return Parsed::kOk;
     },
     [](const DeviceOptions& o) { return std::string(o.spmv_fused_combine ? "fused" : "launch"); }},
    {"spmv.short_rows", true, true, "auto, tiles or rows",
     [](const std::string& v, GpuBackend, DeviceOptions* o) {
       if (v == "auto") o->spmv_short_rows = SpmvShortRows::kAuto;
       else if (v == "tiles") o->spmv_short_rows = SpmvShortRows::kTiles;
       else if (v == "rows") o->spmv_short_rows = SpmvShortRows::kRows;
       else return Parsed::kNotChoice;
       return Parsed::kOk;
     },
     [](const DeviceOptions& o) {
       return std::string(o.spmv_short_rows == SpmvShortRows::kTiles  ? "tiles"
                          : o.spmv_short_rows == SpmvShortRows::kRows ? "rows"
                                                                      : "auto");
     }},
    {"trace", true, true, "0 or 1",
     [](const std::string& v, GpuBackend, DeviceOptions* o) {
       if (v == "0") o->trace = false;
       else if (v == "1") o->trace = true;
       else return Parsed::kNotChoice;
       return Parsed::kOk;
     },
     [](const DeviceOptions& o) { return std::string(o.trace ? "1" : "0"); }},
};

bool applies(const OptionSpec& s, GpuBackend b) {
  return b == GpuBackend::kCuda ? s.on_cuda : s.on_rocm;
}

const char* backend_name(GpuBackend b) { return b == GpuBackend::kCuda ? "cuda" : "rocm"; }

}  // namespace

DeviceOptions default_device_options(GpuBackend backend) {
  DeviceOptions o;
  if (backend == GpuBackend::kRocm) o.solve_schedule = SolveSchedule::kLevels;
  return o;
}

std::string known_device_options(GpuBackend backend) {
  std::string s;
  for (const OptionSpec& spec : kOptions) {
    if (!applies(spec, backend)) continue;
    if (!s.empty()) s += ", ";
    s += spec.name;
  }
  return s;
}

bool parse_device_options(const char* text, GpuBackend backend, DeviceOptions* out,
                          std::string* error) {
  DeviceOptions o = default_device_options(backend);
  const std::string all = text ? text : "";
  auto reject = [&](const std::string& item, const std::string& why) {
    *error = "device option '" + item + "': " + why +
             "; known options: " + known_device_options(backend);
    return false;
  };
  size_t begin = 0;
  while (begin <= all.size()) {
    size_t end = all.find(',', begin);
    if (end == std::string::npos) end = all.size();
    const std::string item = all.substr(begin, end - begin);
    begin = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return reject(item, "not name=value");
    const std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : kOptions)
      if (name == s.name) spec = &s;
    if (!spec) return reject(item, "unknown name '" + name + "'");
    if (!applies(*spec, backend))
      return reject(item, std::string("'") + name + "' does not apply to " + backend_name(backend) +
                              " (it tunes the CUDA sync-free solve)");
    switch (spec->parse(value, backend, &o)) {
      case Parsed::kOk:
        break;
      case Parsed::kNotNumber:
        return reject(
            item, std::string("'") + value + "' is not a number (expects " + spec->expects + ")");
      case Parsed::kOutOfRange:
        return reject(
            item, std::string("'") + value + "' is out of range (expects " + spec->expects + ")");
      case Parsed::kNotChoice:
        return reject(item, std::string("'") + value + "' is not a valid value (expects " +
                                spec->expects + ")");
      case Parsed::kNotHere:
        return reject(item, std::string("'") + value + "' is not available on " +
                                backend_name(backend) + " (expects " + spec->expects + ")");
    }
  }
  *out = o;
  return true;
}

std::string format_device_options(const DeviceOptions& options, GpuBackend backend) {
  std::string s;
  for (const OptionSpec& spec : kOptions) {
    if (!applies(spec, backend)) continue;
    if (!s.empty()) s += ',';
    s += spec.name;
    s += '=';
    s += spec.format(options);
  }
  return s;
}

void copy_option_text(const std::string& text, char* out, size_t capacity) {
  if (!out || capacity == 0) return;
  const size_t n = text.size() < capacity - 1 ? text.size() : capacity - 1;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

}  // namespace xhal::gpu
