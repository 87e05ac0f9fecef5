// The cpu plugin's options: parsed at init (the device count must be known
// before any device is listed) and again, to the same result, at each open.
#include "options.h"

#include <cerrno>
#include <cstdlib>

namespace xhal::cpu {

bool parse_options(const char* text, Options* out, std::string* error) {
  Options o;
  const std::string s(text ? text : "");
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (name != "devices") {
      *error = "unknown option '" + name + "'; the cpu plugin knows: devices";
      return false;
    }
    // Digits only: strtoul alone would take "-1", " 2" and "+2".
    bool ok = !value.empty() && value[0] >= '0' && value[0] <= '9';
    unsigned long n = 0;
    if (ok) {
      char* stop = nullptr;
      errno = 0;
      n = std::strtoul(value.c_str(), &stop, 10);
      ok = errno == 0 && *stop == '\0' && n >= 1 && n <= kMaxVirtualDevices;
    }
    if (!ok) {
      *error = "option 'devices' has value '" + value + "'; expected a whole number from 1 to " +
               std::to_string(kMaxVirtualDevices);
      return false;
    }
    o.devices = static_cast<uint32_t>(n);
  }
  *out = o;
  return true;
}

std::string format_options(const Options& options) {
  return "devices=" + std::to_string(options.devices);
}

}  // namespace xhal::cpu
