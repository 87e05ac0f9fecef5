// The plugin's options (docs/device-options.md): parsed once, at init for
// the plugin-wide ones and at device open for the rest.
#include <cerrno>
#include <cstdlib>
#include <string>

#include "vk_plugin.h"

namespace xhal::vk {

// ---- options --------------------------------------------------------------------------
bool parse_options(const char* text, Options* out, std::string* error) {
  Options o;
  std::string s(text);
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) {
      if (end == s.size()) break;
      continue;
    }
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (name == "alloc") {
      if (value == "dedicated") o.dedicated = true;
      else if (value == "plain") o.dedicated = false;
      else {
        *error = "option 'alloc' has value '" + value + "'; expected dedicated or plain";
        return false;
      }
    } else if (name == "copy") {
      if (value == "auto") o.copy = CopyMode::kAuto;
      else if (value == "transfer") o.copy = CopyMode::kTransfer;
      else if (value == "compute") o.copy = CopyMode::kCompute;
      else {
        *error = "option 'copy' has value '" + value + "'; expected auto, transfer or compute";
        return false;
      }
    } else if (name == "validation") {
      if (value == "off") o.validation = Validation::kOff;
      else if (value == "warn") o.validation = Validation::kWarn;
      else if (value == "fatal") o.validation = Validation::kFatal;
      else {
        *error = "option 'validation' has value '" + value + "'; expected off, warn or fatal";
        return false;
      }
    } else if (name == "wait_spin_us") {
      char* end = nullptr;
      errno = 0;
      const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || value[0] < '0' || value[0] > '9' || *end || errno || v > 10000000ull) {
        *error = "option 'wait_spin_us' has value '" + value +
                 "'; expected a whole number of microseconds, 0 to 10000000";
        return false;
      }
      o.wait_spin_us = static_cast<uint32_t>(v);
    } else if (name == "wait") {
      if (value == "timeline") o.fence_wait = false;
      else if (value == "fence") o.fence_wait = true;
      else {
        *error = "option 'wait' has value '" + value + "'; expected timeline or fence";
        return false;
      }
    } else if (name == "queue") {
      if (value == "compute") o.universal_queue = false;
      else if (value == "universal") o.universal_queue = true;
      else {
        *error = "option 'queue' has value '" + value + "'; expected compute or universal";
        return false;
      }
    } else if (name == "transpose") {
      if (value == "auto") o.transpose = Options::Transpose::kAuto;
      else if (value == "tile32") o.transpose = Options::Transpose::kTile32;
      else if (value == "wide") o.transpose = Options::Transpose::kWide;
      else {
        *error = "option 'transpose' has value '" + value + "'; expected auto, tile32 or wide";
        return false;
      }
    } else if (name == "solve_run") {
      if (value == "0") o.solve_run = 0;
      else if (value == "64") o.solve_run = 64;
      else if (value == "256") o.solve_run = 256;
      else if (value == "1024") o.solve_run = 1024;
      else {
        *error = "option 'solve_run' has value '" + value + "'; expected 0, 64, 256 or 1024";
        return false;
      }
    } else if (name == "solve_ahead") {
      if (value == "on") o.solve_ahead = true;
      else if (value == "off") o.solve_ahead = false;
      else {
        *error = "option 'solve_ahead' has value '" + value + "'; expected on or off";
        return false;
      }
    } else if (name == "solve_narrow") {
      char* end = nullptr;
      errno = 0;
      const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || value[0] < '0' || value[0] > '9' || *end || errno || v > 1000000000ull) {
        *error = "option 'solve_narrow' has value '" + value +
                 "'; expected a whole number of items, 0 (auto) to 1000000000";
        return false;
      }
      o.solve_narrow = v;
    } else if (name == "sparse_index") {
      if (value == "auto") o.sparse_index64 = false;
      else if (value == "64") o.sparse_index64 = true;
      else {
        *error = "option 'sparse_index' has value '" + value + "'; expected auto or 64";
        return false;
      }
    } else if (name == "rows") {
      if (value == "v1") o.rows = 1;
      else if (value == "v2") o.rows = 2;
      else if (value == "v2row") o.rows = 3;
      else {
        *error = "option 'rows' has value '" + value + "'; expected v1, v2 or v2row";
        return false;
      }
    } else if (name == "profile") {
      if (value == "on") o.profile = true;
      else if (value == "off") o.profile = false;
      else {
        *error = "option 'profile' has value '" + value + "'; expected on or off";
        return false;
      }
    } else {
      *error = "unknown option '" + name +
               "'; the vulkan plugin knows: alloc, copy, profile, queue, rows, solve_ahead, "
               "solve_narrow, solve_run, sparse_index, transpose, validation, wait, "
               "wait_spin_us";
      return false;
    }
  }
  *out = o;
  return true;
}

std::string format_options(const Options& o) {
  const char* copy = o.copy == CopyMode::kAuto       ? "auto"
                     : o.copy == CopyMode::kTransfer ? "transfer"
                                                     : "compute";
  const char* validation = o.validation == Validation::kOff    ? "off"
                           : o.validation == Validation::kWarn ? "warn"
                                                               : "fatal";
  const char* transpose = o.transpose == Options::Transpose::kAuto     ? "auto"
                          : o.transpose == Options::Transpose::kTile32 ? "tile32"
                                                                       : "wide";
  return std::string("alloc=") + (o.dedicated ? "dedicated" : "plain") + ",copy=" + copy +
         ",profile=" + (o.profile ? "on" : "off") +
         ",queue=" + (o.universal_queue ? "universal" : "compute") + ",rows=" +
         (o.rows == 1   ? "v1"
          : o.rows == 2 ? "v2"
                        : "v2row") +
         ",solve_ahead=" + (o.solve_ahead ? "on" : "off") +
         ",solve_narrow=" + std::to_string(o.solve_narrow) +
         ",solve_run=" + std::to_string(o.solve_run) +
         ",sparse_index=" + (o.sparse_index64 ? "64" : "auto") + ",transpose=" + transpose +
         ",validation=" + validation + ",wait=" + (o.fence_wait ? "fence" : "timeline") +
         ",wait_spin_us=" + std::to_string(o.wait_spin_us);
}

}  // namespace xhal::vk
